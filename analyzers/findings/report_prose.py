"""The words of the report a model (or a person) writes: the executive summary paragraph and
the closing recommendation. Plain prose only; every number, table and marker stays code's."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rooflens.analyzers.report.write_csv import atomic_write_bytes

PROSE_FILE = "report_prose.json"
MAX_CHARS = 2000
# structure the report validators read: prose must not smuggle it in
FORBIDDEN = ("<!--", "\n#", "\n|", "**Impact**", "impact-begin", "impact-end")


class ReportProse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str | None = Field(
        default=None,
        max_length=MAX_CHARS,
        description="two or three sentences on where the time goes and the top opportunities",
    )
    recommendation: str | None = Field(
        default=None, max_length=MAX_CHARS, description="the one thing to do first, and why"
    )

    @field_validator("summary", "recommendation")
    @classmethod
    def _plain(cls, value: str | None) -> str | None:
        if value is None:
            return None
        text = " ".join(value.split())
        if not text:
            raise ValueError("must not be empty; leave it out to keep the text code writes")
        if any(token in "\n" + value for token in FORBIDDEN):
            raise ValueError(
                "must be plain prose: no headings, tables, HTML comments or impact markers"
            )
        return text


def save_prose(run_dir: Path, prose: ReportProse) -> None:
    text = prose.model_dump_json(indent=2, exclude_none=True) + "\n"
    atomic_write_bytes(run_dir / PROSE_FILE, text.encode("utf-8"))


def read_prose(run_dir: Path) -> ReportProse | None:
    path = run_dir / PROSE_FILE
    if not path.is_file():
        return None
    try:
        return ReportProse.model_validate_json(path.read_bytes())
    except (ValidationError, ValueError):
        return None
