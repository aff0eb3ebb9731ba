"""`run.py slides` (tools/slides.py): one deck per notebook, built from the core path.

The fast tests read the decks' HTML: the optional cells are left out, every heading opens a slide, the
equations are MathML and the figures embedded, and nothing points at the network. The browser test
(tests/browser/test_slides_in_browser.py) opens them in headless Chromium with the network blocked.
"""

from __future__ import annotations

import json
import re

import pytest
from tool_loader import ROOT, load_tool

slides = load_tool("slides")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SAMPLE = [path for path in NOTEBOOKS if path.name[:2] in {"02", "13"}]  # 13 has optional cells and a widget


@pytest.fixture(scope="module")
def decks(tmp_path_factory):
    out = tmp_path_factory.mktemp("slides")
    return {path.stem: path for path in slides.build(out, {p.name[:2] for p in SAMPLE})}


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_deck_is_the_core_path_one_slide_per_heading(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    shown = set(re.findall(r'id="cell-id=([^"]+)"', page))
    for cell in cells(notebook):
        optional = "optional" in cell.get("metadata", {}).get("tags", [])
        split = any(c.startswith(f"{cell['id']}-") for c in shown)  # a markdown cell cut at its headings
        assert (cell["id"] in shown or split) != optional, (cell["id"], optional)
    headings = sum(len(slides.HEADING.findall("".join(c["source"]))) for c in cells(notebook)
                   if c["cell_type"] == "markdown" and "optional" not in c.get("metadata", {}).get("tags", []))
    opened = page.count('<section class="slide">')
    assert headings <= opened <= len(shown), (headings, opened)
    for section in page.split('<section class="slide">')[1:]:
        assert 'class="jp-Cell ' in section, "an empty slide"


@pytest.mark.parametrize("notebook", SAMPLE, ids=[p.stem[:2] for p in SAMPLE])
def test_a_deck_needs_no_network(decks, notebook):
    page = decks[notebook.stem].read_text(encoding="utf-8")
    assert "<math" in page and 'src="data:image/png;base64,' in page
    assert not re.search(r"""(?:src|href)=["']?(?:https?:)?//""", page), "a resource from the network"
    assert "ArrowRight" in page and 'class="deck-counter"' in page
    assert not re.search(r"\$[^$\n]{1,80}\$", re.sub(r"<(code|pre|script|style)\b.*?</\1>", "", page, flags=re.S))


def test_core_path_cells_marks_slide_starts_and_caps_long_slides():
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# Title\n\nIntro.\n\n## Part one\n\nText."),
        *[nbformat.v4.new_code_cell(f"x = {k}") for k in range(slides.CELLS_PER_SLIDE)],
        nbformat.v4.new_markdown_cell("More text."),
        nbformat.v4.new_code_cell("y = 1"),
        nbformat.v4.new_markdown_cell("## Tangent", metadata={"tags": ["optional"]}),
        nbformat.v4.new_markdown_cell("A lone last paragraph stays on its slide."),
    ])
    out = slides.core_path_cells(nb).cells
    assert [c.source.splitlines()[0] for c in out if c.metadata["slide_start"]] == ["## Part one", "More text."]
    assert all("Tangent" not in c.source for c in out)
