"""The HTML view of the package's Markdown (what Snakemake's report shows for tables and claims)."""

from trustmass.report.html_page import markdown_page

TEXT = """## Table 9 — a <title> & more

### All documents

| s | T (\\|Δ\\| < 0.05) | note |
|---|---|---|
| 8 | 0.12 [0.10, 0.14] | `code` and **bold** |
| 16 | – | _x_ |

_the caption's note_

- a bullet
"""


def test_headings_tables_notes_and_escaping():
    page = markdown_page(TEXT, "t9")
    assert page.startswith("<!DOCTYPE html>") and "<title>t9</title>" in page
    assert "<h2>Table 9 — a &lt;title&gt; &amp; more</h2>" in page and "<h3>All documents</h3>" in page
    assert "<th>T (|Δ| &lt; 0.05)</th>" in page  # an escaped pipe stays inside its cell
    assert page.count("<tr>") == 3 and "<td>0.12 [0.10, 0.14]</td>" in page
    assert "<code>code</code> and <strong>bold</strong>" in page
    assert "<p><em>the caption's note</em></p>" in page and "<ul><li>a bullet</li></ul>" in page
    assert "http" not in page.replace('lang="en"', "")  # nothing fetched from elsewhere
