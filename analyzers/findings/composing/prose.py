"""The words of the report a model (or a person) writes: the executive summary paragraph and
the closing recommendation. Plain prose only; every number, table and marker stays code's."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

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
