"""What the back of the room reads, measured in headless Chromium at 1280x720 on every slide of every deck.

- **Figure text.** A figure's smallest text is measured from the text matplotlib drew in it (``slides.FIGURE_TEXT``,
  ``tools/slides.py --measure``; the deck writes it on the image as ``data-pt``) at the PNG's dpi (90), so on screen
  it measures ``pt * dpi / 72 * drawn width / natural width * slide zoom`` px: the image's natural and displayed
  widths and the slide's zoom are read in the page. Every figure is on a slide of its own, never scaled down, drawn
  at the size the deck gives it (``slides.figure_size``: enlarged until that text is 18 px, as far as a slide's
  full width and height allow; no stylesheet shrinks it), and every one measures 18 px or more (a figure drawn
  too wide or tall for its text fails: ``python tools/slides.py --figures`` says how large it may be). The
  smallest and the median are printed (``-s``).
- **Code lines.** No line of code wraps on a slide (a wrapped line starts at the left margin and misleads about
  indentation), except a line that Python cannot break (a long field of an f-string): the rendered lines of each
  code block, counted from the text's line boxes, are its lines.
- **Speaker notes.** Every slide, including one the browser cut from a tall slide, has notes, and no two slides of
  a deck the same ones.

Needs Debian's Chromium (``ATTN_CHROMIUM`` overrides the path); skipped with the reason without it.
"""

from __future__ import annotations

import math
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

MEASURE = """() => {
  const slide = document.querySelector('section.slide.current');
  const zoom = parseFloat(slide.dataset.zoom || '1');
  const figures = [...slide.querySelectorAll('img')].filter(i => i.offsetParent !== null).map(img => ({
    natural: img.naturalWidth, drawn: img.offsetWidth, styled: parseFloat(img.style.width),
    dpi: parseFloat(img.dataset.dpi), pt: parseFloat(img.dataset.pt), png: img.src.slice(0, 4000),
    alone: slide.querySelectorAll('.jp-Cell').length === 1}));
  const code = [...slide.querySelectorAll('.jp-InputArea pre')]
    .filter(e => e.offsetParent !== null && e.textContent.trim()).map(pre => {
      const range = document.createRange();
      range.selectNodeContents(pre);
      const tops = [...range.getClientRects()].filter(r => r.width > 0).map(r => r.top).sort((a, b) => a - b);
      return {rendered: tops.filter((t, i) => i === 0 || t - tops[i - 1] > 8).length, text: pre.textContent};
    });
  return {zoom, figures, code, notes: slide.dataset.notes || ''};
}"""


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    return slides.build(tmp_path_factory.mktemp("slides"))


def test_figure_text_code_lines_and_speaker_notes_on_every_slide(decks, offline_page):  # noqa: F811
    page, blocked = offline_page
    page.set_viewport_size({"width": 1280, "height": 720})
    sizes, problems = [], []
    for path in decks:
        page.goto(path.as_uri(), wait_until="load")
        count = page.evaluate("() => document.querySelectorAll('section.slide').length")
        notes = []
        for k in range(count):
            seen = page.evaluate(MEASURE)
            where = f"{path.name} slide {k + 1}"
            for figure in seen["figures"]:
                pt = figure["pt"]
                px = pt * figure["dpi"] / 72 * figure["drawn"] / figure["natural"] * seen["zoom"]
                sizes.append(px)
                png = figure["png"].split("base64,", 1)[1]
                size = slides.figure_size(png, pt)[0]
                full = slides.figure_text_px(png, size, pt)  # what the deck sized it for
                if abs(figure["drawn"] - figure["styled"]) > 1 or figure["styled"] != size:
                    problems.append((where, "a figure drawn at another size than the deck gave it",
                                     figure["drawn"], figure["styled"]))
                if not figure["alone"] or seen["zoom"] < 1:
                    problems.append((where, "a figure not on a slide of its own at full size", seen["zoom"]))
                if px < full - 0.1:
                    problems.append((where, "figure text smaller than its slide size gives", px, full))
                if px < slides.SMALLEST_FIGURE_PX - 0.1:
                    problems.append((where, "figure text under 18 px", px))
            for block in seen["code"]:
                lines = [line for line in block["text"].split("\n") if line.strip()]
                allowed = sum(math.ceil(len(line) / slides.CHARS_PER_LINE) - 1 for line in lines
                              if len(line) > slides.CHARS_PER_LINE and not line.lstrip().startswith("#"))
                if block["rendered"] > len(lines) + allowed:
                    problems.append((where, "a code line wrapped", block["text"][:80]))
            assert seen["notes"], f"{where}: no speaker notes"
            notes.append(seen["notes"])
            page.keyboard.press("ArrowRight")
        assert len(set(notes)) == len(notes), f"{path.name}: two slides share their speaker notes"
    assert not problems, problems[:5]
    assert sizes and not blocked
    at_18 = sum(px >= slides.SMALLEST_FIGURE_PX - 0.05 for px in sizes)
    print(f"\nfigures' smallest text (measured) on slides at 1280x720: smallest {min(sizes):.1f} px, median "
          f"{sorted(sizes)[len(sizes) // 2]:.1f} px, {at_18} of {len(sizes)} figures at {slides.SMALLEST_FIGURE_PX} px "
          "or more")
