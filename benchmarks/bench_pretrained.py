#!/usr/bin/env python3
"""How long the numpy all-MiniLM-L6-v2 of notebook 12 takes (one forward pass of a 12-token sentence), notebook
14's tiny GPT (40 greedy tokens with the KV cache) and notebook 11's training (60 Adam steps of "reverse").

Measures ``model.run(text)`` (tokenize, embed, six blocks, all hidden states and attention
weights kept) for this tree, and, with ``--baseline COMMIT``, for the same code at an older
commit, each side in its own process, alternating, in the same run:

    python benchmarks/bench_pretrained.py                          # this tree only
    python benchmarks/bench_pretrained.py --baseline 4756041       # this tree against commit 4756041

Each process loads the model once, warms up, then times ``--repeat`` runs; the figure of a side
is the lowest of its ``--rounds`` medians (the round least disturbed by whatever else the machine
does), in wall time and in CPU time. ``model.run`` uses one BLAS thread, so its CPU time is its
cost, while its wall time on a shared machine also counts the other processes' turns. With a
baseline the verdict is the ratio this tree / baseline of the CPU-time figures (the wall-time
ratio is printed too), against ``--target`` (default 0.8): exit status 1 if it is over. The tiny GPT's generation
(``model.generate``, one BLAS thread too) is timed in the same processes, its ratio checked against ``--target`` as
well when the baseline has the model, and so is notebook 11's training (``train("reverse", steps=60)``, one BLAS
thread, the median of ``max(3, repeat // 10)`` runs).

    python benchmarks/bench_pretrained.py --baseline 070cfe6 --target 1.1   # issue 43: no slower than before
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SENTENCE = "The quick brown fox jumps over the lazy dog."  # 12 tokens with [CLS] and [SEP]
ROOT = Path(__file__).resolve().parent.parent


def child(repeat):
    """Time ``model.run`` in this process; print one JSON line."""
    import attn_helpers
    from attn_helpers import pretrained

    model = pretrained.load_minilm()
    tokens = model.tokenizer.tokenize(SENTENCE)
    if len(tokens) != 12:
        raise SystemExit(f"the benchmark sentence should have 12 tokens; it has {len(tokens)}: {tokens}")
    for _ in range(3):  # warm up (first calls allocate)
        model.run(SENTENCE)
    wall, cpu = [], []
    for _ in range(repeat):
        start, cpu_start = time.perf_counter(), time.process_time()
        model.run(SENTENCE)
        wall.append(1000 * (time.perf_counter() - start))
        cpu.append(1000 * (time.process_time() - cpu_start))
    generate_ms = None
    if hasattr(attn_helpers, "load_tiny_gpt"):
        gpt = attn_helpers.load_tiny_gpt()
        gpt.generate("It is a truth", 40, temperature=0)  # warm up
        runs = []
        for _ in range(max(3, repeat // 5)):
            start = time.process_time()
            gpt.generate("It is a truth", 40, temperature=0)
            runs.append(1000 * (time.process_time() - start))
        generate_ms = statistics.median(runs)
    from attn_helpers.training import train

    train("reverse", steps=5, snapshot_steps=())  # warm up
    runs = []
    for _ in range(max(3, repeat // 10)):
        start = time.process_time()
        train("reverse", steps=60, snapshot_steps=())
        runs.append(1000 * (time.process_time() - start))
    print(json.dumps({"package": attn_helpers.__file__, "wall_ms": statistics.median(wall),
                      "cpu_ms": statistics.median(cpu), "generate_ms": generate_ms,
                      "train_ms": statistics.median(runs)}))


def measure(root, repeat):
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(repeat)], env=env, cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", help="a git commit to compare with (extracted with git archive)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--target", type=float, default=0.8, help="the largest ratio this tree / baseline that passes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        sides = {"this tree": ROOT}
        if args.baseline:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "attn_helpers"],
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            sides = {f"commit {args.baseline}": Path(tmp), **sides}
        results = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, root in sides.items():
                results[name].append(measure(root, args.repeat))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"model.run of a 12-token sentence; {os.cpu_count()} CPUs, load average {load:.1f}; "
          f"lowest of {args.rounds} medians of {args.repeat} runs, each side in its own process")
    best = {}
    for name, runs in results.items():
        best[name] = {kind: min(r[kind] for r in runs) for kind in ("wall_ms", "cpu_ms")}
        rounds = ", ".join(f"{r['cpu_ms']:.1f}" for r in runs)
        generate = [r["generate_ms"] for r in runs if r["generate_ms"] is not None]
        best[name]["generate_ms"] = min(generate) if generate else None
        best[name]["train_ms"] = min(r["train_ms"] for r in runs)
        print(f"  {name:<16} wall {best[name]['wall_ms']:6.1f} ms  cpu {best[name]['cpu_ms']:6.1f} ms  "
              f"(cpu medians per round: {rounds})" + (f"; tiny GPT, 40 tokens: cpu {min(generate):6.1f} ms"
                                                      if generate else "")
              + f"; notebook 11, 60 steps: cpu {best[name]['train_ms']:6.1f} ms")
    if not args.baseline:
        return 0
    new, old = best["this tree"], best[f"commit {args.baseline}"]
    ratio = new["cpu_ms"] / old["cpu_ms"]
    verdict = "PASS" if ratio <= args.target else "FAIL"
    print(f"{verdict}: this tree takes {ratio:.2f}x the CPU time of commit {args.baseline} (target <= {args.target}x); "
          f"wall time {new['wall_ms'] / old['wall_ms']:.2f}x")
    if new["generate_ms"] and old["generate_ms"]:
        generate_ratio = new["generate_ms"] / old["generate_ms"]
        print(f"{'PASS' if generate_ratio <= args.target else 'FAIL'}: the tiny GPT's generation takes "
              f"{generate_ratio:.2f}x the CPU time of commit {args.baseline} (target <= {args.target}x)")
        ratio = max(ratio, generate_ratio)
    train_ratio = new["train_ms"] / old["train_ms"]
    print(f"{'PASS' if train_ratio <= args.target else 'FAIL'}: notebook 11's training takes {train_ratio:.2f}x the "
          f"CPU time of commit {args.baseline} (target <= {args.target}x)")
    return 0 if max(ratio, train_ratio) <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
