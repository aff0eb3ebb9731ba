#!/usr/bin/env python3
"""How long the numpy all-MiniLM-L6-v2 of notebook 12 takes: one forward pass of a 12-token sentence.

Target: <= 50 ms for ``model.run(text)`` on a 12-token sentence (tokenize, embed, six blocks, all
hidden states and attention weights kept), so that notebook 12's head view, which runs the model
on every edit of its text box, answers in the browser well within 300 ms.

    python benchmarks/bench_pretrained.py
    python benchmarks/bench_pretrained.py --threads 1    # the BLAS limited to one thread for the whole process

``model.run`` itself limits the BLAS to one thread while it runs (its matrices are small; extra
threads only wait for each other on a busy machine), so both lines should agree.

Also prints the one-off costs: loading (SHA-256 of the 91 MB weights file, then reading it) and
tokenizing. The median wall time of ``--repeat`` runs is compared with the target; the load
average of the machine is printed with it, because a busy machine slows small matrix products a
lot, and so is the CPU time per run, which a busy machine inflates much less (with one BLAS
thread it is close to what an idle machine takes). Exit status 1 if the median is over the target.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

SENTENCE = "The quick brown fox jumps over the lazy dog."  # 12 tokens with [CLS] and [SEP]
TARGET_MS = 50.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, help="BLAS threads for the process (set before numpy is imported)")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    if args.threads:
        for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[name] = str(args.threads)

    from attn_helpers import pretrained

    start = time.perf_counter()
    model = pretrained.load_minilm()
    load_ms = 1000 * (time.perf_counter() - start)
    tokens = model.tokenizer.tokenize(SENTENCE)
    if len(tokens) != 12:
        raise SystemExit(f"the benchmark sentence should have 12 tokens; it has {len(tokens)}: {tokens}")

    def timed(fn, repeat):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            fn()
            times.append(1000 * (time.perf_counter() - start))
        return times

    timed(lambda: model.run(SENTENCE), 3)  # warm up (first calls allocate)
    cpu_start = time.process_time()
    runs = timed(lambda: model.run(SENTENCE), args.repeat)
    cpu_ms = 1000 * (time.process_time() - cpu_start) / args.repeat
    tokenize = timed(lambda: model.tokenizer.tokenize(SENTENCE), args.repeat)
    median = statistics.median(runs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    threads = args.threads or "default"
    print(f"machine: {os.cpu_count()} CPUs, load average {load:.1f}; BLAS threads: {threads}")
    print(f"load_minilm() (SHA-256 + read, first call): {load_ms:7.1f} ms")
    print(f"tokenize, 12 tokens:                        {statistics.median(tokenize):7.2f} ms (median)")
    print(f"model.run, 12 tokens:                       {median:7.1f} ms (median of {args.repeat}; "
          f"min {min(runs):.1f}, max {max(runs):.1f})")
    print(f"model.run, CPU time per run:                {cpu_ms:7.1f} ms (all threads; with one BLAS thread, about the "
          "wall time on an idle machine)")
    verdict = "PASS" if median <= TARGET_MS else "FAIL"
    print(f"{verdict}: target <= {TARGET_MS:.0f} ms")
    return 0 if median <= TARGET_MS else 1


if __name__ == "__main__":
    sys.exit(main())
