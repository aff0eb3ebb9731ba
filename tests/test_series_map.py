"""The map is whole (issue 46): every list of the series names the notebooks that exist, so a new notebook
cannot be left out again; every notebook links the glossary from its first cell and the next notebook from its end.

The notebooks that exist are read from ``notebooks/``; nothing here lists them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
NUMBERS = [p.name[:2] for p in NOTEBOOKS]
LAST = NUMBERS[-1]


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _source(cell):
    return "".join(cell["source"])


def _cell(number, cell_id):
    path = next(p for p in NOTEBOOKS if p.name.startswith(number))
    return _source(next(c for c in _cells(path) if c["id"] == cell_id))


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=NUMBERS)
def test_the_title_and_the_answer_key_carry_the_notebooks_number(notebook):
    """A renumbered notebook keeps no old number in its title, in its answer key's title or in its guide section."""
    number = notebook.name[:2]
    title = _source(_cells(notebook)[0]).splitlines()[0]
    assert title.startswith(f"# {number} · "), (notebook.name, title)
    key = ROOT / "docs" / "answers" / f"{number}.md"
    assert key.read_text(encoding="utf-8").startswith(f"# {number} · "), key.name
    guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    assert f"\n### {number} · " in guide, (number, "its section of the guide")


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=NUMBERS)
def test_the_first_cell_links_the_glossary(notebook):
    first = _source(_cells(notebook)[0])
    assert "](../docs/glossary.md)" in first, f"{notebook.name}: its first cell does not link docs/glossary.md"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=NUMBERS)
def test_each_notebook_ends_with_the_next_one(notebook):
    number = notebook.name[:2]
    ending = "\n".join(_source(c) for c in _cells(notebook) if c["cell_type"] == "markdown")[-3000:]
    if number == LAST:
        assert "last notebook" in ending and "](00_start_here.ipynb)" in ending, "the last notebook says so"
    else:
        following = NOTEBOOKS[NUMBERS.index(number) + 1].name
        assert f"]({following})" in ending, f"{notebook.name} does not end with a link to {following}"
        assert "last notebook" not in ending, f"{notebook.name} calls itself the last notebook"


def test_the_map_of_notebook_00_has_a_row_for_every_notebook():
    rows = re.findall(r"^\| (\d\d) \|", _cell("00", "00-map"), re.MULTILINE)
    assert rows == NUMBERS


def test_notebook_00_opens_with_the_whole_series():
    first = _source(_cells(NOTEBOOKS[0])[0])
    assert f"notebooks 00 to {LAST}" in first, \
        f"00's first cell stops before notebook {LAST}"


def test_notebook_08_names_what_comes_after_it():
    path = next(p for p in NOTEBOOKS if p.name.startswith("08"))
    text = "\n".join(_source(c) for c in _cells(path) if c["id"].startswith("08-043"))  # the summary's cells
    later = [p for p in NOTEBOOKS if p.name[:2] > "08"]
    missing = [p.name for p in later if f"]({p.name})" not in text]
    assert not missing, f"08's 'What comes next' leaves out {missing}"


def test_the_readme_lists_every_notebook():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in NOTEBOOKS if f"notebooks/{p.name})" not in readme]
    assert not missing, f"the README's table leaves out {missing}"
