"""Benchmark tiled_attention (attn_helpers.efficient) against PyTorch's fused CPU attention.

Targets (issue 18), at B=1, h=8, T=4096, d_k=64, float32:

- equal to ``scaled_dot_product_attention`` to <= 1e-5 relative, with and without masks;
  fully masked rows give 0 (``--check``, or the first part of a full run);
- peak extra memory of one call <= 16 MiB (tracemalloc: every numpy allocation of the
  call, the 8 MiB output included), where the weights alone would be 512 MiB;
- time <= 1.0x ``torch.nn.functional.scaled_dot_product_attention`` (which builds no
  weights either), and causal (``causal=True``) >= 1.6x faster than the same call
  without a mask.

Each side runs in its own worker process, as in ``bench_attention.py``; the driver
alternates them for a few rounds and prints the medians and the ratios of one run.
Run from the repository root in the benchmark venv (see ``benchmarks/README.md``)::

    python benchmarks/bench_tiled.py            # check, memory, 5 rounds x 5 reps per side
    python benchmarks/bench_tiled.py --quick    # 2 rounds x 3 reps
    python benchmarks/bench_tiled.py --check    # equality only

torch is a benchmark-only dependency; ``attn_helpers`` never imports it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

SHAPE = dict(B=1, h=8, T=4096, d_k=64)
SEED = 0

# side -> what it runs; the numpy sides are tiled_attention, the torch sides F.scaled_dot_product_attention.
SIDES = {
    "tiled": "tiled_attention(q, k, v)",
    "tiled-causal": "tiled_attention(q, k, v, causal=True)",
    "tiled-mask": "tiled_attention(q, k, v, mask=causal_mask(T))  [a boolean causal mask, read tile by tile]",
    "torch": "F.scaled_dot_product_attention(q, k, v)",
    "torch-causal": "F.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "floor": "the tiles' two matrix products alone (no exp, no sums): the least any numpy tiling does",
    "floor-exp": "the same products and numpy's exp of every score: the least any numpy online softmax does",
}


def make_inputs(T=SHAPE["T"]):
    """The seeded float32 inputs, (B, h, T, d_k) each, the same for every side."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    shape = (SHAPE["B"], SHAPE["h"], T, SHAPE["d_k"])
    return tuple(rng.standard_normal(shape, dtype=np.float32) for _ in range(3))


def side_callable(side, q, k, v):
    if side.startswith("torch"):
        import torch

        qt, kt, vt = (torch.from_numpy(a) for a in (q, k, v))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        causal = side == "torch-causal"
        return lambda: sdpa(qt, kt, vt, is_causal=causal)
    from attn_helpers import causal_mask
    from attn_helpers.efficient import tiled_attention

    if side.startswith("floor"):
        return floor_callable(q, k, v, with_exp=side == "floor-exp")
    if side == "tiled-causal":
        return lambda: tiled_attention(q, k, v, causal=True)
    if side == "tiled-mask":
        mask = causal_mask(q.shape[-2])
        return lambda: tiled_attention(q, k, v, mask=mask)
    return lambda: tiled_attention(q, k, v)


def floor_callable(q, k, v, with_exp=False):
    """Only the matrix products of tiled_attention's tiles, ``scores = q K^T`` and ``scores @ V``, on its workers.

    No scale, no exp, no running max or sum: any numpy version of tiled attention does at
    least this work on numpy's BLAS, so ``floor / torch`` is the best ratio within reach here.
    ``with_exp``: also ``np.exp`` of every score, in place, between the two products (every
    softmax takes one exp per score), so ``floor-exp / torch`` is the best ratio any numpy
    online softmax can reach with numpy's own exp.
    """
    import itertools
    import threading

    import numpy as np

    from attn_helpers import efficient

    rows, keys = efficient._TILE_ROWS, efficient._TILE_KEYS
    q, k, v = (a.reshape(-1, *a.shape[-2:]) for a in (q, k, v))  # (N, T, d)
    n, t, _ = q.shape
    with efficient.one_blas_thread() as allowed:
        workers = min(efficient._THREADS, allowed)

    def call():
        tasks = iter(itertools.product(range(n), range(0, t, rows)))
        lock = threading.Lock()
        out = np.zeros(v.shape, dtype=v.dtype)

        def run():
            scores = np.empty((rows, keys), dtype=q.dtype)
            while True:
                with lock:
                    head, r0 = next(tasks, (None, None))
                if head is None:
                    return
                for k0 in range(0, t, keys):
                    np.matmul(q[head, r0 : r0 + rows], k[head, k0 : k0 + keys].T, out=scores)  # (r, d) @ (d, b)
                    if with_exp:
                        np.exp(scores, out=scores)  # the scores of random inputs stay far from overflow
                    out[head, r0 : r0 + rows] += scores @ v[head, k0 : k0 + keys]  # (r, b) @ (b, d_v)

        efficient._run_on_workers(run, workers)
        return out

    return call


