"""Measure tiled_attention (attn_helpers.efficient, notebook 13's lesson) at B=1, h=8, T=4096, d_k=64, float32.

Targets (issue 22):

- equal to ``scaled_dot_product_attention`` to <= 1e-5 relative, without a mask, with
  ``causal=True``, with a boolean causal mask and with key padding plus fully masked rows,
  which must be exactly 0 (``--check``; run first, in a process of its own: the core's
  weights take 2 GB at this size);
- peak extra memory of one call <= 16 MiB (tracemalloc: every numpy allocation of the call,
  the 8 MiB context included), where the weights alone would be 512 MiB;
- ``causal=True`` >= 1.5x faster than the same call without a mask (the tiles above the
  diagonal are skipped).

No time target against PyTorch. Each side runs in its own process, with numpy's matrix
products on one core (``threadpool_limits(1)``: on a shared machine, BLAS threads that wait
for each other made one call 30x slower); the driver alternates the sides for a few rounds
and prints the medians of wall-clock and processor time. From the repository root::

    python benchmarks/bench_tiled.py            # check, then 3 rounds x 3 calls per side
    python benchmarks/bench_tiled.py --quick    # no check, 2 rounds x 2 calls
    python benchmarks/bench_tiled.py --check    # equality only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

B, H, T, D_K = 1, 8, 4096, 64
SIDES = {
    "no mask": dict(),
    "causal=True": dict(causal=True),
    "boolean causal mask": dict(mask="causal"),
}


def make_inputs(seed=0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((B, H, T, D_K), dtype=np.float32) for _ in range(3))


def check():
    """tiled_attention == scaled_dot_product_attention (<= 1e-5 relative); fully masked rows exactly 0."""
    from attn_helpers import causal_mask, scaled_dot_product_attention
    from attn_helpers.efficient import tiled_attention

    q, k, v = make_inputs()
    padding = np.arange(T) < np.random.default_rng(1).integers(T // 2, T, size=(H, 1, 1))  # (h, 1, T)
    rows = np.ones((H, T, 1), dtype=bool)
    rows[:, -64:] = False  # the last 64 query rows of each head may attend to nothing
    cases = [("no mask", {}, {}), ("causal=True vs causal_mask(T)", dict(causal=True), dict(mask=causal_mask(T))),
             ("boolean causal mask", dict(mask=causal_mask(T)), dict(mask=causal_mask(T))),
             ("key padding + fully masked rows", dict(mask=padding & rows), dict(mask=padding & rows))]
    ok = True
    for name, tiled_kwargs, core_kwargs in cases:
        got = tiled_attention(q, k, v, **tiled_kwargs)
        expected = scaled_dot_product_attention(q, k, v, **core_kwargs)[0]
        error = float(np.abs(got - expected).max() / np.abs(expected).max())
        zero = "rows" not in name or bool((got[..., -64:, :] == 0).all())
        passed = error <= 1e-5 and got.dtype == np.float32 and zero
        ok &= passed
        note = f"; fully masked rows exactly 0: {zero}" if "rows" in name else ""
        print(f"check {name:32s} max|tiled - core| / max|core| = {error:.1e} (target <= 1e-5) "
              f"{'PASS' if passed else 'FAIL'}{note}")
    return ok


def worker(side, calls):
    """One side in this process: a warm-up call, the peak memory of one call, then ``calls`` timed calls."""
    from threadpoolctl import threadpool_limits

    from attn_helpers import causal_mask
    from attn_helpers.efficient import peak_memory, tiled_attention

    q, k, v = make_inputs()
    kwargs = dict(SIDES[side])
    if kwargs.get("mask") == "causal":
        kwargs["mask"] = causal_mask(T)
    with threadpool_limits(limits=1):
        tiled_attention(q, k, v, **kwargs)
        peak = peak_memory(lambda: tiled_attention(q, k, v, **kwargs))
        wall, cpu = [], []
        for _ in range(calls):
            start, start_cpu = time.perf_counter(), time.process_time()
            tiled_attention(q, k, v, **kwargs)
            wall.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
    print(json.dumps(dict(wall=statistics.median(wall), cpu=statistics.median(cpu), peak=peak)))


def drive(rounds, calls):
    print(f"B={B}, h={H}, T={T}, d_k={D_K}, float32; {rounds} rounds x {calls} calls per side, each side in its own "
          f"process, one core for the matrix products; load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    results = {side: [] for side in SIDES}
    for _ in range(rounds):
        for side in SIDES:
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", side, "--calls", str(calls)],
                                 capture_output=True, text=True, check=True).stdout
            results[side].append(json.loads(out.strip().splitlines()[-1]))
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    ok, cpu = True, {}
    for side, reports in results.items():
        wall = statistics.median(r["wall"] for r in reports) * 1e3
        cpu[side] = statistics.median(r["cpu"] for r in reports) * 1e3
        peak = max(r["peak"] for r in reports) / 2**20
        ok &= peak <= 16
        print(f"  {side:20s} wall {wall:7.0f} ms  processor {cpu[side]:7.0f} ms  peak memory {peak:5.1f} MiB "
              f"(target <= 16 MiB, the 8 MiB context included) {'PASS' if peak <= 16 else 'FAIL'}")
    for name, side in (("causal=True", "causal=True"), ("boolean causal mask", "boolean causal mask")):
        speedup = cpu["no mask"] / cpu[side]
        target = name == "causal=True"
        ok &= speedup >= 1.5 or not target
        print(f"  speed-up of {name:20s} over no mask (processor time): {speedup:.2f}x"
              + (f" (target >= 1.5x) {'PASS' if speedup >= 1.5 else 'FAIL'}" if target else " (no target)"))
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="no check; 2 rounds x 2 calls")
    parser.add_argument("--check", action="store_true", help="only the equality check")
    parser.add_argument("--worker", choices=sorted(SIDES), help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.calls)
        return 0
    if args.check:
        return 0 if check() else 1
    ok = args.quick or subprocess.run([sys.executable, os.path.abspath(__file__), "--check"]).returncode == 0
    ok &= drive(2 if args.quick else 3, 2 if args.quick else 3)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
