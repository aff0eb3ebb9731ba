#!/usr/bin/env python3
"""Maintainer tool: train the runs of notebook 09's length experiment, and save them.

    nice python tools/build_position_runs.py     # writes attn_helpers/data/nb09_position_runs.npz

Notebook 11's copy-previous model, trained at length 8 with learned, sinusoidal, RoPE and ALiBi
positions (``attn_helpers.position_runs``), one run per kind and seed, single-threaded; under a
minute on one core. Only the final parameters and the losses are kept. ``tests/test_training_positions.py``
checks what the notebook relies on (the accuracy at length 8, the learned table's untouched rows),
never the trajectory bit for bit: another CPU may round differently.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))  # save_models

from save_models import save_runs  # noqa: E402  (tools/save_models.py)

from attn_helpers.position_runs import (  # noqa: E402
    KINDS,
    PATH,
    SEEDS,
    TEST_LENGTHS,
    accuracy_at_length,
    accuracy_by_position,
    position_run,
    run_name,
)


def main() -> None:
    runs = {}
    for kind in KINDS:
        for seed in SEEDS:
            start = time.perf_counter()
            run = runs[run_name(kind, seed)] = position_run(kind, seed)
            by_position = accuracy_by_position(run, max(TEST_LENGTHS))
            at = "  ".join(f"{T}: {accuracy_at_length(by_position, T):.3f}" for T in TEST_LENGTHS)
            print(f"{run_name(kind, seed):<20} final loss {run.losses[-10:].mean():.4f}  accuracy at {at}  "
                  f"({time.perf_counter() - start:.1f} s)", flush=True)
    save_runs(runs, PATH)
    print(f"wrote {PATH.relative_to(ROOT)} ({PATH.stat().st_size / 1024:.0f} KiB)")


if __name__ == "__main__":
    main()
