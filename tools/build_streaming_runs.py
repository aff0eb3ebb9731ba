#!/usr/bin/env python3
"""Maintainer tool: run notebook 17's StreamingLLM experiment at full size, and save the losses.

    nice python tools/build_streaming_runs.py     # writes attn_helpers/data/nb17_streaming_runs.npz

SmolLM2-135M over the first 1,024 tokens of notebook 14's validation text, four times in one batched pass (full
attention, a 128-token window, the window plus the first token, plus the first four), then once more with the
first token moved to just before the window, as StreamingLLM numbers its cache (``windows.moved_sink_attention``;
all five: ``windows.streaming_study``), and the explorer's grid (windows 8, 16, ..., 128 with 0 to 4 sinks over
the first 256 tokens: ``windows.window_grid_losses``); a few minutes on two cores (about 7 on a busy one). The
notebook runs the StreamingLLM experiment at a quarter of the size and plots this one. ``tests/test_modern.py``
checks that the shipped numbers show StreamingLLM's shape, and that one setting of the grid and the start of the
moved-sink run equal a fresh run, never bit for bit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attn_helpers.llm import load_smollm2  # noqa: E402
from attn_helpers.windows import (  # noqa: E402
    STREAMING_FILE,
    STREAMING_FULL,
    WINDOW_GRID,
    streaming_study,
    validation_ids,
    window_grid_losses,
)

PATH = ROOT / "attn_helpers" / "data" / STREAMING_FILE


def main() -> None:
    start = time.perf_counter()
    model = load_smollm2()
    ids = validation_ids(model, STREAMING_FULL["T"])
    study = streaming_study(model, ids, STREAMING_FULL["window"])
    grid, full = window_grid_losses(model)
    np.savez_compressed(PATH, names=np.array(study["names"]), losses=study["losses"].astype(np.float32), ids=ids,
                        window=STREAMING_FULL["window"], T=STREAMING_FULL["T"],
                        from_position=STREAMING_FULL["from_position"], grid_losses=grid.astype(np.float32),
                        grid_full=full.astype(np.float32), grid_windows=np.array(WINDOW_GRID["windows"]),
                        grid_sinks=np.array(WINDOW_GRID["sinks"]))
    late = study["losses"][:, STREAMING_FULL["from_position"]:].mean(axis=1)
    for name, loss in zip(study["names"], late):
        print(f"{name:<24} {loss:.3f} nats (perplexity {np.exp(loss):.1f})")
    size = PATH.stat().st_size / 1024
    print(f"wrote {PATH.relative_to(ROOT)} ({size:.0f} KiB) in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
