#!/usr/bin/env python3
"""The MiniLM forward (notebook 12) and the tiny GPT's generation (notebook 14), this tree against an older commit.

    python benchmarks/bench_model_paths.py --baseline d834c49

The baseline's ``attn_helpers`` is extracted with ``git archive`` into a temporary folder; each side runs in its
own process, the sides alternating, ``--rounds`` times in the same run. A process loads both models, warms up,
then takes the median CPU time of ``--repeat`` calls of each: ``model.run`` of a 12-token sentence, and
``model.generate`` of 40 greedy tokens with the KV cache (both use one BLAS thread, so CPU time is their cost).
A side's figure is the lowest of its round medians. The verdict is the ratio this tree / baseline of each, against
``--target`` (default 1.1): exit status 1 if either is over.
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

ROOT = Path(__file__).resolve().parent.parent
SENTENCE = "The quick brown fox jumps over the lazy dog."


def _median_cpu_ms(call, repeat):
    for _ in range(3):  # warm up (first calls allocate)
        call()
    times = []
    for _ in range(repeat):
        start = time.process_time()
        call()
        times.append(1000 * (time.process_time() - start))
    return statistics.median(times)


def child(repeat):
    """Time both calls in this process; print one JSON line."""
    import attn_helpers
    from attn_helpers import pretrained
    from attn_helpers.gpt import load_tiny_gpt

    minilm, gpt = pretrained.load_minilm(), load_tiny_gpt()
    print(json.dumps({"package": attn_helpers.__file__,
                      "minilm_ms": _median_cpu_ms(lambda: minilm.run(SENTENCE), repeat),
                      "generate_ms": _median_cpu_ms(lambda: gpt.generate("It is a truth", 40, temperature=0),
                                                    max(3, repeat // 5))}))


def measure(root, repeat):
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, __file__, "--child", "--repeat", str(repeat)], env=env, cwd=root,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", required=True, help="a git commit to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--target", type=float, default=1.1, help="the largest ratio this tree / baseline that passes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        return child(args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.baseline, "attn_helpers"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
        sides = {f"commit {args.baseline}": Path(tmp), "this tree": ROOT}
        runs = {name: [] for name in sides}
        for _ in range(args.rounds):
            for name, root in sides.items():
                runs[name].append(measure(root, args.repeat))
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; CPU ms, lowest of {args.rounds} medians, "
          "each side in its own process")
    best = {name: {key: min(r[key] for r in results) for key in ("minilm_ms", "generate_ms")}
            for name, results in runs.items()}
    for name, figures in best.items():
        print(f"  {name:<16} MiniLM forward {figures['minilm_ms']:6.1f} ms   tiny GPT, 40 tokens "
              f"{figures['generate_ms']:6.1f} ms")
    new, old = best["this tree"], best[f"commit {args.baseline}"]
    failed = False
    for key, what in (("minilm_ms", "MiniLM forward"), ("generate_ms", "tiny GPT generation")):
        ratio = new[key] / old[key]
        failed |= ratio > args.target
        print(f"{'PASS' if ratio <= args.target else 'FAIL'}: {what} takes {ratio:.2f}x the CPU time of commit "
              f"{args.baseline} (target <= {args.target}x)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
