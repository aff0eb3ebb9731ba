"""Every notebook is one sitting (issue 46): the budgets of ``tools/density.py`` hold for every notebook, or the
notebook is in ``OVER``, the record of what is still over budget as measured at its commit. A record may only fall:
a notebook that gets denser fails, and one that got lighter fails until its record is lowered (or removed), so the
record always says where the series stands. ``python tools/density.py --over`` prints it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tool_loader import load_tool  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
density = load_tool("density")

#: What is still over budget, notebook by notebook (``tools/density.py --over``); issue 46 keeps count.
OVER = {}


@pytest.fixture(scope="module")
def rows():
    tool = density._core_path_tool()
    return {path.name[:2]: density.measure(path, tool) for path in NOTEBOOKS}


@pytest.mark.parametrize("notebook", [p.name[:2] for p in NOTEBOOKS])
def test_every_budget_holds_or_is_on_record(rows, notebook):
    row, record = rows[notebook], OVER.get(notebook, {})
    problems = [f"{name} {row[name]} > {record.get(name, limit)}" for name, limit in density.BUDGETS.items()
                if row[name] > record.get(name, limit)]
    assert not problems, f"notebook {notebook} got denser: " + "; ".join(problems)


def test_the_record_is_current(rows):
    stale = []
    for notebook, record in OVER.items():
        for name, recorded in record.items():
            now = rows[notebook][name]
            if now < recorded:
                stale.append(f"{notebook} {name}: {recorded} on record, {now} now"
                             + (" (within budget: remove it)" if now <= density.BUDGETS[name] else ""))
    assert not stale, "lower the record (python tools/density.py --over):\n" + "\n".join(stale)


def test_the_measures_read_what_a_learner_reads():
    text = density.prose("Softmax $e^{x}$ of `x` in [a link](https://example.org) <b>here</b>.\n\n```\ncode\n```")
    assert density.words(text) == 6  # Softmax of in a link here
    assert len(density.sentences("One. Two!\n- three\n| four |\n\nfive")) == 5


def test_lines_before_picture_counts_what_a_learner_scrolls_past():
    import nbformat

    figure = nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})
    cells = [nbformat.v4.new_markdown_cell("# Title\n\n" + "word " * 50),  # a heading (2), a blank (1), 250 chars (3)
             nbformat.v4.new_code_cell("x = 1\nprint(x)", outputs=[nbformat.v4.new_output("stream", text="1\n")]),
             nbformat.v4.new_code_cell("plot()", outputs=[figure])]
    assert density.lines_before_picture(cells) == (1 + 2 + 1 + 3) + (1 + 2 + 1) + (1 + 1)
    hidden = nbformat.v4.new_code_cell("\n".join(["pass"] * 40), metadata={"jupyter": {"source_hidden": True}})
    assert density.lines_before_picture([hidden, cells[2]]) == 2 + 2  # a collapsed input is one line and its gap
    assert density.lines_before_picture(cells[:2]) == 11  # no figure: every line counts
