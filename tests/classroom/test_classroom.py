"""The nbgrader course folder that `run.py classroom` writes (classroom_kit/classroom.py).

The fast tests read the generated source notebooks: every solution a notebook reveals becomes a solution
region with an autograder test after it that imports its checker, no notebook keeps a `solution(...)` call,
and the config makes autograde's step the sandboxed grader (classroom_kit/grade.py), never nbgrader's Execute. The slow
test runs the real nbgrader cycle (generate_assignment, autograde, generate_feedback, export) on two
assignments: the source notebook as a submission gets full marks, an untouched released notebook gets 0
without an error. Hostile submissions: tests/classroom/test_grading_hostile.py.
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from test_grading_hostile import sandbox_or_skip
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading and packaging: CI's pass without SIMD leaves it out

classroom = load_tool("classroom")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
CYCLE = ["02_dot_product_scores", "08_multi_head_attention"]  # small and fast; 08 has a two-check exercise


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    return out, classroom.build(out)


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def revealed(path):
    return [name for cell in cells(path) if cell["cell_type"] == "code"
            for name in re.findall(r"""solution\(["'](\w+)["']\)""", "".join(cell["source"]))]


def test_every_notebook_becomes_an_assignment(course):
    out, written = course
    assert sorted(written) == [path.stem for path in NOTEBOOKS]
    assert (out / "nbgrader_config.py").is_file()
    for path in NOTEBOOKS:
        assert (out / "source" / path.stem / path.name).is_file()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem[:2] for p in NOTEBOOKS])
def test_each_revealed_solution_is_a_solution_region_followed_by_its_tests(course, path):
    out, written = course
    source = cells(out / "source" / path.stem / path.name)
    code = "\n".join("".join(cell["source"]) for cell in source if cell["cell_type"] == "code")
    assert "solution(" not in code.replace("### BEGIN SOLUTION", "").replace("### END SOLUTION", "")
    regions = [cell for cell in source if cell["metadata"].get("nbgrader", {}).get("solution")]
    graded = {cell["metadata"]["nbgrader"]["grade_id"] for cell in regions}
    assert graded <= set(revealed(path))
    for name in revealed(path):  # graded itself, or solved in the same region as another (08's two counts)
        assert name in graded or any(f"def {name}(" in "".join(cell["source"]) for cell in regions), name
    for cell in regions:
        body = "".join(cell["source"])
        assert body.count("### BEGIN SOLUTION") == 1 and body.count("### END SOLUTION") == 1
        assert "raise NotImplementedError" in body or re.search(r"^\w+ = \.\.\.", body, re.MULTILINE), \
            "the learner's stub stays, outside the region"
        following = source[source.index(cell) + 1]
        meta = following["metadata"].get("nbgrader", {})
        assert meta.get("grade") and meta.get("locked") and meta.get("points") == 1
        test = "".join(following["source"])
        assert "assert verdict.passed" in test
        checker = re.search(r"verdict = (check_\w+)\(", test).group(1)
        assert f"from attn_helpers.checks import {checker}\n" in test, "a test cell imports what it needs"
    tests = [cell for cell in source if cell["metadata"].get("nbgrader", {}).get("grade")]
    assert len(tests) == len(written[path.stem]) >= len(regions)
    if revealed(path):
        assert regions, f"{path.name} reveals solutions but has no graded exercise"


def test_progress_is_not_recorded_while_grading(course):
    out, _ = course
    assert 'os.environ["ATTN_HELPERS_PROGRESS"] = "off"' in (out / "nbgrader_config.py").read_text()


