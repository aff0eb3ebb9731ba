"""The fast inner loops behind ``softmax`` and ``scaled_dot_product_attention``.

Inputs here are already validated, floating, and of one dtype. The attention kernel
works on blocks of query rows: each block of scores is computed, masked,
soft-maxed and multiplied by the values while it is still in the CPU cache, and
every step writes in place into the output arrays (no T x T temporaries).
"""

from __future__ import annotations

import numpy as np

# Bytes of one block of scores; a block this size stays in a typical L2 cache.
_BLOCK_BYTES = 1 << 20


def softmax_rows_(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of ``x``, in place; rows that are all ``-inf`` become 0.

    ``x`` : ndarray, shape (..., n), floating, no NaN, no ``+inf``.
    """
    row_max = x.max(axis=-1, keepdims=True)  # (..., 1)
    # A row that is all -inf (every key masked) has max -inf; shifting by 0 instead
    # keeps it at -inf, so exp gives 0 and the row sums to 0 (handled below).
    np.copyto(row_max, 0, where=row_max == -np.inf)
    np.subtract(x, row_max, out=x)
    np.exp(x, out=x)
    total = x.sum(axis=-1, keepdims=True)  # (..., 1)
    np.copyto(total, 1, where=total == 0)
    np.divide(x, total, out=x)
    return x


def attention_(queries, keys, values, mask, scale, context, weights) -> None:
    """Scaled dot-product attention into preallocated ``context`` and ``weights``.

    queries : (N, T_q, d_k)  keys : (N, T_k, d_k)  values : (N, T_k, d_v)
    mask : None or bool broadcastable to (N, T_q, T_k)
    context : (N, T_q, d_v) output  weights : (N, T_q, T_k) output
    """
    n, t_q, _ = queries.shape
    t_k = keys.shape[1]
    itemsize = weights.dtype.itemsize
    rows = max(8, _BLOCK_BYTES // max(1, n * t_k * itemsize))
    rows = min(t_q, rows)
    keys_t = np.swapaxes(keys, -1, -2)  # (N, d_k, T_k)
    scaled_q = queries * np.asarray(scale, dtype=queries.dtype)  # (N, T_q, d_k); scale once, not T_q x T_k times
    if mask is not None:
        mask = np.broadcast_to(mask, (n, t_q, t_k))
    for start in range(0, t_q, rows):
        stop = min(start + rows, t_q)
        block = weights[:, start:stop]  # (N, rows, T_k) view into the output
        np.matmul(scaled_q[:, start:stop], keys_t, out=block)  # (N, rows, d_k) @ (N, d_k, T_k) -> (N, rows, T_k)
        if mask is not None:
            np.copyto(block, -np.inf, where=~mask[:, start:stop])
        softmax_rows_(block)
        np.matmul(block, values, out=context[:, start:stop])  # (N, rows, T_k) @ (N, T_k, d_v) -> (N, rows, d_v)
