"""Why attention divides by sqrt(d_k): the numbers behind notebook 06 and its explorer (numpy only).

Sampled scores of random queries and keys, the size of the softmax's gradient, and the
averages that the explorer prints, computable and testable without ipywidgets.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .config import SEED
from .core import entropy, softmax

__all__ = ["DK_CHOICES", "NUM_KEYS", "NUM_QUERIES", "jacobian_norm", "score_sample", "scaling_summary",
           "query_at_percentile"]

#: The key/query sizes notebook 06 explores: powers of 2 from 2 to 1024.
DK_CHOICES = tuple(2**p for p in range(1, 11))

#: Keys per sampled query, and number of sampled queries.
NUM_KEYS = 8
NUM_QUERIES = 400


def jacobian_norm(weights):
    r"""Frobenius norm of the softmax Jacobian :math:`J = \mathrm{diag}(p) - p p^\top`, per row.

    The size of the gradient that flows from the weights back to the scores: near 0 for a
    one-hot row (the softmax is saturated), ``sqrt(1/T - 1/T**2)`` for uniform weights.

    ``weights (..., T)``: softmax outputs (each row sums to 1). Returns ``norm (...)``.

    >>> float(jacobian_norm([1.0, 0.0, 0.0]))
    0.0
    >>> float(jacobian_norm([0.5, 0.5]))
    0.5
    """
    p = np.asarray(weights, dtype=np.float64)
    eye = np.eye(p.shape[-1])
    jacobian = p[..., :, None] * eye - p[..., :, None] * p[..., None, :]  # (..., T, T)
    return np.sqrt((jacobian**2).sum(axis=(-2, -1)))


@lru_cache(maxsize=len(DK_CHOICES))
def score_sample(d_k):
    """Unscaled scores of ``NUM_QUERIES`` random queries with ``NUM_KEYS`` random keys each, shape (400, 8).

    Query and key components are independent standard normal numbers (seeded by ``SEED`` and ``d_k``),
    so each score has mean 0 and variance ``d_k``. The array is cached and read-only.

    >>> score_sample(64).shape
    (400, 8)
    """
    d_k = int(d_k)
    rng = np.random.default_rng([SEED, d_k])
    queries = rng.standard_normal((NUM_QUERIES, 1, d_k))
    keys = rng.standard_normal((NUM_QUERIES, NUM_KEYS, d_k))
    scores = (queries @ np.swapaxes(keys, -1, -2))[:, 0, :]  # (N, 1, d_k) @ (N, d_k, T) -> (N, 1, T) -> (N, T)
    scores.setflags(write=False)
    return scores


def scaling_summary(d_k):
    """Averages over the sampled rows, without and with scaling: score std, largest weight, entropy, ||J||_F.

    >>> summary = scaling_summary(256)
    >>> round(summary["unscaled"]["score std"]), round(summary["scaled"]["score std"])
    (16, 1)
    """
    scores = score_sample(d_k)
    summary = {}
    for name, scale in (("unscaled", 1.0), ("scaled", 1.0 / np.sqrt(d_k))):
        weights = softmax(scores * scale)
        summary[name] = {
            "score std": float((scores * scale).std()),
            "largest weight": float(weights.max(axis=-1).mean()),
            "entropy (nats)": float(entropy(weights).mean()),
            "gradient size ||J||": float(jacobian_norm(weights).mean()),
        }
    return summary


def query_at_percentile(d_k, percentile=50):
    """The sampled query whose unscaled largest weight sits at ``percentile`` among all of them.

    ``percentile=50`` is a typical (median) query: showing one sample query, a figure should show
    this one, not whichever query happens to come first.

    >>> q = query_at_percentile(512)
    >>> largest = softmax(score_sample(512)).max(axis=-1)
    >>> bool(np.sum(largest < largest[q]) == NUM_QUERIES // 2)
    True
    """
    largest = softmax(score_sample(d_k)).max(axis=-1)  # (N,): each query's largest unscaled weight
    order = np.argsort(largest, kind="stable")
    rank = int(round(float(np.clip(percentile, 0, 100)) / 100 * (NUM_QUERIES - 1)))
    return int(order[rank])
