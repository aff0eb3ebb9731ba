"""Benchmark notebook 11's training: seconds per task, from a fresh process, against a 20 s budget.

Each task of ``attn_helpers.training.TASKS`` trains with its defaults (the notebook's and the
shipped runs' settings) in its own fresh Python process, so the time includes nothing cached;
the script reports the training time (``TrainingRun.seconds``: the Adam steps, one BLAS thread),
the held-out accuracy, and the machine's load average, since on a shared machine the time
grows with the load.

Run from the repository root::

    python benchmarks/bench_training.py              # every task, 3 rounds each, the median
    python benchmarks/bench_training.py --rounds 1 --task reverse
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUDGET_SECONDS = 20.0
ACCURACY_FLOOR = 0.99

_WORKER = """
import json, sys
from attn_helpers.training import accuracy, train
run = train(sys.argv[1], snapshot_steps=())
print(json.dumps({"seconds": run.seconds, "steps": run.steps, "accuracy": accuracy(run)}))
"""


def time_task(task: str) -> dict:
    """Train ``task`` once in a fresh process; returns seconds, steps and held-out accuracy."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", _WORKER, task], capture_output=True, text=True, env=env, check=True,
                         cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    sys.path.insert(0, str(ROOT))
    from attn_helpers.training import TASKS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--task", choices=list(TASKS), action="append", help="only this task (repeatable)")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    tasks = args.task or list(TASKS)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}  ({os.cpu_count()} CPUs)")
    header = f"{'task':<15}{'steps':>6}{'median s':>10}{'all rounds (s)':>26}{'accuracy':>10}"
    print(f"{header}  budget {BUDGET_SECONDS:.0f} s")
    failed = False
    for task in tasks:
        results = [time_task(task) for _ in range(args.rounds)]
        seconds = [r["seconds"] for r in results]
        median = statistics.median(seconds)
        acc = results[0]["accuracy"]
        ok = median <= BUDGET_SECONDS and acc >= ACCURACY_FLOOR
        failed |= not ok
        rounds = " ".join(f"{s:.1f}" for s in seconds)
        print(f"{task:<15}{results[0]['steps']:>6}{median:>10.1f}{rounds:>26}{acc:>10.2%}  {'ok' if ok else 'OVER'}")
    print(f"load average after:  {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
