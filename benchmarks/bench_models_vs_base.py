#!/usr/bin/env python3
"""The models' speed against another checkout of the series (issue 48's budget: no slower than at f6b00f9, <= 1.1x).

Times, with one thread, MiniLM's forward pass (notebook 12: ``model.run`` of one sentence), the tiny GPT's greedy
generation with and without the KV cache (notebook 14: ``model.generate``) and SmolLM2's 32 greedy tokens (notebook
15: ``model.generate``). Each side runs in its own process with ``PYTHONPATH`` set to its checkout, the two sides
alternating ``--rounds`` times; a side's figure is its lowest processor time of a call (one thread: the time it
computed, not the time it waited for a core on a busy machine; the lowest wall time is printed too), and the ratio
``this checkout / base`` is printed for each. Both sides must produce the same numbers and tokens.

    git worktree add /tmp/base-models f6b00f9
    python benchmarks/bench_models_vs_base.py --base /tmp/base-models            # exit 1 if a ratio is over 1.1

The models that are not installed (MiniLM's files, SmolLM2's package) are skipped and said so.
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
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
SENTENCE = "The cat sat on the mat because it was tired after a long day."


def best(call, repeats):
    """The lowest processor and wall times of ``repeats`` calls of ``call`` (after one untimed call), and its last
    result."""
    result, cpu, wall = call(), [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        result = call()
        cpu.append(time.process_time() - start_cpu)
        wall.append(time.perf_counter() - start)
    return {"seconds": min(cpu), "wall": min(wall)}, result


def child(task, repeats):
    if task == "minilm":
        from attn_helpers.pretrained import load_minilm

        model = load_minilm()
        times, result = best(lambda: model.run(SENTENCE), repeats)
        return {**times, "check": float(result.hidden_states[-1].sum())}
    if task.startswith("tiny_gpt"):
        from attn_helpers.gpt import load_tiny_gpt

        model, use_cache = load_tiny_gpt(), task.endswith("cache")
        times, text = best(lambda: model.generate("It is a truth", 100, temperature=0, use_cache=use_cache), repeats)
        return {**times, "check": text}
    from attn_helpers.llm import load_smollm2

    model = load_smollm2()
    ids = model.encode("Once upon a time, there was a little robot who")
    times, new = best(lambda: model.generate(ids, 32), max(1, repeats // 3))
    return {**times, "check": new}


def run_side(path, task, repeats):
    env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(path)}
    done = subprocess.run([sys.executable, __file__, "--child", task, "--repeats", str(repeats)], env=env,
                          capture_output=True, text=True, cwd=path, timeout=1800)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, help="the other checkout (e.g. a worktree of f6b00f9)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds per side")
    parser.add_argument("--repeats", type=int, default=5, help="timed calls per round")
    parser.add_argument("--target", type=float, default=1.1, help="largest ratio this checkout / base")
    parser.add_argument("--tasks", default="minilm,tiny_gpt_cache,tiny_gpt_no_cache,smollm2")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.repeats)))
        return 0
    if args.base is None:
        parser.error("--base is required")
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs); "
          f"this checkout {ROOT}, base {args.base.resolve()}")
    failed = False
    for task in args.tasks.split(","):
        runs = {"this": [], "base": []}
        for _ in range(args.rounds):
            for side, path in (("base", args.base.resolve()), ("this", ROOT)):
                runs[side].append(run_side(path, task, args.repeats))
        errors = [run["error"] for side in runs.values() for run in side if "error" in run]
        if errors:
            print(f"{task:<18} skipped: {errors[0]}")
            continue
        same = len({json.dumps(run["check"]) for side in runs.values() for run in side}) == 1
        (this, base), (this_wall, base_wall) = ([min(run[key] for run in runs[side]) for side in ("this", "base")]
                                                for key in ("seconds", "wall"))
        ratio = this / base
        failed |= ratio > args.target or not same
        print(f"{task:<18} CPU: base {base * 1e3:8.1f} ms  this {this * 1e3:8.1f} ms  ratio {ratio:.3f}   "
              f"(wall {base_wall * 1e3:.1f} / {this_wall * 1e3:.1f} ms: {this_wall / base_wall:.3f})   "
              f"same output: {same}   {'OK' if ratio <= args.target and same else 'OVER'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
