"""Every notebook is committed executed, in order, clean, and shaped like a lesson.

Strict nbval (configured in pyproject.toml) re-runs each notebook and compares its
outputs; these tests check what nbval does not: the stored state of the files.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"
MACHINE_PATH = re.compile(r"""(^|[\s'"(=])/(home|root|tmp|work|usr|opt|var|Users)/[\w.-]+""")


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def code_cells(nb):
    return [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]


def output_text(output):
    data = output.get("data", {})
    return "".join(output.get("text", "")) + "".join(data.get("text/plain", "")) + "".join(data.get("text/html", ""))


def test_there_are_notebooks_numbered_from_00():
    assert NOTEBOOKS, "no notebooks found"
    assert NOTEBOOKS[0].name == "00_start_here.ipynb"
    numbers = [int(p.name[:2]) for p in NOTEBOOKS]
    assert numbers == list(range(len(numbers))), f"notebook numbers have gaps: {numbers}"


@pytest.fixture(params=NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def notebook(request):
    return request.param, load(request.param)


def test_executed_in_order(notebook):
    path, nb = notebook
    counts = [c["execution_count"] for c in code_cells(nb)]
    assert counts == list(range(1, len(counts) + 1)), f"{path.name}: run 'Restart & Run All' and save; got {counts}"


def test_no_error_outputs_and_no_machine_paths(notebook):
    path, nb = notebook
    for i, cell in enumerate(code_cells(nb)):
        for output in cell.get("outputs", []):
            assert output["output_type"] != "error", f"{path.name} cell {i}: error output {output.get('ename')}"
            assert not MACHINE_PATH.search(output_text(output)), f"{path.name} cell {i}: machine-specific path"
            if output["output_type"] == "stream":
                assert output["name"] != "stderr" or "Warning" not in output_text(output), (
                    f"{path.name} cell {i}: an uncaught warning on stderr"
                )


def test_kernel_is_python3(notebook):
    path, nb = notebook
    assert nb["metadata"]["kernelspec"]["name"] == "python3", path.name


def test_lesson_shape(notebook):
    """Opens with goals, ends with a summary and a link to the next notebook, has a widget, a figure and a check."""
    path, nb = notebook
    markdown = [("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"]
    assert "you will be able to" in markdown[0].lower(), f"{path.name}: first cell should state the goals"
    # The end: a summary, then at most the series so far, where to go next, its sources and the link, in cells of
    # their own.
    starts = [i for i, text in enumerate(markdown) if re.match(r"#+ .*summary", text.lower())]
    assert starts and len(markdown) - starts[-1] <= 5, f"{path.name}: the last cells should be a summary"
    ending = "\n".join(markdown[starts[-1]:])
    assert re.search(r"\]\((\d\d_[\w]+\.ipynb)\)", ending), f"{path.name}: summary should link the next notebook"
    target = re.findall(r"\]\((\d\d_[\w]+\.ipynb)\)", ending)[0]
    assert (NOTEBOOK_DIR / target).exists() or int(target[:2]) == len(NOTEBOOKS), f"{path.name}: link to {target}"
    cells = code_cells(nb)
    sources = ["".join(c["source"]) for c in cells]
    assert any(".show()" in s for s in sources), f"{path.name}: no live widget"
    assert any(".static(" in s for s in sources), f"{path.name}: no static fallback figure for the widget"
    assert any("check_" in s for s in sources), f"{path.name}: no auto-checked exercise"
    assert any("solution(" in s for s in sources), f"{path.name}: no solution on demand"
    images = sum("image/png" in o.get("data", {}) for c in cells for o in c.get("outputs", []))
    assert images >= 2, f"{path.name}: expected figures in the stored outputs"


def test_ignore_tags_only_on_widget_or_timing_cells(notebook):
    path, nb = notebook
    for cell in code_cells(nb):
        if IGNORE_TAG in cell.get("metadata", {}).get("tags", []):
            source = "".join(cell["source"])
            timing_or_widget = (".show()", "timeit", "perf_counter", "display(", "attention_cost(", "best_time(",
                                "_seconds")
            assert any(word in source for word in timing_or_widget), (
                f"{path.name}: {IGNORE_TAG} on a cell that is neither a widget nor a timing:\n{source[:200]}"
            )


def test_first_cell_fixes_printing_and_seed(notebook):
    path, nb = notebook
    first = "".join(next(c for c in code_cells(nb) if c.get("id") != "colab-setup")["source"])  # Colab's set-up
    assert "setup_printing()" in first, f"{path.name}: the first cell must fix the print options"
    for cell in code_cells(nb):  # a generator shared between cells prints other numbers when a cell is run again
        source = "".join(cell["source"])
        if re.search(r"\brng\.", source):
            assert "rng = np.random.default_rng(SEED)" in source, (
                f"{path.name}: a cell that draws random numbers makes its own rng = np.random.default_rng(SEED)"
            )
    all_code = "\n".join("".join(c["source"]) for c in code_cells(nb))
    assert "np.random.seed" not in all_code and not re.search(r"np\.random\.(rand|randn|normal)\(", all_code), (
        f"{path.name}: use rng = np.random.default_rng(SEED), never the global np.random state"
    )