def read_config(out, monkeypatch, tools: bool) -> list[str]:
    """The names of the autograde steps that ``out/nbgrader_config.py`` sets, read as nbgrader reads it."""
    from traitlets.config import Config

    kit = ROOT / "classroom_kit"
    path = [p for p in sys.path if Path(p).resolve() not in (ROOT / "tools", kit) and Path(p).name != ".grader"]
    monkeypatch.setattr(sys, "path", [str(kit), str(ROOT / "tools")] * tools + path)  # the config adds .grader/ too
    monkeypatch.delitem(sys.modules, "grade", raising=False)
    monkeypatch.setenv("ATTN_HELPERS_PROGRESS", "off")  # which the config sets
    config = {"get_config": Config, "__file__": str(out / "nbgrader_config.py")}
    exec((out / "nbgrader_config.py").read_text(encoding="utf-8"), config)  # noqa: S102 - nbgrader does the same
    return [step.__name__ for step in config["c"].Autograde.autograde_preprocessors]


def test_autograde_decides_marks_in_the_sandbox_instead_of_executing_the_notebook(course, monkeypatch, tmp_path):
    from nbgrader.converters import Autograde

    out, _ = course
    default = [step.__name__ for step in Autograde.class_traits()["autograde_preprocessors"].default()]
    steps = read_config(out, monkeypatch, tools=True)
    assert steps == [name.replace("Execute", "SandboxedGrading") for name in default] and "SaveAutoGrades" in steps
    shutil.copy(out / "nbgrader_config.py", tmp_path)  # a course folder whose grading copy is gone
    assert read_config(tmp_path, monkeypatch, tools=False) == ["NoGrading"], "no grading copy: nothing runs"


