#!/usr/bin/env python3
"""Write one slide deck per notebook for a classroom walk-through: offline, one file each.

    python3 run.py slides                          # the usual way: writes slides/NN_topic.html
    python tools/slides.py [--out DIR] [NN ...]
    python tools/slides.py --figures [NN ...]     # what each figure's smallest text measures on a slide
    python tools/slides.py --measure [NN ...]     # measure it again (executes the notebooks; writes FIGURE_TEXT)

A deck is the notebook's core path (the cells tagged ``optional`` are left out), rendered from
its stored outputs exactly as the static site renders it (tools/build_site.py: equations as
MathML, figures embedded as PNG, widgets as a note): nothing is executed and nothing is loaded
from the network. A new slide starts at every heading, at a paragraph once a slide holds
``CELLS_PER_SLIDE`` cells or a cell with a figure and two more, and right after a prediction, so that
the question is on one slide and its answer on the next. A check of a prediction or an exercise left
as ``...`` (or ``raise NotImplementedError``) shows no output: no "Not yet" box in front of the class.

Code must read from the back of a room: code and prose are drawn at ``FONT_PX`` and a slide is scaled
down to fit the window only as far as ``MIN_ZOOM`` (code never under ``SMALLEST_CODE_PX`` on a 1280x720
projector). So a long code cell is cut into pieces of at most ``LINES_PER_PIECE`` lines (wrapped lines
counted), its long text outputs too, and the browser cuts a slide that is still too tall at a cell. No line of
code is wider than a slide where Python allows a narrower one (``display_source``: a wrapped line would start at
the left margin and mislead about indentation). A figure has a slide of its own (never scaled down to fit), drawn large
enough that its smallest text measures ``SMALLEST_FIGURE_PX`` on a 1280x720 projector, as far as ``FIGURE_WIDTH_PX``
(the slide's full width) and ``FIGURE_PX`` allow. Its smallest text is measured from the text matplotlib drew in it:
``--measure`` executes the notebooks (in memory) and writes ``FIGURE_TEXT``; a figure drawn again since (another
PNG size) is sized for ``FIGURE_TEXT_PT``. ``--figures`` prints what each figure's text measures on a slide, and how
large a figure drawn too wide or tall for its text may be.
Emoji are replaced by words (``EMOJI``): a projector's computer may have no emoji font.

A few lines of script show one slide at a time, scaled down to fit the window when taller or wider
(down to ``MIN_ZOOM``; a slide taller still scrolls): → / ← change slides; Space / Page Down (a
clicker) and Page Up first scroll through a slide that does not fit, then change slides; Home / End;
``#7`` in the address opens slide 7; **S** opens the speaker notes (what to say and ask on the slide shown, from
its own cells: ``slide_notes``; then the teaching guide's predictions and discussion questions for this notebook,
the slide shown and the next one's heading) in a window of their own,
for the presenter's screen: never on the projected page. Without the script (or when printed) the deck reads
as one page, slide after slide.
"""

from __future__ import annotations

import ast
import base64
import io
import json
import math
import re
import sys
import textwrap
import tokenize
import unicodedata
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
WORDS_PER_PIECE = 90  # a longer markdown cell is cut between paragraphs, so that a slide can be cut there
FONT_PX = 22  # prose and code on a slide, at full size
MIN_ZOOM = 0.82  # the smallest scale a slide is shown at: code and prose stay at 18 px or more
SMALLEST_CODE_PX = 18  # what a person at the back of a room can still read on a 1280x720 projector
FIGURE_PX = 640  # the tallest a figure is drawn: its slide (a slide of its own) is 720 px tall with its margins
FIGURE_WIDTH_PX = 1240  # the widest a figure is drawn: its slide's full width (no side margins, no prompt)
FIGURE_TEXT_PT = 10  # a figure not measured is sized as if its smallest text were 10 pt (a wide heatmap's numbers)
#: Each figure's smallest text in points, measured from the text matplotlib drew (``--measure``), by ``cell id/k``
#: (the cell's k-th figure; cell ids are unique across the notebooks), with the PNG's size it was measured on.
FIGURE_TEXT = ROOT / "tools" / "slides_figure_text.json"
SMALLEST_FIGURE_PX = 18  # what that text should measure on a 1280x720 projector: a figure is drawn larger to get it
SLIDE_LINES = 20  # lines of text (at FONT_PX, line height 1.5) that a 720-px slide holds at MIN_ZOOM
LINES_PER_PIECE = 12  # lines of code, or of a text output, that one piece of a cell holds
CHARS_PER_LINE = 84  # characters of code per line at FONT_PX in a slide's width: a longer line wraps
#: What an emoji on a slide becomes (any other emoji: its Unicode name in brackets).
EMOJI = {"\u2705": "", "\u274c": "", "\U0001f4a1": "", "\U0001f642": ":-)", "\ufe0f": ""}
EMOJI_CHARS = re.compile("[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\uFE0F] ?")
HEADING = re.compile(r"^#{1,4}\s", re.MULTILINE)
LIST_ITEM = re.compile(r"(?:^|\n)(?=[-*] |\d+\. )")  # where a list's item starts (not a nested one)
UNFILLED = re.compile(r"^(\w+) = \.\.\.|^def (\w+)\(", re.MULTILINE)
CHECK = re.compile(r"\bcheck_\w+\((.*)\)", re.DOTALL)

