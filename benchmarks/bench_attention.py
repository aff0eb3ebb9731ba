"""Benchmark the opt-in fast attention of ``attn_helpers.efficient`` against PyTorch's CPU kernels.

The ``sdpa`` cases time ``attn_helpers.efficient.blocked_attention`` (the readable
default, ``scaled_dot_product_attention``, is timed at lesson sizes by
``bench_lesson_size.py``; its line here is for information). The ``mha`` lines time
the readable ``multi_head_attention`` and have no target.

Scope: speed only (correctness lives in ``tests/``). Each side runs in its own
worker process, so numpy's BLAS threads and torch's OpenMP threads never compete
inside one process; the driver alternates the sides A B A B for a few rounds and
reports the median of each side and the ratio numpy / torch.

Run from the repository root in the benchmark venv (see ``benchmarks/README.md``)::

    python benchmarks/bench_attention.py            # all cases, full rounds
    python benchmarks/bench_attention.py --quick    # fewer rounds and repetitions
    python benchmarks/bench_attention.py --case sdpa-1024

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

SEED = 0

# Each case: sizes, and the target ratio numpy / torch (None: an extra line for information, no target).
CASES = {
    "sdpa-1024": dict(kind="sdpa", T=1024, B=1, h=8, d_k=64, target=1.5),
    "sdpa-4096": dict(kind="sdpa", T=4096, B=1, h=8, d_k=64, target=1.5),
    # Extra line, no target: the readable default on the same problem.
    "sdpa-1024-readable": dict(kind="sdpa", T=1024, B=1, h=8, d_k=64, target=None, readable=True),
    "mha-1024": dict(kind="mha", T=1024, B=1, h=8, d_model=512, target=None, need_weights=True),
    # Extra line, no target: torch skips the (B, T, T) weights entirely; numpy must return them.
    "mha-1024-noweights": dict(kind="mha", T=1024, B=1, h=8, d_model=512, target=None, need_weights=False),
}

LABELS = {
    "sdpa-1024": "blocked_attention T=1024 B=1 h=8 d_k=64 f32 vs F.scaled_dot_product_attention",
    "sdpa-4096": "blocked_attention T=4096 B=1 h=8 d_k=64 f32 vs F.scaled_dot_product_attention",
    "sdpa-1024-readable": (
        "scaled_dot_product_attention (readable) T=1024 vs F.scaled_dot_product_attention [extra, no target]"
    ),
    "mha-1024": "mha   T=1024 d_model=512 h=8 f32      vs nn.MultiheadAttention(need_weights=True)",
    "mha-1024-noweights": (
        "mha   T=1024 d_model=512 h=8 f32      vs nn.MultiheadAttention(need_weights=False) [extra, no target]"
    ),
}


# ----------------------------------------------------------------------------- inputs
def make_inputs(case):
    """The same seeded float32 numpy inputs for both sides."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    if case["kind"] == "sdpa":
        shape = (case["B"], case["h"], case["T"], case["d_k"])  # (B, h, T, d_k)
        queries, keys, values = (rng.standard_normal(shape, dtype=np.float32) for _ in range(3))
        return dict(queries=queries, keys=keys, values=values)
    d_model = case["d_model"]
    x = rng.standard_normal((case["B"], case["T"], d_model), dtype=np.float32)  # (B, T, d_model)
    w_q, w_k, w_v, w_o = (
        rng.standard_normal((d_model, d_model), dtype=np.float32) / np.sqrt(d_model) for _ in range(4)
    )
    return dict(x=x, w_q=w_q, w_k=w_k, w_v=w_v, w_o=w_o)


def numpy_callable(case, inputs):
    import attn_helpers
    from attn_helpers.efficient import blocked_attention

    if case["kind"] == "sdpa":
        fn = attn_helpers.scaled_dot_product_attention if case.get("readable") else blocked_attention
        return lambda: fn(inputs["queries"], inputs["keys"], inputs["values"])
    x, w_q, w_k, w_v, w_o = (inputs[k] for k in ("x", "w_q", "w_k", "w_v", "w_o"))
    return lambda: attn_helpers.multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=case["h"])


#: What a worker process can run: a side of the comparison, or one of the floors.
WORKER_SIDES = ("numpy", "torch", "floor-blocks", "floor-heads", "floor-blocks-exp")


