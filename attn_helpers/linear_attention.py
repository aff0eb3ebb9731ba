r"""Linear attention and the delta rule (notebook 17): attention without the softmax is a running sum, so a fixed
**state** replaces the growing KV cache.

Drop the softmax and causal attention becomes :math:`o_t = q_t \sum_{j \le t} k_j^\top v_j = q_t S_t`: the state
:math:`S_t = S_{t-1} + k_t^\top v_t` is ``(d_k, d_v)`` whatever the length. The three forms below give the same
numbers: **parallel** (a masked matrix product, for training), **recurrent** (one state update per token, for
generation) and **chunked** (parallel inside a chunk, the state between chunks: what flash-linear-attention runs).
The **delta rule** (DeltaNet) writes only what the state gets wrong, :math:`S_t = S_{t-1} + \beta_t\, k_t^\top
(v_t - k_t S_{t-1})`, and Gated DeltaNet (Qwen3-Next, Kimi Linear's cousin) first decays the state by
:math:`\alpha_t`.

>>> x = np.random.default_rng(0).standard_normal((5, 4))
>>> bool(np.allclose(linear_attention(x, x, x), linear_attention_recurrent(x, x, x)))
True
"""

from __future__ import annotations

import numpy as np

from ._validate import as_float_array, as_positive_int, checked

__all__ = ["linear_attention", "linear_attention_recurrent", "linear_attention_chunked", "delta_rule",
           "recall_accuracy", "RECALL_METHODS", "RECALLED"]


def _qkv_inputs(queries, keys, values):
    queries, keys, values = (as_float_array(a, name, min_ndim=2) for name, a in
                             (("queries", queries), ("keys", keys), ("values", values)))
    if queries.shape != keys.shape or keys.shape[:-1] != values.shape[:-1]:
        raise ValueError(f"queries {queries.shape}, keys {keys.shape}, values {values.shape}: expected (..., T, d_k) "
                         "for queries and keys and (..., T, d_v) for values, one row per token")
    return queries, keys, values


@checked(_qkv_inputs)
def linear_attention(queries, keys, values):
    r"""Causal linear attention, **parallel** form: :math:`O = (Q K^\top \odot M)\, V`, no softmax, no scale.

    ``queries``, ``keys`` ``(..., T, d_k)``, ``values`` ``(..., T, d_v)`` -> ``(..., T, d_v)``.
    """
    T = queries.shape[-2]
    scores = queries @ np.swapaxes(keys, -1, -2)  # (..., T, d_k) @ (..., d_k, T) -> (..., T, T)
    return np.where(np.tri(T, dtype=bool), scores, 0.0) @ values  # (..., T, T) @ (..., T, d_v) -> (..., T, d_v)


@checked(_qkv_inputs)
def linear_attention_recurrent(queries, keys, values):
    r"""Causal linear attention, **recurrent** form: :math:`S_t = S_{t-1} + k_t^\top v_t`, :math:`o_t = q_t S_t`.

    The state ``S (..., d_k, d_v)`` is all that is kept between tokens: its size does not grow with ``T``.
    """
    state = np.zeros((*keys.shape[:-2], keys.shape[-1], values.shape[-1]), np.result_type(keys, values))
    out = np.zeros((*queries.shape[:-1], values.shape[-1]), state.dtype)
    for t in range(queries.shape[-2]):
        state = state + keys[..., t, :, None] * values[..., t, None, :]  # (..., d_k, 1) * (..., 1, d_v): k_t^T v_t
        out[..., t, :] = (queries[..., t, None, :] @ state)[..., 0, :]  # (..., 1, d_k) @ (..., d_k, d_v) -> (d_v,)
    return out


def _chunk_inputs(queries, keys, values, chunk):
    return (*_qkv_inputs(queries, keys, values), as_positive_int(chunk, "chunk"))


@checked(_chunk_inputs)
def linear_attention_chunked(queries, keys, values, chunk):
    r"""Causal linear attention, **chunked**: inside a chunk the parallel form, from earlier chunks the state.

    .. math:: O_c = Q_c S + (Q_c K_c^\top \odot M) V_c, \qquad S \leftarrow S + K_c^\top V_c
    """
    state = np.zeros((*keys.shape[:-2], keys.shape[-1], values.shape[-1]), np.result_type(keys, values))
    out = np.zeros((*queries.shape[:-1], values.shape[-1]), state.dtype)
    for start in range(0, queries.shape[-2], chunk):
        part = slice(start, start + chunk)
        q, k, v = queries[..., part, :], keys[..., part, :], values[..., part, :]  # (..., C, d)
        out[..., part, :] = q @ state + linear_attention(q, k, v)  # (..., C, d_k) @ (..., d_k, d_v): earlier chunks
        state = state + np.swapaxes(k, -1, -2) @ v  # (..., d_k, C) @ (..., C, d_v) -> (..., d_k, d_v)
    return out


