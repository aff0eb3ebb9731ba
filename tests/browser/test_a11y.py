"""Every page of the static site and every slide deck meets WCAG 2.1 AA, as axe-core judges it, and
stays readable at 200 % zoom.

axe-core (bundled by axe-playwright-python, pinned) runs in headless Chromium with the rules tagged
``wcag2a``, ``wcag2aa``, ``wcag21a`` and ``wcag21aa``: colour contrast, links told apart by more than
colour, scrollable regions reachable by keyboard, alt text, names, headings... A deck is scanned with
its script's one-slide-at-a-time view switched off, so that every slide is on the page at once.

200 % zoom is a 1280-pixel screen seen as 640 CSS pixels: at that width no page scrolls sideways as a
whole, no text is cut off by a box that hides its overflow, and no two lines of text overlap.

Needs Debian's Chromium, like the other browser tests (skipped with the reason without it).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_site_in_browser import offline_page  # noqa: F401 - the static site test's offline Chromium page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tool_loader import ROOT, load_tool  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:playwright.*"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:greenlet.*")]

WCAG_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]},
           "resultTypes": ["violations"]}
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PAGES = ["site/index.html", "site/glossary.html",
         *(f"{kind}/{nb.stem}.html" for kind in ("site", "slides") for nb in NOTEBOOKS)]
ZOOMED = {"width": 640, "height": 800}  # a 1280 x 1600 screen at 200 %

# At the current width: the page's sideways overflow, text its box cuts off, and lines of text that overlap.
LAYOUT = """() => {
  const width = document.documentElement.clientWidth;
  const overflow = document.documentElement.scrollWidth - width;
  const cut = [];
  for (const el of document.querySelectorAll('body *')) {
    const style = getComputedStyle(el);
    if (!/hidden|clip/.test(style.overflowX + style.overflowY) || !el.textContent.trim()) continue;
    if (el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1)
      cut.push(el.outerHTML.slice(0, 120));
  }
  // One box per line of text (the client rects of each text node), then pairs that share more than a third of
  // the smaller one's area: a sweep over boxes sorted by their top edge.
  const boxes = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.textContent.trim() || node.parentElement.closest('math, svg')) continue;
    const range = document.createRange();
    range.selectNodeContents(node);
    for (const r of range.getClientRects()) if (r.width > 1 && r.height > 1) boxes.push({r, node});
  }
  boxes.sort((a, b) => a.r.top - b.r.top);
  const overlaps = [];
  for (let i = 0; i < boxes.length && overlaps.length < 5; i++) {
    const a = boxes[i].r;
    for (let j = i + 1; j < boxes.length && boxes[j].r.top < a.bottom; j++) {
      const b = boxes[j].r;
      const w = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const h = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (w > 0 && h > 0 && w * h > Math.min(a.width * a.height, b.width * b.height) / 3)
        overlaps.push([boxes[i].node.textContent.trim().slice(0, 40), boxes[j].node.textContent.trim().slice(0, 40)]);
    }
  }
  return {overflow, cut: cut.slice(0, 5), overlaps};
}"""


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A folder with every page of the site (site/) and every slide deck (slides/)."""
    out = tmp_path_factory.mktemp("a11y")
    pages = [*load_tool("build_site").build(out / "site", ROOT / "notebooks"),
             *load_tool("slides").build(out / "slides")]
    assert sorted(str(path.relative_to(out)) for path in pages) == sorted(PAGES)
    return out


def _open(page, path: Path) -> None:
    page.goto(path.as_uri(), wait_until="load")
    page.evaluate("() => document.documentElement.classList.remove('deck')")  # a deck: every slide at once


def violation_report(violations: list[dict]) -> str:
    """axe-core's violations, one paragraph per rule with its first element."""
    return "\n".join(f"  {v['id']} ({len(v['nodes'])}): {v['help']}; e.g. {v['nodes'][0]['html'][:160]}\n"
                     f"    {v['nodes'][0]['failureSummary'][:300]}" for v in violations)


@pytest.mark.parametrize("name", PAGES)
def test_page_has_no_wcag_aa_violation(name, built, offline_page):  # noqa: F811 - the imported fixture
    from axe_playwright_python.sync_playwright import Axe

    page, _ = offline_page
    page.set_viewport_size({"width": 1280, "height": 800})
    _open(page, built / name)
    violations = Axe().run(page, options=WCAG_AA).response["violations"]
    assert not violations, f"{name}: axe-core found WCAG 2.1 AA violations:\n{violation_report(violations)}"


@pytest.mark.parametrize("name", PAGES)
def test_page_reads_at_200_percent_zoom(name, built, offline_page):  # noqa: F811 - the imported fixture
    page, _ = offline_page
    page.set_viewport_size(ZOOMED)
    _open(page, built / name)
    seen = page.evaluate(LAYOUT)
    assert seen["overflow"] <= 1, f"{name}: the page scrolls sideways by {seen['overflow']} px at 640 px wide"
    assert not seen["cut"], f"{name}: text cut off at 640 px wide: {seen['cut']}"
    assert not seen["overlaps"], f"{name}: lines of text overlap at 640 px wide: {seen['overlaps']}"


def test_the_checks_catch_a_bad_page(offline_page, tmp_path):  # noqa: F811 - the imported fixture
    """Both tests' eyes: grey on white, a link told by colour alone, a scrolling box the Tab key cannot reach,
    two lines drawn over each other, a box wider than the screen and text cut off are all caught."""
    from axe_playwright_python.sync_playwright import Axe

    page, _ = offline_page
    page.set_viewport_size(ZOOMED)
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><html lang="en"><head><title>bad</title></head><body><main>'
                   '<p style="color:#999">Grey text</p><p style="color:#222">Text with <a href="#x" '
                   'style="color:#333;text-decoration:none">a link</a> in it</p>'
                   '<p style="margin:0">First line of text</p><p style="margin:-1.1em 0 0">Second line of text</p>'
                   '<pre style="width:100px;overflow:auto">a line of code wider than its box, to scroll</pre>'
                   '<div style="width:900px">wide</div><div style="overflow:hidden;height:5px">cut off text</div>'
                   '</main></body></html>', encoding="utf-8")
    page.goto(bad.as_uri())
    seen = page.evaluate(LAYOUT)
    assert seen["overflow"] > 200 and len(seen["cut"]) == 1 and seen["overlaps"]
    found = {v["id"] for v in Axe().run(page, options=WCAG_AA).response["violations"]}
    assert {"color-contrast", "link-in-text-block", "scrollable-region-focusable"} <= found
