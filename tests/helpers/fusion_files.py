"""`fusion_candidates.json` written on its own, as a run folder holds it."""

from __future__ import annotations

import json
from pathlib import Path

from rooflens.analyzers.prepare.fusion import FUSION_FILE, FusionCandidate
from rooflens.analyzers.report.write_csv import atomic_write_bytes


def write_fusion_candidates(run_dir: Path, candidates: list[FusionCandidate]) -> Path:
    """Write `category_data/fusion_candidates.json` atomically; returns its path."""
    path = Path(run_dir) / "category_data" / FUSION_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps([c.as_dict() for c in candidates], indent=2, default=str)
    atomic_write_bytes(path, text.encode())
    return path
