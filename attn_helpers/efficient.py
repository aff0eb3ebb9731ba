"""Notebook 13: tiled attention (FlashAttention's idea, Dao et al. 2022: memory O(T d), not O(T^2)) and the
tools that measure what attention costs. In numpy it saves memory and skips masked tiles; its time is close
to the core's.
"""

from __future__ import annotations

import math
import time
import tracemalloc

import numpy as np

from ._validate import checked, tiled_inputs
from .config import one_core  # noqa: F401 - notebook 13 imports it from here
from .online import online_update

__all__ = ["tiled_attention", "tile_count", "best_time", "peak_memory", "attention_cost", "fitted_slope", "one_core"]


@checked(tiled_inputs)
def tiled_attention(queries, keys, values, mask=None, scale=None, block_size=128, *, causal=False, on_tile=None):
    r"""Attention tile by tile with the online softmax: the core's context, never the $T \times T$ weights.

    .. math:: m' = \max(m, \max_j s_j), \quad \ell' = \ell\,e^{m - m'} + \sum_j e^{s_j - m'}, \quad
              a' = a\,e^{m - m'} + \sum_j e^{s_j - m'} v_j, \quad \text{context} = a / \ell

    Shapes and ``mask`` as for ``scaled_dot_product_attention``; returns the context ``(..., T_q, d_v)``.
    ``block_size``: rows and keys per tile; ``causal=True``: the mask ``j <= i + T_k - T_q``, never built;
    ``on_tile(rows, cols, m, l, acc)`` (optional) sees the state of the query ``rows`` after each tile.

    >>> from attn_helpers import causal_mask, scaled_dot_product_attention
    >>> q, k, v = np.random.default_rng(0).standard_normal((3, 2, 7, 4))    # (h, T, d) each
    >>> expected, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))
    >>> bool(np.allclose(tiled_attention(q, k, v, block_size=3, causal=True), expected))
    True
    """
    scale = 1 / math.sqrt(queries.shape[-1]) if scale is None else scale
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


def best_time(fn, *args, budget=0.1, least=5):
    """The least processor time (s) of ``least`` calls ``fn(*args)``, more while they take under ``budget`` s."""
    times, stop = [], time.perf_counter() + budget
    while len(times) < least or time.perf_counter() < stop:
        start = time.process_time()
        fn(*args)
        times.append(time.process_time() - start)
    return min(times)


def peak_memory(fn, *args):
    """The peak bytes numpy allocates during one call ``fn(*args)`` (``tracemalloc``; no timing meanwhile)."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def attention_cost(fn, T_values, d_k=64, seed=0):
    """Seconds (:func:`best_time`) and peak bytes (:func:`peak_memory`) of ``fn(q, k, v)``, q, k, v seeded
    float32 ``(T, d_k)``, for each ``T``, on one core. The largest ``T`` runs once first, untimed (fresh memory)."""
    def inputs(T):  # q, k, v: (3, T, d_k), the same numbers for the same T
        return np.random.default_rng(seed).standard_normal((3, T, d_k), dtype=np.float32)

    seconds, peaks = [], []
    with one_core():
        fn(*inputs(max(T_values)))
        for T in T_values:
            seconds.append(best_time(fn, *inputs(T)))
            peaks.append(peak_memory(fn, *inputs(T)))
    return np.array(seconds), np.array(peaks)


def fitted_slope(x, y):
    """The exponent ``p`` of ``y ≈ c x^p``: the slope of the least-squares line through ``(log x, log y)``.

    >>> round(fitted_slope([1, 2, 4], [3, 12, 48]), 6)
    2.0
    """
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def tile_count(T, block_size):
    """How many tiles a T x T grid of scores has in tiles of ``block_size`` x ``block_size``.

    >>> tile_count(8, 3)   # 3 rows of tiles (3 + 3 + 2 positions), 3 columns
    9
    """
    return (-(-int(T) // int(block_size))) ** 2
