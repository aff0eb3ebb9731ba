"""The online softmax (notebook 13; Milakov and Gimelshein 2018): a softmax's max and sum in one pass, by blocks.

:func:`online_update` is the step, written once (a running max ``m``, a running sum ``l`` and, for attention, a
running weighted sum of the values, rescaled by ``exp(m_old - m_new)`` when the max grows); the rest call it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, as_positive_int, attention_inputs

__all__ = ["online_update", "online_softmax_steps", "online_softmax", "TileStep", "tiled_attention_steps"]


def online_update(m, l, scores, acc=None, values=None):
    r"""Fold one block of scores into the running max ``m`` and sum ``l`` (and the accumulator ``acc``).

    .. math:: m' = \max(m, \max_j s_j), \quad \ell' = \ell\,e^{m - m'} + \sum_j e^{s_j - m'}, \quad
              a' = a\,e^{m - m'} + \sum_j e^{s_j - m'} v_j

    ``m``, ``l``: (..., 1); ``scores``: (..., b), ``-inf`` where masked; for attention also
    ``acc`` (..., d_v) and ``values`` (..., b, d_v). Returns the new ``m, l, acc``.

    >>> m, l, _ = online_update(np.array([1.0]), np.array([1.0]), np.array([3.0]))  # after 1, read 3
    >>> float(m[0]), round(float(l[0]), 4)                                          # l = e^(1-3) + e^0
    (3.0, 1.1353)
    """
    m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # the running max grows, or stays
    shift = np.where(m_new == -np.inf, 0, m_new)  # nothing allowed yet: no shift, e^(-inf) stays 0
    with np.errstate(over="ignore"):  # s - m' beyond -1.8e308 is -inf: its term is 0, as it should be
        rescale = np.exp(m - shift)  # e^(m - m') <= 1: what was summed so far was relative to the old max
        terms = np.exp(scores - shift)  # (..., b): this block's e^(s - m')
    l = l * rescale + terms.sum(axis=-1, keepdims=True)  # the running sum
    if acc is not None:  # attention: the running weighted sum of the values, rescaled the same way
        acc = acc * rescale + terms @ values  # (..., r, b) @ (..., b, d_v) -> (..., r, d_v)
    return m_new, l, acc


def online_softmax_steps(x, block_size=1):
    r"""The running max and sum after each block of the last axis of ``x``: one pass, by :func:`online_update`.

    Returns ``maxima, sums``, shape (..., n_blocks): ``m`` (``-inf`` until the first finite
    score) and ``l`` after each block; at the end, the row's max and :math:`\sum_j e^{x_j - m}`.

    >>> maxima, sums = online_softmax_steps([1.0, 3.0, 2.0])
    >>> maxima, sums.round(4)     # l: 1, then e^(1-3) + 1 (rescaled), then + e^(2-3)
    (array([1., 3., 3.]), array([1.    , 1.1353, 1.5032]))
    """
    scores = as_float_array(x, "x", allow_neg_inf=True)
    block_size = as_positive_int(block_size, "block_size")
    if scores.shape[-1] == 0:
        raise ValueError(f"x must have at least one entry along its last axis; got shape {scores.shape}")
    m = np.full(scores.shape[:-1] + (1,), -np.inf, dtype=scores.dtype)  # running max: nothing seen yet
    l = np.zeros_like(m)  # running sum
    maxima, sums = [], []
    for start in range(0, scores.shape[-1], block_size):
        m, l, _ = online_update(m, l, scores[..., start : start + block_size])
        maxima.append(m[..., 0])
        sums.append(l[..., 0])
    return np.stack(maxima, axis=-1), np.stack(sums, axis=-1)


def online_softmax(x, block_size=1):
    """Softmax over the last axis, its max and sum found in one pass; a row of ``-inf`` gives zeros.

    >>> online_softmax([1.0, 3.0, 2.0]).round(4)
    array([0.09  , 0.6652, 0.2447])
    """
    scores = as_float_array(x, "x", allow_neg_inf=True)
    maxima, sums = online_softmax_steps(scores, block_size)
    m, l = maxima[..., -1:], sums[..., -1:]  # the whole row's max and sum of e^(x - max)
    with np.errstate(over="ignore"):  # x - m beyond -1.8e308 is -inf: a weight of 0
        return np.exp(scores - np.where(m == -np.inf, 0, m)) / np.where(l > 0, l, 1)


@dataclass(frozen=True)
class TileStep:
    """The state of :func:`tiled_attention_steps` after one tile: its query ``rows`` and keys ``cols``,
    whether it was ``skipped`` (every score masked), and every row's ``running_max``, ``running_sum``
    (T_q,) and ``context`` (T_q, d_v: the keys seen so far) after it."""

    rows: range
    cols: range
    skipped: bool
    running_max: np.ndarray
    running_sum: np.ndarray
    context: np.ndarray


def tiled_attention_steps(queries, keys, values, mask=None, scale=None, block_size=2):
    r"""Attention of one sequence (T, d), tile by tile, with the state after every tile (for the explorer).

    :func:`attn_helpers.efficient.tiled_attention`'s loop, one block of query rows against one block of keys at a
    time, recording a :class:`TileStep` per tile. Returns ``context`` (T_q, d_v), equal to the core's, and the list
    of steps (skipped tiles included).

    >>> from attn_helpers import causal_mask
    >>> x = np.random.default_rng(0).standard_normal((4, 2))
    >>> context, steps = tiled_attention_steps(x, x, x, mask=causal_mask(4), block_size=2)
    >>> [step.skipped for step in steps]
    [False, True, False, False]
    """
    from .efficient import tiled_attention  # (efficient imports this module)

    queries, keys, values, mask, scale, dtype = attention_inputs(queries, keys, values, mask, scale)
    if queries.ndim != 2 or keys.ndim != 2 or values.ndim != 2:
        raise ValueError(f"tiled_attention_steps takes one sequence: queries, keys and values of shape (T, d); got "
                         f"{queries.shape}, {keys.shape}, {values.shape}")
    T_q, T_k = queries.shape[0], keys.shape[0]
    allowed = np.ones((T_q, T_k), dtype=bool) if mask is None else np.broadcast_to(mask, (T_q, T_k))
    m, l = np.full(T_q, -np.inf), np.zeros(T_q)  # every query row's running max and sum, as the loop leaves them
    acc = np.zeros((T_q, values.shape[1]))  # running sum of e^(s - m) v
    steps = []

    def record(rows, cols, m_rows, l_rows, acc_rows):
        m[rows], l[rows], acc[rows] = m_rows[:, 0], l_rows[:, 0], acc_rows
        rows, cols = range(*rows.indices(T_q)), range(*cols.indices(T_k))
        context = acc / np.where(l > 0, l, 1)[:, None]  # (T_q, d_v); 0 where nothing was allowed yet
        skipped = not allowed[rows.start : rows.stop, cols.start : cols.stop].any()
        steps.append(TileStep(rows, cols, skipped, m.copy(), l.copy(), context))

    context = tiled_attention(queries, keys, values, mask, scale, as_positive_int(block_size, "block_size"),
                              on_tile=record)
    return context.astype(dtype, copy=False), steps
