"""Op categories from one declarative table (categories.toml), extensible from a user file.

Resolution (docs/perf-models.md#categories): exact op name, then name patterns, then the
first kernel's name (by the fallback rules; for an opaque launcher such as `CompiledFunction`,
as a GPU-only trace's kernel would be), else "other". The table is data: adding an op or a
category never touches code.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..trace.input_file import InputFileError, read_side_file

OTHER = "other"


class CategoryFileError(ValueError):
    """A categories file that cannot be used; the message names the file and the entry."""


@dataclass(frozen=True, slots=True)
class KernelFallback:
    prefix: str
    contains: str
    category: str

    def matches(self, kernel: str) -> bool:
        return kernel.startswith(self.prefix) and self.contains in kernel


@dataclass(frozen=True)
class CategoryTable:
    """Exact op names, name patterns and kernel-name fallbacks, in resolution order."""

    by_name: MappingProxyType[str, str]
    patterns: tuple[tuple[re.Pattern[str], str], ...]
    kernel_fallbacks: tuple[KernelFallback, ...]
    kernel_names: tuple[tuple[re.Pattern[str], str], ...] = ()
    opaque: tuple[re.Pattern[str], ...] = ()  # launchers categorised by their first kernel

    def category(self, op_name: str, first_kernel: str | None = None) -> str:
        """Category of an op, given the name of its first kernel for the fallback rules."""
        found = self.by_name.get(op_name)
        if found is not None:
            return found
        for pattern, category in self.patterns:
            if pattern.search(op_name):
                return category
        if first_kernel:
            for rule in self.kernel_fallbacks:
                if rule.matches(first_kernel):
                    return rule.category
            if any(p.search(op_name) for p in self.opaque):
                return self.kernel_category(first_kernel)
        return OTHER

    def kernel_category(self, kernel: str) -> str:
        """Category of a kernel by its name alone (GPU-only traces), else "other"."""
        for pattern, category in self.kernel_names:
            if pattern.search(kernel):
                return category
        return OTHER

    def categories(self) -> list[str]:
        """Every category label the table can produce, `other` last."""
        labels = dict.fromkeys(self.by_name.values())
        labels.update(dict.fromkeys(c for _, c in self.patterns))
        labels.update(dict.fromkeys(r.category for r in self.kernel_fallbacks))
        labels.pop(OTHER, None)
        return [*labels, OTHER]

    def extended(self, document: dict[str, Any], source: str) -> CategoryTable:
        """This table with a user document's entries added (user entries win)."""
        extra = _parse(document, source)
        by_name = dict(self.by_name) | dict(extra.by_name)
        return CategoryTable(
            by_name=MappingProxyType(by_name),
            patterns=extra.patterns + self.patterns,
            kernel_fallbacks=extra.kernel_fallbacks + self.kernel_fallbacks,
            kernel_names=extra.kernel_names + self.kernel_names,
            opaque=extra.opaque + self.opaque,
        )


def _parse(document: dict[str, Any], source: str) -> CategoryTable:
    by_name: dict[str, str] = {}
    sections = document.get("categories", {})
    if not isinstance(sections, dict):
        raise CategoryFileError(f"{source}: [categories] must be a table of category names")
    for category, body in sections.items():
        ops = body.get("ops") if isinstance(body, dict) else None
        if not isinstance(ops, list) or not all(isinstance(o, str) for o in ops):
            raise CategoryFileError(f"{source}: categories.{category}.ops must be a list of names")
        by_name.update(dict.fromkeys(ops, category))
    for section in ("patterns", "kernel_fallbacks", "kernel_names", "opaque_launchers"):
        if not isinstance(document.get(section, []), list):
            raise CategoryFileError(
                f"{source}: {section} must be an array of tables ([[{section}]])"
            )
    patterns = _regexes(document, "patterns", source, 0)
    kernel_names = _regexes(document, "kernel_names", source, re.IGNORECASE)
    fallbacks = []
    for i, entry in enumerate(document.get("kernel_fallbacks", [])):
        try:
            fallbacks.append(
                KernelFallback(str(entry["prefix"]), str(entry["contains"]), str(entry["category"]))
            )
        except (KeyError, TypeError) as exc:
            raise CategoryFileError(
                f"{source}: kernel_fallbacks[{i}] needs prefix, contains and category"
            ) from exc
    opaque = []
    for i, entry in enumerate(document.get("opaque_launchers", [])):
        try:
            opaque.append(re.compile(entry["regex"]))
        except (KeyError, TypeError) as exc:
            raise CategoryFileError(f"{source}: opaque_launchers[{i}] needs a regex") from exc
        except re.error as exc:
            raise CategoryFileError(f"{source}: opaque_launchers[{i}].regex: {exc}") from exc
    return CategoryTable(
        MappingProxyType(by_name),
        patterns,
        tuple(fallbacks),
        kernel_names=kernel_names,
        opaque=tuple(opaque),
    )


def _regexes(
    document: dict[str, Any], section: str, source: str, flags: int
) -> tuple[tuple[re.Pattern[str], str], ...]:
    """The (regex, category) entries of an array-of-tables section."""
    found = []
    for i, entry in enumerate(document.get(section, [])):
        try:
            found.append((re.compile(entry["regex"], flags), str(entry["category"])))
        except (KeyError, TypeError) as exc:
            raise CategoryFileError(f"{source}: {section}[{i}] needs regex and category") from exc
        except re.error as exc:
            raise CategoryFileError(f"{source}: {section}[{i}].regex: {exc}") from exc
    return tuple(found)


@cache
def default_table() -> CategoryTable:
    """The packaged table (categories.toml beside this module)."""
    text = resources.files("rooflens.analyzers.perf").joinpath("categories.toml").read_text()
    return _parse(tomllib.loads(text), "categories.toml")


def load_table(path: str | Path | None = None) -> CategoryTable:
    """The packaged table, extended by a user's TOML file when one is given."""
    table = default_table()
    if path is None:
        return table
    path = Path(path)
    try:  # a regular file only, and a small one (a FIFO would block: input_file.py)
        document = tomllib.loads(read_side_file(path, "category table").decode("utf-8"))
    except InputFileError as exc:
        raise CategoryFileError(str(exc)) from None
    except UnicodeDecodeError as exc:
        raise CategoryFileError(f"{path}: not UTF-8 text, as TOML must be ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise CategoryFileError(f"{path}: not valid TOML ({exc})") from None
    return table.extended(document, str(path))
