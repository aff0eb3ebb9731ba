#!/usr/bin/env python3
"""Write one slide deck per notebook for a classroom walk-through: offline, one file each.

    python3 run.py slides                          # the usual way: writes slides/NN_topic.html
    python tools/slides.py [--out DIR] [NN ...]

A deck is the notebook's core path (the cells tagged ``optional`` are left out), rendered from
its stored outputs exactly as the static site renders it (tools/build_site.py: equations as
MathML, figures embedded as PNG, widgets as a note): nothing is executed and nothing is loaded
from the network. A new slide starts at every heading, and at a paragraph once a slide holds
``CELLS_PER_SLIDE`` cells. A few lines of script show one slide at a time: → / Space / Page Down
for the next, ← / Page Up for the previous, Home / End, and ``#7`` in the address opens slide 7.
Without the script (or when printed) the deck reads as one page, slide after slide.
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
CELLS_PER_SLIDE = 4
HEADING = re.compile(r"^#{1,4}\s", re.MULTILINE)



CSS = """
html:root { --jp-content-font-size1: 22px; --jp-code-font-size: 17px; --jp-content-line-height: 1.5; }
body.jp-Notebook { margin: 0; }
.jp-RenderedHTMLCommon h1 { font-size: 2rem; } .jp-RenderedHTMLCommon h2 { font-size: 1.7rem; }
section.slide { box-sizing: border-box; max-width: 76rem; margin: 0 auto; padding: 1.5rem 2rem 3rem; }
html.deck section.slide { display: none; min-height: 100vh; }
html.deck section.slide.current { display: block; }
.deck-counter { position: fixed; right: 1rem; bottom: 0.6rem; font: 0.9rem system-ui, sans-serif; color: #666; }
html:not(.deck) .deck-counter { display: none; }
@media print { html.deck section.slide { display: block; min-height: 0; break-after: page; }
  .deck-counter { display: none; } }
"""

SCRIPT = """
(function () {
  var slides = Array.prototype.slice.call(document.querySelectorAll('section.slide'));
  var counter = document.querySelector('.deck-counter');
  var at = 0;
  document.documentElement.classList.add('deck');
  function show(n) {
    at = Math.max(0, Math.min(slides.length - 1, n));
    slides.forEach(function (s, i) { s.classList.toggle('current', i === at); });
    counter.textContent = (at + 1) + ' / ' + slides.length;
    if (location.hash !== '#' + (at + 1)) history.replaceState(null, '', '#' + (at + 1));
    window.scrollTo(0, 0);
  }
  document.addEventListener('keydown', function (e) {
    var next = {ArrowRight: 1, PageDown: 1, ' ': 1, ArrowLeft: -1, PageUp: -1}[e.key];
    if (next) { e.preventDefault(); show(at + next); }
    else if (e.key === 'Home') show(0);
    else if (e.key === 'End') show(slides.length - 1);
  });
  function fromHash() { show((parseInt(location.hash.slice(1), 10) || 1) - 1); }
  window.addEventListener('hashchange', fromHash);
  fromHash();
})();
"""

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
<script>{{ resources.deck.script }}</script>
</body>
{% endblock body_footer %}
"""


def core_path_cells(nb):
    """The notebook's cells without the ``optional`` ones, markdown split at its headings, each cell that
    opens a slide marked ``slide_start``."""
    cells = []
    for cell in nb.cells:
        if "optional" in cell.metadata.get("tags", []):
            continue
        if cell.cell_type == "markdown" and len(HEADING.findall(cell.source)) > (1 if HEADING.match(cell.source)
                                                                                   else 0):
            starts = [m.start() for m in HEADING.finditer(cell.source)]
            pieces = [cell.source[a:b] for a, b in zip([0, *starts], [*starts, len(cell.source)]) if
                      cell.source[a:b].strip()]
            for k, piece in enumerate(pieces):
                part = nbformat.v4.new_markdown_cell(piece.strip("\n"))
                if cell.get("attachments"):
                    part.attachments = cell.attachments
                part.id = f"{cell.get('id', 'cell')}-{k}"
                cells.append(part)
        else:
            cells.append(cell)
    opens = [c.cell_type == "markdown" and bool(HEADING.match(c.source)) for c in cells] + [True]
    since = 0
    for k, cell in enumerate(cells):
        left = opens.index(True, k + 1) - k  # this cell and the rest of its section
        full = cell.cell_type == "markdown" and since >= CELLS_PER_SLIDE and left >= 2  # no lone paragraph
        cell.metadata["slide_start"] = k > 0 and (opens[k] or full)
        since = 1 if cell.metadata["slide_start"] else since + 1
    nb = nbformat.from_dict({**nb, "cells": cells})
    return nb


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
                 "site": {"css": site.CSS + CSS}, "deck": {"script": SCRIPT}}
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
