"""Optional means optional: a learner who skips every cell tagged ``optional`` meets no name, number or
figure later that only those cells defined, and can tell which cells those are.

- Each notebook is executed top to bottom with its ``optional`` cells removed, in a temporary folder of its
  own, and must raise nothing; every core cell must print what it printed with them (the stored outputs,
  compared as nbval compares them; cells tagged ``nbval-ignore-output`` and figures are not compared).
- A learner does not see tags: each run of optional cells opens with a line that says "optional" (a
  markdown cell's first line, a code cell's first comment), and a markdown cell that opens with
  "Optional" is tagged.
- An optional detour that derives something (a display equation, a fraction, a derivative) names its way past in its
  first paragraph: the check or result a learner who skips it can rely on ("skip it: the printed table
  is enough").

The notebooks run concurrently, one kernel each (as in test_rerun_notebooks.py), so the file takes about
as long as its slowest notebook.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from test_rerun_notebooks import CELL_TIMEOUT_S, IGNORE_TAG, NOTEBOOKS, _run_in_own_thread, _short, texts

OPTIONAL = "optional"
SAYS_OPTIONAL = re.compile(r"\boptional\b", re.IGNORECASE)
OPENS_AS_OPTIONAL = re.compile(r"^\s*(#+\s*|\*+|_)?\s*(\d+\s*·\s*)?optional\b", re.IGNORECASE)
#: a detour that derives something: a display equation, a fraction or a derivative, or says so
DERIVES = re.compile(r"\$\$|\\frac|\\partial|\bderiv", re.IGNORECASE)
#: words with which a detour names the way past it: "skip it", "... is enough", "the way past"
WAY_PAST = re.compile(r"\b(skip|skipping|enough|way past|all you need)\b", re.IGNORECASE)


def is_optional(cell) -> bool:
    return OPTIONAL in cell.metadata.get("tags", [])


def detours(nb) -> list[list[int]]:
    """The runs of consecutive optional cells, as lists of cell indices."""
    runs, current = [], []
    for i, cell in enumerate(nb.cells):
        if is_optional(cell):
            current.append(i)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


def opening_line(cell) -> str:
    """What a learner reads first: a markdown cell's first line, a code cell's first comment line."""
    lines = [line.strip() for line in cell.source.strip().splitlines() if line.strip()]
    if cell.cell_type == "code":
        lines = [line.lstrip("# ") for line in lines if line.startswith("#")][:1]
    return lines[0] if lines else ""


async def run_core_path(path: Path, folder: Path, slots: asyncio.Semaphore) -> list[str]:
    """Run ``path`` without its optional cells, in ``folder``; return the problems found."""
    nb = nbformat.read(path, as_version=4)
    stored = {i: texts(cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"}
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(folder)}})
    problems = []
    async with slots, client.async_setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or is_optional(cell):
                continue
            await client.async_execute_cell(cell, i)
            now = texts(cell)
            first_line = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
            if any(text.startswith("error: ") for text in now):
                problems.append(f"cell {i} ({first_line!r}...) raises without the optional cells: {_short(now)}")
                break
            if IGNORE_TAG not in cell.metadata.get("tags", []) and now != stored[i]:
                problems.append(f"cell {i} ({first_line!r}...) prints {_short(now)} without the optional cells, "
                                f"{_short(stored[i])} with them")
    return problems


@pytest.fixture(scope="module")
def core_path_problems(tmp_path_factory):
    folders = {path: tmp_path_factory.mktemp(path.stem[:2]) for path in NOTEBOOKS}

    async def all_notebooks():
        slots = asyncio.Semaphore(max(2, os.cpu_count() or 1))
        results = await asyncio.gather(*(run_core_path(path, folders[path], slots) for path in NOTEBOOKS),
                                       return_exceptions=True)
        return dict(zip(NOTEBOOKS, results))

    return _run_in_own_thread(all_notebooks)


# The first test's setup runs every notebook (the module fixture): about 2 minutes on 2 quiet cores, longer
# beside another worker or on numpy without SIMD. Past pytest-timeout's 300 s the xdist worker would be
# stopped without a word ("node down: Not properly terminated") and the session would stall.
@pytest.mark.timeout(1500)
@pytest.mark.slow
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_without_its_optional_cells(core_path_problems, notebook):
    result = core_path_problems[notebook]
    if isinstance(result, BaseException):
        raise result
    assert not result, f"{notebook.name}: a learner who skips the optional cells meets:\n" + "\n".join(result)


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_optional_cells_say_so(notebook):
    nb = nbformat.read(notebook, as_version=4)
    problems = []
    for run in detours(nb):
        first = nb.cells[run[0]]
        if not SAYS_OPTIONAL.search(opening_line(first)):
            problems.append(f"cell {run[0]} opens {len(run)} optional cell(s) but its first line does not say "
                            f"so: {opening_line(first)[:80]!r}")
        if any(DERIVES.search(nb.cells[i].source) for i in run if nb.cells[i].cell_type == "markdown"):
            paragraphs = first.source.strip().split("\n\n") if first.cell_type == "markdown" else [""]
            paragraph = "\n\n".join(paragraphs[:2] if paragraphs[0].startswith("#") else paragraphs[:1])
            if not WAY_PAST.search(paragraph):
                problems.append(f"cell {run[0]} opens an optional derivation without naming the way past it "
                                f"(\"skip it: ... is enough\"): {paragraph[:80]!r}")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and OPENS_AS_OPTIONAL.search(cell.source) and not is_optional(cell):
            problems.append(f"cell {i} opens with 'Optional' but is not tagged {OPTIONAL!r}")
    assert not problems, f"{notebook.name}:\n" + "\n".join(problems)


def test_a_name_only_an_optional_cell_defines_is_caught(tmp_path):
    """The run itself: a core cell whose output depends on an optional cell is reported, and one that uses a name
    only an optional cell makes fails."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("total = 1"),
                nbformat.v4.new_code_cell("# Optional: a tangent\ntotal += 1\nshortcut = 2",
                                          metadata={"tags": [OPTIONAL]}),
                nbformat.v4.new_code_cell("print(total)"),
                nbformat.v4.new_code_cell("print(shortcut)")]
    for cell in nb.cells[2:]:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="2\n")]
    path = tmp_path / "00_probe.ipynb"
    nbformat.write(nb, path)

    async def probe():
        return await run_core_path(path, tmp_path, asyncio.Semaphore(1))

    problems = _run_in_own_thread(probe)
    assert len(problems) == 2, problems
    assert problems[0].startswith("cell 2 ") and "without the optional cells" in problems[0], problems
    assert problems[1].startswith("cell 3 ") and "NameError" in problems[1], problems
