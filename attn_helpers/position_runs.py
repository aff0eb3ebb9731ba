"""Notebook 09's experiment: do positions generalise in length? (numpy only)

Notebook 11's copy-previous model, trained on :data:`TRAIN_LENGTH` tokens with each kind of :data:`KINDS` (4 heads,
a learned table of :data:`TABLE_ROWS` rows, several seeds), tested on longer sequences. The runs ship in
``attn_helpers/data/nb09_position_runs.npz`` (``tools/build_position_runs.py``).
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import numpy as np

from ._validate import as_positive_int
from .config import SEED, one_core
from .training import TASKS, TrainingRun, accuracy, held_out_batch, load_runs, predict, train

__all__ = ["TASK", "KINDS", "SEEDS", "TRAIN_LENGTH", "TEST_LENGTHS", "position_run", "load_position_runs",
           "accuracy_by_position", "accuracy_at_length", "accuracy_by_position_table", "shipped_accuracy_by_position"]

#: The task: output the token one position back (it needs the relative position "one before me").
TASK = "copy previous"
#: The kinds of positions compared, in the order of the table.
KINDS = ("learned", "sinusoidal", "rope", "alibi")
#: One run per seed and kind.
SEEDS = (0, 1, 2)
#: Training length (the task's own) and the lengths of the table of the notebook.
TRAIN_LENGTH = TASKS[TASK].seq_len
TEST_LENGTHS = (8, 12, 16)
LONGEST = max(TEST_LENGTHS)
#: Rows of the learned position table: the longest input any of the models can read.
TABLE_ROWS = 16
#: The model and the training, the same for every kind.
STEPS = 300
MODEL_CHANGES = {"num_heads": 4, "seq_len": TABLE_ROWS}

PATH = Path(__file__).resolve().parent / "data" / "nb09_position_runs.npz"


def run_name(kind, seed):
    """The name of a run in the shipped file, e.g. ``"rope, seed 1"``."""
    return f"{kind}, seed {seed}"


def position_run(kind, seed) -> TrainingRun:
    """Train one run of the experiment from scratch (what the tool stores): ``kind`` of :data:`KINDS`."""
    run = train(TASK, steps=STEPS, seed=seed, snapshot_steps=(), positions=kind, **MODEL_CHANGES)
    accuracy(run)
    return run


def load_position_runs(path=PATH) -> dict:
    """The shipped runs, by ``(kind, seed)``."""
    runs = load_runs(path)
    return {(kind, seed): runs[run_name(kind, seed)] for kind in KINDS for seed in SEEDS}


def accuracy_by_position(run: TrainingRun, T, size=300, seed=SEED + 1):
    """The fraction of ``size`` held-out sequences of length ``T`` right at each position, shape ``(T,)``.

    Position 0 has no previous token and is not scored: NaN. Lengths beyond the run's table
    (``run.config.seq_len``) raise for learned positions.
    """
    T = as_positive_int(T, "T")
    task = replace(TASKS[run.task], seq_len=T)
    tokens, targets = held_out_batch(task, size, seed)  # (size, T) each
    right = predict(run.params, tokens, run.config, task.mask()) == targets  # (size, T)
    scored = (targets >= 0).sum(axis=0)  # (T,): how many sequences score each position
    return np.divide(right.sum(axis=0), scored, out=np.full(T, np.nan), where=scored > 0)


def accuracy_at_length(by_position, T):
    """The accuracy on sequences of ``T`` tokens, from the accuracy at each position of longer ones.

    The model is causal: its answer at position ``t`` reads only tokens ``0 .. t``, so the first ``T``
    tokens of a longer test sequence are a test sequence of length ``T``. ``by_position`` has shape
    ``(..., T_long)``; the result ``(...)`` is the mean over the scored positions before ``T``.

    >>> accuracy_at_length(np.array([np.nan, 1.0, 1.0, 0.5, 0.0]), 3)
    np.float64(1.0)
    >>> accuracy_at_length(np.array([np.nan, 1.0, 1.0, 0.5, 0.0]), 5)
    np.float64(0.625)
    """
    by_position = np.asarray(by_position, dtype=float)
    T = as_positive_int(T, "T")
    if T > by_position.shape[-1]:
        raise ValueError(f"T = {T} is longer than the {by_position.shape[-1]} positions of by_position "
                         f"(shape {by_position.shape})")
    return np.nanmean(by_position[..., :T], axis=-1)


def accuracy_by_position_table(runs: dict, T=LONGEST, size=300):
    """``table[k, s, t]``: accuracy of kind ``KINDS[k]``, seed ``SEEDS[s]`` at position ``t`` of ``T``-token inputs."""

    with one_core():  # many small products: one BLAS thread is faster than several
        return np.array([[accuracy_by_position(runs[kind, seed], T, size) for seed in SEEDS] for kind in KINDS])


@functools.lru_cache(maxsize=2)
def shipped_accuracy_by_position(T=LONGEST, size=300):
    """:func:`accuracy_by_position_table` of the shipped runs (computed once per session; read-only)."""
    table = accuracy_by_position_table(load_position_runs(), T, size)
    table.flags.writeable = False
    return table
