#!/usr/bin/env python3
"""Write one slide deck per notebook for a classroom walk-through: offline, one file each.

    python3 run.py slides                          # the usual way: writes slides/NN_topic.html
    python tools/slides.py [--out DIR] [NN ...]

A deck is the notebook's core path (the cells tagged ``optional`` are left out), rendered from
its stored outputs exactly as the static site renders it (tools/build_site.py: equations as
MathML, figures embedded as PNG, widgets as a note): nothing is executed and nothing is loaded
from the network. A new slide starts at every heading, at a paragraph once a slide holds
``CELLS_PER_SLIDE`` cells or a cell with a figure and two more, and right after a prediction, so that
the question is on one slide and its answer on the next. A check of a prediction or an exercise left
as ``...`` (or ``raise NotImplementedError``) shows no output: no "Not yet" box in front of the class.

A few lines of script show one slide at a time, scaled down to fit the window when taller or wider
(down to ``MIN_ZOOM``; a slide taller still scrolls): → / ← change slides; Space / Page Down (a
clicker) and Page Up first scroll through a slide that does not fit, then change slides; Home / End;
``#7`` in the address opens slide 7; **S** shows or hides the speaker notes (the teaching guide's
predictions and discussion questions for this notebook). Without the script (or when printed) the deck
reads as one page, slide after slide.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
import build_site as site  # noqa: E402 - the site's renderer, a sibling script
import core_path  # noqa: E402 - the series' notebooks

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "slides"
GUIDE = ROOT / "docs" / "teaching-guide.md"
CELLS_PER_SLIDE = 4
WORDS_PER_PIECE = 120  # a longer markdown cell is cut between paragraphs, so that a slide can be cut there
MIN_ZOOM = 0.55  # the smallest scale a slide is shown at: 22 px prose at about 12 px
SPLIT_AT = 1.25  # a slide taller than this many windows is cut at a cell, in the browser, for its window size
HEADING = re.compile(r"^#{1,4}\s", re.MULTILINE)
UNFILLED = re.compile(r"^(\w+) = \.\.\.|^def (\w+)\(", re.MULTILINE)
CHECK = re.compile(r"\bcheck_\w+\((.*)\)", re.DOTALL)

CSS = """
html:root { --jp-content-font-size1: 22px; --jp-code-font-size: 17px; --jp-content-line-height: 1.5; }
body.jp-Notebook { margin: 0; }
.jp-RenderedHTMLCommon h1 { font-size: 2rem; } .jp-RenderedHTMLCommon h2 { font-size: 1.7rem; }
section.slide { box-sizing: border-box; max-width: 76rem; margin: 0 auto; padding: 1rem 2rem 2.2rem; }
html.deck { overflow-x: hidden; }
html.deck section.slide { display: none; }
html.deck section.slide.current { display: block; }
html.deck math[display="block"] { overflow: visible; max-width: none; }
.deck-counter { position: fixed; right: 1rem; bottom: 0.6rem; font: 0.9rem system-ui, sans-serif; color: #595959; }
html:not(.deck) .deck-counter, html:not(.deck) .deck-notes { display: none; }
.deck-notes { position: fixed; top: 0; right: 0; bottom: 0; width: min(34rem, 45vw); overflow-y: auto;
  box-sizing: border-box; padding: 1rem 1.4rem; background: #fffdf5; color: #1a1a1a; border-left: 4px solid #8a4500;
  box-shadow: -4px 0 12px rgba(0, 0, 0, 0.25); font: 1.05rem/1.45 system-ui, sans-serif; }
.deck-notes[hidden] { display: none; }
.deck-notes h2 { font-size: 1.2rem; margin: 0 0 0.6rem; }
.deck-notes h3 { font-size: 1.05rem; margin: 1rem 0 0.3rem; color: #8a4500; }
.deck-notes code { background: #f0ede2; padding: 0 0.2em; }
@media print { html.deck section.slide { display: block; zoom: 1 !important; break-after: page; }
  .deck-counter, .deck-notes { display: none; } }
"""

SCRIPT = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var counter = document.querySelector('.deck-counter');
  var notes = document.querySelector('.deck-notes');
  var root = document.documentElement;
  var at = 0;
  root.classList.add('deck');
  function split(slide) {  // cut a slide taller than SPLIT_AT windows before the first cell that overflows
    slide.classList.add('current');
    var cells = Array.prototype.slice.call(slide.children);
    var top = slide.getBoundingClientRect().top, limit = top + SPLIT_AT * innerHeight;
    var cut = cells.findIndex(function (c, k) { return k > 0 && c.getBoundingClientRect().bottom > limit; });
    if (cut > 1 && cells[cut - 1].classList.contains('jp-MarkdownCell')) cut -= 1;  // keep a lead-in with its cell
    slide.classList.remove('current');
    if (cut < 1) return [slide];
    var rest = document.createElement('section');
    rest.className = 'slide';
    cells.slice(cut).forEach(function (c) { rest.appendChild(c); });
    slide.after(rest);
    return [slide].concat(split(rest));
  }
  slides = slides.reduce(function (all, s) { return all.concat(split(s)); }, []);
  function fit(slide) {  // scale the slide down until the page neither scrolls nor spills sideways
    var zoom = 1;
    slide.style.zoom = '';
    for (var i = 0; i < 8; i++) {
      var over = Math.max(root.scrollHeight / innerHeight, root.scrollWidth / innerWidth);
      if (over <= 1 || zoom <= MIN_ZOOM) break;
      zoom = Math.max(MIN_ZOOM, zoom * Math.min(0.98, 1 / over));
      slide.style.zoom = zoom;
    }
    slide.dataset.zoom = zoom;
  }
  function show(n) {
    at = Math.max(0, Math.min(slides.length - 1, n));
    slides.forEach(function (s, i) { s.classList.toggle('current', i === at); });
    window.scrollTo(0, 0);
    fit(slides[at]);
    counter.textContent = (at + 1) + ' / ' + slides.length;
    if (location.hash !== '#' + (at + 1)) history.replaceState(null, '', '#' + (at + 1));
  }
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var step = {ArrowRight: 1, PageDown: 1, ' ': 1, ArrowLeft: -1, PageUp: -1}[e.key];
    var page = document.scrollingElement;
    if (e.key === 's' || e.key === 'S') { notes.hidden = !notes.hidden; return; }
    if (!step && e.key === 'Home') show(0);
    else if (!step && e.key === 'End') show(slides.length - 1);
    if (!step) return;
    e.preventDefault();
    var rest = step > 0 ? page.scrollHeight - innerHeight - page.scrollTop : page.scrollTop;
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft' && rest > 1) {  // a clicker: the rest of a tall slide first
      window.scrollBy(0, step * Math.min(rest, 0.85 * innerHeight));
    } else {
      show(at + step);
    }
  });
  function fromHash() { show((parseInt(location.hash.slice(1), 10) || 1) - 1); }
  window.addEventListener('hashchange', fromHash);
  window.addEventListener('resize', function () { fit(slides[at]); });
  fromHash();
})();
""".replace("MIN_ZOOM", str(MIN_ZOOM)).replace("SPLIT_AT", str(SPLIT_AT))

TEMPLATE = """{%- extends 'site.html.j2' -%}
{% block any_cell %}
{%- if cell.metadata.get('slide_start') %}</section><section class="slide">{% endif -%}
{{ super() }}
{%- endblock any_cell %}
{%- block body_header -%}
<body class="jp-Notebook" data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light">
<main><section class="slide">
{%- endblock body_header -%}
{% block body_footer %}
</section></main>
<div class="deck-counter" aria-live="polite"></div>
<aside class="deck-notes" aria-label="Speaker notes" tabindex="0" hidden>{{ resources.deck.notes }}</aside>
<script>{{ resources.deck.script }}</script>
</body>
{% endblock body_footer %}
"""


def core_path_cells(nb):
    """The notebook's cells without the ``optional`` ones, markdown split at its headings, the outputs of
    checks of unfilled answers dropped, each cell that opens a slide marked ``slide_start``."""
    cells, unfilled = [], set()
    for cell in nb.cells:
        if "optional" in cell.metadata.get("tags", []):
            continue
        pieces = markdown_pieces(cell.source) if cell.cell_type == "markdown" else [cell.source]
        if len(pieces) > 1:
            for k, piece in enumerate(pieces):
                part = nbformat.v4.new_markdown_cell(piece)
                if cell.get("attachments"):
                    part.attachments = cell.attachments
                part.id = f"{cell.get('id', 'cell')}-{k}"
                cells.append(part)
            continue
        if cell.cell_type == "code":
            stubs = {a or b for a, b in UNFILLED.findall(cell.source)
                     if a or "raise NotImplementedError" in cell.source}
            stubs |= {m.group(1) for m in core_path.PREDICTION.finditer(cell.source) if "..." in cell.source}
            unfilled = (unfilled - set(re.findall(r"^(\w+) = (?!\.\.\.)", cell.source, re.MULTILINE))) | stubs
            checked = CHECK.search(cell.source)
            if checked and (unfilled & set(re.findall(r"\w+", checked.group(1))) or "..." in checked.group(1)):
                cell.outputs = []  # a verdict of an answer nobody has written yet
        cells.append(cell)
    opens = [c.cell_type == "markdown" and bool(HEADING.match(c.source)) for c in cells] + [True]
    answers = [k > 0 and is_prediction(cells[k - 1]) and not is_prediction(c) for k, c in enumerate(cells)]
    since = weight = 0
    for k, cell in enumerate(cells):
        left = opens.index(True, k + 1) - k  # this cell and the rest of its section
        full = cell.cell_type == "markdown" and (since >= CELLS_PER_SLIDE or weight >= 3) and left >= 2
        cell.metadata["slide_start"] = k > 0 and (opens[k] or full or answers[k])
        since, weight = (0, 0) if cell.metadata["slide_start"] else (since, weight)
        since += 1
        weight += 1 + 2 * any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
    return nbformat.from_dict({**nb, "cells": cells})


def markdown_pieces(source: str) -> list[str]:
    """``source`` cut before every heading, and between paragraphs (never inside a code block or a display
    equation) where a piece would pass ``WORDS_PER_PIECE`` words: pieces that a slide can take or cut."""
    pieces, blocks, open_block = [], [], ""
    for block in re.split(r"\n\s*\n", source.strip("\n")):
        if open_block:  # inside a fenced code block or a $$ equation that spans blank lines
            open_block += "\n\n" + block
            if (open_block.count("```") % 2 or open_block.count("$$") % 2) == 0:
                blocks.append(open_block)
                open_block = ""
        elif block.count("```") % 2 or block.count("$$") % 2:
            open_block = block
        else:
            blocks.append(block)
    blocks += [open_block] if open_block else []
    for block in blocks:
        words = len(re.findall(r"[A-Za-z]+", "\n\n".join([*(pieces[-1:] or [""]), block])))
        if pieces and not HEADING.match(block) and words <= WORDS_PER_PIECE:
            pieces[-1] += "\n\n" + block
        else:
            pieces.append(block)
    return pieces


def is_prediction(cell) -> bool:
    return cell.cell_type == "code" and core_path.is_prediction(cell.source)


def speaker_notes(number: str) -> str:
    """The teaching guide's "Predict, then run" and "Discussion" items of notebook ``number``, as HTML."""
    text = GUIDE.read_text(encoding="utf-8")
    section = re.search(rf"^### {number} · (.*?)\n(.*?)(?=^##)", text, re.MULTILINE | re.DOTALL)
    if not section:
        return ""
    items = re.findall(r"^- \*\*(Predict, then run|Discussion)[^*]*:\*\*(.*)$", section.group(2), re.MULTILINE)
    body = "".join(f"<h3>{name}</h3>{site.markdown_to_html(item.strip())}" for name, item in items)
    return f"<h2>Notes: {site.inline_html(section.group(1))} <small>(S hides them)</small></h2>{body}"


def exporter():
    html_exporter = site.exporter()
    html_exporter.extra_loaders = [DictLoader({"site.html.j2": site.TEMPLATE, "deck.html.j2": TEMPLATE})]
    html_exporter.template_file = "deck.html.j2"
    return html_exporter


def deck(path: Path, html_exporter=None) -> str:
    """The slide deck of the notebook at ``path``, as one HTML page."""
    nb = core_path_cells(site.for_reading(nbformat.read(path, as_version=4)))
    title = site.plain_text(site.title_of(nb) or path.stem)
    resources = {"metadata": {"name": title, "path": str(path.parent)},
                 "site": {"css": site.CSS + CSS}, "deck": {"script": SCRIPT, "notes": speaker_notes(path.name[:2])}}
    body, _ = (html_exporter or exporter()).from_notebook_node(nb, resources=resources)
    return site.link_pages(body)


def build(out: Path = OUT, numbers=None) -> list[Path]:
    """Write ``out/NN_topic.html`` for every notebook (or those numbered in ``numbers``)."""
    out.mkdir(parents=True, exist_ok=True)
    html_exporter = exporter()
    written = [out / f"{path.stem}.html" for path in core_path.notebooks(ROOT, numbers).values()]
    for target in written:
        target.write_text(deck(site.NOTEBOOKS / f"{target.stem}.ipynb", html_exporter), encoding="utf-8")
    return written


def main(argv=None) -> int:
    args = core_path.selection(argv, __doc__.splitlines()[0], OUT)
    try:
        written = build(args.out, args.numbers)
    except site.MathError as err:
        print(f"slides: {err}", file=sys.stderr)
        return 1
    print(f"wrote {len(written)} slide decks to {args.out}/: open one in a browser (no server, no "
          "network needed); → and ← change slides")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