def _delta_inputs(queries, keys, values, beta, alpha=None):
    queries, keys, values = _qkv_inputs(queries, keys, values)
    T = queries.shape[-2]
    beta = np.broadcast_to(as_float_array(beta, "beta", min_ndim=0), queries.shape[:-1]) if np.ndim(beta) == 0 \
        else as_float_array(beta, "beta")
    if beta.shape[-1] != T or not ((beta >= 0) & (beta <= 2)).all():
        raise ValueError(f"beta must be one writing strength per token, shape (..., {T}), between 0 and 2 (1: write "
                         f"the whole correction); got shape {beta.shape}")
    if alpha is not None:
        alpha = np.broadcast_to(as_float_array(alpha, "alpha", min_ndim=0), beta.shape) if np.ndim(alpha) == 0 \
            else as_float_array(alpha, "alpha")
        if alpha.shape[-1] != T or not ((alpha >= 0) & (alpha <= 1)).all():
            raise ValueError(f"alpha must be one decay per token, shape (..., {T}), between 0 and 1 (1: keep the "
                             f"state); got shape {alpha.shape}")
    return queries, keys, values, beta, alpha


@checked(_delta_inputs)
def delta_rule(queries, keys, values, beta, alpha=None):
    r"""The (gated) **delta rule**, recurrent: decay the state, read what it predicts for the key, write the error.

    .. math:: S_t = \alpha_t S_{t-1} + \beta_t\, k_t^\top \big(v_t - k_t\, \alpha_t S_{t-1}\big), \qquad o_t = q_t S_t

    ``beta (..., T)`` (or one number) the writing strength, ``alpha (..., T)`` the gate (None: 1, DeltaNet; Gated
    DeltaNet learns it). Returns ``(out (..., T, d_v), state (..., d_k, d_v))``. With unit keys and
    ``beta = 1``, ``k_t S_t = v_t`` exactly: the newest pair is stored, at the cost of what shared its direction.
    """
    state = np.zeros((*keys.shape[:-2], keys.shape[-1], values.shape[-1]), np.result_type(keys, values))
    out = np.zeros((*queries.shape[:-1], values.shape[-1]), state.dtype)
    for t in range(queries.shape[-2]):
        k, v = keys[..., t, None, :], values[..., t, None, :]  # (..., 1, d_k), (..., 1, d_v)
        if alpha is not None:
            state = alpha[..., t, None, None] * state  # the gate: forget a little of everything
        error = v - k @ state  # (..., 1, d_v): what the state gets wrong for this key
        state = state + beta[..., t, None, None] * (np.swapaxes(k, -1, -2) @ error)  # (..., d_k, 1) @ (..., 1, d_v)
        out[..., t, :] = (queries[..., t, None, :] @ state)[..., 0, :]  # (..., 1, d_k) @ (..., d_k, d_v)
    return out, state


#: The memories of the recall task: the softmax over a cache of every pair, a linear state (the sum of k^T v), the
#: delta rule's state, and the best state of that size (least squares, for the pairs it was shown).
RECALL_METHODS = ("softmax cache", "linear state", "delta-rule state", "best fixed state")


#: A pair counts as recalled when the read-out's cosine with its value is at least this.
RECALLED = 0.9


def recall_accuracy(num_pairs, d_k, method, trials=4, seed=0):
    """Associative recall: store ``num_pairs`` (key, value) pairs of random unit vectors in ``d_k`` dimensions,
    then query every key; the share of queries whose read-out points at its own value (cosine >= :data:`RECALLED`).

    ``method``: one of :data:`RECALL_METHODS`. A fixed state ``(d_k, d_k)`` stores at most ``d_k`` directions: past
    ``num_pairs = d_k`` no state can recall all; the softmax cache (every key kept) can.
    """
    num_pairs, d_k, trials = (as_positive_int(n, name) for name, n in
                              (("num_pairs", num_pairs), ("d_k", d_k), ("trials", trials)))
    if method not in RECALL_METHODS:
        raise ValueError(f"method={method!r} is not one of {RECALL_METHODS}")
    rng, right = np.random.default_rng(seed), 0
    for _ in range(trials):
        keys, values = (v / np.linalg.norm(v, axis=1, keepdims=True) for v in rng.standard_normal((2, num_pairs, d_k)))
        if method == "softmax cache":
            scores = 50.0 * keys @ keys.T  # (n, d_k) @ (d_k, n): a sharp softmax (a scale a trained model can learn)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            read = (weights / weights.sum(axis=1, keepdims=True)) @ values  # (n, n) @ (n, d_k)
        else:
            if method == "linear state":
                state = keys.T @ values  # (d_k, n) @ (n, d_k) -> (d_k, d_k): the sum of k^T v
            elif method == "delta-rule state":
                state = delta_rule(keys, keys, values, 1.0)[1]  # (d_k, d_k)
            else:
                state = np.linalg.lstsq(keys, values, rcond=None)[0]  # (d_k, d_k): smallest error on these pairs
            read = keys @ state  # (n, d_k) @ (d_k, d_k) -> (n, d_k)
        cosine = (read * values).sum(axis=1) / np.maximum(np.linalg.norm(read, axis=1), 1e-300)  # (n,): |v| = 1
        right += int((cosine >= RECALLED).sum())
    return right / (trials * num_pairs)