def floor_callable(case, inputs, variant):
    """A lower bound for any numpy ``scaled_dot_product_attention`` that returns the weights.

    Only the two matrix products, ``scores = Q K^T`` written into a fresh (N, T, T)
    array and ``context = scores @ V``, and nothing else: no scale, no exp, no sums,
    no normalisation. The real function does all of this plus the softmax, so it
    cannot be faster than the faster of the two ways of running them:

    - ``blocks``: the kernel's own blocks of query rows on its worker threads, each
      product on a one-threaded BLAS (what ``attn_helpers`` does);
    - ``heads``: one whole head at a time, each product on all of the BLAS's threads;
    - ``blocks-exp``: ``blocks`` with numpy's ``exp`` of every score, in place, between the
      products (every softmax takes one exp per score): the least any numpy version that
      uses numpy's own exp can do.
    """
    import threading

    import numpy as np

    from attn_helpers import efficient as _kernel

    queries, keys, values = (inputs[n].reshape(-1, *inputs[n].shape[-2:]) for n in ("queries", "keys", "values"))
    n, t, _ = queries.shape
    keys_t = np.swapaxes(keys, -1, -2)  # (N, d_k, T)
    heads, rows = _kernel._block_layout(n, t, t, 4) if variant.startswith("blocks") else (1, t)
    with_exp = variant == "blocks-exp"
    blocks = [(first, start) for first in range(0, n, heads) for start in range(0, t, rows)]

    def call():
        weights = np.empty((n, t, t), np.float32)
        context = np.empty(values.shape, np.float32)
        todo, lock = iter(blocks), threading.Lock()

        def run():
            while True:
                with lock:
                    first, start = next(todo, (None, None))
                if first is None:
                    return
                heads_, rows_ = slice(first, first + heads), slice(start, start + rows)
                block = weights[heads_, rows_]
                np.matmul(queries[heads_, rows_], keys_t[heads_], out=block)
                if with_exp:
                    np.exp(block, out=block)  # unscaled random scores stay far below exp's overflow
                np.matmul(block, values[heads_], out=context[heads_, rows_])

        if variant == "heads":
            run()
        else:
            _kernel._hold_blas_to_one_thread()
            try:
                future = _kernel._get_pool().submit(run)
                run()
                future.result()
            finally:
                _kernel._release_blas()
        return context, weights

    return call


def torch_callable(case, inputs):
    import torch

    if case["kind"] == "sdpa":
        q, k, v = (torch.from_numpy(inputs[n]) for n in ("queries", "keys", "values"))
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda: sdpa(q, k, v)
    d_model = case["d_model"]
    mha = torch.nn.MultiheadAttention(d_model, case["h"], bias=False, batch_first=True)
    mha.eval()
    with torch.no_grad():  # same weights as the numpy side; torch computes x @ W.T, we compute x @ W
        w_qkv = (
            torch.from_numpy(inputs["w_q"].T.copy()),
            torch.from_numpy(inputs["w_k"].T.copy()),
            torch.from_numpy(inputs["w_v"].T.copy()),
        )
        mha.in_proj_weight.copy_(torch.cat(w_qkv, dim=0))
        mha.out_proj.weight.copy_(torch.from_numpy(inputs["w_o"].T.copy()))
    x = torch.from_numpy(inputs["x"])
    need_weights = case["need_weights"]
    return lambda: mha(x, x, x, need_weights=need_weights)


# ----------------------------------------------------------------------------- check
def check(case_name):
    """Both sides compute the same numbers (run once, in one process; not timed)."""
    import numpy as np
    import torch

    case = CASES[case_name]
    inputs = make_inputs(case)
    with torch.inference_mode():
        expected = torch_callable(case, inputs)()
    got = numpy_callable(case, inputs)()
    if case["kind"] == "sdpa":
        pairs = [("context", got[0], expected)]
    else:
        out, weights = got
        pairs = [("out", out, expected[0])]
        if case["need_weights"]:  # torch averages the weights over the heads
            pairs.append(("weights averaged over heads", weights.mean(axis=-3), expected[1]))
    for what, a, b in pairs:
        b = b.numpy()
        err = float(np.abs(a - b).max() / np.abs(b).max())
        print(f"{case_name:20s} {what:30s} max |numpy - torch| / max |torch| = {err:.1e}")
        if not err < 1e-4:
            sys.exit(f"{case_name}: numpy and torch disagree ({what})")


# ----------------------------------------------------------------------------- worker
def worker(side, case_name, warmup, reps):
    case = CASES[case_name]
    inputs = make_inputs(case)
    if side == "torch":
        import torch

        context = torch.inference_mode()
        context.__enter__()
        fn = torch_callable(case, inputs)
        threads = torch.get_num_threads()
    elif side.startswith("floor-"):
        fn = floor_callable(case, inputs, side.removeprefix("floor-"))
        threads = None
    else:
        fn = numpy_callable(case, inputs)
        threads = None
    for _ in range(warmup):
        fn()
    times, cpu_times = [], []
    for _ in range(reps):
        cpu_start, start = time.process_time(), time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
        cpu_times.append(time.process_time() - cpu_start)
        del result  # free the T x T weights before the next call, as a caller would
    median, cpu = statistics.median(times), statistics.median(cpu_times)
    print(json.dumps(dict(side=side, case=case_name, times=times, median=median, cpu=cpu, threads=threads)))


