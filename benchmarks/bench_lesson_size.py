#!/usr/bin/env python3
"""Lesson-size speed: the readable default against ten lines of plain numpy.

The helpers a learner calls (``scaled_dot_product_attention``, ``softmax``,
``multi_head_attention``) validate their input, then compute the formula. At the sizes
the notebooks use (T <= 64, d <= 64) that validation must stay cheap: the target is
the default, validation included, within 2x of the same formula written in ten lines
of numpy with no checks.

Each side runs in its own worker process (``--worker``), the sides alternate for
``--rounds`` rounds, and each worker reports the best of ``--repeat`` timings of
``--number`` calls, in CPU time of the process (``time.process_time``: on a busy
machine, the time another process holds the core is not counted). The figure is the
median over rounds; the ratio is default / plain.

    python benchmarks/bench_lesson_size.py                 # about 30 s
    python benchmarks/bench_lesson_size.py --quick
    python benchmarks/bench_lesson_size.py --instructions  # CPU instructions (valgrind), a few minutes

``--instructions`` counts the CPU instructions per call with valgrind's callgrind
(one process per side and case: N calls minus 0 calls). Unlike seconds, the count does
not change when other processes load the machine, so it is the figure to trust on a busy
one; the ratio of instructions is a proxy for the ratio of times on an idle one.

Exit status 1 if a case misses its target.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = 2.0
#: The cases the target applies to (the helper a learner checks their work against, and
#: softmax); multi-head attention is an extra line: it validates four weight matrices too.
TARGETED = {"sdpa", "sdpa-causal", "softmax"}
# (name, function, T, d): every case is one query/key/value set of T tokens of d features.
CASES = [
    ("sdpa T=8 d=16", "sdpa", 8, 16),
    ("sdpa T=16 d=16", "sdpa", 16, 16),
    ("sdpa T=64 d=64", "sdpa", 64, 64),
    ("sdpa T=8 d=16 causal", "sdpa-causal", 8, 16),
    ("softmax 8x8", "softmax", 8, 8),
    ("mha T=8 d=16 h=2", "mha", 8, 16),
]


def plain_numpy(kind):
    """The formula in plain numpy: no validation, no special cases."""
    import numpy as np

    def attention(q, k, v, mask=None):
        scores = q @ k.T / np.sqrt(q.shape[-1])  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
        if mask is not None:
            scores = np.where(mask, scores, -np.inf)
        exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = exps / exps.sum(axis=-1, keepdims=True)
        return weights @ v, weights  # (T_q, T_k) @ (T_k, d_v) -> (T_q, d_v)

    def softmax(x):
        exps = np.exp(x - x.max(axis=-1, keepdims=True))
        return exps / exps.sum(axis=-1, keepdims=True)

    def mha(x, w_q, w_k, w_v, w_o, h):
        T, d = x.shape
        split = lambda a: a.reshape(T, h, d // h).swapaxes(0, 1)  # noqa: E731 - (T, d) -> (h, T, d_h)
        q, k, v = split(x @ w_q), split(x @ w_k), split(x @ w_v)
        scores = q @ k.swapaxes(-1, -2) / np.sqrt(d // h)
        exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = exps / exps.sum(axis=-1, keepdims=True)
        return (weights @ v).swapaxes(0, 1).reshape(T, d) @ w_o, weights

    return {"sdpa": attention, "sdpa-causal": attention, "softmax": softmax, "mha": mha}[kind]


def default(kind):
    import attn_helpers as A

    return {"sdpa": A.scaled_dot_product_attention, "sdpa-causal": A.scaled_dot_product_attention,
            "softmax": A.softmax, "mha": A.multi_head_attention}[kind]


def arguments(kind, T, d):
    import numpy as np

    rng = np.random.default_rng(2017)
    if kind == "softmax":
        return (rng.standard_normal((T, d), dtype=np.float32),), {}
    if kind == "mha":
        x = rng.standard_normal((T, d), dtype=np.float32)
        return (x, *rng.standard_normal((4, d, d), dtype=np.float32), 2), {}
    q, k, v = rng.standard_normal((3, T, d), dtype=np.float32)
    return (q, k, v), ({"mask": np.tri(T, dtype=bool)} if kind == "sdpa-causal" else {})


def worker(side, kind, T, d, number, repeat):
    fn = default(kind) if side == "default" else plain_numpy(kind)
    args, kwargs = arguments(kind, T, d)
    fn(*args, **kwargs)
    if repeat == 0:  # counted by callgrind: just make the calls
        for _ in range(number):
            fn(*args, **kwargs)
        return
    timer = timeit.Timer(lambda: fn(*args, **kwargs), timer=time.process_time)
    best = min(timer.repeat(number=number, repeat=repeat)) / number
    print(json.dumps({"seconds": best}))


def run_worker(side, kind, T, d, number, repeat):
    out = subprocess.run(
        [sys.executable, __file__, "--worker", side, kind, str(T), str(d), str(number), str(repeat)],
        capture_output=True, text=True, check=True, cwd=ROOT,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def count_instructions(side, kind, T, d, number):
    """Instructions per call, from callgrind: a run of ``number`` calls minus a run of none."""
    counts = []
    for n in (number, 0):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
             "--worker", side, kind, str(T), str(d), str(n), "0"],
            capture_output=True, text=True, check=True, cwd=ROOT, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"},
        )
        counts.append(int(re.search(r"Collected : (\d+)", out.stderr).group(1)))
    return (counts[0] - counts[1]) / number


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 7")
    parser.add_argument("--instructions", action="store_true", help="count CPU instructions with valgrind")
    parser.add_argument("--worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        side, kind, T, d, number, repeat = args.worker
        worker(side, kind, int(T), int(d), int(number), int(repeat))
        return 0
    if args.instructions:
        if not shutil.which("valgrind"):
            sys.exit("--instructions needs valgrind (apt-get install valgrind)")
        print("lesson-size cost: default vs plain numpy, CPU instructions per call (callgrind);"
              f" target <= {TARGET:.1f}x")
        print(f"{'case':26s} {'default':>11s} {'plain':>9s} {'ratio':>7s}  result")
        failed = False
        for name, kind, T, d in CASES:
            n_default, n_plain = (count_instructions(side, kind, T, d, 1000) for side in ("default", "plain"))
            ratio = n_default / n_plain
            failed |= ratio > TARGET and kind in TARGETED
            verdict = ("PASS" if ratio <= TARGET else "FAIL") if kind in TARGETED else "(extra)"
            print(f"{name:26s} {n_default / 1e3:10.1f}K {n_plain / 1e3:8.1f}K {ratio:6.2f}x  {verdict}")
        return 1 if failed else 0
    rounds = 3 if args.quick else 7
    print(f"lesson-size speed: default (validation included) vs plain numpy; {rounds} rounds, sides alternate,"
          f" each in its own process; target <= {TARGET:.1f}x")
    print(f"{'case':26s} {'default us':>11s} {'plain us':>9s} {'ratio':>7s}  result")
    failed = False
    for name, kind, T, d in CASES:
        times = {"default": [], "plain": []}
        for _ in range(rounds):
            for side in times:
                times[side].append(run_worker(side, kind, T, d, number=2000, repeat=5))
        t_default, t_plain = (statistics.median(times[s]) * 1e6 for s in ("default", "plain"))
        ratio = t_default / t_plain
        failed |= ratio > TARGET and kind in TARGETED
        verdict = ("PASS" if ratio <= TARGET else "FAIL") if kind in TARGETED else "(extra)"
        print(f"{name:26s} {t_default:11.1f} {t_plain:9.1f} {ratio:6.2f}x  {verdict}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