CSS = """
html:root { --jp-content-font-size1: FONT_PXpx; --jp-code-font-size: FONT_PXpx; --jp-content-line-height: 1.5; }
.jp-OutputArea-output pre, .jp-InputArea pre { font-size: var(--jp-code-font-size); }
body.jp-Notebook { margin: 0; }
html.deck body > main { max-width: none; padding: 0; }
.jp-RenderedHTMLCommon h1 { font-size: 2rem; } .jp-RenderedHTMLCommon h2 { font-size: 1.7rem; }
section.slide { box-sizing: border-box; max-width: 1240px; margin: 0 auto; padding: 1rem 2rem 2.2rem; }
html.deck { overflow-x: hidden; scrollbar-gutter: stable; }  /* the same width with or without a scrollbar */
html.deck section.slide { display: none; }
html.deck section.slide.current { display: block; }
html.deck section.slide .jp-RenderedImage img { max-width: 100%; height: auto; }
section.slide:has(.jp-RenderedImage) { padding-left: 0; padding-right: 0; }  /* a figure alone: the full width */
section.slide:has(.jp-RenderedImage) :is(.jp-OutputPrompt, .jp-InputArea) { display: none; }
section.slide:has(.jp-RenderedImage) :is(.jp-Cell, .jp-OutputArea-output, .jp-OutputArea-child) { padding: 0;
  margin: 0; }
html.deck math[display="block"] { overflow: visible; max-width: none; }
.deck-counter { position: fixed; right: 1rem; bottom: 0.6rem; font: 0.9rem system-ui, sans-serif; color: #595959; }
html:not(.deck) .deck-counter { display: none; }
template.deck-notes { display: none; }
@media print { html.deck section.slide { display: block; zoom: 1 !important; break-after: page; }
  .deck-counter { display: none; } }
"""

#: The presenter's window (S): the notes, the slide on the projector and the next slide's heading.
NOTES_CSS = """
body { margin: 0; padding: 1rem 1.4rem; background: #fffdf5; color: #1a1a1a; font: 1.15rem/1.45 system-ui, sans-serif; }
h1 { font-size: 1.1rem; margin: 0 0 0.8rem; color: #1a1a1a; }
h2 { font-size: 1.2rem; margin: 0 0 0.6rem; }
h3 { font-size: 1.05rem; margin: 1rem 0 0.3rem; color: #8a4500; }
code { background: #f0ede2; padding: 0 0.2em; }
.now { border-left: 4px solid #8a4500; padding-left: 0.6rem; }
.here { border-bottom: 1px solid #8a4500; margin-bottom: 1rem; }
"""

SCRIPT = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var counter = document.querySelector('.deck-counter');
  var notes = document.querySelector('template.deck-notes');
  var root = document.documentElement;
  var at = 0, presenter = null;
  root.classList.add('deck');
  function split(slide) {  // cut a slide taller than MIN_ZOOM can fit before the first cell that overflows
    slide.classList.add('current');
    var cells = Array.prototype.slice.call(slide.children);
    var first = cells[0].getBoundingClientRect().top, last = cells[cells.length - 1].getBoundingClientRect().bottom;
    var limit = first + 0.98 * innerHeight / MIN_ZOOM - (root.scrollHeight - (last - first));  // the page around it
    var cut = cells.findIndex(function (c, k) { return k > 0 && c.getBoundingClientRect().bottom > limit; });
    if (cut > 1 && cells[cut - 1].classList.contains('jp-MarkdownCell')) cut -= 1;  // keep a lead-in with its cell
    slide.classList.remove('current');
    if (cut < 1) return [slide];
    var rest = document.createElement('section');
    rest.className = 'slide';
    rest.dataset.notes = JSON.stringify([['Continued', 'the rest of the slide before']].concat(
      JSON.parse(slide.dataset.notes || '[]')));
    cells.slice(cut).forEach(function (c) { rest.appendChild(c); });
    slide.after(rest);
    return [slide].concat(split(rest));
  }
  function start() {  // once the figures have their sizes: cut the slides that are too tall, show the first
    slides = slides.reduce(function (all, s) { return all.concat(split(s)); }, []);
    fromHash();
  }
  function fit(slide) {  // scale the slide down until the page neither scrolls nor spills sideways
    var zoom = 1;
    slide.style.zoom = slide.style.width = '';
    slide.style.width = slide.offsetWidth + 'px';  // the same lines at every scale: a smaller slide, not a reflow
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
    update();
  }
  function heading(slide) {
    var h = slide && slide.querySelector('h1, h2, h3, h4');
    return h ? h.textContent.replace(/\u00b6/g, '').trim() : '(no heading)';
  }
  function update() {  // the presenter's window follows the projected slide
    if (!presenter || presenter.closed) return;
    var doc = presenter.document;
    doc.getElementById('now').textContent = 'Slide ' + (at + 1) + ' / ' + slides.length + ': ' + heading(slides[at]) +
      ' \u2014 next: ' + heading(slides[at + 1]);
    var here = doc.getElementById('here');
    here.textContent = '';
    JSON.parse(slides[at].dataset.notes || '[]').forEach(function (note) {  // text only: nothing is parsed as HTML
      var p = doc.createElement('p'), b = doc.createElement('strong');
      b.textContent = note[0] + ': ';
      p.appendChild(b);
      p.appendChild(doc.createTextNode(note[1]));
      here.appendChild(p);
    });
  }
  function openNotes() {  // the notes in a window of their own, for the presenter's screen
    if (presenter && !presenter.closed) { presenter.focus(); return; }
    presenter = window.open('', 'deck-notes', 'popup,width=640,height=760');
    if (!presenter) return;  // pop-ups blocked: nothing is shown on the projected page
    var doc = presenter.document;
    doc.open();
    doc.write('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Speaker notes: ' +
      document.title + '</title><style>' + notes.dataset.css + '</style></head><body><main>' +
      '<h1 class="now" id="now" aria-live="polite"></h1><section id="here" class="here" aria-live="polite">' +
      '</section><h2>For the whole notebook</h2>' + notes.innerHTML + '</main></body></html>');
    doc.close();
    update();
  }
  document.addEventListener('keydown', function (e) {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    var step = {ArrowRight: 1, PageDown: 1, ' ': 1, ArrowLeft: -1, PageUp: -1}[e.key];
    var page = document.scrollingElement;
    if (e.key === 's' || e.key === 'S') { openNotes(); return; }
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
  if (document.readyState === 'complete') start(); else window.addEventListener('load', start);
})();
""".replace("MIN_ZOOM", str(MIN_ZOOM))
CSS = CSS.replace("FONT_PX", str(FONT_PX)).replace("FIGURE_PX", str(FIGURE_PX))

TEMPLATE = """{%- extends 'site.html.j2' -%}
{% block any_cell %}
{%- if cell.metadata.get('slide_start') -%}
</section><section class="slide" data-notes="{{ cell.metadata.get('slide_notes', '[]') | escape_html }}">
{%- endif -%}
{{ super() }}
{%- endblock any_cell %}
{%- block body_header -%}
<body class="jp-Notebook" data-jp-theme-light="true" data-jp-theme-name="JupyterLab Light">
<main><section class="slide" data-notes="{{ resources.deck.first_notes | escape_html }}">
{%- endblock body_header -%}
{% block body_footer %}
</section></main>
<div class="deck-counter" aria-live="polite"></div>
<template class="deck-notes" data-css="{{ resources.deck.notes_css | escape_html }}">
{{- resources.deck.notes }}</template>
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
        cells += pieces_of(cell) if cell.cell_type == "code" else [cell]
    opens = [c.cell_type == "markdown" and bool(HEADING.match(c.source)) for c in cells] + [True]
    answers = [k > 0 and is_prediction(cells[k - 1]) and not is_prediction(c) for k, c in enumerate(cells)]
    since = weight = 0
    for k, cell in enumerate(cells):
        left = opens.index(True, k + 1) - k  # this cell and the rest of its section
        full = cell.cell_type == "markdown" and (since >= CELLS_PER_SLIDE or weight >= 3) and left >= 2
        alone = cell.metadata.get("figure_alone") or k > 0 and cells[k - 1].metadata.get("figure_alone")
        cell.metadata["slide_start"] = k > 0 and bool(opens[k] or full or answers[k] or alone)
        since, weight = (0, 0) if cell.metadata["slide_start"] else (since, weight)
        since += 1
        weight += 1 + 2 * any("image/png" in out.get("data", {}) for out in cell.get("outputs", []))
    starts = [k for k, cell in enumerate(cells) if k == 0 or cell.metadata["slide_start"]] + [len(cells)]
    for first, end in zip(starts, starts[1:]):
        cells[first].metadata["slide_notes"] = json.dumps(slide_notes(cells[first:end], answers[first]))
    return nbformat.from_dict({**nb, "cells": cells})


