"""Time sandboxed grading (classroom_kit/grade.py): a 30-learner class of notebook 03 with three looping
submissions, three hostile ones (numpy patched, the solution imported, a table of the checker's visible cases) and
three malformed ones (bad JSON, a duplicated exercise cell, cell metadata stripped).

Targets (issues 31, 38 and 50):

- the whole class, through ``python3 run.py classroom autograde 03`` (grading copy, ``nbgrader autograde``,
  ``generate_feedback``, ``export``), in <= 5 minutes on 2 cores, with the course's own limits (30 s per
  exercise's cells, the checkers' 5 s per call);
- the batch's peak memory (the grader, nbgrader and every sandbox, their resident sizes summed) <= 3 GB;
- a looping exercise stopped within 10 s of its limit (measured alone: a cell ``while True: pass``);
- every learner's mark as expected (honest ones: perfect, partial, untouched; loopers: 1 of 2; hostile: 0 or 1,
  the table of 03.2's visible cases earning nothing on the new cases drawn for its learner); each malformed one
  in ``grades.csv`` with its reason (bad JSON: refused, 0; the duplicated cell graded on the copy that ran last and
  the stripped notebook found by its content: full marks), and the batch not stopped by them.

From the repository root, on Linux with bubblewrap (``apt-get install bubblewrap``)::

    python benchmarks/bench_grading.py
"""

from __future__ import annotations

import copy
import csv
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "classroom")]

import test_grade_cases  # noqa: E402 - the lookup table of the checker's visible cases
import test_grading_hostile as hostile  # noqa: E402 - the submissions the tests grade
from tool_loader import load_tool  # noqa: E402

STUDENTS = 30
LOOPERS = ("infinite_loop", "sigint_ignored", "setitimer_disabled")
HOSTILE = ("numpy_patched", "solution_imported", "lookup_table")
#: Each malformed kind: its mark, its status in grades.csv's reason column and what that reason must say.
MALFORMED = {"bad_json": (0, "refused", "its JSON does not parse"),
             "duplicated": (2, "graded", "2 copies"),
             "stripped": (2, "graded", "had lost its grading metadata")}
HONEST = ("z1_perfect", "partial", "untouched")
BUDGET = 3 * 10**9  # bytes: the whole batch (issue 50)


def loop_stop(limit: float) -> float:
    """Seconds until a cell that loops forever is stopped, with a limit of ``limit`` s."""
    grade = load_tool("grade")
    learner = grade.Learner(ROOT, [])
    start = time.monotonic()
    try:
        learner.request({"op": "run", "context": [], "solutions": [], "cell": "while True:\n    pass\n"}, limit)
    except grade.Ended:
        pass
    finally:
        learner.close()
    return time.monotonic() - start


def malformed(path: Path, kind: str) -> None:
    """The perfect notebook at ``path`` made into ``kind``: cut short (its JSON does not parse), its exercise cell
    pasted again below as the released stub that ran before the solution, or every cell's metadata stripped."""
    text = path.read_text(encoding="utf-8")
    if kind == "bad_json":
        path.write_text(text[:-200], encoding="utf-8")
        return
    nb = json.loads(text)
    if kind == "duplicated":
        at = next(k for k, c in enumerate(nb["cells"])
                  if c["metadata"].get("nbgrader", {}).get("grade_id") == "softmax_any_axis")
        stale = copy.deepcopy(nb["cells"][at])
        stale.update(id="stalecopy", execution_count=2, source="def softmax_any_axis(x, axis=-1):\n    ...\n")
        nb["cells"][at]["execution_count"] = 7  # the solution ran last
        nb["cells"].insert(at + 2, stale)
    else:
        for cell in nb["cells"]:
            cell["metadata"] = {}
    path.write_text(json.dumps(nb), encoding="utf-8")


def main() -> int:
    limit = load_tool("grade").CELL_LIMIT
    stopped = loop_stop(limit)
    print(f"a looping cell: stopped after {stopped:.1f} s (limit {limit:g} s; target: within 10 s of it)")
    with open("/proc/loadavg", encoding="utf-8") as handle:
        before = handle.read().split()[:3]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "classroom"
        solutions = hostile.course(out, cell_limit=limit)
        kinds = hostile.submissions(out, port=9)
        table = "import numpy as np\n\n" + test_grade_cases._table_source("softmax_any_axis", "softmax_any_axis")
        kinds["lookup_table"] = (1, {"spot_the_slip": "SOLVED", "softmax_any_axis": table}, [])
        perfect = kinds["z1_perfect"]
        expected, unusual = {}, LOOPERS + HOSTILE + tuple(MALFORMED)
        for k in range(STUDENTS):
            kind = unusual[k] if k < len(unusual) else HONEST[k % len(HONEST)]
            mark, answers, extra = perfect if kind in MALFORMED else kinds[kind]
            student = f"learner{k + 1:02d}_{kind}"
            path = hostile.write(out, student, answers, extra, solutions)
            if kind in MALFORMED:
                malformed(path, kind)
                mark = MALFORMED[kind][0]
            expected[student] = mark
        stop, peak = threading.Event(), [0]

        def watch():
            while not stop.wait(0.1):
                peak[0] = max(peak[0], hostile.descendants_rss(os.getpid(), only=None))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        start = time.monotonic()
        status = load_tool("classroom").autograde(out, {"03"})
        seconds = time.monotonic() - start
        stop.set()
        watcher.join()
        rows = {}
        if (out / "grades.csv").exists():
            with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
                rows = {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == "03_softmax"}
    got = {student: float(row["score"]) for student, row in rows.items() if row["score"] != "missing"}
    wrong = {s: (got.get(s), mark) for s, mark in expected.items() if got.get(s) != mark}
    for student in expected:
        kind = student.split("_", 1)[1]
        if kind in MALFORMED:
            _, said, reason = MALFORMED[kind]
            row = rows.get(student, {}).get("reason", "")
            graded = not row.startswith(("refused", "not graded"))
            if not ((row.startswith(said + ":") if said != "graded" else graded) and reason in row):
                wrong[student] = (row, f"{said}: ... {reason}")
    with open("/proc/loadavg", encoding="utf-8") as handle:
        after = handle.read().split()[:3]
    print(f"{STUDENTS} learners of 03 ({len(LOOPERS)} looping, {len(HOSTILE)} hostile, {len(MALFORMED)} malformed): "
          f"autograde + feedback + export in {seconds:.0f} s (target <= 300 s); peak memory of the batch "
          f"{peak[0] / 2**20:.0f} MiB (target <= {BUDGET / 2**20:.0f} MiB); {os.cpu_count()} cores, load average "
          f"(1, 5, 15 min) {' '.join(before)} before, {' '.join(after)} at the end")
    print("every mark as expected, each malformed submission with its reason in grades.csv" if not wrong
          else f"marks not as expected (got, expected): {wrong}")
    return 0 if status == 0 and not wrong and seconds <= 300 and peak[0] <= BUDGET and stopped <= limit + 10 else 1


if __name__ == "__main__":
    raise SystemExit(main())
