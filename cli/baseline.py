"""`rooflens baseline save|list|remove` and `compare --baseline NAME`: named reference traces
kept in a folder (analyzers/pipeline/baselines.py, docs/compare.md#named-baselines)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rooflens.analyzers.markdown_text import plain_line
from rooflens.analyzers.pipeline.baselines import BaselineError, BaselineStore, default_folder

from .common import EXIT_OK, fail, print_json


def _store(args: argparse.Namespace) -> BaselineStore:
    return BaselineStore(Path(args.baselines) if args.baselines else default_folder())


def run_baseline(args: argparse.Namespace) -> int:
    store = _store(args)
    try:
        if args.action == "save":
            saved = store.save(args.name, Path(args.source), replace=args.force)
            if args.json:
                print_json(saved.model_dump(mode="json"))
            else:
                print(
                    f"Saved baseline {saved.name} ({saved.size:,} bytes, SHA-256 "
                    f"{saved.sha256[:12]}…) in {store.root / saved.name}"
                )
            return EXIT_OK
        if args.action == "remove":
            store.remove(args.name)
            if args.json:
                print_json({"removed": args.name})
            else:
                print(f"Removed baseline {args.name} from {store.root}")
            return EXIT_OK
        found = store.names()
        if args.json:
            print_json({"folder": str(store.root), "baselines": [b.model_dump() for b in found]})
            return EXIT_OK
        if not found:
            print(f"No baselines in {store.root}")
        for b in found:
            platform = f", {plain_line(b.platform, 40)}" if b.platform else ""
            print(f"{b.name:24} {b.saved}  {plain_line(b.trace_file, 60)}{platform}")
        return EXIT_OK
    except BaselineError as exc:
        return fail(str(exc))
    except OSError as exc:
        return fail(f"cannot use the baselines folder {store.root}: {exc.strerror or exc}")


def use_baseline(args: argparse.Namespace) -> str | None:
    """Point `args.trace2` at the named baseline's trace (and its platform, when none is
    given); the problem in one line when it cannot be used."""
    try:
        record, trace = _store(args).get(args.baseline)
    except BaselineError as exc:
        return str(exc)
    except OSError as exc:
        return f"cannot read baseline {args.baseline!r}: {exc.strerror or exc}"
    args.trace2 = str(trace)
    if record.platform and not args.platform2 and not args.platform2_file:
        args.platform2 = record.platform
    print(f"Baseline {record.name}: {trace}", file=sys.stderr)
    return None