def visual_lines(text: str) -> int:
    """The lines ``text`` takes on a slide, a long line wrapped every ``CHARS_PER_LINE`` characters."""
    return sum(max(1, math.ceil(len(line) / CHARS_PER_LINE)) for line in text.splitlines())


def line_pieces(text: str) -> list[str]:
    """``text`` cut between lines into pieces of at most ``LINES_PER_PIECE`` visual lines."""
    pieces = [""]
    for line in text.splitlines(keepends=True):
        if pieces[-1] and visual_lines(pieces[-1] + line) > LINES_PER_PIECE:
            pieces.append("")
        pieces[-1] += line
    return pieces


def output_lines(output) -> int:
    """The lines of a slide that an output takes: a text's lines, a figure's height in lines of text."""
    data = output.get("data", {})
    if output.get("output_type") == "stream" or set(data) == {"text/plain"}:
        return visual_lines(output.get("text") or data.get("text/plain", ""))
    if "image/png" in data:  # the height it is drawn at on a slide
        return math.ceil(figure_size(data["image/png"])[1] / (1.5 * FONT_PX))
    html = data.get("text/html", "")
    return 1 + len(re.findall(r"<(?:tr|br|li|p)\b", html))


def png_header(png_base64: str) -> tuple[int, int, float]:
    """A PNG's width and height in pixels and its resolution in dots per inch (72 when it states none), from its
    IHDR and pHYs chunks (matplotlib writes the figure's dpi there)."""
    data = base64.b64decode(png_base64[:4000] + "=" * (-len(png_base64[:4000]) % 4), validate=False)
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    at, dpi = 8, 72.0
    while at + 8 <= len(data):
        size, kind = int.from_bytes(data[at:at + 4], "big"), data[at + 4:at + 8]
        if kind == b"pHYs" and at + 17 <= len(data) and data[at + 16] == 1:  # unit 1: dots per metre
            dpi = int.from_bytes(data[at + 8:at + 12], "big") * 0.0254
        if kind in (b"IDAT", b"IEND"):
            break
        at += 12 + size
    return width, height, dpi


def figure_size(png_base64: str, points: float = FIGURE_TEXT_PT) -> tuple[int, int]:
    """The width and height (CSS px, at full size) a figure is drawn at on a slide: large enough that its smallest
    text (``points``; ``FIGURE_TEXT_PT`` when not measured) measures ``SMALLEST_FIGURE_PX`` (a figure drawn at 90
    dpi with 10 pt text is enlarged 1.44 times), as far as ``FIGURE_WIDTH_PX`` and ``FIGURE_PX`` allow."""
    width, height, dpi = png_header(png_base64)
    if not width or not height:
        return width, height
    legible = SMALLEST_FIGURE_PX / (points * dpi / 72)
    scale = min(legible, FIGURE_WIDTH_PX / width, FIGURE_PX / height)
    return round(width * scale), round(height * scale)


