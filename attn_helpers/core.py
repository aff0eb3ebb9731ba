"""The numpy core of attention: softmax, scores, scaled dot-product attention, masks.

One token per row; ``weights[..., i, j]``: how much query ``i`` attends to key ``j``; masks: True = may attend.
Every function acts on the last axes: ``(T, d)``, ``(B, T, d)`` and ``(B, h, T, d_h)`` alike.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import (
    as_positive_int,
    checked,
    cosine_inputs,
    entropy_inputs,
    padding_inputs,
    scores_inputs,
    sdpa_inputs,
    softmax_inputs,
)

__all__ = ["softmax", "log_softmax", "attention_scores", "default_scale", "scaled_dot_product_attention",
           "causal_mask", "padding_mask", "cosine_similarity", "entropy", "add_bias", "erfc"]


def add_bias(x, bias):
    """``x + bias``, or ``x`` itself when there is no bias (``bias`` is None).

    >>> add_bias(np.ones(2), None), add_bias(np.ones(2), np.array([0.5, -1.0]))
    (array([1., 1.]), array([1.5, 0. ]))
    """
    return x if bias is None else x + bias


@checked(softmax_inputs)
def softmax(x, axis=-1, temperature=1.0):
    """Numerically stable softmax along ``axis`` (the key axis, -1, for attention weights).

        softmax(x)ⱼ = exp(xⱼ / τ) / Σₖ exp(xₖ / τ)        (τ: the temperature)

    ``x`` of any shape; the result has its shape and dtype and sums to 1 along ``axis``. A
    ``-inf`` score (masked) gets weight 0; a slice that is all ``-inf`` gets zeros, never NaN.
    ``temperature`` > 1 flattens, < 1 sharpens; as it tends to 0, all weight goes to the largest score (shared
    equally by tied scores). A temperature so small that ``x / temperature`` would leave the float range (or
    round to 0 in ``x``'s dtype, as 1e-50 does in float32) gives that limit itself, never NaN.

    >>> softmax([[0.0, np.log(3.0)], [1000.0, 1000.0]]).round(4)
    array([[0.25, 0.75],
           [0.5 , 0.5 ]])
    """
    # Subtract each slice's largest score: the same weights, and exp never overflows. (A fully
    # masked slice has no largest score: the lowest float keeps its scores at -inf.)
    peak = x.max(axis=axis, keepdims=True, initial=np.finfo(x.dtype).min)
    exps = np.exp((x - peak) / temperature)  # in [0, 1]
    total = exps.sum(axis=axis, keepdims=True)  # >= 1 (the largest score gives e^0), or 0 for a fully masked slice
    return exps / np.maximum(total, 1)  # a fully masked slice stays 0 (never 0 / 0)


def log_softmax(x):
    """The log of the softmax over the last axis, computed stably: ``x - max - log Σ_j exp(x_j - max)``.

    >>> log_softmax(np.array([0.0, np.log(3.0)])).round(4)   # log 0.25, log 0.75
    array([-1.3863, -0.2877])
    """
    shifted = x - x.max(axis=-1, keepdims=True)  # the largest becomes 0: exp never overflows
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def default_scale(d_k):
    """The scale of scaled dot-product attention, ``1 / √d_k`` (notebook 06).

    >>> default_scale(64)
    0.125
    """
    return 1 / math.sqrt(d_k)


def erfc(z):
    """``erfc(z)`` to relative error < 1.2e-7 (numpy has no ``erf``): ``erfcc`` of *Numerical Recipes*, 6.2."""
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    with np.errstate(over="ignore", under="ignore"):  # a huge |z|: exp(-inf) = 0, the right limit
        tail = t * np.exp(-a * a + poly)
    return np.where(z >= 0, tail, 2.0 - tail)


@checked(scores_inputs)
def attention_scores(queries, keys):
    """Raw dot-product scores ``S = Q Kᵀ`` over the last two axes.

    ``queries (..., T_q, d_k)`` and ``keys (..., T_k, d_k)`` give ``scores (..., T_q, T_k)``:
    ``scores[..., i, j]`` is the dot product of query ``i`` with key ``j``.

    >>> attention_scores([[1.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [3.0, 0.0], [0.0, 1.0]])
    array([[1., 3., 0.],
           [2., 0., 2.]])
    """
    return queries @ np.swapaxes(keys, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)


@checked(sdpa_inputs)
def scaled_dot_product_attention(queries, keys, values, mask=None, scale=None, bias=None):
    """Scaled dot-product attention: the context vectors and the weights.

        context = softmax(Q Kᵀ / √d_k) V

    queries ``(..., T_q, d_k)``, keys ``(..., T_k, d_k)``, values ``(..., T_k, d_v)``, ``mask`` broadcastable to
    ``(..., T_q, T_k)`` (True = may attend), ``scale`` 1/sqrt(d_k) by default, ``bias`` (optional, broadcastable
    to ``(..., T_q, T_k)``) added to the scaled scores before the softmax (ALiBi, notebook 11). Returns context
    ``(..., T_q, d_v)`` and weights ``(..., T_q, T_k)`` (zeros on a row that may attend to nothing).

    >>> x = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> scaled_dot_product_attention(x, x, x, scale=np.log(3.0))[1]
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """
    scale = default_scale(queries.shape[-1]) if scale is None else scale
    scores = queries @ np.swapaxes(keys, -1, -2) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = add_bias(scores, bias)  # (..., T_q, T_k): unchanged when there is no bias
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # True = may attend; a masked key gets weight 0
    weights = softmax(scores)  # (..., T_q, T_k): each row sums to 1, or is 0 if fully masked
    context = weights @ values  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return context, weights


def causal_mask(T):
    """Boolean ``(T, T)`` mask, True on and below the diagonal: query ``i`` may see keys ``j <= i``.

    >>> causal_mask(3)
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    """
    T = as_positive_int(T, "T", allow_zero=True)
    return np.tri(T, T, dtype=bool)


@checked(padding_inputs)
def padding_mask(lengths, T):
    """Key-padding masks ``(B, 1, T)`` for ``B`` sequences of ``lengths`` padded to ``T``: True on real tokens.

    The mask broadcasts against scores ``(B, T_q, T)``: no query attends to a padding key.

    >>> padding_mask([3, 1], 3)
    array([[[ True,  True,  True]],
    <BLANKLINE>
           [[ True, False, False]]])
    """
    return (np.arange(T) < lengths[:, None])[:, None, :]  # (T,) < (B, 1) -> (B, T) -> (B, 1, T)


@checked(cosine_inputs)
def cosine_similarity(a, b):
    """Cosine of the angle between vectors ``(..., d)``, over the last axis (with broadcasting).

        cos θ = (a · b) / (‖a‖ ‖b‖)

    Values in [-1, 1]; a zero vector has similarity 0 with everything (not NaN).

    >>> cosine_similarity([1.0, 0.0], [[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]])
    array([ 1.,  0., -1.])
    """
    dot = np.einsum("...d,...d->...", a, b)  # (...,): one dot product per pair
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    out = np.zeros(np.shape(dot), dtype=np.result_type(dot, norms))
    np.divide(dot, norms, out=out, where=norms > 0)  # a zero vector: 0, not 0 / 0
    return np.clip(out, -1.0, 1.0)


@checked(entropy_inputs)
def entropy(weights, axis=-1):
    """Shannon entropy (in nats) of probability distributions along ``axis``.

        H(p) = −Σⱼ pⱼ log pⱼ        (0 log 0 = 0)

    >>> float(entropy([0.5, 0.5]).round(4)), float(entropy([1.0, 0.0]))
    (0.6931, 0.0)
    """
    logp = np.zeros_like(weights)
    np.log(weights, out=logp, where=weights > 0)
    return -(weights * logp).sum(axis=axis)
