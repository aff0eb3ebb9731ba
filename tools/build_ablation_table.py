#!/usr/bin/env python3
"""Maintainer tool: remove each of all-MiniLM-L6-v2's 72 heads, both ways, and save what changes.

    nice python tools/build_ablation_table.py     # writes attn_helpers/data/nb12_ablation_all_heads.npz

Notebook 12 (section 7) removes three heads at run time and compares them with every head of the model.
Removing all 72, zeroed and replaced by their mean, on the 8 fingerprint sentences is 1,152 runs of the
later blocks: about 20 s on one core, too long for a notebook that runs in seconds. This script runs
exactly ``attn_helpers.ablation.ablation_effects`` on them and keeps the numbers the notebook prints
(``attn_helpers.ablation.summarise``), with the weights' SHA-256 and the sentences, which
``load_all_heads`` checks; the notebook checks its three heads against the table before using it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from attn_helpers.ablation import ALL_HEADS_PATH, ablation_effects, all_heads_table  # noqa: E402
from attn_helpers.pretrained import FINGERPRINT_SENTENCES, MODEL_SHA256, load_minilm  # noqa: E402


def main() -> None:
    start = time.perf_counter()
    model = load_minilm()
    heads = {f"({layer}, {head})": (layer, head)
             for layer in range(model.num_layers) for head in range(model.num_heads)}
    table = all_heads_table(ablation_effects(model, FINGERPRINT_SENTENCES, heads), model.num_layers, model.num_heads)
    np.savez_compressed(ALL_HEADS_PATH, model_sha256=MODEL_SHA256, sentences=np.array(FINGERPRINT_SENTENCES), **table)
    print(f"wrote {ALL_HEADS_PATH.relative_to(ROOT)} ({ALL_HEADS_PATH.stat().st_size / 1024:.0f} KiB) "
          f"in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
