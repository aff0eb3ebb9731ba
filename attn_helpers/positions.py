"""Word order for attention (notebook 09): permutations, absolute positions and relative positions (numpy only).

Attention treats its input as a set; :func:`positional_encoding` (sinusoidal), :func:`learned_positions`,
:func:`rope` (rotary) and :func:`alibi_bias` (a distance penalty) give it order. Positions count from 0.
"""

from __future__ import annotations

import numpy as np

from ._validate import (
    MAX_TABLE,  # noqa: F401 - the largest table positional_encoding makes
    alibi_bias_inputs,
    alibi_slopes_inputs,
    as_float_array,
    checked,
    frequencies_inputs,
    learned_positions_inputs,
    order_input,
    order_sensitivity_inputs,
    positional_encoding_inputs,
    rope_inputs,
)

__all__ = ["frequencies", "positional_encoding", "learned_positions", "rope", "alibi_slopes", "alibi_bias",
           "permutation_matrix", "inverse_permutation", "order_sensitivity"]


@checked(frequencies_inputs)
def frequencies(d_model, base=10000.0):
    """The angular frequency of each sin/cos pair: ``ωᵢ = 1 / base^(2i / d_model)``.

    Pair ``i`` (features ``2i`` and ``2i + 1``) turns by ``ωᵢ`` radians per position:
    pair 0 once per 2π ≈ 6.3 positions, the last pair about ``base`` times slower.
    The sinusoidal encoding and RoPE use the same frequencies.

    ``d_model``: number of features; there are ``ceil(d_model / 2)`` pairs; ``base``: the wavelength of the slowest
    pair is about ``2 pi base``. Returns ``omega (ceil(d_model / 2),)``: decreasing from 1.

    >>> frequencies(6, base=100.0).round(4)
    array([1.    , 0.2154, 0.0464])
    """
    two_i = np.arange(0, d_model, 2, dtype=np.float64)  # 2i for each pair
    return base ** (-two_i / d_model)


@checked(positional_encoding_inputs)
def positional_encoding(T, d_model, dtype=np.float32, base=10000.0):
    """Sinusoidal positional encoding of "Attention Is All You Need" (Vaswani et al., 2017).

        PE(p, 2i) = sin(p ωᵢ),    PE(p, 2i + 1) = cos(p ωᵢ),    ωᵢ = 1 / 10000^(2i / d_model)

    Row ``p`` is added to the embedding of the token at position ``p``.

    ``T``: number of positions (0 .. T-1); ``d_model``: number of features; sin on even features, cos on odd ones (for
    an odd ``d_model`` the last feature is a sin). Returns ``pe (T, d_model)``.

    >>> positional_encoding(2, 4).round(4)
    array([[0.    , 1.    , 0.    , 1.    ],
           [0.8415, 0.5403, 0.01  , 1.    ]], dtype=float32)
    """
    omega = frequencies(d_model, base)  # (ceil(d_model / 2),)
    position = np.arange(T, dtype=np.float64)[:, None]  # (T, 1)
    angle = position * omega  # (T, 1) * (ceil(d_model / 2),) -> (T, ceil(d_model / 2))
    pe = np.empty((T, d_model), dtype=np.float64)
    pe[:, 0::2] = np.sin(angle)
    pe[:, 1::2] = np.cos(angle[:, : d_model // 2])
    return pe.astype(dtype)


@checked(learned_positions_inputs)
def learned_positions(table, T):
    """The first ``T`` rows of a learned position table: the position vectors of a ``T``-token input.

    BERT and GPT-2 train one row per position; a position at or past ``max_len`` has no row.

    ``table (max_len, d_model)``; ``T``: number of positions wanted; at most ``max_len``. Returns
    ``positions (T, d_model)``.

    >>> table = np.arange(6.0).reshape(3, 2)
    >>> learned_positions(table, 2)
    array([[0., 1.],
           [2., 3.]])
    """
    return table[:T]  # row p is the vector of position p


@checked(rope_inputs)
def rope(x, positions=None, base=10000.0):
    """Rotary position embedding (RoPE, Su et al. 2021), over the last axis, interleaved pairs.

    Features ``(2i, 2i + 1)`` form pair ``i``; at position ``p`` it turns by ``p ωᵢ`` (``frequencies``):

        x'₂ᵢ   = x₂ᵢ cos(p ωᵢ) − x₂ᵢ₊₁ sin(p ωᵢ)
        x'₂ᵢ₊₁ = x₂ᵢ sin(p ωᵢ) + x₂ᵢ₊₁ cos(p ωᵢ)        (pair i turned by the angle p ωᵢ)

    Applied to queries and keys: ``R_m q · R_n k = q · R_(n−m) k`` depends on ``m - n`` only.
    Pairs are *adjacent* features (RoFormer, GPT-J, Meta's LLaMA); Hugging Face's ``rotate_half`` pairs ``i``
    with ``i + d/2``: the same rotation on permuted columns of ``W_q`` and ``W_k``.

    ``x (..., T, d)``: queries or keys, one token per row; ``d`` must be even; ``positions (T,)``: the position of each
    row; default ``0, 1, ..., T-1``. Returns ``rotated (..., T, d)``: same dtype as ``x`` (float32 stays float32).

    >>> rope([[1.0, 0.0], [1.0, 0.0]], positions=[0, np.pi / 2]).round(4)
    array([[1., 0.],
           [0., 1.]])
    >>> q = np.array([[0.5, 1.0, -1.0, 2.0]])
    >>> k = np.array([[1.0, 0.0, 0.3, 0.2]])
    >>> s1 = rope(q, [3]) @ rope(k, [1]).T  # offset 2
    >>> s2 = rope(q, [10]) @ rope(k, [8]).T  # offset 2 again: the same score
    >>> bool(np.allclose(s1, s2))
    True
    """
    T, d = x.shape[-2], x.shape[-1]
    positions = np.arange(T, dtype=np.float64) if positions is None else positions  # (T,) or (..., T)
    omega = frequencies(d, base)  # (d/2,)
    angle = positions[..., None] * omega  # (..., T, 1) * (d/2,) -> (..., T, d/2)
    cos, sin = np.cos(angle).astype(x.dtype), np.sin(angle).astype(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]  # the two coordinates of every pair: (..., T, d/2) each
    rotated = np.empty(np.broadcast_shapes(x.shape, angle.shape[:-1] + (d,)), dtype=x.dtype)
    rotated[..., 0::2] = even * cos - odd * sin  # the 2-D rotation of each pair
    rotated[..., 1::2] = even * sin + odd * cos
    return rotated


@checked(alibi_slopes_inputs)
def alibi_slopes(num_heads):
    """The head slopes of ALiBi (Press et al. 2021): a geometric sequence starting at ``2^(−8/h)``.

    For ``h`` a power of two the slopes are ``2^(−8k/h)``, ``k = 1 .. h``; otherwise the slopes
    of the nearest smaller power of two, then every other slope of the next larger one (the rule of
    the authors' code).

    >>> alibi_slopes(4).round(4)
    array([0.25  , 0.0625, 0.0156, 0.0039])
    >>> alibi_slopes(8)[:3]
    array([0.5  , 0.25 , 0.125])
    """
    power = 2 ** int(np.floor(np.log2(num_heads)))  # the largest power of two <= num_heads
    slopes = 2.0 ** (-8.0 * np.arange(1, power + 1) / power)
    if power < num_heads:
        extra = 2.0 ** (-8.0 * np.arange(1, 2 * power + 1) / (2 * power))[0::2]
        slopes = np.concatenate([slopes, extra[: num_heads - power]])
    return slopes


@checked(alibi_bias_inputs)
def alibi_bias(T, num_heads):
    """ALiBi's bias ``−λ_h |i − j|``, added to the scores of head ``h`` before the softmax.

    Slopes ``λ_h`` (``m`` in the paper) from :func:`alibi_slopes`; symmetric, so it also works
    without a causal mask.

    Returns ``bias (num_heads, T, T)``: ``bias[h, i, j]``; zero on the diagonal.

    >>> alibi_bias(3, 2)[0]  # head 0, slope 2 ** -4
    array([[ 0.    , -0.0625, -0.125 ],
           [-0.0625,  0.    , -0.0625],
           [-0.125 , -0.0625,  0.    ]], dtype=float32)
    """
    slopes = alibi_slopes(num_heads)  # (h,)
    distance = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])  # (T, 1) - (1, T) -> (T, T)
    return (0.0 - slopes[:, None, None] * distance).astype(np.float32)  # (h, 1, 1) * (T, T) -> (h, T, T)


@checked(order_input)
def permutation_matrix(order):
    """The ``(T, T)`` matrix ``P`` with ``P @ X == X[order]``: row ``i`` of the result is row ``order[i]``.

    ``order (T,)``: a permutation of ``0 .. T-1``: the new order of the tokens. Returns ``P (T, T)``: one 1 in every
    row and every column; ``P.T`` undoes it.

    >>> permutation_matrix([2, 1, 0])
    array([[0., 0., 1.],
           [0., 1., 0.],
           [1., 0., 0.]])
    """
    return np.eye(order.size)[order]  # row i is the one-hot vector of order[i]


@checked(order_input)
def inverse_permutation(order):
    """The order that undoes ``order``: ``X[order][inverse_permutation(order)] == X``.

    >>> inverse_permutation([1, 2, 0])
    array([2, 0, 1])
    """
    inverse = np.empty_like(order)
    inverse[order] = np.arange(order.size)  # the token at old position order[i] now sits at i
    return inverse


def _outputs(attend, X):
    out = attend(X)
    if isinstance(out, tuple):  # (context, weights), as scaled_dot_product_attention returns
        out = out[0]
    out = as_float_array(out, "attend(X)")
    if out.shape[0] != X.shape[0]:
        raise ValueError(f"attend(X) must give one output row per token: X has shape {X.shape}, "
                         f"attend(X) has shape {out.shape}")
    return out


@checked(order_sensitivity_inputs)
def order_sensitivity(attend, X, order):
    """How far each token's output moves when the tokens are reordered.

    Attention without positions gives zeros (up to rounding): each output depends only on the *set* of tokens.

    ``attend``: ``attend(X) -> outputs`` of shape ``(T, d_out)``, one output row per input row (for example
    self-attention, with or without positions added inside); ``X (T, d)``; ``order (T,)``. Returns ``change (T,)``:
    ``change[t]`` = distance between token ``t``'s output in the reordered sentence and in the original one (``t``
    counts tokens in the original order).

    >>> X = np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]])
    >>> order_sensitivity(lambda X: X.sum(axis=0) - X, X, [2, 0, 1])  # "everyone but me": no order
    array([0., 0., 0.])
    >>> order_sensitivity(lambda X: np.cumsum(X, axis=0), X, [2, 0, 1]).round(4)  # "everyone before me"
    array([1.4142, 1.4142, 2.2361])
    """
    original = _outputs(attend, X)  # (T, d_out)
    reordered = _outputs(attend, X[order])  # (T, d_out), row i belongs to token order[i]
    back = reordered[inverse_permutation(order)]  # row t belongs to token t again
    return np.linalg.norm(back - original, axis=-1)
