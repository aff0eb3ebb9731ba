"""Maintainer code that writes the package's data files: notebook 11's training runs and the tiny GPT (14, 15).

``tools/build_training_runs.py``, ``tools/build_position_runs.py`` and ``tools/train_tiny_gpt.py`` call it;
the package only reads these files (:func:`attn_helpers.training.load_runs`, :func:`attn_helpers.gpt.load_tiny_gpt`).
"""

from __future__ import annotations

import hashlib
import json
import pathlib
import sys

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from attn_helpers.gpt import decoder_arrays  # noqa: E402


def save_runs(runs: dict, path):
    """Save runs (parameters, losses, snapshots, config, probe) by name in one compressed ``.npz``."""
    arrays = {}
    for name, run in runs.items():
        config = run.config
        arrays[f"{name}/task"] = np.array(run.task)
        arrays[f"{name}/meta"] = np.array([config.vocab_size, config.seq_len, config.d_model, config.num_layers,
                                           config.num_heads, int(config.use_positions), int(config.scaled),
                                           run.steps, run.seed])
        arrays[f"{name}/positions"] = np.array(config.positions)
        arrays[f"{name}/accuracy"] = np.array(np.nan if run.held_out_accuracy is None else run.held_out_accuracy)
        arrays[f"{name}/losses"] = run.losses
        arrays[f"{name}/probe"] = run.probe
        arrays.update({f"{name}/param/{key}": value for key, value in run.params.items()})
        arrays.update({f"{name}/snapshot/{step}": weights for step, weights in run.snapshots.items()})
    np.savez_compressed(path, **arrays)



def save_tiny_gpt(model, path):
    """Write the model's float32 weights (:func:`~attn_helpers.gpt.decoder_arrays`' names), its merges and its
    record to one ``.npz``; return its SHA-256."""
    arrays = {name: np.asarray(a, dtype=np.float32) for name, a in decoder_arrays(model.decoder).items()}
    arrays["merges"] = np.asarray(model.tokenizer.merges, dtype=np.int32).reshape(-1, 2)
    record = {**model.record, "context_length": model.context_length,
              "num_heads": model.decoder.blocks[0].num_heads}
    np.savez_compressed(path, record=np.array(json.dumps(record)), **arrays)
    return hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()
