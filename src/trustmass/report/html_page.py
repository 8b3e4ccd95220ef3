"""A self-contained HTML page of the Markdown this package writes (tables and the claims report), so that
Snakemake's report shows them inline: it opens HTML in its viewer, and offers anything else (CSV,
Markdown) only as a download.

The Markdown is the subset :mod:`trustmass.report.tables` and the claims report write: ``#``-headings,
pipe tables (a header row, a rule row, body rows), ``_italic_`` notes, ``**bold**`` and ``code``
spans, bullet lines, paragraphs and folds (a ``<details><summary>...</summary>`` line opens one, ``</details>``
closes it, as GitHub renders them).  Everything else is escaped; nothing is fetched from elsewhere.
"""

from __future__ import annotations

import html
import re

__all__ = ["markdown_page"]

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em; color: #1e293b; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #cbd5e1; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f1f5f9; }
tr:nth-child(even) td { background: #f8fafc; }
code { background: #f1f5f9; padding: 0 3px; }
em { color: #475569; }
"""


def _inline(text: str) -> str:
    out = html.escape(text, quote=False)
    out = re.sub(r"`([^`]+)`", r"<code>\1</code>", out)
    out = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", out)
    return re.sub(r"(?<![\w])_([^_]+)_(?![\w])", r"<em>\1</em>", out)


def _cells(line: str) -> list[str]:
    """A pipe-table row's cells (``\\|`` is a pipe inside a cell)."""
    inner = line.strip().removeprefix("|").removesuffix("|")
    return [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", inner)]


def _is_rule(line: str) -> bool:
    return bool(re.fullmatch(r"\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?", line.strip()))


def markdown_page(text: str, title: str) -> str:
    """``text`` (Markdown) as one HTML page titled ``title``."""
    lines, body, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i]
        heading = re.match(r"(#{1,6})\s+(.*)", line)
        fold = re.fullmatch(r"\s*<details><summary>(.*)</summary>\s*", line)
        if fold:
            body.append(f"<details><summary>{_inline(fold.group(1))}</summary>")
        elif line.strip() == "</details>":
            body.append("</details>")
        elif heading:
            level = len(heading.group(1))
            body.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.lstrip().startswith("|") and i + 1 < len(lines) and _is_rule(lines[i + 1]):
            rows = [f"<tr>{''.join(f'<th>{_inline(c)}</th>' for c in _cells(line))}</tr>"]
            i += 2
            while i < len(lines) and lines[i].lstrip().startswith("|"):
                rows.append(f"<tr>{''.join(f'<td>{_inline(c)}</td>' for c in _cells(lines[i]))}</tr>")
                i += 1
            body.append("<table>" + "".join(rows) + "</table>")
            continue
        elif re.match(r"\s*[-*]\s+", line):
            items = []
            while i < len(lines) and re.match(r"\s*[-*]\s+", lines[i]):
                item = re.sub(r"^\s*[-*]\s+", "", lines[i])
                items.append(f"<li>{_inline(item)}</li>")
                i += 1
            body.append("<ul>" + "".join(items) + "</ul>")
            continue
        elif line.strip():
            body.append(f"<p>{_inline(line)}</p>")
        i += 1
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )
