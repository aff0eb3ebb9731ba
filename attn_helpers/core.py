"""The numpy core of attention: softmax, scores, scaled dot-product attention, masks.

Conventions (see notebook 00): row vectors, one token per row; ``weights[..., i, j]``
is how much query ``i`` attends to key ``j``, each row sums to 1; masks are boolean
with ``True`` = may attend; every function acts on the last axes, so the same code
serves ``(T, d)``, ``(B, T, d)`` and ``(B, h, T, d_h)``. float32 in, float32 out.
"""

from __future__ import annotations

import numpy as np

from ._validate import (
    as_float_array,
    as_positive_int,
    attention_inputs,
    batch_shape,
    check_axis,
    softmax_inputs,
)

__all__ = [
    "softmax",
    "attention_scores",
    "scaled_dot_product_attention",
    "causal_mask",
    "padding_mask",
    "cosine_similarity",
    "entropy",
]


def softmax(x, axis=-1, temperature=1.0):
    r"""Numerically stable softmax along ``axis``.

    .. math:: \mathrm{softmax}(x)_j = \frac{e^{x_j / \tau}}{\sum_k e^{x_k / \tau}}

    computed as :math:`e^{(x_j - \max x)/\tau}` normalised, which is the same number
    and never overflows. Entries equal to ``-inf`` (masked scores) get weight 0; a
    slice that is all ``-inf`` gets all zeros, never NaN.

    Parameters
    ----------
    x : array_like, shape (..., n, ...)
        Scores (logits). NaN and ``+inf`` are rejected.
    axis : int, default -1
        The axis that sums to 1 (for attention weights, the key axis ``-1``).
    temperature : float, default 1.0
        ``> 1`` flattens the distribution, ``< 1`` sharpens it; must be ``> 0``.

    Returns
    -------
    weights : ndarray, shape like ``x``
        Non-negative, summing to 1 along ``axis``; same float dtype as ``x``.

    Examples
    --------
    >>> softmax([1000.0, 1000.0])
    array([0.5, 0.5])
    >>> softmax([[0.0, np.log(3.0)]]).round(4)
    array([[0.25, 0.75]])
    >>> softmax([1.0, 2.0], temperature=1e-3)
    array([0., 1.])
    """
    scores, axis, temperature = softmax_inputs(x, axis, temperature)
    # The largest score of each slice; a fully masked slice (all -inf) gets the lowest finite
    # number instead, so that its scores stay -inf and its weights 0.
    peak = scores.max(axis=axis, keepdims=True, initial=np.finfo(scores.dtype).min)
    with np.errstate(over="ignore"):  # every shifted score is <= 0: an overflow can only give -inf, weight 0
        shifted = scores - peak
        if temperature != 1:  # (the default, 1, divides by nothing)
            shifted = shifted / temperature
    exps = np.exp(shifted)  # in (0, 1]: never overflows
    total = exps.sum(axis=axis, keepdims=True)  # >= 1 (the peak gives exp(0) = 1), or 0 if fully masked
    # Dividing a fully masked slice by the smallest positive number keeps it 0 (never 0 / 0).
    return (exps / np.maximum(total, np.finfo(exps.dtype).tiny)).astype(scores.dtype, copy=False)


def _check_last_axis(a_name, a, b_name, b, a_axis, b_axis, what):
    if a.shape[a_axis] != b.shape[b_axis]:
        raise ValueError(
            f"{what}: {a_name} has shape {a.shape} and {b_name} has shape {b.shape}; "
            f"expected {a_name}.shape[{a_axis}] == {b_name}.shape[{b_axis}]"
        )


def attention_scores(queries, keys):
    r"""Raw dot-product scores :math:`S = Q K^\top` over the last two axes.

    Parameters
    ----------
    queries : array_like, shape (..., T_q, d_k)
    keys : array_like, shape (..., T_k, d_k)

    Returns
    -------
    scores : ndarray, shape (..., T_q, T_k)
        ``scores[..., i, j]`` is the dot product of query ``i`` with key ``j``.

    Examples
    --------
    >>> attention_scores([[1.0, 0.0], [0.0, 2.0]], [[1.0, 1.0], [3.0, 0.0], [0.0, 1.0]])
    array([[1., 3., 0.],
           [2., 0., 2.]])
    """
    q = as_float_array(queries, "queries", min_ndim=2)
    k = as_float_array(keys, "keys", min_ndim=2)
    _check_last_axis("queries", q, "keys", k, -1, -1, "queries and keys need the same d_k")
    batch_shape("attention_scores", queries=q, keys=k)
    return q @ np.swapaxes(k, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)


def scaled_dot_product_attention(queries, keys, values, mask=None, scale=None):
    r"""Scaled dot-product attention, returning the context vectors and the weights.

    .. math:: \mathrm{weights} = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right),
              \qquad \mathrm{context} = \mathrm{weights}\, V

    Masked scores are set to :math:`-\infty` before the softmax. A query row whose
    mask allows no key gets all-zero weights and a zero context row (never NaN).

    Parameters
    ----------
    queries : array_like, shape (..., T_q, d_k)
    keys : array_like, shape (..., T_k, d_k)
    values : array_like, shape (..., T_k, d_v)
    mask : array_like of bool, broadcastable to (..., T_q, T_k), optional
        ``True`` = query ``i`` may attend to key ``j``. ``None`` allows everything.
    scale : float, optional
        Multiplies the scores; default ``1 / sqrt(d_k)``. ``scale=1`` gives the
        unscaled attention of notebook 04.

    Returns
    -------
    context : ndarray, shape (..., T_q, d_v)
    weights : ndarray, shape (..., T_q, T_k)
        Each row sums to 1 (or is all 0 when fully masked).

    Examples
    --------
    >>> x = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    >>> context, weights = scaled_dot_product_attention(x, x, x, scale=np.log(3.0))
    >>> weights
    array([[0.75, 0.25],
           [0.25, 0.75]], dtype=float32)
    >>> context, weights = scaled_dot_product_attention(x, x, x, mask=causal_mask(2))
    >>> weights.round(4)
    array([[1.    , 0.    ],
           [0.3302, 0.6698]], dtype=float32)
    """
    queries, keys, values, mask, scale, dtype = attention_inputs(queries, keys, values, mask, scale)
    scores = queries @ np.swapaxes(keys, -1, -2) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # True = may attend; a masked key gets weight 0
    weights = softmax(scores, axis=-1)  # each row sums to 1 (a fully masked row is all 0)
    context = weights @ values  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return context.astype(dtype, copy=False), weights.astype(dtype, copy=False)


def causal_mask(T):
    """Boolean ``(T, T)`` mask, True on and below the diagonal: query ``i`` may see keys ``j <= i``.

    Parameters
    ----------
    T : int
        Number of tokens.

    Returns
    -------
    mask : ndarray of bool, shape (T, T)

    Examples
    --------
    >>> causal_mask(3)
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])
    """
    T = as_positive_int(T, "T", allow_zero=True)
    return np.tri(T, T, dtype=bool)


def padding_mask(lengths, T):
    """Key-padding masks for a batch of sequences padded to length ``T``.

    Parameters
    ----------
    lengths : array_like of int, shape (B,)
        The true length of each sequence; keys at positions ``>= length`` are padding.
    T : int
        The padded length.

    Returns
    -------
    mask : ndarray of bool, shape (B, 1, T)
        ``True`` where the key is a real token; broadcasts against scores ``(B, T_q, T)``.

    Examples
    --------
    >>> padding_mask([3, 1], 3)
    array([[[ True,  True,  True]],
    <BLANKLINE>
           [[ True, False, False]]])
    """
    T = as_positive_int(T, "T", allow_zero=True)
    try:
        lengths = np.asarray(lengths)
    except ValueError:  # ragged nested lists
        raise TypeError(f"lengths must be a 1-D array of integers, one per sequence; got {lengths!r}") from None
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1:
        raise TypeError(f"lengths must be a 1-D array of integers; got {lengths.dtype} with shape {lengths.shape}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"lengths must lie in [0, T={T}]; got {lengths.tolist()}")
    return (np.arange(T) < lengths[:, None])[:, None, :]  # (B, 1, T)


def cosine_similarity(a, b):
    r"""Cosine of the angle between vectors, over the last axis (with broadcasting).

    .. math:: \cos\theta = \frac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}

    A zero vector has similarity 0 with everything (not NaN).

    Parameters
    ----------
    a : array_like, shape (..., d)
    b : array_like, shape (..., d)

    Returns
    -------
    similarity : ndarray, shape (...)
        Values in [-1, 1].

    Examples
    --------
    >>> cosine_similarity([1.0, 0.0], [[2.0, 0.0], [0.0, 3.0], [-1.0, 0.0]])
    array([ 1.,  0., -1.])
    """
    a = as_float_array(a, "a")
    b = as_float_array(b, "b")
    _check_last_axis("a", a, "b", b, -1, -1, "a and b need the same number of features")
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"a of shape {a.shape} and b of shape {b.shape} do not broadcast") from None
    # The angle does not change when a vector is rescaled: divide each by its largest entry
    # first, so that squares neither overflow (entries of 1e20 in float32) nor underflow (1e-30).
    a, b = _unit_max(a), _unit_max(b)
    dot = np.einsum("...d,...d->...", a, b)
    norms = np.linalg.norm(a, axis=-1) * np.linalg.norm(b, axis=-1)
    out = np.zeros(np.shape(dot), dtype=np.result_type(dot, norms))
    np.divide(dot, norms, out=out, where=norms > 0)
    return np.clip(out, -1.0, 1.0)


def _unit_max(x):
    """``x`` divided by the largest ``|entry|`` of each vector (a zero vector stays zero)."""
    peak = np.abs(x).max(axis=-1, keepdims=True, initial=0)
    return np.divide(x, peak, out=np.zeros_like(x), where=peak > 0)


def entropy(weights, axis=-1):
    r"""Shannon entropy (in nats) of probability distributions along ``axis``.

    .. math:: H(p) = -\sum_j p_j \log p_j \quad (0 \log 0 = 0)

    Examples
    --------
    >>> float(entropy([0.5, 0.5]).round(4))
    0.6931
    >>> float(entropy([1.0, 0.0]))
    0.0
    """
    p = as_float_array(weights, "weights")
    check_axis(axis, p, "weights")
    logp = np.zeros_like(p)
    np.log(p, out=logp, where=p > 0)
    return -(p * logp).sum(axis=axis)
