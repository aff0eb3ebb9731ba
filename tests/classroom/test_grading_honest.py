"""Honest learners keep their marks in sandboxed grading (classroom_kit/grade.py).

Every notebook of the series, handed in with its registered solutions (the teacher's own cells untouched), gets
every mark; a raise left in one exercise cell costs that exercise only, since an exercise's process gets the
teacher's copies of the cells before it; and the grading process cannot import a submission's files.
"""

from __future__ import annotations

import importlib.util
import sys
import time

import nbformat
import pytest
from test_grading_hostile import sandbox_or_skip
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading: CI's pass without SIMD leaves it out

grade = load_tool("grade")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    written = load_tool("classroom").build(out)
    return out, written


def source(out, assignment):
    return nbformat.read(out / "source" / assignment / f"{assignment}.ipynb", 4)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_notebook_handed_in_with_its_solutions_gets_every_mark(course):
    sandbox_or_skip()
    out, written = course
    lost, start = {}, time.monotonic()
    for assignment, graded in written.items():
        if not graded:
            continue
        teacher = source(out, assignment)
        results = grade.grade_notebook(teacher, teacher, ROOT, [out])
        results.pop(None)
        assert set(results) == set(graded), assignment
        lost.update({grade_id: text for grade_id, (passed, text) in results.items() if not passed})
    assert not lost, lost
    print(f"{sum(map(len, written.values()))} graded tests of {len(written)} notebooks: every mark, "
          f"in {time.monotonic() - start:.0f} s")


def test_a_raise_left_in_one_exercise_cell_costs_that_exercise_only(course):
    sandbox_or_skip()
    out, written = course
    (assignment,) = [name for name in written if name.startswith("08_")]
    teacher = source(out, assignment)
    learner = nbformat.read(out / "source" / assignment / f"{assignment}.ipynb", 4)
    cells = [cell for cell in learner.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    split = next(cell for cell in cells if "def my_split_heads" in cell.source)
    split.source += "\nprint(my_split_heads(np.ones((2, 3)), 4).shape)  # a leftover debug line that raises\n"
    results = grade.grade_notebook(learner, teacher, ROOT, [out])
    results.pop(None)
    failed = {grade_id for grade_id, (passed, _) in results.items() if not passed}
    assert failed == {grade_id for grade_id in results if "split_heads" in grade_id}, results
    assert len(results) - len(failed) >= 3


def test_the_grading_process_cannot_import_a_submission(tmp_path, monkeypatch):
    course = tmp_path / "classroom"
    folder = course / "submitted" / "alice" / "03_softmax"
    folder.mkdir(parents=True)
    (folder / "pwn.py").write_text("raise AssertionError('a submission ran in the grader')\n")
    (course / "pwn_course.py").write_text("raise AssertionError('a file of the course folder ran in the grader')\n")
    (course / ".grader").mkdir()
    monkeypatch.chdir(course)
    monkeypatch.setattr(sys, "path", ["", str(course), str(folder), str(course / ".grader"), *sys.path])
    grade.private_import_path(course, course / ".grader")
    assert str(course / ".grader") in sys.path
    for name in ("submitted", "submitted.alice", "pwn", "pwn_course"):
        assert importlib.util.find_spec(name.split(".")[0]) is None, name


def test_a_notebooks_exercises_run_at_most_children_at_once(course, monkeypatch):
    """Memory for a notebook's exercises together: at most ``children`` processes, each within its limit."""
    sandbox_or_skip()
    out, written = course
    (assignment,) = [name for name in written if name.startswith("08_")]
    live, most = set(), [0]
    opened, closed = grade.Learner.__init__, grade.Learner.close

    def start(self, *args):
        opened(self, *args)
        live.add(id(self))
        most[0] = max(most[0], len(live))

    def stop(self):
        live.discard(id(self))
        closed(self)

    monkeypatch.setattr(grade.Learner, "__init__", start)
    monkeypatch.setattr(grade.Learner, "close", stop)
    teacher = source(out, assignment)
    results = grade.grade_notebook(teacher, teacher, ROOT, [out], children=2)
    results.pop(None)
    exercises = sum(1 for cell in teacher.cells if cell.metadata.get("nbgrader", {}).get("solution"))
    assert exercises > 2 and most[0] == 2 and not live
    assert all(passed for passed, _ in results.values())


def handed_in(teacher, answers: dict, extra: list):
    """A copy of the teacher's notebook with ``answers`` (test_grading_hostile.issue50's form: ``SOLVED`` is the
    solution, ``above:ID`` a cell of the learner's own above exercise ``ID``) and ``extra`` cells at the end."""
    learner = nbformat.from_dict(teacher)
    for key, text in answers.items():
        grade_id = key.removeprefix("above:")
        at = next(k for k, cell in enumerate(learner.cells)
                  if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        if key.startswith("above:"):
            learner.cells.insert(at, nbformat.v4.new_code_cell(text))
        else:
            learner.cells[at].source = text.replace("SOLVED", teacher.cells[at].source)
    learner.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    return learner


@pytest.mark.parametrize("student", ["own_helper_above", "own_solution_name", "np_before_reimport"])
def test_honest_work_that_once_lost_marks_keeps_them(course, student):
    """A helper in its own cell above the exercise (graded with it, and the mark says so), a function of the
    learner's own named ``solution``, ``np`` used before a re-import in the same cell: 2 of 2 (on f6b00f9: 1,
    0 and 1)."""
    from test_grading_hostile import issue50

    sandbox_or_skip()
    out, _ = course
    teacher = source(out, "03_softmax")
    mark, answers, extra = issue50()[student]
    results = grade.grade_notebook(handed_in(teacher, answers, extra), teacher, ROOT, [out], seed=f"{student}/03")
    results.pop(None)
    assert mark == 2 and all(passed for passed, _ in results.values()), results
    if student == "own_helper_above":
        assert "graded with 1 cell of your own above the exercise cell, which defines stable_exp_normalise" in \
            results["test_softmax_any_axis"][1]
