"""The online softmax, and attention tile by tile without the T x T weights (readable versions).

Notebook 13 derives both. The softmax needs the max and the sum of a whole row; the
online softmax (Milakov and Gimelshein, 2018) gets both in one pass over the row, in
blocks: it keeps a running max ``m`` and a running sum ``l`` of ``exp(x - m)``, and
when a block raises the max, it rescales the sum by ``exp(m_old - m_new)``. Attention
adds a running weighted sum of the values, rescaled the same way (FlashAttention, Dao
et al. 2022). :func:`attn_helpers.efficient.tiled_attention` is the fast version.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validate import as_float_array, as_positive_int, attention_inputs

__all__ = ["online_softmax_steps", "online_softmax", "TileStep", "tiled_attention_steps"]


def _no_shift_if_empty(running_max):
    """The shift to subtract: the running max, or 0 where nothing was allowed yet (max -inf stays -inf - 0)."""
    return np.where(running_max == -np.inf, 0.0, running_max)


def online_softmax_steps(x, block_size=1):
    r"""The running max and running sum after each block of the last axis of ``x``: one pass over ``x``.

    .. math:: m_{new} = \max(m, \max_{j \in B} x_j), \qquad
              l_{new} = l\, e^{m - m_{new}} + \sum_{j \in B} e^{x_j - m_{new}}

    Parameters
    ----------
    x : array_like, shape (..., n)
        Scores; ``-inf`` (masked) allowed.
    block_size : int, default 1
        How many entries each step reads.

    Returns
    -------
    maxima : ndarray, shape (..., n_blocks)
        ``m`` after each block (``-inf`` until the first finite entry).
    sums : ndarray, shape (..., n_blocks)
        ``l`` after each block: at the end, :math:`\sum_j e^{x_j - m}` over the whole row.

    Examples
    --------
    >>> maxima, sums = online_softmax_steps([1.0, 3.0, 2.0])
    >>> maxima
    array([1., 3., 3.])
    >>> sums.round(4)        # 1, then e^(1-3) + 1 (rescaled), then + e^(2-3)
    array([1.    , 1.1353, 1.5032])
    """
    scores = as_float_array(x, "x", allow_neg_inf=True)
    block_size = as_positive_int(block_size, "block_size")
    if scores.shape[-1] == 0:
        raise ValueError(f"x must have at least one entry along its last axis; got shape {scores.shape}")
    running_max = np.full(scores.shape[:-1], -np.inf, dtype=scores.dtype)  # m: nothing seen yet
    running_sum = np.zeros(scores.shape[:-1], dtype=scores.dtype)  # l
    maxima, sums = [], []
    for start in range(0, scores.shape[-1], block_size):
        block = scores[..., start : start + block_size]  # (..., b)
        new_max = np.maximum(running_max, block.max(axis=-1))  # the max grows, or stays
        shift = _no_shift_if_empty(new_max)
        rescale = np.exp(running_max - shift)  # e^(m_old - m_new) <= 1: the old sum was relative to m_old
        running_sum = running_sum * rescale + np.exp(block - shift[..., None]).sum(axis=-1)
        running_max = new_max
        maxima.append(running_max)
        sums.append(running_sum)
    return np.stack(maxima, axis=-1), np.stack(sums, axis=-1)


def online_softmax(x, block_size=1):
    r"""Softmax over the last axis, its max and sum found in one pass by :func:`online_softmax_steps`.

    Equal to :func:`attn_helpers.softmax` (to rounding); a row that is all ``-inf`` gives
    all zeros.

    Examples
    --------
    >>> online_softmax([1.0, 3.0, 2.0]).round(4)
    array([0.09  , 0.6652, 0.2447])
    """
    scores = as_float_array(x, "x", allow_neg_inf=True)
    maxima, sums = online_softmax_steps(scores, block_size)
    m, l = maxima[..., -1:], sums[..., -1:]  # the whole row's max and sum of exp(x - max)
    return np.exp(scores - _no_shift_if_empty(m)) / np.where(l > 0, l, 1)


@dataclass(frozen=True)
class TileStep:
    """The state of :func:`tiled_attention_steps` after one tile of scores.

    ``rows`` and ``cols`` are the query rows and keys of the tile; ``skipped`` says that
    every key of the tile is masked for every row, so it was not computed. ``running_max``,
    ``running_sum`` (T_q,) and ``context`` (T_q, d_v, the accumulator divided by the sum:
    the context of the keys seen so far) are those of every query row after this tile.
    """

    rows: range
    cols: range
    skipped: bool
    running_max: np.ndarray
    running_sum: np.ndarray
    context: np.ndarray


def tiled_attention_steps(queries, keys, values, mask=None, scale=None, block_size=2):
    r"""Attention of one sequence, tile by tile, with the state after every tile.

    For each block of query rows, the keys and values are visited a block at a time;
    each row keeps its running max ``m``, sum ``l`` and accumulator ``acc``:

    .. math:: m_{new} = \max(m, \max_j s_j), \quad
              l_{new} = l\,e^{m - m_{new}} + \sum_j e^{s_j - m_{new}}, \quad
              acc_{new} = acc\,e^{m - m_{new}} + \sum_j e^{s_j - m_{new}} v_j

    and at the end ``context = acc / l``. A tile in which the mask allows nothing is skipped.

    Parameters
    ----------
    queries : array_like, shape (T_q, d_k)
    keys : array_like, shape (T_k, d_k)
    values : array_like, shape (T_k, d_v)
    mask : array_like of bool, shape (T_q, T_k), optional
        ``True`` = may attend.
    scale : float, optional
        Default ``1 / sqrt(d_k)``.
    block_size : int, default 2
        Query rows and keys per tile.

    Returns
    -------
    context : ndarray, shape (T_q, d_v)
        Equal to the context of :func:`attn_helpers.scaled_dot_product_attention`.
    steps : list of TileStep
        One per tile, in the order computed (skipped tiles included).

    Examples
    --------
    >>> from attn_helpers import causal_mask, scaled_dot_product_attention
    >>> x = np.random.default_rng(0).standard_normal((4, 2))
    >>> context, steps = tiled_attention_steps(x, x, x, mask=causal_mask(4), block_size=2)
    >>> len(steps), [step.skipped for step in steps]
    (4, [False, True, False, False])
    >>> bool(np.allclose(context, scaled_dot_product_attention(x, x, x, mask=causal_mask(4))[0]))
    True
    """
    queries, keys, values, mask, scale, dtype = attention_inputs(queries, keys, values, mask, scale)
    if queries.ndim != 2 or keys.ndim != 2 or values.ndim != 2:
        raise ValueError(f"tiled_attention_steps takes one sequence: queries, keys and values of shape (T, d); got "
                         f"{queries.shape}, {keys.shape}, {values.shape}")
    block_size = as_positive_int(block_size, "block_size")
    t_q, t_k = queries.shape[0], keys.shape[0]
    allowed = np.ones((t_q, t_k), dtype=bool) if mask is None else np.broadcast_to(mask, (t_q, t_k))
    running_max = np.full(t_q, -np.inf)  # m, per query row
    running_sum = np.zeros(t_q)  # l
    acc = np.zeros((t_q, values.shape[1]))  # sum of e^(s - m) v
    steps = []
    for r0 in range(0, t_q, block_size):
        rows = range(r0, min(r0 + block_size, t_q))
        for c0 in range(0, t_k, block_size):
            cols = range(c0, min(c0 + block_size, t_k))
            tile_allowed = allowed[r0 : rows.stop, c0 : cols.stop]  # (r, b)
            skipped = not tile_allowed.any()
            if not skipped:
                scores = queries[r0 : rows.stop] @ keys[c0 : cols.stop].T * scale  # (r, d_k) @ (d_k, b) -> (r, b)
                scores = np.where(tile_allowed, scores, -np.inf)
                new_max = np.maximum(running_max[r0 : rows.stop], scores.max(axis=1))  # (r,)
                shift = _no_shift_if_empty(new_max)
                rescale = np.exp(running_max[r0 : rows.stop] - shift)  # (r,): e^(m_old - m_new)
                exps = np.exp(scores - shift[:, None])  # (r, b)
                running_sum[r0 : rows.stop] = running_sum[r0 : rows.stop] * rescale + exps.sum(axis=1)
                # (r, d_v) * (r, 1) + (r, b) @ (b, d_v) -> (r, d_v)
                acc[r0 : rows.stop] = acc[r0 : rows.stop] * rescale[:, None] + exps @ values[c0 : cols.stop]
                running_max[r0 : rows.stop] = new_max
            context = acc / np.where(running_sum > 0, running_sum, 1)[:, None]  # (T_q, d_v); 0 where l = 0
            steps.append(TileStep(rows, cols, skipped, running_max.copy(), running_sum.copy(), context))
    context = acc / np.where(running_sum > 0, running_sum, 1)[:, None]
    return context.astype(dtype, copy=False), steps
