"""What of a page rooflens wrote could act: its script elements, its attributes (event
handlers, links), read with the standard library's HTML parser."""

from __future__ import annotations

from html.parser import HTMLParser


class PageTags(HTMLParser):
    """Every start tag with its attributes, and the text of each script element."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_endtag(self, tag):
        self._in_script = False if tag == "script" else self._in_script

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data

    @property
    def handlers(self) -> list[str]:
        """Attributes that would run script (`on…`)."""
        return [k for _, attrs in self.tags for k in attrs if k.lower().startswith("on")]

    @property
    def links(self) -> list[str]:
        """Every `src` and `href` value."""
        return [v for _, attrs in self.tags for k, v in attrs.items() if k in ("src", "href")]