def figure_text_px(png_base64: str, drawn_width: float, points: float = FIGURE_TEXT_PT) -> float:
    """What the figure's smallest text (``points``) measures when the figure is ``drawn_width`` CSS px wide."""
    width, _, dpi = png_header(png_base64)
    return points * dpi / 72 * drawn_width / width


def measured_points(path: Path) -> dict:
    """``{PNG (base64): smallest text in points}`` for the stored figures of the notebook at ``path`` that
    ``FIGURE_TEXT`` measured (the same cell, the same PNG size); a figure it has not measured is left out (it is
    sized for ``FIGURE_TEXT_PT``)."""
    record = json.loads(FIGURE_TEXT.read_text(encoding="utf-8")) if FIGURE_TEXT.exists() else {}
    points = {}
    for cell in nbformat.read(path, as_version=4).cells:
        pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        for k, png in enumerate(pngs):
            entry = record.get(f"{cell.get('id')}/{k}")
            if entry and list(png_header(png)[:2]) == entry[:2]:
                points[png] = entry[2]
    return points


IMAGE = re.compile(r'<img\b(?P<before>[^>]*?)src="data:image/png;base64,(?P<png>[^"]+)"(?P<after>[^>]*?)(?P<end>/?>)')


def sized_figures(page: str, points=None) -> str:
    """``page`` with every embedded figure given its slide size (``figure_size`` for its smallest text, from
    ``points``: ``measured_points``), its resolution and that text's size in points."""
    def size(match):
        pt = (points or {}).get(match.group("png"), FIGURE_TEXT_PT)
        width, _ = figure_size(match.group("png"), pt)
        dpi = png_header(match.group("png"))[2]
        return (f'<img{match.group("before")}src="data:image/png;base64,{match.group("png")}"{match.group("after")}'
                f' style="width: {width}px" data-dpi="{dpi:.0f}" data-pt="{pt:g}"{match.group("end")}')

    return IMAGE.sub(size, page)


def _comment_lines(text: str, indent: str, width: int) -> list[str]:
    return textwrap.wrap(text, max(20, width - len(indent) - 2), break_long_words=False,
                         initial_indent=indent + "# ", subsequent_indent=indent + "# ") or [indent + "#"]


STRING_PREFIX = re.compile(r"^([rRbBuUfF]{0,2})(['\"])(?!\2\2)")


def _split_string(text: str, room: int):
    """``text`` (one single-line string literal) cut at a space before ``room`` characters into two literals that
    Python joins back (implicit concatenation), or None: never inside an f-string's ``{...}``, never in a
    triple-quoted or byte string."""
    found = STRING_PREFIX.match(text)
    if not found or "b" in found.group(1).lower() or not text.endswith(found.group(2)):
        return None
    prefix, quote = found.groups()
    braces, k, cut, brace_cut = 0, len(found.group(0)), None, None
    is_f = "f" in prefix.lower()
    while k < len(text) - 1:
        char = text[k]
        if char == "\\":
            k += 2
            continue
        if is_f and text[k:k + 2] in ("{{", "}}"):
            k += 2
            continue
        if is_f and char in "{}":
            braces += 1 if char == "{" else -1
            if char == "}" and braces == 0 and len(prefix) + 2 < k < room - 1:
                brace_cut = k + 1  # between two fields: where there is no space to cut at
        elif char == " " and braces == 0 and len(prefix) + 2 < k < room - 1:
            cut = k + 1
        k += 1
    cut = cut or brace_cut
    if cut is None or cut >= len(text) - 1:
        return None
    return text[:cut] + quote, prefix + quote + text[cut:]


def _atoms(tokens) -> dict:
    """Each line's tokens as ``(start, end, text, depth inside brackets, kind)``, an f-string's parts as one."""
    rows, depth, open_string = {}, 0, None
    start_kinds = {getattr(tokenize, "FSTRING_START", -1)}
    end_kinds = {getattr(tokenize, "FSTRING_END", -1)}
    for token in tokens:
        (row, col), (end_row, end_col) = token.start, token.end
        if open_string is not None:
            if token.type in end_kinds:
                first = open_string
                rows.setdefault(first[0], []).append((first[1], end_col, None, depth, "string"))
                open_string = None
            continue
        if token.type in start_kinds:
            open_string = (row, col)
            continue
        if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER):
            continue
        if token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        kind = "string" if token.type == tokenize.STRING and end_row == row else (
            "comment" if token.type == tokenize.COMMENT else "token")
        rows.setdefault(row, []).append((col, end_col if end_row == row else 10 ** 6, token.string, depth, kind))
        if token.type == tokenize.OP and token.string in "([{":
            depth += 1
    return rows


