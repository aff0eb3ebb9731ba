"""Grading cases a learner cannot see (classroom_kit/grade_cases.py): a rule over every registered solution.

Every exercise whose checker takes a function draws new cases (or is a value exercise, exempt with its reason);
for each, a lookup table of the notebook's own cases (what a learner could copy from the checker) loses the mark
on every new case, while the solution keeps it; the cases are the same for the same student and differ between
students; and a failing mark says, in one sentence, what was right and what was not.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from tool_loader import load_tool

from attn_helpers import checks
from attn_helpers.checks._grader import SOLUTIONS, Case, Verdict, call_quietly

pytestmark = pytest.mark.simd_independent  # grading: CI's pass without SIMD leaves it out

cases = load_tool("grade_cases")
classroom = load_tool("classroom")
EXERCISES = classroom.exercises()


def test_every_registered_solution_draws_new_cases_or_says_why_not():
    assert not set(cases.FRESH) & set(cases.EXEMPT)
    assert set(SOLUTIONS) == set(cases.FRESH) | set(cases.EXEMPT), "a solution with neither new cases nor a reason"
    kinds = {name: kind for name, (kind, _) in EXERCISES.items()}
    assert {name for name in cases.FRESH if kinds.get(name) != "function" and name not in DRILLS} == set()
    assert {name for name in cases.EXEMPT if kinds.get(name, "value") != "value"} == set()
    assert all(len(reason) > 20 for reason in cases.EXEMPT.values())


def _drills() -> dict:
    """Registered solutions no notebook asks for (drills the teaching guide offers), each with the one checker no
    notebook calls that passes it: a teacher who adds the drill to a notebook grades it with that checker."""
    called = {checker for _, names in EXERCISES.values() for checker in names}
    spare = [getattr(checks, name) for name in checks.__all__ if name.startswith("check_") and name not in called]
    drills = {}
    for name in set(SOLUTIONS) - set(EXERCISES):
        (drills[name],) = [checker for checker in spare if checker(SOLUTIONS[name])] or [None]
    return drills


DRILLS = _drills()


def _checker(name):
    return getattr(checks, EXERCISES[name][1][0]) if name in EXERCISES else DRILLS[name]


def lookup_table(name, more=()):
    """A learner's function that answers the checker's visible cases (and the cases ``more``) from a table (the
    solution's answers) and returns the first of them for anything else."""
    visible, _, _ = cases.visible_calls(name, _checker(name))
    table = {}
    for case in [*visible, *more]:
        result, error = call_quietly(SOLUTIONS[name], *cases._copied(case.args), **(case.kwargs or {}))
        if error is None:
            table[cases._key(case)] = result
    first = next(iter(table.values()))

    def from_the_table(*args, **kwargs):
        return table.get(cases._key(Case(tuple(cases._plain(a) for a in args),
                                         {k: cases._plain(v) for k, v in kwargs.items()})), first)

    return from_the_table


@pytest.mark.parametrize("name", sorted(cases.FRESH))
def test_a_table_of_the_visible_cases_earns_nothing_and_the_solution_keeps_its_mark(name):
    checker, solution = _checker(name), SOLUTIONS[name]
    visible, _, _ = cases.visible_calls(name, checker)
    new = cases.fresh_cases(name, checker, "ada/assignment")
    assert len(new) >= 3 and not {cases._key(c) for c in new} & {cases._key(c) for c in visible}
    assert cases.with_hidden_cases(checker(solution), name, checker, [solution], "ada/assignment")

    table = lookup_table(name)
    shown = checker(table)
    mark = cases.with_hidden_cases(shown, name, checker, [table], "ada/assignment")
    assert not mark
    if shown:  # the hole the new cases close: the notebook's own checker passes the table
        assert mark.message.startswith("right on the notebook's cases, wrong on ")
        wrong, of = (int(w) for w in mark.message.split("wrong on ")[1].split(" new cases")[0].split(" of "))
        assert of == len(new) and wrong >= len(new) - 1, mark.message  # a redrawn case may share its answer
        assert "ada/assignment" in mark.hint


SECRET = bytes(range(32))  # a course's secret (the real one: 32 random bytes, tools/grade_cases.course_secret)


@pytest.mark.parametrize("name", sorted(cases.FRESH))
def test_a_table_of_the_cases_a_student_can_compute_earns_nothing_with_the_courses_secret(name):
    """The student knows their name, the assignment and classroom_kit/grade_cases.py, not the course's secret: a table
    of the visible cases and of the new cases computed without the secret passes without it (the hole of f6b00f9,
    whose seed was the name and assignment alone) and fails with it."""
    checker = _checker(name)
    computed = cases.fresh_cases(name, checker, "ada/assignment")  # all a student can draw
    table = lookup_table(name, computed)
    shown = checker(table)
    assert bool(cases.with_hidden_cases(shown, name, checker, [table], "ada/assignment")) == bool(shown)
    keyed = cases.with_hidden_cases(shown, name, checker, [table], "ada/assignment", SECRET)
    assert not keyed
    solution = SOLUTIONS[name]
    assert cases.with_hidden_cases(checker(solution), name, checker, [solution], "ada/assignment", SECRET)


def test_the_course_secret_is_made_once_private_and_only_the_teacher_reproduces_the_cases(tmp_path, capsys):
    assert cases.course_secret(tmp_path) == b""
    secret = cases.course_secret(tmp_path, create=True)
    path = tmp_path / cases.SECRET
    assert len(secret) == 32 and path.stat().st_mode & 0o777 == 0o600
    assert cases.course_secret(tmp_path, create=True) == secret, "made once, never overwritten"
    checker = _checker("softmax_any_axis")
    graded = cases.fresh_cases("softmax_any_axis", checker, "ada/03_softmax", secret)
    assert cases.main(["grade_cases.py", "softmax_any_axis", "ada/03_softmax", "--course", str(tmp_path)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"new cases {cases.case_id('ada/03_softmax', 'softmax_any_axis', secret)} for "
                       "'ada/03_softmax':", *(case.label for case in graded)]
    assert cases.main(["grade_cases.py", "softmax_any_axis", "ada/03_softmax"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "--course" in err, "without the secret the command prints no case"
    unkeyed = cases.fresh_cases("softmax_any_axis", checker, "ada/03_softmax")
    assert not {cases._key(c) for c in graded} & {cases._key(c) for c in unkeyed}
    assert secret.hex() not in cases.case_id("ada/03_softmax", "softmax_any_axis", secret)


def test_the_new_cases_are_each_students_own_and_reproducible():
    checker = _checker("softmax_any_axis")
    ada = cases.fresh_cases("softmax_any_axis", checker, "ada/03_softmax")
    again = cases.fresh_cases("softmax_any_axis", checker, "ada/03_softmax")
    grace = cases.fresh_cases("softmax_any_axis", checker, "grace/03_softmax")
    assert [cases._key(c) for c in ada] == [cases._key(c) for c in again]
    assert not {cases._key(c) for c in ada} & {cases._key(c) for c in grace}


def test_the_new_cases_keep_what_the_lesson_relies_on():
    rng = np.random.default_rng(0)
    mixed = np.array([[1000.0, 1001.0, 1002.0], [0.0, 1.0, 2.0]])
    new = cases._like(mixed, rng)
    assert new.shape == mixed.shape and (new[0] > 900).all() and (np.abs(new[1]) < 10).all()
    masked = np.array([2.0, -np.inf, 0.5, -np.inf], dtype=np.float32)
    new = cases._like(masked, rng)
    assert new.dtype == np.float32 and np.isneginf(new[[1, 3]]).all() and np.isfinite(new[[0, 2]]).all()
    weights = np.array([[0.2, 0.8, 0.0], [0.0, 0.0, 0.0]])  # a causal row and a fully masked row
    new = cases._like(weights, rng)
    assert new[0, 2] == 0 and np.isclose(new[0].sum(), 1) and (new[1] == 0).all() and not np.allclose(new, weights)
    table = np.array([[1.0, 2.0], [0.0, 0.0]])  # a zero vector stays one
    assert (cases._like(table, rng)[1] == 0).all()
    ids = np.array([3, 3, 0, 7, 1])
    assert set(cases._like(ids, rng)) <= set(ids)
    mask = np.tril(np.ones((3, 3), dtype=bool))
    np.testing.assert_array_equal(cases._like(mask, rng), mask)


def test_a_value_exercise_and_a_failed_checker_keep_their_verdict():
    wrong = Verdict(False, "on test case 1, the values differ", "a hint of the checker's own")
    checker = _checker("softmax_any_axis")
    assert cases.with_hidden_cases(wrong, "softmax_any_axis", checker, [lambda x: x], "s/a") is wrong
    right = Verdict(True, "my_total is right.")
    assert cases.with_hidden_cases(right, "spot_the_slip", checker, [1.83, 0.5], "s/a") is right


def test_a_function_that_loops_on_new_cases_stops_at_the_first():
    checker, solution = _checker("softmax_any_axis"), SOLUTIONS["softmax_any_axis"]
    visible = {cases._key(c) for c in cases.visible_calls("softmax_any_axis", checker)[0]}
    calls = []

    def loops_unless_shown(x, axis=-1):
        calls.append(1)
        if cases._key(Case((np.array(x),), {"axis": axis})) not in visible \
                and cases._key(Case((np.array(x),), {})) not in visible:
            from attn_helpers.checks._grader import TimeLimit

            raise TimeLimit  # what the grader's proxy raises when the learner's process does not answer
        return solution(x, axis=axis)

    mark = cases.with_hidden_cases(checker(loops_unless_shown), "softmax_any_axis", checker, [loops_unless_shown],
                                   "ada/03_softmax")
    drawn = len(cases.fresh_cases("softmax_any_axis", checker, "ada/03_softmax"))
    assert not mark and f"wrong on 1 of {drawn}" in mark.message and "did not return" in mark.message
    assert len(calls) == len(cases.visible_calls("softmax_any_axis", checker)[0]) + 1  # no call after the loop


def _table_source(name, fn_name):
    """A learner's exercise cell: ``fn_name`` answers the checker's visible cases from literal arrays (copied from
    the notebook's checker) and zeros elsewhere, as issue 38's 03.2 answer did."""
    rows = []
    for case in cases.visible_calls(name, _checker(name))[0]:
        out = SOLUTIONS[name](*cases._copied(case.args), **(case.kwargs or {}))
        rows.append(f"    (np.array({np.asarray(case.args[0]).tolist()!r}), {(case.kwargs or {}).get('axis', -1)}, "
                    f"np.array({np.asarray(out).tolist()!r})),")
    return ("TABLE = [\n" + "\n".join(rows) + "\n]\n\n"
            f"def {fn_name}(x, axis=-1):\n"
            "    for given, given_axis, answer in TABLE:\n"
            "        if given.shape == np.shape(x) and np.allclose(given, x) and given_axis == axis:\n"
            "            return answer\n"
            "    return np.zeros_like(x)\n")


@pytest.mark.slow
def test_through_the_sandbox_the_table_scores_0_and_the_solution_full_marks(tmp_path):
    from test_grading_hostile import sandbox_or_skip

    sandbox_or_skip()
    import nbformat

    grade = load_tool("grade")
    classroom.build(tmp_path, {"03"})
    source = nbformat.read(tmp_path / "source" / "03_softmax" / "03_softmax.ipynb", 4)
    table = nbformat.reads(nbformat.writes(source), 4)
    (cell,) = [c for c in table.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "softmax_any_axis"]
    cell.source = "import numpy as np\n\n" + _table_source("softmax_any_axis", "softmax_any_axis")
    site = classroom.install_grader(tmp_path)
    marks = {who: grade.grade_notebook(nb, source, site, [tmp_path], seed=f"{who}/03_softmax")
             for who, nb in (("ada", source), ("tables", table))}
    assert marks["ada"]["test_softmax_any_axis"][0] and re.search("new cases [0-9a-f]{8} for 'ada/03_softmax'",
                                                                  marks["ada"]["test_softmax_any_axis"][1])
    passed, text = marks["tables"]["test_softmax_any_axis"]
    drawn = len(cases.fresh_cases("softmax_any_axis", _checker("softmax_any_axis"), "tables/03_softmax"))
    assert not passed and f"right on the notebook's cases, wrong on {drawn} of {drawn} new cases like x = " in text, \
        text
    assert marks["tables"]["test_spot_the_slip"][0], "the other exercise keeps its mark"
