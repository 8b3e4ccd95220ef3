"""The HTML report as a person sees it: headless Chromium (Debian's package) opens ``report.html`` of the
tiny study, and every figure and table of the run is reached the way a reader reaches it, by clicking:
the category in the sidebar, then the file's eye button, then the view shows it (an image that decoded
to its own size, a table with rows).  Screenshots of one figure and one table are saved under
``$TRUSTMASS_SCREENSHOTS`` (default: the test's temporary folder) for a person to look at.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from conftest import REPO, Workflow

sys.path.insert(0, str(REPO / "tests" / "workflow"))  # the tiny study of the end-to-end test
from cdp import Browser  # noqa: E402
from tiny_study import TINY, tiny_study_config  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.workflow]

#: one click through the report: the category, then the file's eye button; what the view then shows
SHOW = r"""
(async ([category, path, want]) => {
  const wait = ms => new Promise(r => setTimeout(r, ms));
  const leaf = text => [...document.querySelectorAll('*')].filter(
      e => e.childElementCount === 0 && e.textContent.trim() === text).pop();
  const home = document.querySelector('nav a, nav button');
  leaf('Results') ? leaf('Results').click() : home && home.click();
  await wait(200);
  const entry = leaf(category);
  if (!entry) return {error: 'no category ' + category + ' in the sidebar'};
  entry.click();
  await wait(300);
  const cell = leaf(path);
  if (!cell) return {error: path + ' is not listed under ' + category};
  cell.closest('tr').querySelector('a[iconname="eye"]').click();
  for (let i = 0; i < 50; i++) {  // up to 5 s for the view to render
    await wait(100);
    const img = [...document.querySelectorAll('img')].find(e => e.complete && e.naturalWidth > 0 && e.width > 200);
    const frame = document.querySelector('iframe');
    if (img && want === 'image') {
      document.querySelectorAll('*').forEach(el => { if (el.scrollTop) el.scrollTop = 0; });  // its top in view
      await wait(100);
      return {kind: 'image', width: img.naturalWidth, height: img.naturalHeight};
    }
    if (frame && want === 'page' && frame.src.startsWith('data:text/html')) {
      const page = decodeURIComponent(escape(atob(frame.src.split(',')[1])));  // the page the viewer shows
      return {kind: 'page', tables: (page.match(/<table>/g) || []).length, rows: (page.match(/<tr>/g) || []).length};
    }
  }
  return {error: 'the view of ' + path + ' did not show ' + (want === 'image' ? 'an image' : 'an HTML page')};
})
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    wf = Workflow(tmp_path_factory.mktemp("report"))
    config = wf.write_config("tiny.yaml", TINY + tiny_study_config(wf.workdir))
    done = wf.run("--cores", "2", "--configfile", str(config), timeout=1800)
    assert done.returncode == 0, done.output[-4000:]
    done = wf.run("--cores", "2", "--configfile", str(config), "--report", "results/report.html")
    assert done.returncode == 0, done.output[-4000:]
    return wf.workdir


def test_every_figure_and_table_is_reachable_in_the_browser(report):
    figures = sorted(str(p.relative_to(report)) for p in (report / "results/figures").glob("*.png"))
    tables = sorted(str(p.relative_to(report).with_suffix(".html")) for p in (report / "results/tables").glob("*.csv"))
    assert len(figures) >= 4 and len(tables) >= 10, (figures, tables)
    shots = Path(os.environ.get("TRUSTMASS_SCREENSHOTS") or report / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    seen = {}
    with Browser() as browser:
        browser.goto((report / "results/report.html").as_uri())
        for category, paths, want in (
            ("Figures", figures, "image"),
            ("Tables", tables, "page"),
            ("Claims", ["results/claims.html"], "page"),
        ):
            for path in paths:
                # the view after the eye button, before the next click replaces it
                seen[path] = browser.evaluate(f"{SHOW}({json.dumps([category, path, want])})")
                if path in (figures[0], "results/tables/table3_wtl.html", "results/claims.html"):
                    browser.screenshot(shots / (Path(path).stem + ".png"))
    print(f"screenshots in {shots}")
    failed = {path: got for path, got in seen.items() if "error" in got}
    assert failed == {}, failed
    assert all(seen[f]["width"] > 300 for f in figures), {f: seen[f] for f in figures}
    empty = {t: seen[t] for t in tables if seen[t]["tables"] == 0}  # a switched-off panel says so, without a table
    assert len(empty) < len(tables) / 2 and seen["results/claims.html"]["rows"] > 100, empty
    assert (shots / (Path(figures[0]).stem + ".png")).stat().st_size > 10_000