def _break_line(line: str, atoms: list, width: int) -> list[str]:
    """A long code line (its comment already moved) broken inside brackets, the rest hanging 4 spaces in."""
    indent = line[:len(line) - len(line.lstrip())]
    hang = indent + "    "
    out, rest = [], line
    atoms = [a for a in atoms if a[0] < len(line)]
    offset = 0  # where ``rest`` starts in ``line``
    for _ in range(50):
        lead = len(hang) if out else 0
        if lead + len(rest.strip() if out else rest) <= width:
            break
        room = width - lead + offset  # the last column of ``line`` that fits on this output line
        inside = [a for a in atoms if a[3] > 0 and a[0] >= offset]
        after_comma = [a[0] for k, a in enumerate(atoms) if k and atoms[k - 1][2] == "," and a in inside
                       and offset < a[0] <= room]
        anywhere = [a[0] for a in inside if a[0] <= room and a[0] > offset + 8]
        cut = (after_comma or anywhere or [None])[-1]
        if cut is None or cut <= offset:
            strings = [a for a in inside if a[4] == "string" and a[2] is not None and a[0] < room - 4]
            long, parts = None, None
            for long in reversed(strings):  # the last string that starts on this output line and can be cut
                parts = _split_string(line[long[0]:long[1]], room - long[0])
                if parts:
                    break
            if not parts:
                break
            head = line[offset:long[0]] + parts[0]
            out.append((hang if out else "") + (head.strip() if out else head.rstrip()))
            line = line[:long[0]] + " " * len(parts[0]) + parts[1] + line[long[1]:]
            shift = len(parts[0]) + len(parts[1]) - (long[1] - long[0])
            atoms = [(a[0] + (shift if a[0] > long[0] else 0), a[1] + (shift if a[0] >= long[0] else 0), *a[2:])
                     for a in atoms]
            atoms = [a for a in atoms if a != long] + [(long[0] + len(parts[0]), long[1] + shift, None, long[3],
                                                        "string")]
            atoms.sort()
            offset = long[0] + len(parts[0])
            rest = line[offset:]
            continue
        out.append((hang if out else "") + (line[offset:cut].strip() if out else line[offset:cut].rstrip()))
        offset, rest = cut, line[cut:]
    out.append((hang + rest.strip()) if out else rest)
    return out


def display_source(source: str, width: int = CHARS_PER_LINE) -> str:
    """``source`` as a slide shows it: no line wider than ``width`` where Python allows a narrower one, so that the
    browser never wraps a line to the left margin (a wrapped line at column 0 misleads about Python's
    indentation). A long comment is wrapped onto comment lines at its line's own indentation (a trailing one
    goes above its line); a long line is broken inside its brackets (after a comma where it can, a long string
    cut in two that Python joins back), its rest hanging 4 spaces in. The code means the same (its syntax tree
    is unchanged: a test checks it); a cell that Python cannot tokenize (a magic) is shown as it is."""
    lines = source.splitlines()
    if all(len(line) <= width for line in lines):
        return source
    try:
        tree = ast.dump(ast.parse(source))
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, ValueError):  # a magic, or not Python: shown as it is
        return source
    rows = _atoms(tokens)
    inside_string = {r for t in tokens if t.end[0] > t.start[0] for r in range(t.start[0] + 1, t.end[0] + 1)}
    out = []
    for row, line in enumerate(lines, start=1):
        if len(line) <= width or row in inside_string:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        atoms = rows.get(row, [])
        comment = next((a for a in atoms if a[4] == "comment"), None)
        if comment:
            out += _comment_lines(line[comment[0]:].lstrip("#").strip(), indent, width)
            line = line[:comment[0]].rstrip()
            if not line.strip():
                continue
        if len(line) > width and re.match(r"\s*from \S+ import [^()\\]+$", line):  # names in brackets
            names = line.strip().replace(" import ", " import (", 1) + ")"
            out += [indent + piece for piece in display_source(names, width - len(indent)).splitlines()]
            continue
        out += _break_line(line, [a for a in atoms if a[4] != "comment"], width) if len(line) > width else [line]
    shown = "\n".join(out) + ("\n" if source.endswith("\n") else "")
    try:
        return shown if ast.dump(ast.parse(shown)) == tree else source  # never show code that means otherwise
    except SyntaxError:
        return source


def pieces_of(cell) -> list:
    """A code cell as cells that a slide can hold: its source cut every ``LINES_PER_PIECE`` lines, each long text
    output cut the same way, and the outputs that do not fit beside the last piece of source in cells of their own
    that show no source (at most ``SLIDE_LINES`` lines each)."""
    predicts = core_path.is_prediction(cell.source)

    def piece(source, k, show_source=True):
        part = nbformat.v4.new_code_cell(source)
        part.update(id=f"{cell.get('id', 'cell')}-{k}", execution_count=cell.get("execution_count"))
        part.metadata = {**cell.metadata, **({} if show_source else {"transient": {"remove_source": True}}),
                         "prediction": predicts and bool(core_path.PREDICTION.search(source))}
        return part

    outputs = []
    for output in cell.get("outputs", []):
        text = output.get("text") if output.get("output_type") == "stream" else (
            output.get("data", {}).get("text/plain") if set(output.get("data", {})) == {"text/plain"} else None)
        if not text or visual_lines(text) <= LINES_PER_PIECE:
            outputs.append(output)
            continue
        for chunk in line_pieces(text):
            outputs.append(nbformat.from_dict({**output, "text": chunk} if output.get("output_type") == "stream"
                                              else {**output, "data": {"text/plain": chunk}}))
    shown = display_source(cell.source)
    cells = [piece(source, k) for k, source in enumerate(line_pieces(shown))]
    used = visual_lines(shown and line_pieces(shown)[-1])
    for output in outputs:
        lines = output_lines(output)
        figure = "image/png" in output.get("data", {})
        if figure or cells[-1].metadata.get("figure_alone") or cells[-1].outputs and used + lines > SLIDE_LINES \
                or not cells[-1].outputs and used and used + lines > SLIDE_LINES:
            cells.append(piece("", len(cells), show_source=False))
            cells[-1].metadata["figure_alone"] = figure  # a slide of its own: drawn at full size, never scaled
            used = 0
        cells[-1].outputs.append(output)
        used += lines
    if len(cells) == 1 and shown == cell.source:
        cell.metadata["prediction"] = predicts
        return [cell]
    return cells


