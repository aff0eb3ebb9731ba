"""JupyterHub: a real hub on 127.0.0.1 serves the series to a class, and nbgitpuller keeps each student's work.

The fast test (the whole suite) checks the link ``python3 run.py hub-link`` prints. The ``hub`` test (marker
``hub``; CI runs it in a step of its own, ``pytest -m hub``) starts JupyterHub (dummy authenticator, one local
process per student) behind configurable-http-proxy (npm; .ci/run installs it under .hub/), adds three students;
each logs in through the REST API, starts a server, opens the nbgitpuller link (a local git repository of this
checkout stands in for GitHub) and runs notebook 00 through a kernel of their server: its text outputs are the
stored ones. Then one student edits notebook 00, the teacher changes notebook 00 and the README upstream, the
student pulls again: the edit is kept and the README's change arrives.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.parse

import nbformat
import pytest
from test_colab import compared_text
from tool_loader import ROOT, load_tool

hub_tool = load_tool("hub")
sys.path.insert(0, str(ROOT))
import run  # noqa: E402

NOTEBOOK_00 = "attention-notebooks/notebooks/00_start_here.ipynb"
STUDENTS = ["ada", "grace", "alan"]
#: What three students should take, the hub's start included: reported on every run ("over the budget" when not met).
SMOKE_BUDGET_S = 180
#: What fails the test: three times the budget (the pytest timeout, 600 s, ends it anyway). A busy machine slows the
#: servers' starts and the kernels far past the budget without anything being wrong; a hub that hangs is caught.
SMOKE_LIMIT_S = 3 * SMOKE_BUDGET_S


def test_hub_link_points_nbgitpuller_at_the_repository_and_opens_notebook_00():
    link = run.nbgitpuller_link("https://hub.example.edu/base/")
    parts = urllib.parse.urlsplit(link)
    assert f"{parts.scheme}://{parts.netloc}{parts.path}" == "https://hub.example.edu/base/hub/user-redirect/git-pull"
    query = dict(urllib.parse.parse_qsl(parts.query))
    assert query == {"repo": run.repository_url(), "branch": "main",
                     "urlpath": "lab/tree/attention-notebooks/notebooks/00_start_here.ipynb"}
    printed = subprocess.run([sys.executable, str(ROOT / "run.py"), "hub-link", "https://hub.example.edu/base"],
                             capture_output=True, text=True, check=True).stdout
    assert printed == link + "\n"
    refused = subprocess.run([sys.executable, str(ROOT / "run.py"), "hub-link"], capture_output=True, text=True)
    assert refused.returncode == 1 and "hub-link https://" in refused.stderr


@pytest.fixture
def hub(tmp_path):
    pytest.importorskip("jupyterhub", reason="the hub extra: pip install -e '.[hub]'")
    proxy = hub_tool.proxy_command()
    if proxy is None:
        message = "configurable-http-proxy is not installed: " + hub_tool.PROXY_HELP
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true: " + message)
        pytest.skip(message)
    started = hub_tool.Hub(tmp_path / "hub", proxy)
    yield started
    started.stop()


def student_edit(hub, name: str, token: str) -> str:
    """The student writes an answer into the first code cell after the set-up cell of notebook 00, and saves."""
    nb = nbformat.read(hub.homes / name / NOTEBOOK_00, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "code" and c.get("id") != "colab-setup")
    cell.source += "\n# ada's note: my own answer"
    hub.api("PUT", f"/user/{name}/api/contents/{NOTEBOOK_00}",
            {"type": "notebook", "format": "json", "content": nb}, token=token)
    return cell.source


@pytest.mark.hub
@pytest.mark.simd_independent
@pytest.mark.timeout(600)
def test_three_students_log_in_pull_the_series_and_run_notebook_00(hub, tmp_path, record_property):
    upstream = hub_tool.checkout_as_git_repo(tmp_path / "teacher" / "attention-notebooks")  # as named on GitHub
    hub.add_students(STUDENTS)
    tokens = {name: hub.log_in(name) for name in STUDENTS}
    for name in STUDENTS:
        hub.start_server(name, tokens[name])
    stored = {c.get("id"): compared_text(c) for c in nbformat.read(ROOT / "notebooks" / "00_start_here.ipynb",
                                                                     as_version=4).cells if c.cell_type == "code"}
    for name in STUDENTS:
        hub.pull(name, tokens[name], str(upstream))
        nb, _ = hub.run_notebook(name, tokens[name], NOTEBOOK_00)
        for cell in nb.cells:
            if cell.cell_type == "code":
                errors = [o for o in cell.outputs if o.output_type == "error"]
                assert not errors, f"{name}, cell {cell.id}: {errors[0].ename}: {errors[0].evalue}"
                assert compared_text(cell) == stored[cell.id], f"{name}, cell {cell.id}"

    # A student's work survives the next pull; the teacher's update arrives.
    edited = student_edit(hub, "ada", tokens["ada"])
    readme = (upstream / "README.md").read_text(encoding="utf-8") + "\nUpdated for next week.\n"
    (upstream / "README.md").write_text(readme, encoding="utf-8")
    upstream_nb = nbformat.read(upstream / "notebooks" / "00_start_here.ipynb", as_version=4)
    upstream_nb.cells[0].source += "\n\n(Updated by the teacher.)"
    nbformat.write(upstream_nb, upstream / "notebooks" / "00_start_here.ipynb")
    hub_tool.commit(upstream, "the teacher's update")
    hub.pull("ada", tokens["ada"], str(upstream))
    home = hub.homes / "ada" / "attention-notebooks"
    kept = nbformat.read(home / "notebooks" / "00_start_here.ipynb", as_version=4)
    assert edited in [c.source for c in kept.cells], "the student's edit was lost in the second pull"
    assert (home / "README.md").read_text(encoding="utf-8") == readme, "the teacher's update did not arrive"
    seconds = time.perf_counter() - hub.started  # the hub's start included
    budget = "within" if seconds <= SMOKE_BUDGET_S else "OVER"
    record_property("hub", f"3 students: {seconds:.0f} s, {budget} the {SMOKE_BUDGET_S} s budget")
    print(f"hub smoke test, 3 students: {seconds:.0f} s, {budget} the {SMOKE_BUDGET_S} s budget")
    assert seconds <= SMOKE_LIMIT_S, f"3 students took {seconds:.0f} s, over {SMOKE_LIMIT_S} s"


def test_the_guides_sizing_table_is_the_benchmarks_output():
    import json

    bench = load_bench()
    record = json.loads((ROOT / "benchmarks" / "hub.json").read_text())
    assert record["students"] >= 30 and {"00", "12", "14"} <= set(record["notebooks"])
    guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    assert f"{bench.START}\n{bench.table(record)}\n{bench.END}" in guide, "run benchmarks/bench_hub.py --write-guide"


def load_bench():
    import importlib.util

    spec = importlib.util.spec_from_file_location("bench_hub", ROOT / "benchmarks" / "bench_hub.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
