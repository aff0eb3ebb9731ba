"""Time every checker on its right answer and on the one-edit variants of its solution (issue 39).

Targets:

- every checker answers within its time limit (``_grader.TIME_LIMIT``, 5 s) on the right answer and on every
  near miss, a variant that loops forever included (stopped by the limit: it costs the limit, no more);
- every variant that is not listed as equivalent is refused (tests/test_checker_mutants.py enforces it; this
  prints the count and the times).

From the repository root::

    python benchmarks/bench_checkers.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from mutants import one_edit_variants  # noqa: E402
from test_checker_mutants import (  # noqa: E402 - the harness's own mapping from a solution to its checker
    CHECKERS,
    EQUIVALENT,
    SOLUTIONS,
    _answer,
    _check,
    _takes_values,
    checker_of,
)

from attn_helpers.checks import _grader  # noqa: E402


def _timed(checker, answer):
    start = time.perf_counter()
    verdict = _check(checker, answer)
    return time.perf_counter() - start, verdict.passed


def main():
    print(f"{'solution':<30}{'checker':<36}{'right (s)':>10}{'variants':>9}{'refused':>8}{'slowest (s)':>12}")
    worst = 0.0
    for name in sorted(SOLUTIONS):
        checker = CHECKERS[checker_of(name)]
        right_time, passed = _timed(checker, _answer(name, SOLUTIONS[name]))
        assert passed, name
        times, refused, variants = [], 0, one_edit_variants(SOLUTIONS[name])
        for variant in variants:
            try:
                answer = _answer(name, variant.fn) if _takes_values(name) else variant.fn
            except Exception:  # noqa: BLE001 - a variant that raises never reaches the checker
                refused += 1
                continue
            elapsed, passed = _timed(checker, answer)
            times.append(elapsed)
            refused += not passed
        slowest = max(times, default=0.0)
        worst = max(worst, right_time, slowest)
        print(f"{name:<30}{checker.__name__:<36}{right_time:>10.3f}{len(variants):>9}{refused:>8}{slowest:>12.3f}")
    listed = sum(len(edits) for edits in EQUIVALENT.values())
    print(f"\nslowest single check: {worst:.2f} s (limit {_grader.TIME_LIMIT:g} s per call of the learner's code); "
          f"{listed} variants listed as equivalent")


if __name__ == "__main__":
    main()