def without_emoji(html: str) -> str:
    """``html`` with each emoji replaced by words (``EMOJI``, else its Unicode name in brackets)."""
    def words(match):
        char = match.group(0).rstrip(" ")
        if char in EMOJI:
            return EMOJI[char] + (" " if EMOJI[char] and match.group(0).endswith(" ") else "")
        return f"[{unicodedata.name(char, 'symbol').lower()}]" + match.group(0)[len(char):]

    return EMOJI_CHARS.sub(words, html)


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
    items = []  # a long list is cut between its items: (text, the separator before it)
    for block in blocks:
        is_list = LIST_ITEM.search(block) and "```" not in block and "$$" not in block
        long = len(re.findall(r"[A-Za-z]+", block)) > WORDS_PER_PIECE
        parts = LIST_ITEM.split(block) if is_list and long else [block]
        items += [(part, "\n\n" if k == 0 else "\n") for k, part in enumerate(parts) if part]
    for block, separator in items:
        words = len(re.findall(r"[A-Za-z]+", "\n\n".join([*(pieces[-1:] or [""]), block])))
        if pieces and not HEADING.match(block) and words <= WORDS_PER_PIECE:
            pieces[-1] += separator + block
        else:
            pieces.append(block)
    return pieces


def plain(markdown: str) -> str:
    """Markdown as the words a teacher says: no code fences, emphasis, links' addresses, dollar signs or tags."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"\$\$.*?\$\$", " (the equation) ", text, flags=re.DOTALL)
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", text)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", " ", text)
    text = re.sub(r"^#+\s*", "", text, flags=re.MULTILINE)
    text = text.replace("**", "").replace("`", "").replace("$", "")
    text = re.sub(r"(?<!\w)\*(?!\s)|(?<!\s)\*(?!\w)", "", text)
    return re.sub(r"\s+", " ", without_emoji(text)).strip()


def sentences(text: str) -> list[str]:
    """``text`` cut into sentences (at a full stop, question or exclamation mark followed by a capital)."""
    return [part.strip() for part in re.split(r"(?<=[.?!:])\s+(?=[A-Z*\"(])", text) if part.strip()]


def _short(text: str, limit: int = 220) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " ..."


def slide_notes(cells, after_prediction: bool = False) -> list:
    """What to say and ask on one slide, from its own cells: ``[[kind, text], ...]``. Its heading and first
    sentence (say), its questions (ask), a prediction's question (everyone writes an answer first), the reveal
    after a prediction, an exercise's task and its hint, a figure to read before talking, the code to walk
    through; a slide with none of these gets the first line of what it shows."""
    notes, prose = [], []
    for cell in cells:
        if cell.cell_type == "markdown":
            prose.append(cell.source)
    text = plain("\n\n".join(prose))
    heading = next((line.lstrip("#").strip() for source in prose for line in source.splitlines()
                    if HEADING.match(line)), "")
    body = [s for s in sentences(plain("\n\n".join(re.sub(r"^#.*$", "", p, flags=re.MULTILINE) for p in prose)))
            if not s.lower().startswith("hint")]
    if heading or body:
        lead = " ".join(body[:2]) if body and len(body[0].split()) < 6 else (body[0] if body else "")
        say = (plain(heading) + ": " if heading else "") + lead
        notes.append(["Say", _short(say.rstrip(": "))])
    questions = [s for s in body if s.endswith("?")][:2]
    notes += [["Ask", _short(q)] for q in questions]
    for cell in cells:
        if cell.cell_type != "code":
            continue
        if is_prediction(cell):
            found = core_path.PREDICTION.search(cell.source)
            what = found and found.group(3).strip().lstrip("#").strip()
            notes.append(["Ask for a prediction", _short(
                f"everyone writes {found.group(1) if found else 'an answer'}"
                + (f" ({what})" if what else "") + " before the next slide; then ask two people why.")])
        exercise = re.search(r"Exercise \d\d\.\d+[^.:]*", text)
        if exercise and "raise NotImplementedError" in cell.source or re.search(r"^\w+ = \.\.\.", cell.source,
                                                                                 re.MULTILINE):
            hint = next((s for s in sentences(text) if s.lower().startswith("hint")), "")
            if exercise:
                notes.append(["Exercise", _short(exercise.group(0).strip() + ": pairs start it while you walk "
                                                 "round.")])
            if hint:
                notes.append(["Hint to give first", _short(hint)])
    if after_prediction:
        first = next((c for c in cells if c.cell_type == "code"), None)
        shown = first and next((line for line in first.source.splitlines() if line.strip()), "")
        notes.append(["Reveal", _short("run " + (f"`{shown.strip()}`" if shown else "the cell") + "; ask who "
                                       "predicted what before saying which was right.")])
    figures = [o for c in cells for o in c.get("outputs", []) if "image/png" in o.get("data", {})]
    if figures:
        alt = figures[0].get("metadata", {}).get("image/png", {}).get("alt", "")
        said = body[-1] if body and len(body) > 1 else alt.removeprefix("Figure: ")
        notes.append(["Figure", "let the room read the figure for half a minute; ask what it shows before you "
                                "say it" + (f" ({_short(said, 120)})" if said else ".")])
    code = [c for c in cells if c.cell_type == "code" and c.source.strip()]
    if code and not any(kind in ("Ask for a prediction", "Reveal") for kind, _ in notes):
        comment = next((line.strip().lstrip("#").strip() for c in code for line in c.source.splitlines()
                        if line.strip().startswith("#") and len(line.strip()) > 3), "")
        first = next(line.strip() for line in code[0].source.splitlines() if line.strip())
        notes.append(["Walk through", _short(f"`{first}`" + (f": {comment}" if comment else ""))])
    if not notes:  # only an output: its first line
        shown = next((str(o.get("text") or o.get("data", {}).get("text/plain", "")).strip().splitlines()[0]
                      for c in cells for o in c.get("outputs", [])
                      if str(o.get("text") or o.get("data", {}).get("text/plain", "")).strip()), "")
        notes.append(["Show", _short(f"the printout: {shown}" if shown else "the result of the cell above.")])
    return notes


def is_prediction(cell) -> bool:
    return cell.cell_type == "code" and cell.metadata.get("prediction", core_path.is_prediction(cell.source))


def speaker_notes(number: str) -> str:
    """The teaching guide's "Predict, then run" and "Discussion" items of notebook ``number``, as HTML."""
    text = GUIDE.read_text(encoding="utf-8")
    section = re.search(rf"^### {number} · (.*?)\n(.*?)(?=^##)", text, re.MULTILINE | re.DOTALL)
    if not section:
        return ""
    items = re.findall(r"^- \*\*(Predict, then run|Discussion)[^*]*:\*\*(.*)$", section.group(2), re.MULTILINE)
    body = "".join(f"<h3>{name}</h3>{site.markdown_to_html(item.strip())}" for name, item in items)
    return f"<h2>Notes: {site.inline_html(section.group(1))}</h2>{body}"


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
                 "site": {"css": site.CSS + CSS},
                 "deck": {"script": SCRIPT, "notes": speaker_notes(path.name[:2]), "notes_css": NOTES_CSS,
                          "first_notes": nb.cells[0].metadata.get("slide_notes", "[]") if nb.cells else "[]"}}
    body, _ = (html_exporter or exporter()).from_notebook_node(nb, resources=resources)
    return sized_figures(without_emoji(site.link_pages(body)), measured_points(path))


