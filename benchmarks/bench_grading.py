"""Time sandboxed grading (classroom_kit/grade.py): a 30-learner class of notebook 03 with three looping submissions and
three hostile ones (numpy patched, the solution imported, a table of the checker's visible cases).

Targets (issues 31 and 38):

- the whole class, through ``python3 run.py classroom autograde 03`` (grading copy, ``nbgrader autograde``,
  ``generate_feedback``, ``export``), in <= 5 minutes on 2 cores, with the course's own limits (30 s per
  exercise's cells, the checkers' 5 s per call);
- a looping exercise stopped within 10 s of its limit (measured alone: a cell ``while True: pass``);
- every learner's mark as expected (honest ones: perfect, partial, untouched; loopers: 1 of 2; hostile: 0 or 1,
  the table of 03.2's visible cases earning nothing on the new cases drawn for its learner).

From the repository root, on Linux with bubblewrap (``apt-get install bubblewrap``)::

    python benchmarks/bench_grading.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tools")]

import grade  # noqa: E402
import test_grade_cases  # noqa: E402 - the lookup table of the checker's visible cases
import test_grading_hostile as hostile  # noqa: E402 - the submissions the tests grade
from tool_loader import load_tool  # noqa: E402

STUDENTS = 30
LOOPERS = ("infinite_loop", "sigint_ignored", "setitimer_disabled")
HOSTILE = ("numpy_patched", "solution_imported", "lookup_table")
HONEST = ("z1_perfect", "partial", "untouched")


def loop_stop(limit: float) -> float:
    """Seconds until a cell that loops forever is stopped, with a limit of ``limit`` s."""
    learner = grade.Learner(ROOT, [])
    start = time.monotonic()
    try:
        learner.request({"op": "run", "context": [], "solutions": [], "cell": "while True:\n    pass\n"}, limit)
    except grade.Ended:
        pass
    finally:
        learner.close()
    return time.monotonic() - start


def main() -> int:
    limit = grade.CELL_LIMIT
    stopped = loop_stop(limit)
    print(f"a looping cell: stopped after {stopped:.1f} s (limit {limit:g} s; target: within 10 s of it)")
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "classroom"
        solutions = hostile.course(out, cell_limit=limit)
        kinds = hostile.submissions(out, port=9)
        table = "import numpy as np\n\n" + test_grade_cases._table_source("softmax_any_axis", "softmax_any_axis")
        kinds["lookup_table"] = (1, {"spot_the_slip": "SOLVED", "softmax_any_axis": table}, [])
        expected, unusual = {}, LOOPERS + HOSTILE
        for k in range(STUDENTS):
            kind = unusual[k] if k < len(unusual) else HONEST[k % len(HONEST)]
            mark, answers, extra = kinds[kind]
            student = f"learner{k + 1:02d}_{kind}"
            hostile.write(out, student, answers, extra, solutions)
            expected[student] = mark
        start = time.monotonic()
        status = load_tool("classroom").autograde(out, {"03"})
        seconds = time.monotonic() - start
        got = hostile.scores(out) if status == 0 else {}
    wrong = {s: (got.get(s), mark) for s, mark in expected.items() if got.get(s) != mark}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{STUDENTS} learners of 03 ({len(LOOPERS)} looping, {len(HOSTILE)} hostile): autograde + feedback + export "
          f"in {seconds:.0f} s "
          f"(target <= 300 s); {os.cpu_count()} cores, load average {load:.1f} at the end")
    print("every mark as expected" if not wrong else f"marks not as expected (got, expected): {wrong}")
    return 0 if status == 0 and not wrong and seconds <= 300 and stopped <= limit + 10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
