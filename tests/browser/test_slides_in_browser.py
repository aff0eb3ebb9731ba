"""The slide decks work offline in a real browser: opened from disk in headless Chromium with the
network blocked, a deck shows one slide at a time, the arrow keys move between slides, and every
equation (MathML) and figure of every slide renders, asking the network for nothing.

Needs Debian's Chromium (``ATTN_CHROMIUM`` overrides the path); skipped with the reason without it. The
offline page is the static site's (tests/browser/test_site_in_browser.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_site_in_browser import offline_page  # noqa: F401, F811 - the static site test's offline Chromium page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tool_loader import ROOT, load_tool  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:playwright.*"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:greenlet.*")]

# What the current slide shows: its number, the slides visible, its equations and figures.
INSPECT = """() => {
  const visible = el => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0; };
  const slides = [...document.querySelectorAll('section.slide')];
  const current = slides.filter(visible);
  const maths = current.flatMap(s => [...s.querySelectorAll('math')]);
  const images = current.flatMap(s => [...s.querySelectorAll('img')]);
  return {count: slides.length, visible: current.length, index: slides.indexOf(current[0]),
          counter: document.querySelector('.deck-counter').textContent, hash: location.hash,
          maths: maths.length, drawn: maths.filter(visible).length,
          images: images.map(img => ({loaded: img.complete && img.naturalWidth > 0,
                                       alt: img.getAttribute('alt') || ''}))};
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    return load_tool("slides").build(tmp_path_factory.mktemp("slides"), {"03", "13"})


def test_decks_step_through_every_slide_offline(decks, offline_page):  # noqa: F811 - the imported fixture
    page, blocked = offline_page
    assert len(decks) == 2 and all(path.parent.parent != ROOT for path in decks)
    for path in decks:
        blocked.clear()
        page.goto(path.as_uri(), wait_until="load")
        seen = page.evaluate(INSPECT)
        total, maths = seen["count"], 0
        assert total >= 5 and seen["visible"] == 1 and seen["index"] == 0 and seen["counter"] == f"1 / {total}"
        for k in range(total):
            seen = page.evaluate(INSPECT)
            assert seen["visible"] == 1 and seen["index"] == k, (path.name, k, seen)
            assert seen["counter"] == f"{k + 1} / {total}" and seen["hash"] == f"#{k + 1}"
            assert seen["drawn"] == seen["maths"], f"{path.name} slide {k + 1}: an equation not drawn"
            assert all(image["loaded"] and len(image["alt"]) > 10 for image in seen["images"]), (path.name, k)
            maths += seen["maths"]
            page.keyboard.press("ArrowRight")
        assert page.evaluate(INSPECT)["index"] == total - 1  # the last slide stays
        page.keyboard.press("ArrowLeft")
        assert page.evaluate(INSPECT)["index"] == total - 2
        page.keyboard.press("Home")
        assert page.evaluate(INSPECT)["index"] == 0
        page.goto(path.as_uri() + "#3", wait_until="load")
        assert page.evaluate(INSPECT)["index"] == 2
        assert maths > 0, f"{path.name}: no equation on any slide"
        assert not blocked, f"{path.name} asked the network for {blocked[:3]}"
