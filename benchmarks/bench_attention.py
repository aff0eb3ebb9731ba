"""Benchmark the core's ``scaled_dot_product_attention`` at lesson size against a ten-line numpy version.

Issue 30's budget: at T = 8, d_k = d_v = 16 (float64, as a learner's lists become), the helper, with its input
checks, costs at most 2.5x the plain numpy function below, which checks nothing. Both sides are timed with and
without a causal mask. Each side runs in a process of its own, the processes alternate, and each reports the
median time per call of several batches of calls; the ratio is that of the medians over the rounds. The machine
may be shared: run several rounds. Run from the repository root::

    python benchmarks/bench_attention.py             # 5 rounds per side
    python benchmarks/bench_attention.py --rounds 9
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import subprocess
import sys
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET = 2.5
T, D = 8, 16


def numpy_attention(queries, keys, values, mask=None):
    """The ten-line reference: softmax(Q K^T / sqrt(d_k)) V, no checks."""
    import numpy as np

    scores = queries @ keys.swapaxes(-1, -2) / np.sqrt(queries.shape[-1])  # (T_q, d_k) @ (d_k, T_k) -> (T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    scores = scores - scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    return weights @ values, weights  # (T_q, T_k) @ (T_k, d_v) -> (T_q, d_v)


def time_side(side: str, calls: int) -> dict:
    """Median microseconds per call of one side, without and with a causal mask."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    from attn_helpers import causal_mask, scaled_dot_product_attention

    function = scaled_dot_product_attention if side == "helper" else numpy_attention
    rng = np.random.default_rng(0)
    queries, keys, values = (rng.normal(size=(T, D)) for _ in range(3))
    mask = causal_mask(T)
    out = {}
    for name, kwargs in (("no mask", {}), ("causal mask", {"mask": mask})):
        times = timeit.repeat(functools.partial(function, queries, keys, values, **kwargs), number=calls, repeat=7)
        out[name] = statistics.median(times) / calls * 1e6
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="processes per side, alternating")
    parser.add_argument("--calls", type=int, default=2000, help="calls per timed batch")
    parser.add_argument("--side", choices=("helper", "numpy"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        print(json.dumps(time_side(args.side, args.calls)))
        return 0

    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")
    results = {"helper": [], "numpy": []}
    for _ in range(args.rounds):
        for side in results:
            run = subprocess.run([sys.executable, __file__, "--side", side, "--calls", str(args.calls)],
                                 capture_output=True, text=True, check=True)
            results[side].append(json.loads(run.stdout))
    missed = False
    for case in results["helper"][0]:
        medians = {side: statistics.median(r[case] for r in runs) for side, runs in results.items()}
        ratio = medians["helper"] / medians["numpy"]
        missed |= ratio > BUDGET
        paired = [h[case] / n[case] for h, n in zip(results["helper"], results["numpy"])]  # neighbours in time
        print(f"T={T}, d={D}, {case:<11}: helper {medians['helper']:5.1f} us, numpy {medians['numpy']:5.1f} us per "
              f"call (medians of {args.rounds}); ratio {ratio:.2f}x (budget {BUDGET}x): "
              f"{'MISS' if ratio > BUDGET else 'PASS'}; round by round: {', '.join(f'{r:.2f}' for r in paired)}")
    return int(missed)


if __name__ == "__main__":
    sys.exit(main())
