"""An independent reference for the transformer block: plain Python loops in float64.

Written differently from ``attn_helpers.block`` (loops over tokens and features, ``math.erfc``
and ``math.fsum``, no numpy broadcasting), so that the two agreeing means something.
"""

from __future__ import annotations

import math

import numpy as np
from reference import attention_ref


def layer_norm_ref(x, gamma=None, beta=None, eps=1e-5):
    """Layer norm of a (T, d) list of tokens, one token at a time."""
    rows = np.asarray(x, dtype=np.float64).tolist()
    out = []
    for row in rows:
        d = len(row)
        mean = math.fsum(row) / d
        variance = math.fsum((v - mean) ** 2 for v in row) / d
        out.append([
            (v - mean) / math.sqrt(variance + eps) * (1.0 if gamma is None else float(gamma[c]))
            + (0.0 if beta is None else float(beta[c]))
            for c, v in enumerate(row)
        ])
    return np.array(out)


def gelu_ref(v, approximate=False):
    """GELU of one number with the standard library's erfc (or tanh).

    ``(1 + erf(v / sqrt 2)) / 2`` written as ``erfc(-v / sqrt 2) / 2``: the same number, without
    the cancellation of ``1 + erf`` for negative ``v``, so it is accurate relative to its size.
    """
    if approximate:
        return 0.5 * v * (1.0 + math.tanh(math.sqrt(2.0 / math.pi) * (v + 0.044715 * v**3)))
    return v * 0.5 * math.erfc(-v / math.sqrt(2.0))


def linear_ref(rows, w, b=None):
    """``rows @ w + b`` with loops: rows (T, d_in), w (d_in, d_out)."""
    w = np.asarray(w, dtype=np.float64)
    d_in, d_out = w.shape
    return [
        [math.fsum(row[i] * w[i, j] for i in range(d_in)) + (0.0 if b is None else float(b[j])) for j in range(d_out)]
        for row in np.asarray(rows, dtype=np.float64).tolist()
    ]


def feed_forward_ref(x, W_1, W_2, b_1=None, b_2=None, activation="gelu"):
    """The feed-forward network one token at a time."""
    act = {
        "gelu": gelu_ref,
        "gelu_tanh": lambda v: gelu_ref(v, approximate=True),
        "relu": lambda v: max(v, 0.0),
    }[activation]
    hidden = [[act(v) for v in row] for row in linear_ref(x, W_1, b_1)]
    return np.array(linear_ref(hidden, W_2, b_2))


def attention_layer_ref(x, memory, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None):
    """Multi-head (cross-)attention for one sequence, one head at a time with column slices."""
    q_all = np.array(linear_ref(x, W_q, b_q))
    k_all = np.array(linear_ref(memory, W_k, b_k))
    v_all = np.array(linear_ref(memory, W_v, b_v))
    head_dim, value_dim = q_all.shape[1] // num_heads, v_all.shape[1] // num_heads
    heads, all_weights = [], []
    for i in range(num_heads):
        context, weights = attention_ref(
            q_all[:, i * head_dim : (i + 1) * head_dim],
            k_all[:, i * head_dim : (i + 1) * head_dim],
            v_all[:, i * value_dim : (i + 1) * value_dim],
            mask=mask,
        )
        heads.append(context)
        all_weights.append(weights)
    return np.array(linear_ref(np.concatenate(heads, axis=-1), W_o, b_o)), np.stack(all_weights)


def transformer_block_ref(x, p, mask=None, norm_first=True):
    """One block for one sequence, written out with the loop references above."""
    x = np.asarray(x, dtype=np.float64)

    def attend(h):
        return attention_layer_ref(h, h, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads, mask, p.b_q, p.b_k, p.b_v, p.b_o)

    def ffn(h):
        return feed_forward_ref(h, p.W_1, p.W_2, p.b_1, p.b_2, p.activation)

    def norm(h, which):
        return layer_norm_ref(h, getattr(p, f"norm_{which}_gamma"), getattr(p, f"norm_{which}_beta"), p.eps)

    if norm_first:
        attended, weights = attend(norm(x, 1))
        h = x + attended
        return h + ffn(norm(h, 2)), weights
    attended, weights = attend(x)
    h = norm(x + attended, 1)
    return norm(h + ffn(h), 2), weights
