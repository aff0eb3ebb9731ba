"""The online softmax (notebook 13; Milakov and Gimelshein 2018): a softmax's max and sum in one pass, by blocks.

:func:`online_update` is the step, written once (a running max ``m``, a running sum ``l`` and, for attention, a
running weighted sum of the values, rescaled by ``exp(m_old - m_new)`` when the max grows); the rest call it:
the online softmax of a row, and :func:`tiled_attention` (FlashAttention's loop), with its explorer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import checked, online_softmax_inputs, tiled_inputs, tiled_steps_inputs
from .core import default_scale

__all__ = ["online_update", "online_softmax_steps", "online_softmax", "tiled_attention", "TileStep",
           "tiled_attention_steps"]


def online_update(m, l, scores, acc=None, values=None):
    """Fold one block of scores into the running max ``m`` and sum ``l`` (and the accumulator ``acc``).

        m' = max(m, maxⱼ sⱼ),    l' = l e^(m − m') + Σⱼ e^(sⱼ − m'),    a' = a e^(m − m') + Σⱼ e^(sⱼ − m') vⱼ

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


@checked(online_softmax_inputs)
def online_softmax_steps(x, block_size=1):
    """The running max and sum after each block of the last axis of ``x``: one pass, by :func:`online_update`.

    Returns ``maxima, sums``, shape (..., n_blocks): ``m`` (``-inf`` until the first finite
    score) and ``l`` after each block; at the end, the row's max and ``Σⱼ e^(xⱼ − m)``.

    >>> maxima, sums = online_softmax_steps([1.0, 3.0, 2.0])
    >>> maxima, sums.round(4)     # l: 1, then e^(1-3) + 1 (rescaled), then + e^(2-3)
    (array([1., 3., 3.]), array([1.    , 1.1353, 1.5032]))
    """
    scores = x
    m = np.full(scores.shape[:-1] + (1,), -np.inf, dtype=scores.dtype)  # running max: nothing seen yet
    l = np.zeros_like(m)  # running sum
    maxima, sums = [], []
    for start in range(0, scores.shape[-1], block_size):
        m, l, _ = online_update(m, l, scores[..., start : start + block_size])
        maxima.append(m[..., 0])
        sums.append(l[..., 0])
    return np.stack(maxima, axis=-1), np.stack(sums, axis=-1)


@checked(online_softmax_inputs)
def online_softmax(x, block_size=1):
    """Softmax over the last axis, its max and sum found in one pass; a row of ``-inf`` gives zeros.

    >>> online_softmax([1.0, 3.0, 2.0]).round(4)
    array([0.09  , 0.6652, 0.2447])
    """
    scores = x
    maxima, sums = online_softmax_steps(scores, block_size)
    m, l = maxima[..., -1:], sums[..., -1:]  # the whole row's max and sum of e^(x - max)
    with np.errstate(over="ignore"):  # x - m beyond -1.8e308 is -inf: a weight of 0
        return np.exp(scores - np.where(m == -np.inf, 0, m)) / np.where(l > 0, l, 1)


@checked(tiled_inputs)
def tiled_attention(queries, keys, values, mask=None, scale=None, block_size=128, *, causal=False, on_tile=None):
    """Attention tile by tile with the online softmax: the core's context, never the T × T weights.

        m' = max(m, maxⱼ sⱼ),    l' = l e^(m − m') + Σⱼ e^(sⱼ − m'),    a' = a e^(m − m') + Σⱼ e^(sⱼ − m') vⱼ
        context = a / l    (after the last tile)

    Shapes and ``mask`` as for ``scaled_dot_product_attention``; returns the context ``(..., T_q, d_v)``.
    ``block_size``: rows and keys per tile; ``causal=True``: the mask ``j <= i + T_k - T_q``, never built;
    ``on_tile(rows, cols, m, l, acc)`` (optional) sees the state of the query ``rows`` after each tile.

    >>> from attn_helpers import causal_mask, scaled_dot_product_attention
    >>> q, k, v = np.random.default_rng(0).standard_normal((3, 2, 7, 4))    # (h, T, d) each
    >>> expected, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))
    >>> bool(np.allclose(tiled_attention(q, k, v, block_size=3, causal=True), expected))
    True
    """
    scale = default_scale(queries.shape[-1]) if scale is None else scale
    T_q, T_k = queries.shape[-2], keys.shape[-2]
    context = np.zeros(values.shape[:-2] + (T_q, values.shape[-1]), dtype=values.dtype)  # (..., T_q, d_v)
    for r0 in range(0, T_q, block_size):  # one block of query rows (every batch and head at once) ...
        rows = slice(r0, r0 + block_size)
        q_rows = queries[..., rows, :] * scale  # (..., r, d_k)
        m = np.full(q_rows.shape[:-1] + (1,), -np.inf, dtype=context.dtype)  # (..., r, 1): running max of each row
        l = np.zeros_like(m)  # running sum of e^(s - m)
        acc = np.zeros_like(context[..., rows, :])  # running sum of e^(s - m) v, (..., r, d_v)
        for k0 in range(0, T_k, block_size):  # ... against one block of keys at a time
            cols = slice(k0, k0 + block_size)
            allowed = _tile_mask(mask, causal, rows, cols, T_q, T_k)  # (..., r, b) bool, None: all allowed
            if allowed is None or allowed.any():  # (a tile whose every score is masked is never computed)
                scores = q_rows @ keys[..., cols, :].swapaxes(-1, -2)  # (..., r, d_k) @ (..., d_k, b) -> (..., r, b)
                scores = scores if allowed is None else np.where(allowed, scores, -np.inf)
                # the max may grow: l and acc are rescaled by e^(m - m'), then this tile's terms are added
                m, l, acc = online_update(m, l, scores, acc, values[..., cols, :])
            if on_tile is not None:
                on_tile(rows, cols, m, l, acc)
        context[..., rows, :] = acc / np.where(l > 0, l, 1)  # l = 0: nothing allowed, a zero row
    return context


def _tile_mask(mask, causal, rows, cols, T_q, T_k):
    """The tile ``[rows, cols]`` of ``mask`` AND the causal mask (if ``causal``): (..., r, b) bool, or None."""
    allowed = None if mask is None else mask[..., rows, cols]  # (mask: broadcast to (..., T_q, T_k), a view)
    if causal:  # key j is allowed for query i when j <= i + T_k - T_q (the queries are the last T_q positions)
        below = np.arange(T_k)[cols] <= np.arange(T_q)[rows, None] + (T_k - T_q)  # (r, b)
        allowed = below if allowed is None else allowed & below
    return None if allowed is None or allowed.all() else allowed


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


@checked(tiled_steps_inputs)
def tiled_attention_steps(queries, keys, values, mask=None, scale=None, block_size=2):
    """Attention of one sequence (T, d), tile by tile, with the state after every tile (for the explorer).

    :func:`tiled_attention`'s loop, one block of query rows against one block of keys at a
    time, recording a :class:`TileStep` per tile. Returns ``context`` (T_q, d_v), equal to the core's, and the list
    of steps (skipped tiles included).

    >>> from attn_helpers import causal_mask
    >>> x = np.random.default_rng(0).standard_normal((4, 2))
    >>> context, steps = tiled_attention_steps(x, x, x, mask=causal_mask(4), block_size=2)
    >>> [step.skipped for step in steps]
    [False, True, False, False]
    """
    dtype = np.result_type(queries, keys, values)
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

    context = tiled_attention(queries, keys, values, mask, scale, block_size, on_tile=record)
    return context.astype(dtype, copy=False), steps