# ----------------------------------------------------------------------------- driver
def run_worker(side, case_name, warmup, reps):
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--worker",
        side,
        "--case",
        case_name,
        "--warmup",
        str(warmup),
        "--reps",
        str(reps),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode:
        sys.exit(f"worker {side} {case_name} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def drive(case_names, rounds, warmup, reps):
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; {rounds} rounds x {reps} reps per side "
        f"(after {warmup} warm-up), sides alternate numpy torch [floors] numpy torch [floors] ..."
    )
    print("each number is the median over rounds of the per-process median, in milliseconds (wall clock)")
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load} (other processes take CPU from both sides)\n")
    rows = []
    for name in case_names:
        sides = ("numpy", "torch")
        if CASES[name]["kind"] == "sdpa":  # also time the floor: the two matrix products alone, two ways
            sides += ("floor-blocks", "floor-heads", "floor-blocks-exp")
        per_side = {side: [] for side in sides}
        cpu = {side: [] for side in sides}
        for _ in range(rounds):
            for side in sides:
                report = run_worker(side, name, warmup, reps)
                per_side[side].append(report["median"])
                cpu[side].append(report["cpu"])
        t_np = statistics.median(per_side["numpy"]) * 1e3
        t_torch = statistics.median(per_side["torch"]) * 1e3
        cpu_np, cpu_torch = (statistics.median(cpu[side]) * 1e3 for side in ("numpy", "torch"))
        ratio = t_np / t_torch
        target = CASES[name]["target"]
        verdict = "(extra)" if target is None else ("PASS" if ratio <= target else "FAIL")
        target_txt = "-" if target is None else f"<= {target:.1f}x"
        pairs = zip(per_side["numpy"], per_side["torch"], strict=True)
        rounds_txt = " ".join(f"{a * 1e3:.1f}/{b * 1e3:.1f}" for a, b in pairs)
        print(LABELS[name])
        print(
            f"    numpy {t_np:8.1f} ms   torch {t_torch:8.1f} ms   ratio {ratio:5.2f}x   "
            f"target {target_txt:8s} {verdict}   rounds numpy/torch ms: {rounds_txt}"
        )
        print(f"    CPU per call (all threads, incl. spin-waits): numpy {cpu_np:7.1f} ms   torch {cpu_torch:7.1f} ms")
        floor_txt = "-"
        if "floor-heads" in per_side:
            floors = {v: statistics.median(per_side[f"floor-{v}"]) * 1e3 for v in ("blocks", "heads")}
            t_floor = min(floors.values())
            print(
                f"    floor: Q K^T and scores @ V alone, no softmax (numpy; by blocks {floors['blocks']:.1f} ms,"
                f" by heads {floors['heads']:.1f} ms): {t_floor:.1f} ms = {t_floor / t_torch:.2f}x torch"
            )
            t_exp = statistics.median(per_side["floor-blocks-exp"]) * 1e3
            print(f"    floor with numpy's exp of every score (by blocks): {t_exp:.1f} ms = "
                  f"{t_exp / t_torch:.2f}x torch")
            floor_txt = f"{t_floor / t_torch:.2f}x {t_exp / t_torch:11.2f}x"
        rows.append((name, t_np, t_torch, ratio, target_txt, verdict, floor_txt))
    print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}\n")
    print(f"{'case':22s} {'numpy ms':>10s} {'torch ms':>10s} {'ratio':>7s} {'target':>9s}  {'result':7s} "
          "floor/torch  +exp/torch")
    for name, t_np, t_torch, ratio, target_txt, verdict, floor_txt in rows:
        print(f"{name:22s} {t_np:10.1f} {t_torch:10.1f} {ratio:6.2f}x {target_txt:>9s}  {verdict:7s} {floor_txt:>11s}")
    return all(v != "FAIL" for *_, v in rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--case", action="append", choices=sorted(CASES), help="run only this case (repeatable); default all"
    )
    parser.add_argument("--quick", action="store_true", help="2 rounds x 3 reps instead of 5 rounds x 7 reps")
    parser.add_argument("--rounds", type=int, help="rounds per side (overrides --quick)")
    parser.add_argument("--reps", type=int, help="timed repetitions per worker (overrides --quick)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed calls per worker before timing")
    parser.add_argument("--check", action="store_true", help="only check that both sides compute the same numbers")
    parser.add_argument("--worker", choices=WORKER_SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    rounds = args.rounds or (2 if args.quick else 5)
    reps = args.reps or (3 if args.quick else 7)
    if args.worker:
        worker(args.worker, args.case[0], args.warmup, reps)
        return 0
    if args.check:
        for name in args.case or list(CASES):
            check(name)
        return 0
    ok = drive(args.case or list(CASES), rounds, args.warmup, reps)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
