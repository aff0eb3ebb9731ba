"""The static site (tools/build_site.py) builds offline from the committed outputs.

Built once into a temporary folder: a page per notebook, figures embedded with alt
text, equations as MathML (no script, no network), the widgets' places explained,
pages linked in teaching order, an index listing them. tests/browser/test_site_in_browser.py
opens the pages in Chromium with the network blocked.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def _load_tool():
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build_site = _load_tool()


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    out = tmp_path_factory.mktemp("site")
    pages = build_site.build(out, ROOT / "notebooks")
    return out, pages


def _page(out: Path, notebook: Path) -> str:
    return (out / f"{notebook.stem}.html").read_text(encoding="utf-8")


def _links(page: str, rel: str) -> set[str]:
    """The targets of ``<a rel=...>`` links (nbconvert may reorder attributes)."""
    anchors = re.findall(r"<a\b[^>]*>", page)
    return {re.search(r'href="([^"]+)"', a).group(1) for a in anchors if f'rel="{rel}"' in a}


def _has_figures(notebook: Path) -> bool:
    nb = nbformat.read(notebook, as_version=4)
    return any("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_every_notebook_has_a_page_and_the_index_lists_them_in_order(site):
    out, pages = site
    assert [p.name for p in pages] == ["index.html", *[f"{nb.stem}.html" for nb in NOTEBOOKS], "glossary.html"]
    index = (out / "index.html").read_text(encoding="utf-8")
    links = re.findall(r'<li><a href="(\d\d_[\w.-]+\.html)"', index)
    assert links == [f"{nb.stem}.html" for nb in NOTEBOOKS]
    assert 'name="viewport"' in index


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_page_is_self_contained_and_readable(site, notebook):
    out, _ = site
    page = _page(out, notebook)
    assert 'name="viewport"' in page, "no mobile viewport"
    if _has_figures(notebook):
        assert "data:image/png;base64," in page, "figures are not embedded"
    assert not re.search(r'<img[^>]+src="(?!data:)', page), "an image that is not embedded"
    # No script at all (no MathJax, widget manager, require.js or mermaid), nothing loaded from the web.
    assert "<script" not in page.lower()
    assert not re.search(r'<(?:link|img|iframe)\b[^>]+(?:href|src)="(?:https?:)?//', page), "a resource from the web"
    images = re.findall(r"<img\b[^>]*>", page)
    assert all(re.search(r"""\balt=(["'])(?:(?!\1).){10,}\1""", img) for img in images), "a figure without alt text"
    assert "application/vnd.jupyter.widget-view+json" not in page, "a live widget view left in a static page"
    assert not re.search(r'href="\d\d_[\w.-]+\.ipynb', page), "a link to a notebook instead of its page"
    assert 'href="glossary.html"' in page and "glossary.md" not in page, "the first cell's glossary link"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_widgets_are_explained_and_pages_linked(site, notebook):
    out, _ = site
    page = _page(out, notebook)
    nb = nbformat.read(notebook, as_version=4)
    views = sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert page.count('class="site-widget-note"') == views
    i = NOTEBOOKS.index(notebook)
    expected_prev = {f"{NOTEBOOKS[i - 1].stem}.html"} if i > 0 else set()
    expected_next = {f"{NOTEBOOKS[i + 1].stem}.html"} if i + 1 < len(NOTEBOOKS) else set()
    assert _links(page, "prev") == expected_prev
    assert _links(page, "next") == expected_next
    assert 'href="index.html"' in page


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_equations_are_mathml(site, notebook):
    out, _ = site
    nb = nbformat.read(notebook, as_version=4)
    has_math = any("$" in c.source for c in nb.cells if c.cell_type == "markdown")
    page = _page(out, notebook)
    assert (page.count("<math ") > 0) == has_math
    prose = re.sub(r"<(annotation|code|pre|style)\b.*?</\1>", "", page, flags=re.S)  # code may show $ signs
    assert not re.findall(r"\$[^$<>\n]{1,80}\$", prose), "raw LaTeX left in the text"
    assert page.count("<math ") == page.count('<annotation encoding="application/x-tex">')


def test_mathml_keeps_the_latex_and_a_bad_equation_stops_the_build():
    element = build_site.mathml(r"\sqrt{d_k}", display="block")
    assert element.startswith('<math xmlns="http://www.w3.org/1998/Math/MathML" display="block"><semantics>')
    assert "<msqrt>" in element and r"\sqrt{d_k}</annotation>" in element
    with pytest.raises(build_site.MathError, match=r"\$x\^\$"):
        build_site.markdown_to_html("a broken equation: $x^$")


def test_figure_alt_text_comes_from_the_cell_or_the_text_above():
    nb = nbformat.v4.new_notebook()
    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    nb.cells = [nbformat.v4.new_markdown_cell("## Weights\n\nEach row of $W_q$ sums to **one**. More text."),
                nbformat.v4.new_code_cell("plot()", outputs=[figure]),
                nbformat.v4.new_code_cell("plot()", outputs=[figure, figure], metadata={"alt": ["First", "Second"]})]
    assert build_site.figure_alts(nb) == {(1, 0): "Figure: Weights Each row of W_q sums to one.",
                                          (2, 0): "First", (2, 1): "Second"}


def test_goals_and_titles_come_from_the_first_cell():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(
        "# 09 · Something\n\n**After this notebook you will be able to**\n- do $x$;\n- do y\n  and z.\n\nMore.")]
    assert build_site.title_of(nb) == "09 · Something"
    assert build_site.goals_of(nb) == ["do $x$;", "do y and z."]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_figure_says_what_it_shows(notebook):
    """Each figure's cell gives its own alt text (the ``alt`` metadata the site and the slides use), a sentence
    or more about what it shows, rather than the first sentence of the text above it."""
    nb = nbformat.read(notebook, as_version=4)
    for cell in nb.cells:
        figures = sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
        if not figures:
            continue
        alt = cell.metadata.get("alt")
        alts = [alt] if isinstance(alt, str) else list(alt or [])
        assert len(alts) == figures, f"cell {cell.get('id')}: {figures} figures, {len(alts)} alt texts"
        for text in alts:
            assert len(text) >= 80 and not re.match(r"(?i)(figure|plot|image|chart)\s*\d*\s*[.:]?$", text), (
                f"cell {cell.get('id')}: alt text that does not say what the figure shows: {text!r}")


def test_the_glossary_has_a_page_with_every_term(site):
    out, _ = site
    page = (out / "glossary.html").read_text(encoding="utf-8")
    rows = [line for line in (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8").splitlines()
            if line.startswith("| ") and not line.startswith(("| term", "| ---"))]
    assert page.count("<tr>") >= len(rows) > 100
    assert "<script" not in page.lower() and "$" not in page.split("<main", 1)[1], "raw LaTeX or a script"
