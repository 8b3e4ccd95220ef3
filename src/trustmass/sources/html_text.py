"""Visible text of an HTML page (stdlib parser) and the rule that drops pages contained in others.

Used for the Debian Administrator's Handbook corpus (:mod:`trustmass.sources.corpora`); no I/O here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from html.parser import HTMLParser

__all__ = ["SKIP_CLASSES", "SKIP_IDS", "SKIP_TAGS", "drop_contained", "html_to_text"]

#: elements whose text is never content
SKIP_TAGS = frozenset({"script", "style", "nav", "head", "noscript", "template"})
#: Publican/DocBook navigation: tables of contents (which repeat every section title of a chapter),
#: previous/next bars and the download banner
SKIP_CLASSES = frozenset(
    {"toc", "docnav", "navheader", "navfooter", "list-of-tables", "list-of-figures", "list-of-examples"}
)
SKIP_IDS = frozenset({"banner"})
_BLOCK = frozenset(
    {
        "p",
        "div",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "table",
        "blockquote",
        "pre",
        "section",
        "article",
        "ul",
        "ol",
        "dl",
        "figure",
        "title",
    }
)
_LINE = frozenset({"li", "dt", "dd", "tr", "br", "caption", "figcaption"})
_ASCII_SPACE = re.compile(r"[ \t\n\r\f\v]+")
_VOID = frozenset(
    {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}
)


class _TextExtractor(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[tuple[str, str]] = []  # (text, kind): kind is "text", "pre" or "break"
        self.stack: list[tuple[str, bool]] = []  # (tag, skipping)
        self.skipping = 0
        self.pre = 0

    def handle_starttag(self, tag, attrs):
        self._break(tag)
        if tag in _VOID:
            return
        a = dict(attrs)
        classes = set((a.get("class") or "").split())
        skip = tag in SKIP_TAGS or bool(classes & SKIP_CLASSES) or a.get("id") in SKIP_IDS
        self.stack.append((tag, skip))
        self.skipping += skip
        self.pre += tag == "pre"

    def handle_startendtag(self, tag, attrs):
        self._break(tag)

    def handle_endtag(self, tag):
        if tag in _VOID:
            return
        # pop to the matching open tag (tolerates unclosed children)
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for t, skip in self.stack[i:]:
                    self.skipping -= skip
                    self.pre -= t == "pre"
                del self.stack[i:]
                break
        self._break(tag)

    def handle_data(self, data):
        if not self.skipping:
            self.parts.append((data, "pre" if self.pre > 0 else "text"))

    def _break(self, tag):
        if tag in _BLOCK:
            self.parts.append(("\n\n", "break"))
        elif tag in _LINE:
            self.parts.append(("\n", "break"))

    def text(self) -> str:
        out: list[str] = []

        def at_line_start() -> bool:
            return not out or out[-1].endswith("\n")

        for data, kind in self.parts:
            if kind == "break":  # from a block or line element
                if out:
                    out[-1] = out[-1].rstrip(" ")
                if data == "\n\n" or not at_line_start():  # consecutive line breaks count once
                    out.append(data)
            elif kind == "pre":  # inside <pre>: exactly as written
                out.append(data)
            else:
                chunk = _ASCII_SPACE.sub(" ", data)  # no-break spaces (French typography) are kept
                if at_line_start():
                    chunk = chunk.lstrip(" ")
                if chunk:
                    out.append(chunk)
        return re.sub(r"\n{3,}", "\n\n", "".join(out)).strip()


def html_to_text(html: str) -> str:
    """Visible text of an HTML page with the stdlib parser.

    Dropped: ``script``, ``style``, ``nav``, ``head`` (so the ``<title>`` too), and navigation by class
    or id (:data:`SKIP_CLASSES`, :data:`SKIP_IDS`): tables of contents, prev/next bars, the download
    banner.  Block elements become paragraph breaks, list items/rows/``<br>`` line breaks; runs of
    ASCII white space collapse to one space except inside ``<pre>`` (no-break spaces are kept); at
    most one blank line in a row.
    """
    parser = _TextExtractor()
    parser.feed(html)
    parser.close()
    return parser.text()


def drop_contained(pages: Sequence[tuple[str, str]]) -> tuple[list[tuple[str, str]], list[dict]]:
    """Remove pages whose text occurs inside another page; return ``(kept, dropped)``.

    The rule: compare texts with white space collapsed; a page whose text is a substring of another
    page's text is dropped (of identical pages the first in order is kept).  Longer pages are never
    dropped for a shorter one, so no text is lost.  ``dropped`` lists ``{page, contained_in}``.
    """
    norm = [re.sub(r"\s+", " ", text).strip() for _, text in pages]
    dropped, kept = [], []
    for i, (name, text) in enumerate(pages):
        host = None
        for j, other in enumerate(norm):
            if i == j or len(other) < len(norm[i]):
                continue
            if norm[i] in other and (len(other) > len(norm[i]) or j < i):
                host = pages[j][0]
                break
        if host is None:
            kept.append((name, text))
        else:
            dropped.append({"page": name, "contained_in": host})
    return kept, dropped
