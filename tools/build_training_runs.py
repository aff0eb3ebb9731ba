#!/usr/bin/env python3
"""Maintainer tool: train the runs that notebook 11 ships, and save them.

    python tools/build_training_runs.py          # writes attn_helpers/data/nb11_runs.npz

Each run of ``attn_helpers.training.SHIPPED_RUNS`` is trained from scratch with its seed,
single-threaded (so the file is the same on any machine with the same numpy), with
snapshots of its attention weights at ``SHIPPED_SNAPSHOTS`` and its held-out accuracy.
``tests/test_training.py`` trains them again and checks that they equal the file.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))  # save_models

from save_models import save_runs  # noqa: E402  (tools/save_models.py)

from attn_helpers.training import SHIPPED_PATH, SHIPPED_RUNS, shipped_run  # noqa: E402


def main() -> None:
    runs = {}
    for name in SHIPPED_RUNS:
        start = time.perf_counter()
        runs[name] = shipped_run(name)
        run = runs[name]
        print(f"{name:<32} {run.steps:>4} steps  final loss {run.losses[-10:].mean():.4f}  "
              f"held-out accuracy {run.held_out_accuracy:.4f}  ({time.perf_counter() - start:.1f} s)")
    save_runs(runs, SHIPPED_PATH)
    print(f"wrote {SHIPPED_PATH.relative_to(ROOT)} ({SHIPPED_PATH.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
