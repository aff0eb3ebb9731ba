"""Measures that the figures and predictions of notebooks 00-04 show (numpy only, testable without a figure).

Each explorer in :mod:`attn_helpers.widgets` draws one of these numbers; keeping them here
means they are tested, and usable, without matplotlib or ipywidgets.
"""

from __future__ import annotations

import numpy as np

from .core import cosine_similarity, entropy, softmax

__all__ = ["summary_shares", "angles_degrees", "entropy_curve", "convex_hull_2d"]


def summary_shares(T, keep=0.5):
    """How much of each of ``T`` tokens is left in a running summary of them, the bottleneck of a recurrent network.

    The summary (an RNN's hidden state, called ``s`` here since ``h`` counts heads) starts as the
    first token, ``s = x(0)``, and takes in one token at a time, ``s = keep * s + (1 - keep) * x(t)``:
    one fixed-size vector, however long the text. The share of token ``j`` in the final ``s`` is the
    weight the recurrence gives ``x(j)``; feeding in one-hot vectors makes ``s`` hold the shares.

    ``T``: number of tokens; ``keep``: how much of the old summary each step keeps, in [0, 1]. Returns ``shares (T,)``:
    non-negative, summing to 1; the first token's share is ``keep ** (T - 1)``.

    >>> summary_shares(4).tolist()
    [0.125, 0.125, 0.25, 0.5]
    """
    tokens = np.eye(int(T))  # (T, T): token t as a one-hot vector, so the summary reads as shares
    summary = tokens[0]
    for t in range(1, int(T)):
        summary = keep * summary + (1 - keep) * tokens[t]
    return summary


def angles_degrees(query, keys):
    """Angle in degrees between ``query`` and each row of ``keys``.

    ``query (d,)``; ``keys (T, d)``. Returns ``angles (T,)``: in [0, 180]; a zero vector counts as perpendicular (90
    degrees).

    >>> angles_degrees([1.0, 0.0], [[2.0, 0.0], [1.0, 1.0], [0.0, 3.0], [-1.0, 0.0]]).round(1)
    array([  0.,  45.,  90., 180.])
    """
    return np.degrees(np.arccos(cosine_similarity(np.asarray(query, dtype=float), np.asarray(keys, dtype=float))))


def entropy_curve(scores, temperatures):
    """Entropy (nats) of ``softmax(scores / τ)`` for each temperature τ.

    ``scores (T,)``; ``temperatures (n,)``. Returns ``entropies (n,)``.

    >>> entropy_curve([0.0, 0.0], [0.5, 1.0, 2.0]).round(4)
    array([0.6931, 0.6931, 0.6931])
    """
    scores = np.asarray(scores, dtype=float)
    temperatures = np.asarray(temperatures, dtype=float)
    weights = softmax(scores[None, :] / temperatures[:, None], axis=-1)  # (n, T): one distribution per temperature
    return entropy(weights, axis=-1)


def convex_hull_2d(points):
    """Indices of the convex hull's corners, counter-clockwise (Andrew's monotone chain).

    ``points (n, 2)``. Returns ``corners``: indices into ``points``; collinear points on an edge are left out.

    >>> convex_hull_2d([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]])
    [0, 1, 2, 3]
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    order = sorted(range(len(pts)), key=lambda k: (pts[k, 0], pts[k, 1]))
    unique = []
    for k in order:  # drop duplicates, keeping the first index
        if not unique or not np.array_equal(pts[k], pts[unique[-1]]):
            unique.append(k)
    if len(unique) < 3:
        return unique

    def cross(o, a, b):
        return (pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1]) - (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0])

    lower, upper = [], []
    for k in unique:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], k) <= 0:
            lower.pop()
        lower.append(k)
    for k in reversed(unique):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], k) <= 0:
            upper.pop()
        upper.append(k)
    return lower[:-1] + upper[:-1]
