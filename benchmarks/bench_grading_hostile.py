"""The hostile batch's budget (issue 38): the grader's peak memory and the batch's time.

The batch of tests/classroom/test_grading_hostile.py (last round's 22 submissions of notebook 03 and this round's
attacks and honest cases) through ``python3 run.py classroom autograde 03`` (grading copy, ``nbgrader autograde``,
``generate_feedback``, ``export``), with the course's own limits (30 s per exercise's cells). Targets: every mark
as expected; the grader's peak memory (the nbgrader process, not the sandboxes) <= 500 MB.

From the repository root, on Linux with bubblewrap (``apt-get install bubblewrap``)::

    python benchmarks/bench_grading_hostile.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "classroom")]

import test_grading_hostile as hostile  # noqa: E402 - the submissions the tests grade
from tool_loader import load_tool  # noqa: E402

BUDGET = 500 * 2**20  # bytes


def main() -> int:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "classroom"
        solutions = hostile.course(out, cell_limit=30)
        expected = {}
        for student, (mark, answers, extra) in hostile.submissions(out, port=9).items():
            hostile.write(out, student, answers, extra, solutions)
            expected[student] = mark
        stop, peak = hostile.peak_memory("autograde")
        start = time.monotonic()
        status = load_tool("classroom").autograde(out, {"03"})
        seconds = time.monotonic() - start
        stop.set()
        got = hostile.scores(out) if status == 0 else {}
    wrong = {s: (got.get(s), mark) for s, mark in expected.items() if got.get(s) != mark}
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"{len(expected)} submissions of 03 (hostile and honest): autograde + feedback + export in {seconds:.0f} s; "
          f"the grader's peak memory {peak[0] / 2**20:.0f} MB (budget {BUDGET // 2**20} MB); {os.cpu_count()} cores, "
          f"load average {load:.1f} at the end")
    print("every mark as expected" if not wrong else f"marks not as expected (got, expected): {wrong}")
    return 0 if status == 0 and not wrong and peak[0] <= BUDGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
