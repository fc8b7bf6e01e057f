"""Documents larger than one result, served a part at a time.

- A report (analysis.md) by section: read whole when it fits; else an index of its `## `
  sections (each with its size and the URI that reads it) and the sections from the top that
  fit; a section larger than one result comes a page of lines at a time.
- A JSON document by its lists: read whole when it fits; else its largest lists cut (each cut
  list says how much is shown and names the URI of its next page), the rest whole.

Every page stays within the budget the caller gives (the server's result size limit).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from mcp.server.mcpserver.exceptions import ResourceNotFoundError

MARGIN = 400  # bytes kept for a page's closing line and the envelope's escapes
_HEADING = re.compile(r"(?m)^(?=## )")


@dataclass(frozen=True)
class Section:
    slug: str
    heading: str
    text: str

    @property
    def size(self) -> int:
        return len(self.text.encode("utf-8"))


def sections(text: str) -> tuple[str, list[Section]]:
    """The text before the first `## ` heading, and each `## ` section (its slug unique)."""
    head, *parts = _HEADING.split(text)
    out: list[Section] = []
    seen: dict[str, int] = {}
    for part in parts:
        heading = part.splitlines()[0][3:].strip()
        slug = re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-") or "section"
        seen[slug] = seen.get(slug, 0) + 1
        out.append(Section(slug if seen[slug] == 1 else f"{slug}-{seen[slug]}", heading, part))
    return head, out


def report_section(text: str, uri: str, budget: int, section: str = "", offset: int = 0) -> str:
    """The part of the report `text` (served at `uri`) that `section` and `offset` name."""
    head, parts = sections(text)
    if section:
        found = next((s for s in parts if s.slug == section), None)
        if found is None:
            known = ", ".join(s.slug for s in parts) or "none"
            raise ResourceNotFoundError(
                f"the report has no section {section!r}; its sections: {known}"
            )
        return _lines(found.text, f"{uri}?section={found.slug}", budget, offset)
    if offset:
        raise ResourceNotFoundError("offset pages a section: name it with ?section=")
    if len(text.encode("utf-8")) <= budget:
        return text
    index = [
        f"*(This report is {len(text.encode('utf-8')):,d} bytes, more than one read: it comes "
        "a section at a time. Its sections, each a read of its own:)*",
        "",
        *(f"- `{uri}?section={s.slug}`: {s.heading} ({s.size:,d} bytes)" for s in parts),
        "",
        "",
    ]
    out = head + "\n".join(index)
    room = budget - MARGIN - len(out.encode("utf-8"))
    shown = 0
    for part in parts:
        if part.size > room:
            break
        out += part.text
        room -= part.size
        shown += 1
    if shown < len(parts):
        out += f"\n*(next section: `{uri}?section={parts[shown].slug}`)*\n"
    return out


def _lines(text: str, uri: str, budget: int, offset: int) -> str:
    """Whole lines of `text` from line `offset`, as many as fit (at least one); when lines
    are left, a last line names the next page."""
    lines = text.splitlines(keepends=True)
    room = budget - MARGIN
    shown: list[str] = []
    for line in lines[offset:]:
        room -= len(line.encode("utf-8"))
        if room < 0 and shown:
            break
        shown.append(line)
    end = offset + len(shown)
    if end < len(lines):
        shown.append(
            f"\n*(lines {offset + 1}-{end} of {len(lines)}; next page: `{uri}&offset={end}`)*\n"
        )
    return "".join(shown)


def _dump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _size(value: Any) -> int:
    return len(_dump(value).encode("utf-8"))


def _lists(node: Any, path: tuple[str, ...] = (), depth: int = 0) -> list[tuple[str, ...]]:
    """The paths of the lists in `node` (mappings followed three levels deep)."""
    if isinstance(node, list):
        return [path]
    if not isinstance(node, dict) or depth > 2:
        return []
    return [p for key, value in node.items() for p in _lists(value, (*path, key), depth + 1)]


def _at(doc: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def json_lists_page(
    doc: dict,
    uri: str,
    budget: int,
    list_path: str = "",
    offset: int = 0,
    keep: tuple[str, ...] = (),
) -> str:
    """`doc` as compact JSON when it fits `budget`; else its largest lists cut so that it
    fits, each cut list `X` with an `X_page` beside it (shown, total, the URI of its next
    page); the lists named in `keep` (dotted) are cut last. With `list_path` (dotted, as
    `X_page` names it) one page of that list alone."""
    if list_path:
        path = tuple(list_path.split("."))
        if path not in _lists(doc):
            known = ", ".join(".".join(p) for p in _lists(doc)) or "none"
            raise ResourceNotFoundError(f"no list {list_path!r} here; its lists: {known}")
        items = _at(doc, path)
        return _dump(_list_page(items, f"{uri}?list={list_path}", budget, offset, list_path))
    if offset:
        raise ResourceNotFoundError("offset pages one list: name it with ?list=")
    if _size(doc) <= budget:
        return _dump(doc)
    order = sorted(_lists(doc), key=lambda p: (".".join(p) in keep, -_size(_at(doc, p))))
    for path in order:
        parent, key = _at(doc, path[:-1]), path[-1]
        items = parent[key]
        parent[key] = []
        room = budget - MARGIN - _size(doc)
        kept: list[Any] = []
        for item in items:
            room -= _size(item) + 1
            if room < 0:
                break
            kept.append(item)
        parent[key] = kept
        dotted = ".".join(path)
        parent[f"{key}_page"] = {
            "shown": len(kept),
            "total": len(items),
            "next": f"{uri}?list={dotted}&offset={len(kept)}" if len(kept) < len(items) else None,
        }
        if _size(doc) <= budget:
            break
    return _dump(doc)


def _list_page(items: list, uri: str, budget: int, offset: int, name: str) -> dict:
    page: dict[str, Any] = {"list": name, "offset": offset, "total": len(items), "items": []}
    room = budget - MARGIN - _size(page)
    for item in items[offset:]:
        room -= _size(item) + 1
        if room < 0 and page["items"]:
            break
        page["items"].append(item)
    end = offset + len(page["items"])
    page["next"] = f"{uri}&offset={end}" if end < len(items) else None
    return page