def nbgrader(out, *args):
    done = classroom.nbgrader(out, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.mark.slow
@pytest.mark.timeout(900)  # four notebook runs and five nbgrader commands; minutes on a loaded machine
def test_the_nbgrader_cycle_full_marks_for_the_solutions_zero_for_an_untouched_notebook(tmp_path):
    sandbox_or_skip()
    out = tmp_path / "classroom"
    written = classroom.build(out, {name[:2] for name in CYCLE})
    classroom.install_grader(out)
    for assignment in CYCLE:
        nbgrader(out, "generate_assignment", assignment, "--force")
        released = out / "release" / assignment / f"{assignment}.ipynb"
        source = out / "source" / assignment / f"{assignment}.ipynb"
        text = released.read_text(encoding="utf-8")
        assert "BEGIN SOLUTION" not in text and not re.search(r"\bsolution\(", text.replace("`solution(", ""))
        solved = [cell for cell in cells(source) if "### BEGIN SOLUTION" in "".join(cell["source"])]
        handed_out = {cell["metadata"]["nbgrader"]["grade_id"]: "".join(cell["source"]) for cell in cells(released)
                      if cell["metadata"].get("nbgrader", {}).get("solution")}
        assert len(handed_out) == len(solved) >= 2
        for cell in solved:
            region = "".join(cell["source"]).split("### BEGIN SOLUTION")[1].split("### END SOLUTION")[0]
            stub = handed_out[cell["metadata"]["nbgrader"]["grade_id"]]
            assert not [line for line in region.splitlines() if line.strip() and line in stub.splitlines()]
        for student, notebook in (("full_marks", source), ("untouched", released)):
            target = out / "submitted" / student / assignment
            target.mkdir(parents=True)
            shutil.copy(notebook, target / notebook.name)
        nbgrader(out, "autograde", assignment, "--force")
        nbgrader(out, "generate_feedback", assignment, "--force")
        feedback = (out / "feedback" / "untouched" / assignment / f"{assignment}.html").read_text(encoding="utf-8")
        assert "Hint:" in feedback  # the checker's hint is the feedback
        assert (out / "feedback" / "full_marks" / assignment / f"{assignment}.html").is_file()
    nbgrader(out, "export")
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        grades = {(row["assignment"], row["student_id"]): row for row in csv.DictReader(handle)}
    for assignment in CYCLE:
        full, untouched = grades[assignment, "full_marks"], grades[assignment, "untouched"]
        assert float(full["max_score"]) == len(written[assignment]) >= 2
        assert float(full["score"]) == float(full["max_score"])
        assert float(untouched["score"]) == 0.0


def test_autograde_takes_the_number_or_the_assignments_name_and_names_the_valid_ones(capsys):
    assert classroom.assignment_numbers(["03", "3", "03_softmax", "03_Softmax.ipynb"]) == {"03"}
    assert classroom.assignment_numbers([path.stem for path in NOTEBOOKS]) == {path.stem[:2] for path in NOTEBOOKS}
    assert classroom.main(["autograde", "softmax"]) == 2
    said = capsys.readouterr().err.strip()
    assert said.startswith("'softmax': not a notebook of the series") and len(said.splitlines()) == 1
    assert all(f"{path.stem[:2]} or {path.stem}" in said for path in NOTEBOOKS)


def test_the_names_browsers_jupyter_and_lmss_give_copies_are_read_as_the_assignment():
    submissions = load_tool("submissions")
    for name in ("03_softmax.ipynb", "03_softmax (1).ipynb", "03_softmax(2).ipynb", "03_softmax-Copy1.ipynb",
                 "03_softmax - Copy.ipynb", "03_softmax copy 2.ipynb", "03_Softmax.IPYNB", "03 softmax.ipynb",
                 "03-softmax.ipynb", "03_softmax-1.ipynb", "03_softmax-Copy1 (1)-2.ipynb", " 03_softmax .ipynb"):
        assert submissions.notebook_id(name) == "03_softmax", name
    assert submissions.notebook_id("03_softmax_v2.ipynb") != "03_softmax"


def test_the_container_installs_what_run_py_installs_the_model_included():
    """The container route grades every notebook: each requirements file run.py installs (notebook 12's model by
    hash, without its dependencies) is copied into the image and installed with the same options."""
    dockerfile = (ROOT / "classroom_kit" / "grading.Dockerfile").read_text(encoding="utf-8")
    run_py = (ROOT / "run.py").read_text(encoding="utf-8")
    model = re.search(r'^MODEL_REQUIREMENTS = "([^"]+)"', run_py, re.MULTILINE).group(1)
    options = re.search(r'pip_install\(python, \[((?:"--[\w-]+", )+)"-r", str\(ROOT / MODEL_REQUIREMENTS\)\]\)',
                        run_py).group(1)
    flags = " ".join(re.findall(r'"(--[\w-]+)"', options))
    assert flags == "--no-deps --require-hashes"
    copied = [name for line in re.findall(r"^COPY (.+) \./$", dockerfile, re.MULTILINE) for name in line.split()]
    assert model in copied
    assert re.search(rf"^RUN pip install --no-cache-dir {flags} -r {re.escape(model)}$", dockerfile, re.MULTILINE)


def test_the_hostile_batch_runs_in_the_container_as_the_guide_says():
    dockerfile = (ROOT / "classroom_kit" / "grading.Dockerfile").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    stages = re.findall(r"^FROM \S+ AS (\w+)$", dockerfile, re.MULTILINE)
    assert stages == ["grading", "hostile"]
    hostile = dockerfile.split("AS hostile")[1]
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*?\])$", hostile.replace("\\\n", ""), re.MULTILINE | re.DOTALL)
                       .group(1))
    assert entry[:3] == ["python3", "-m", "pytest"] and "tests/classroom/test_grading_hostile.py" in entry
    assert all((ROOT / path).is_file() for path in entry[3:])
    assert all((ROOT / path).exists() for path in re.findall(r"^COPY (\S+)", hostile, re.MULTILINE))
    comments = " ".join(line.lstrip("#").strip() for line in dockerfile.splitlines() if line.startswith("#"))
    commands = [re.match(r".*?attn-grading-hostile(?: \.)?", piece).group(0) for piece in
                comments.replace("\\ ", "").split("docker ")[1:] if "attn-grading-hostile" in piece]
    assert len(commands) == 2 and all(f"docker {command}" in guide for command in commands), commands
    assert "--target hostile" in guide