# ----------------------------------------------------------------------------- check
def relative_error(got, expected):
    import numpy as np

    return float(np.abs(got - expected).max() / max(float(np.abs(expected).max()), 1e-30))


def check(T=SHAPE["T"]):
    """tiled_attention == scaled_dot_product_attention (<= 1e-5 relative), with and without masks. Returns ok."""
    import numpy as np

    from attn_helpers import causal_mask, scaled_dot_product_attention
    from attn_helpers.efficient import tiled_attention

    q, k, v = make_inputs(T)
    rng = np.random.default_rng(SEED + 1)
    padding = np.arange(T) < rng.integers(T // 2, T, size=(SHAPE["h"], 1, 1))  # (h, 1, T): key padding per head
    rows = np.ones((SHAPE["h"], T, 1), dtype=bool)
    rows[:, -64:] = False  # the last 64 query rows may attend to nothing
    cases = [
        ("no mask", dict(), dict()),
        ("causal=True vs causal_mask(T)", dict(causal=True), dict(mask=causal_mask(T))),
        ("boolean causal mask", dict(mask=causal_mask(T)), dict(mask=causal_mask(T))),
        ("key padding + fully masked rows", dict(mask=padding & rows), dict(mask=padding & rows)),
    ]
    ok = True
    for name, tiled_kwargs, core_kwargs in cases:
        got = tiled_attention(q, k, v, **tiled_kwargs)
        expected, weights = scaled_dot_product_attention(q, k, v, **core_kwargs)
        del weights
        err = relative_error(got, expected)
        zero = bool((got[..., -64:, :] == 0).all())
        zero_rows = "" if "rows" not in name else f"; fully masked rows exactly 0: {zero}"
        passed = err <= 1e-5 and got.dtype == np.float32 and ("rows" not in name or zero)
        ok &= bool(passed)
        print(f"check  T={T} h={SHAPE['h']} {name:34s} max|tiled - core| / max|core| = {err:.1e}  "
              f"(target <= 1e-5) {'PASS' if passed else 'FAIL'}{zero_rows}")
    return ok


# ----------------------------------------------------------------------------- worker
def worker(side, warmup, reps):
    q, k, v = make_inputs()
    threads = None
    if side.startswith("torch"):
        import torch

        torch.inference_mode().__enter__()
        threads = torch.get_num_threads()
    fn = side_callable(side, q, k, v)
    for _ in range(warmup):
        fn()
    peak = None
    if not side.startswith("torch"):  # tracemalloc sees every numpy allocation (not torch's)
        import tracemalloc

        tracemalloc.start()
        result = fn()
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        del result
    times, cpu_times = [], []
    for _ in range(reps):
        cpu_start, start = time.process_time(), time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
    print(json.dumps(dict(side=side, times=times, median=statistics.median(times), cpu=statistics.median(cpu_times),
                          peak=peak, threads=threads)))


def run_worker(side, warmup, reps):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", side, "--warmup", str(warmup), "--reps", str(reps)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.exit(f"worker {side} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ----------------------------------------------------------------------------- driver
def drive(rounds, warmup, reps):
    label = ", ".join(f"{key}={value}" for key, value in SHAPE.items())
    print(f"\n{label}, float32; {rounds} rounds x {reps} reps per side (after {warmup} warm-up), each side in its "
          f"own process, sides alternating; medians in ms (wall clock)")
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    per_side = {side: [] for side in SIDES}
    cpu = {side: [] for side in SIDES}
    peaks = {}
    for _ in range(rounds):
        for side in SIDES:
            report = run_worker(side, warmup, reps)
            per_side[side].append(report["median"])
            cpu[side].append(report["cpu"])
            if report["peak"] is not None:
                peaks[side] = max(peaks.get(side, 0), report["peak"])
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + "\n")
    median = {side: statistics.median(times) * 1e3 for side, times in per_side.items()}
    for side, what in SIDES.items():
        rounds_txt = " ".join(f"{t * 1e3:.0f}" for t in per_side[side])
        cpu_ms = statistics.median(cpu[side]) * 1e3
        print(f"  {side:13s} {median[side]:8.1f} ms (CPU {cpu_ms:7.1f} ms, all threads)  {what}  rounds: {rounds_txt}")

    output_mib = SHAPE["B"] * SHAPE["h"] * SHAPE["T"] * SHAPE["d_k"] * 4 / 2**20
    weights_mib = SHAPE["B"] * SHAPE["h"] * SHAPE["T"] ** 2 * 4 / 2**20
    results = []
    for side in ("tiled", "tiled-causal", "tiled-mask"):
        mib = peaks[side] / 2**20
        results.append((f"peak memory of one call, {side}", f"{mib:.1f} MiB (output {output_mib:.0f} MiB included; "
                        f"the weights alone: {weights_mib:.0f} MiB)", "<= 16 MiB", mib <= 16))
    ratio = median["tiled"] / median["torch"]
    results.append(("time tiled / torch", f"{ratio:.2f}x", "<= 1.0x", ratio <= 1.0))
    speedup = median["tiled"] / median["tiled-causal"]
    results.append(("causal speed-up: no mask / causal=True", f"{speedup:.2f}x", ">= 1.6x", speedup >= 1.6))
    extra = [("time tiled causal / torch causal", f"{median['tiled-causal'] / median['torch-causal']:.2f}x"),
             ("causal speed-up with a boolean mask: no mask / mask", f"{median['tiled'] / median['tiled-mask']:.2f}x"),
             ("torch causal speed-up", f"{median['torch'] / median['torch-causal']:.2f}x"),
             ("floor / torch: the tiles' matrix products alone", f"{median['floor'] / median['torch']:.2f}x"),
             ("floor-exp / torch: the products and one exp per score", f"{median['floor-exp'] / median['torch']:.2f}x"),
             ("tiled / floor-exp: what the running max and sums add", f"{median['tiled'] / median['floor-exp']:.2f}x")]
    print()
    for name, value, target, passed in results:
        print(f"  {name:52s} {value:58s} target {target:9s} {'PASS' if passed else 'FAIL'}")
    for name, value in extra:
        print(f"  {name:52s} {value:58s} (extra, no target)")
    return all(passed for *_, passed in results)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds x 3 reps instead of 5 rounds x 5 reps")
    parser.add_argument("--rounds", type=int, help="rounds per side (overrides --quick)")
    parser.add_argument("--reps", type=int, help="timed repetitions per worker (overrides --quick)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per worker before timing")
    parser.add_argument("--check", action="store_true", help="only check equality with the core (not timed)")
    parser.add_argument("--no-check", action="store_true", help="skip the equality check (it takes ~2 GB)")
    parser.add_argument("--worker", choices=sorted(SIDES), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    reps = args.reps or (3 if args.quick else 5)
    if args.worker:
        worker(args.worker, args.warmup, reps)
        return 0
    if args.check:
        return 0 if check() else 1
    ok = True
    if not args.no_check:  # in its own process too: the core's 512 MiB weights must not sit beside the timings
        ok = subprocess.run([sys.executable, os.path.abspath(__file__), "--check"], check=False).returncode == 0
    ok &= drive(rounds, args.warmup, reps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
