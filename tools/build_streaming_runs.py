#!/usr/bin/env python3
"""Maintainer tool: run notebook 16's StreamingLLM experiment at full size, and save the losses.

    nice python tools/build_streaming_runs.py     # writes attn_helpers/data/nb16_streaming_runs.npz

SmolLM2-135M over the first 1,024 tokens of notebook 14's validation text, four times in one batched pass
(full attention, a 128-token window, the window plus the first token, plus the first four: ``windows.streaming_study``);
a minute or two on two cores. The notebook runs the same experiment at a quarter of the size and plots this one.
``tests/test_windows.py`` checks the shipped numbers show StreamingLLM's shape, never bit for bit.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attn_helpers.llm import load_smollm2  # noqa: E402
from attn_helpers.windows import STREAMING_FILE, STREAMING_FULL, streaming_study, validation_ids  # noqa: E402

PATH = ROOT / "attn_helpers" / "data" / STREAMING_FILE


def main() -> None:
    start = time.perf_counter()
    model = load_smollm2()
    ids = validation_ids(model, STREAMING_FULL["T"])
    study = streaming_study(model, ids, STREAMING_FULL["window"])
    np.savez_compressed(PATH, names=np.array(study["names"]), losses=study["losses"].astype(np.float32), ids=ids,
                        window=STREAMING_FULL["window"], T=STREAMING_FULL["T"],
                        from_position=STREAMING_FULL["from_position"])
    late = study["losses"][:, STREAMING_FULL["from_position"]:].mean(axis=1)
    for name, loss in zip(study["names"], late):
        print(f"{name:<18} {loss:.3f} nats (perplexity {np.exp(loss):.1f})")
    size = PATH.stat().st_size / 1024
    print(f"wrote {PATH.relative_to(ROOT)} ({size:.0f} KiB) in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
