"""Benchmark notebook 14's tiny GPT: training time per step, and generation speed with and without the KV cache.

* **Training.** The shipped run's own record (wall-clock and CPU seconds for its steps, one BLAS
  thread), and a fresh measurement of ``--steps`` training steps of the same recipe (batch 16 x 64
  tokens), from which the time of the full recipe is extrapolated.
* **Generation.** Tokens per second of ``model.generate`` (greedy, from a short prompt), with the
  KV cache (one new row per step) and without it (the whole window again at every step). The
  window is at most 64 tokens, so the gap is far smaller than at notebook 13's long sequences.

Times grow with the machine's load, which is printed first. Run from the repository root::

    python benchmarks/bench_tiny_gpt.py              # 20 training steps, 200 generated tokens, 3 rounds
    python benchmarks/bench_tiny_gpt.py --steps 50 --tokens 400
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    from threadpoolctl import threadpool_limits

    from attn_helpers.gpt import corpus_split, init_tiny_gpt, load_tiny_gpt, train_gpt

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=20, help="training steps to time")
    parser.add_argument("--tokens", type=int, default=200, help="tokens to generate per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")

    model = load_tiny_gpt()
    recipe, record = model.record["recipe"], model.record
    print(f"shipped run: {recipe['steps']} steps in {record['seconds']:.0f} s wall-clock, "
          f"{record['cpu_seconds']:.0f} s of CPU ({record['cpu_seconds'] / recipe['steps'] * 1e3:.0f} ms per step)")

    ids = model.tokenizer.encode(corpus_split("train"))
    decoder = init_tiny_gpt(recipe["vocab_size"], recipe["d_model"], recipe["num_heads"], recipe["num_layers"])
    with threadpool_limits(1):
        start, cpu = time.perf_counter(), time.process_time()
        train_gpt(decoder, ids, args.steps, batch_size=recipe["batch_size"], context_length=recipe["context_length"])
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(f"now: {args.steps} steps in {wall:.2f} s wall-clock, {cpu:.2f} s CPU -> {cpu / args.steps * 1e3:.0f} ms "
          f"per step; the full recipe would take {cpu / args.steps * recipe['steps'] / 60:.1f} min of CPU")

    for use_cache in (True, False):
        rates = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            model.generate("It is a truth", args.tokens, temperature=0, use_cache=use_cache)
            rates.append(args.tokens / (time.perf_counter() - start))
        print(f"generation, use_cache={use_cache!s:<5}: median {statistics.median(rates):7.0f} tokens/s "
              f"(rounds: {', '.join(f'{r:.0f}' for r in rates)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
