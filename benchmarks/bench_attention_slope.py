#!/usr/bin/env python3
"""Notebook 13's claim that full attention's time grows like T squared: the fitted exponent of
``scaled_dot_product_attention``'s time at T = 128 .. 2048 (``attention_cost``: the best of several calls, one core),
against the target [1.8, 2.2]. It is a benchmark, not a test: a busy machine moves the exponent (2.47 with a load
average of 12 on 2 cores); tests/test_tiled.py bounds it in [1, 3] and checks the memory's exponent exactly.

    python benchmarks/bench_attention_slope.py            # 3 fresh processes; exit 1 if their median is off target
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CODE = ("from attn_helpers import scaled_dot_product_attention as f; from attn_helpers.efficient import "
        "attention_cost, fitted_slope; T = [128, 256, 512, 1024, 2048]; "
        "print(fitted_slope(T, attention_cost(f, T)[0]))")


def main() -> int:
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    slopes = [float(subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True, env=env,
                                   cwd=ROOT).stdout) for _ in range(3)]
    median = statistics.median(slopes)
    ok = 1.8 <= median <= 2.2
    print(f"fitted exponent of the time: {', '.join(f'{s:.2f}' for s in slopes)}; median {median:.2f}, target "
          f"[1.8, 2.2]: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
