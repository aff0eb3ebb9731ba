"""An independent reference for the attention helpers: plain Python loops in float64.

Deliberately written differently from ``attn_helpers`` (loops over tokens, math.exp,
no numpy broadcasting), so that the two agreeing means something.
"""

from __future__ import annotations

import math

import numpy as np


def softmax_ref(row):
    """Softmax of one list of numbers; -inf entries get 0; an all -inf row gives all 0."""
    finite = [v for v in row if v != -math.inf]
    if not finite:
        return [0.0] * len(row)
    top = max(finite)
    exps = [0.0 if v == -math.inf else math.exp(v - top) for v in row]
    total = sum(exps)
    return [e / total for e in exps]


def attention_ref(queries, keys, values, mask=None, scale=None):
    """Single-sequence attention: queries (T_q, d_k), keys (T_k, d_k), values (T_k, d_v)."""
    q = np.asarray(queries, dtype=np.float64).tolist()
    k = np.asarray(keys, dtype=np.float64).tolist()
    v = np.asarray(values, dtype=np.float64).tolist()
    d_k = len(q[0]) if q else 0
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    weights, context = [], []
    for i, qi in enumerate(q):
        scores = []
        for j, kj in enumerate(k):
            allowed = True if mask is None else bool(np.asarray(mask)[i, j])
            scores.append(sum(a * b for a, b in zip(qi, kj)) * scale if allowed else -math.inf)
        w = softmax_ref(scores)
        weights.append(w)
        context.append([sum(w[j] * v[j][c] for j in range(len(k))) for c in range(len(v[0]) if v else 0)])
    return np.array(context), np.array(weights)


def multi_head_ref(x, W_q, W_k, W_v, W_o, num_heads, mask=None, num_kv_heads=None):
    """Multi-head attention for one sequence, one head at a time with column slices.

    With ``num_kv_heads`` (grouped-query attention), query head ``i`` uses the key/value
    columns of head ``i // (num_heads // num_kv_heads)``.
    """
    x = np.asarray(x, dtype=np.float64)
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    head_dim = W_q.shape[1] // num_heads
    value_dim = W_v.shape[1] // num_kv_heads
    heads, all_weights = [], []
    for i in range(num_heads):
        kv = i // (num_heads // num_kv_heads)  # the key/value head shared by query head i's group
        q = x @ W_q[:, i * head_dim : (i + 1) * head_dim]
        k = x @ W_k[:, kv * head_dim : (kv + 1) * head_dim]
        v = x @ W_v[:, kv * value_dim : (kv + 1) * value_dim]
        context, weights = attention_ref(q, k, v, mask=mask)
        heads.append(context)
        all_weights.append(weights)
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(all_weights)