def build(out: Path = OUT, numbers=None) -> list[Path]:
    """Write ``out/NN_topic.html`` for every notebook (or those numbered in ``numbers``)."""
    out.mkdir(parents=True, exist_ok=True)
    html_exporter = exporter()
    written = [out / f"{path.stem}.html" for path in core_path.notebooks(ROOT, numbers).values()]
    for target in written:
        target.write_text(deck(site.NOTEBOOKS / f"{target.stem}.ipynb", html_exporter), encoding="utf-8")
    return written


def figure_report(numbers=None) -> list:
    """``(notebook, cell id, natural width, natural height, its width in inches, smallest text pt, drawn width,
    text px)`` for every figure on the core path: the size each is drawn at on a slide (a slide of its own, never
    scaled down), and what its smallest text (measured: ``FIGURE_TEXT``; else ``FIGURE_TEXT_PT``) then measures on
    a 1280x720 projector."""
    rows = []
    for number, path in core_path.notebooks(ROOT, numbers).items():
        points = measured_points(path)
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code" or "optional" in cell.metadata.get("tags", []):
                continue
            for output in cell.get("outputs", []):
                png = output.get("data", {}).get("image/png")
                if png:
                    width, height, dpi = png_header(png)
                    pt = points.get(png, FIGURE_TEXT_PT)
                    drawn = figure_size(png, pt)[0]
                    rows.append((number, cell.get("id"), width, height, width / dpi, pt, drawn,
                                 figure_text_px(png, drawn, pt)))
    return rows


#: Run in the kernel before a notebook's first cell (``measure_figures``): every figure IPython shows is noted with
#: the source of the cell that showed it, the smallest font size (points) of the text matplotlib drew in it, and
#: the texts and boxes it drew over each other.
MEASURE_HOOK = r"""
def _attn_overlaps(shapes):
    # Pairs of texts or boxes drawn over each other by more than 1.5 px each way; a text in a box (its own, a
    # legend's frame) is the box's, and a box is named by the text it holds.
    def inside(a, b):
        return a[0] >= b[0] - 1 and a[1] >= b[1] - 1 and a[2] <= b[2] + 1 and a[3] <= b[3] + 1

    boxes = [extent for text, extent in shapes if text is None]
    names = {}
    for text, extent in shapes:
        if text is not None:
            holders = [k for k, box in enumerate(boxes) if inside(extent, box)]
            if holders:
                names.setdefault(holders[0], text)
    items = [(names.get(k, "a box"), box) for k, box in enumerate(boxes)]
    items += [(text, extent) for text, extent in shapes if text is not None
              and not any(inside(extent, box) for box in boxes)]
    found = set()
    for i, (name, a) in enumerate(items):
        for other, b in items[i + 1:]:
            if min(a[2], b[2]) - max(a[0], b[0]) > 1.5 and min(a[3], b[3]) - max(a[1], b[1]) > 1.5 \
                    and not inside(a, b) and not inside(b, a):
                found.add(" / ".join(sorted((repr(name), repr(other)))))
    return sorted(found)


def _attn_measure_figures():
    import functools
    from IPython.core import pylabtools
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyBboxPatch
    from matplotlib.text import Text
    shell, state, drawn, shapes = get_ipython(), {"cell": None}, [], []
    shell.events.register("pre_run_cell", lambda info: state.update(cell=info.raw_cell))
    draw, draw_box, draw_figure, show = Text.draw, FancyBboxPatch.draw, Figure.draw, pylabtools.print_figure

    def noting_figure(self, renderer):  # a tight bounding box draws the figure twice: the last draw is the PNG
        shapes.clear()
        return draw_figure(self, renderer)

    def noting_draw(self, renderer):
        result = draw(self, renderer)
        if self.get_visible() and self.get_text().strip():
            drawn.append(self.get_fontsize())
            if self.get_rotation() % 90 == 0:  # a slanted label's upright extent would cover its neighbours'
                # the text's own extent (an annotation's would hold its leader line too)
                shapes.append((self.get_text(), list(Text.get_window_extent(self, renderer).extents)))
        return result

    def noting_box(self, renderer):  # a diagram's boxes, a label's box, a legend's frame
        result = draw_box(self, renderer)
        if self.get_visible():
            shapes.append((None, list(self.get_window_extent(renderer).extents)))
        return result

    def noting_show(fig, *args, **kwargs):
        drawn.clear()
        shapes.clear()
        Text.draw, FancyBboxPatch.draw, Figure.draw = noting_draw, noting_box, noting_figure
        try:
            data = show(fig, *args, **kwargs)
        finally:
            Text.draw, FancyBboxPatch.draw, Figure.draw = draw, draw_box, draw_figure
        if kwargs.get("fmt", args[0] if args else "png") == "png" and data:
            measured.append([state["cell"], min(drawn, default=None), _attn_overlaps(shapes)])
        return data

    measured = []
    pylabtools.print_figure = noting_show
    formatter = shell.display_formatter.formatters["image/png"]
    try:
        old = formatter.lookup_by_type(Figure)
        if isinstance(old, functools.partial):
            formatter.for_type(Figure, functools.partial(noting_show, *old.args, **old.keywords))
    except KeyError:
        pass
    return measured

_attn_measured_figures = _attn_measure_figures()
"""


