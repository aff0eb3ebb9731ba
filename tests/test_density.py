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
