"""The slide decks in front of a class, in headless Chromium with the network blocked: every slide of every
deck fits a 1280x720 projector (cut at a cell, then scaled, never below ``MIN_ZOOM``) with its code at 18 px or
more, display equations never scroll, a clicker's Page Down and Space go through a slide that does not fit
before the next one, and S opens the speaker notes in a window of their own (never on the projected page), in
colours that meet WCAG 2.1 AA.

Needs Debian's Chromium (``ATTN_CHROMIUM`` overrides the path); skipped with the reason without it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from test_site_in_browser import offline_page  # noqa: F401 - the static site test's offline Chromium page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tool_loader import load_tool  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:playwright.*"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:greenlet.*")]

slides = load_tool("slides")

# The current slide: its index, its zoom, whether the page scrolls, and its display equations.
SLIDE = """() => {
  const root = document.documentElement, all = [...document.querySelectorAll('section.slide')];
  const slide = document.querySelector('section.slide.current'), box = slide.getBoundingClientRect();
  const maths = [...slide.querySelectorAll('math[display="block"]')];
  const code = [...slide.querySelectorAll('pre')].filter(e => e.offsetParent !== null && e.textContent.trim());
  return {index: all.indexOf(slide), count: all.length, zoom: parseFloat(slide.dataset.zoom),
          code_px: Math.min(1000, ...code.map(e => parseFloat(getComputedStyle(e).fontSize)))
                   * parseFloat(slide.dataset.zoom),
          height: root.scrollHeight, width: root.scrollWidth, top: document.scrollingElement.scrollTop,
          inner: [innerWidth, innerHeight],
          scrolling: maths.filter(m => getComputedStyle(m).overflowX !== 'visible').length,
          spilling: maths.filter(m => m.getBoundingClientRect().right > box.right + 1).length};
}"""

# WCAG 2.1 contrast of an element's text against the first opaque background behind it.
CONTRAST = """(selector) => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = c => { const v = rgb(c).slice(0, 3).map(x => { x /= 255;
    return x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4); });
    return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2]; };
  return [...document.querySelectorAll(selector)].map(el => {
    let back = el;
    while (back && (rgb(getComputedStyle(back).backgroundColor)[3] === 0)) back = back.parentElement;
    const bg = back ? getComputedStyle(back).backgroundColor : 'rgb(255, 255, 255)';
    const [a, b] = [lum(getComputedStyle(el).color), lum(bg)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
  });
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    return slides.build(tmp_path_factory.mktemp("slides"))


def test_every_slide_of_every_deck_fits_a_1280_by_720_screen(decks, offline_page):  # noqa: F811
    page, blocked = offline_page
    page.set_viewport_size({"width": 1280, "height": 720})
    assert len(decks) == len(list(slides.core_path.notebooks().values()))
    for path in decks:
        page.goto(path.as_uri(), wait_until="load")
        seen = page.evaluate(SLIDE)
        for k in range(seen["count"]):
            seen = page.evaluate(SLIDE)
            where = f"{path.name} slide {k + 1}"
            assert seen["index"] == k and seen["inner"] == [1280, 720], where
            assert seen["height"] <= 720 and seen["width"] <= 1280, (where, seen)
            assert seen["zoom"] >= slides.MIN_ZOOM, (where, seen)
            assert seen["code_px"] >= slides.SMALLEST_CODE_PX, (where, "code too small to read from the back", seen)
            assert seen["scrolling"] == 0 and seen["spilling"] == 0, (where, "a display equation scrolls or spills")
            page.keyboard.press("ArrowRight")
    assert not blocked, blocked[:3]


def test_page_down_and_space_go_through_a_slide_that_does_not_fit_before_the_next(decks, offline_page):  # noqa: F811
    page, _ = offline_page
    page.set_viewport_size({"width": 900, "height": 260})  # a window too small for some slides even when scaled
    deck = next(path for path in decks if path.name.startswith("12"))
    page.goto(deck.as_uri(), wait_until="load")
    tall = None
    for _ in range(page.evaluate(SLIDE)["count"]):
        seen = page.evaluate(SLIDE)
        if seen["height"] > 260:
            tall = seen
            break
        page.keyboard.press("ArrowRight")
    assert tall, "no slide taller than the window: the test needs one"
    for key in ("PageDown", " "):
        page.goto(f"{deck.as_uri()}#{tall['index'] + 1}", wait_until="load")
        page.reload(wait_until="load")
        assert page.evaluate(SLIDE)["index"] == tall["index"]
        presses, seen = 0, page.evaluate(SLIDE)
        while seen["index"] == tall["index"]:
            bottom_reached = seen["top"] + 260 >= seen["height"] - 1
            page.keyboard.press(key)
            presses += 1
            seen = page.evaluate(SLIDE)
            assert seen["index"] == tall["index"] or bottom_reached, f"{key!r} left before the end of the slide"
        assert presses >= 2 and seen["index"] == tall["index"] + 1 and seen["top"] == 0, key
    page.keyboard.press("PageUp")  # from the top of a slide, Page Up goes back to the one before
    assert page.evaluate(SLIDE)["index"] == tall["index"]
    page.keyboard.press("ArrowRight")  # an arrow changes slides at once, wherever the slide is scrolled
    assert page.evaluate(SLIDE)["index"] == tall["index"] + 1


def test_s_opens_the_speaker_notes_in_a_window_of_their_own_never_on_the_projected_one(decks, offline_page):  # noqa: F811
    page, _ = offline_page
    page.set_viewport_size({"width": 1280, "height": 720})
    page.goto(decks[3].as_uri(), wait_until="load")
    projected = page.evaluate("() => document.body.innerText")
    notes_text = slides.speaker_notes(decks[3].name[:2])
    assert "Discussion" in notes_text and "Discussion" not in projected
    with page.context.expect_page() as opened:
        page.keyboard.press("s")
    notes = opened.value
    notes.wait_for_load_state()
    assert "Discussion" in notes.inner_text("body") and "Slide 1 / " in notes.inner_text("#now")
    assert "Discussion" not in page.evaluate("() => document.body.innerText"), "the notes showed on the projector"
    first = notes.inner_text("#here")
    assert "Say: " in first  # this slide's own notes, above the notebook's
    page.bring_to_front()
    page.keyboard.press("ArrowRight")  # the presenter's window follows the projected slide
    assert "Slide 2 / " in notes.inner_text("#now")
    assert notes.inner_text("#here") and notes.inner_text("#here") != first, "the same notes on two slides"
    assert notes.inner_text("#here") not in page.evaluate("() => document.body.innerText")
    for selector in ("p", "li", "h1", "h2", "h3"):
        ratios = notes.evaluate(CONTRAST, selector)
        assert all(ratio >= 4.5 for ratio in ratios), (selector, ratios)
    assert notes.evaluate(CONTRAST, "p")
    assert all(ratio >= 4.5 for ratio in page.evaluate(CONTRAST, ".deck-counter"))
    page.keyboard.press("s")  # S again brings the same window forward: no second one
    page.wait_for_timeout(300)
    assert len(page.context.pages) == 2, [p.url for p in page.context.pages]
    notes.close()
