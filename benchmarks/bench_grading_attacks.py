"""Issue 50's submissions of notebook 03, each graded by one tree's grader: the mark each gets, out of 2.

Honest work a grader once took for a cheat (a helper in its own cell above the exercise, a learner's own
function named ``solution``, ``np`` used before a re-import in the same cell) and cheats it once let through
(the series' softmax nudged by 5e-5, the solution fetched with ``importlib.import_module`` or ``eval``, a
series helper fetched by a computed name, the checkers' slip machinery, a lookup table of the visible cases and
of the new cases ``classroom_kit/grade_cases.py`` computes without the course's secret). The submissions are
tests/classroom/test_grading_hostile.py's :func:`issue50`; ``--tree DIR`` grades them with another checkout's
classroom_kit/grade.py and checkers (an old commit: ``git archive f6b00f9 | tar -x -C /tmp/old``), through
``grade_notebook`` directly (no nbgrader), 30 s per exercise.

    python benchmarks/bench_grading_attacks.py [--tree DIR]
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose grader and checkers grade")
    tree = parser.parse_args(argv[1:]).tree.resolve()
    sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "classroom")]
    import test_grading_hostile as hostile  # the submissions (this checkout's)

    sys.path[:0] = [str(tree), str(tree / "classroom_kit"), str(tree / "tools")]  # the kit, or tools/ before it
    for name in [n for n in sys.modules if n.split(".")[0] in ("attn_helpers", "grade", "grade_cases", "grade_worker")]:
        del sys.modules[name]
    import grade
    import nbformat

    wrong = {}
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "classroom"
        solutions = hostile.course(out, cell_limit=30)
        teacher = nbformat.read(out / "source" / hostile.ASSIGNMENT / f"{hostile.ASSIGNMENT}.ipynb", 4)
        secret = os.urandom(32)
        keyed = "secret" in inspect.signature(grade.grade_notebook).parameters
        for student, (mark, answers, extra) in hostile.issue50().items():
            path = hostile.write(out, student, answers, extra, solutions)
            extra_args = {"secret": secret} if keyed else {}
            results = grade.grade_notebook(nbformat.read(path, 4), teacher, tree, [out], 30.0, 3,
                                           f"{student}/{hostile.ASSIGNMENT}", **extra_args)
            results.pop(None)
            got = sum(passed for passed, _ in results.values())
            lost = "; ".join(text.splitlines()[0][:150] for passed, text in results.values() if not passed)
            print(f"{student:24s} {got}/2 (expected {mark}){'  lost: ' + lost if lost else ''}")
            if got != mark:
                wrong[student] = (got, mark)
    verdict = "every mark as expected" if not wrong else f"not as expected (got, expected): {wrong}"
    print(f"grader of {tree}: {verdict}")
    return 0 if not wrong else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