def measure_figures(path: Path) -> dict:
    """``{"cell id/k": [png width, png height, smallest pt]}`` for the ``k``-th figure of each cell of the notebook at
    ``path``, and a fourth item, the texts and boxes drawn over each other, when there are any: the notebook
    executed (in memory, nothing written) with ``MEASURE_HOOK``, which notes the font size and extent of every
    text (and box) matplotlib draws in a figure that IPython shows. The stored PNG's size ties a record to the
    stored figure: a figure drawn again at another size is measured again."""
    import nbtool
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    hook = nbformat.v4.new_code_cell(MEASURE_HOOK)
    report = nbformat.v4.new_code_cell("import json\nprint('ATTN-MEASURED ' + json.dumps(_attn_measured_figures))")
    hook.id, report.id = "attn-measure-hook", "attn-measure-report"
    nb.cells = [hook, *nb.cells, report]
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(nbtool.NOTEBOOKS)}}).execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("output_type") == "stream")
    found = re.search(r"ATTN-MEASURED (.*)", text)
    if not found:
        raise RuntimeError(f"{path.name}: the figures were not measured: {text[-500:]}")
    smallest = {}
    for source, pt, overlaps in json.loads(found.group(1)):
        smallest.setdefault(source, []).append((pt, overlaps))
    records = {}
    for cell in nb.cells[1:-1]:
        pngs = [o["data"]["image/png"] for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        for k, (png, (pt, overlaps)) in enumerate(zip(pngs, smallest.pop(cell.source, []))):
            if pt is not None:
                records[f"{cell.get('id')}/{k}"] = [*png_header(png)[:2], round(float(pt), 2)] + ([overlaps] if overlaps
                                                                                                else [])
    return records


def main(argv=None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if "--measure" in argv:  # execute the notebooks (in memory) and note each figure's smallest text
        record = json.loads(FIGURE_TEXT.read_text(encoding="utf-8")) if FIGURE_TEXT.exists() else {}
        for path in core_path.notebooks(ROOT, set(a for a in argv if a != "--measure")).values():
            ids = {cell.get("id") for cell in nbformat.read(path, as_version=4).cells}
            found = measure_figures(path)
            record = {key: value for key, value in record.items() if key.split("/")[0] not in ids} | found
            print(f"{path.name}: {len(found)} figures measured, their smallest text "
                  f"{min((entry[2] for entry in found.values()), default=float('nan')):g} pt")
            FIGURE_TEXT.write_text("{\n" + ",\n".join(f" {json.dumps(key)}: {json.dumps(value)}" for key, value in
                                                     sorted(record.items())) + "\n}\n", encoding="utf-8")
        return 0
    if "--figures" in argv:  # how large each figure's smallest text is on a slide, and what would make it 18 px
        rows = figure_report(set(a for a in argv if a != "--figures"))
        print("notebook  cell            natural    text pt  drawn  text px  widest for 18 px (inches)")
        for number, cell_id, width, height, inches, pt, drawn, px in rows:
            widest = FIGURE_WIDTH_PX * pt / (72 * SMALLEST_FIGURE_PX)  # at full width, its text at 18 px
            print(f"{number:<9} {cell_id:<15} {width:>4}x{height:<4} {pt:>7g} {drawn:>6} {px:>8.1f}  "
                  + (f"{widest:.1f} (its PNG: {inches:.1f})" if px < SMALLEST_FIGURE_PX - 0.05 else ""))
        legible = sum(px >= SMALLEST_FIGURE_PX - 0.05 for *_, px in rows)
        print(f"{legible} of {len(rows)} figures' smallest text reaches {SMALLEST_FIGURE_PX} px on a slide at "
              f"1280x720; the smallest {min(px for *_, px in rows):.1f} px")
        return 0
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
