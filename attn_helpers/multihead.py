"""Multi-head attention (notebook 08): split ``d_model`` into heads, attend per head (the head axis is one more
batch axis), merge back."""

from __future__ import annotations

import numpy as np

from ._validate import all_multi_head_inputs, checked, heads_inputs, merge_heads_input
from .core import add_bias, scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "project_heads", "attend_heads", "multi_head_attention", "head_contributions",
           "head_shares", "dropout_mask"]


@checked(heads_inputs)
def split_heads(x, num_heads):
    """Split the feature axis into heads: ``(..., T, d_model) -> (..., h, T, d_h)``, ``d_h = d_model / h``.

    >>> split_heads(np.arange(8.0).reshape(2, 4), 2)   # T=2 tokens, d_model=4 -> 2 heads of d_h=2
    array([[[0., 1.],
            [4., 5.]],
    <BLANKLINE>
           [[2., 3.],
            [6., 7.]]])
    """
    *batch, T, d_model = x.shape
    x = x.reshape(*batch, T, num_heads, d_model // num_heads)  # (..., T, h, d_h)
    return np.swapaxes(x, -2, -3)  # (..., h, T, d_h)


@checked(merge_heads_input)
def merge_heads(x):
    """Concatenate heads back: ``(..., h, T, d_h) -> (..., T, h * d_h)``; inverse of :func:`split_heads`
    (``merge_heads(split_heads(x))`` may be a view of ``x``, as ``np.reshape`` may).

    >>> x = np.arange(8.0).reshape(2, 4)
    >>> np.array_equal(merge_heads(split_heads(x, 2)), x)
    True
    """
    *batch, num_heads, T, head_dim = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., T, h, d_h)
    return x.reshape(*batch, T, num_heads * head_dim)  # (..., T, h * d_h)


def dropout_mask(shape, dropout, rng, dtype):
    """Inverted dropout's mask: 0 with probability ``dropout``, else ``1 / (1 - dropout)``; None when off.

    >>> dropout_mask((2, 4), 0.5, np.random.default_rng(0), np.float64)
    array([[2., 0., 0., 0.],
           [2., 2., 2., 2.]])
    """
    return ((rng.random(shape) >= dropout) / (1.0 - dropout)).astype(dtype) if dropout else None  # mean stays 1


def project_heads(x, W, b, num_heads):
    """Steps 1 and 2 of multi-head attention: project every token, then split into heads.

    ``x (..., T, d_in)``, ``W (d_in, h d_h)``, ``b (h d_h,)`` or None; returns ``(..., h, T, d_h)``.

    >>> project_heads(np.ones((3, 4)), np.eye(4), None, 2).shape
    (2, 3, 2)
    """
    return split_heads(add_bias(x @ W, b), num_heads)  # (..., T, d_in) @ (d_in, h d_h) -> (..., h, T, d_h)


def attend_heads(queries, keys, values, W_o, mask=None, b_o=None, record=None, dropout=0.0, rng=None, bias=None,
                 scale=None):
    r"""Steps 3 and 4 of multi-head attention, on heads already split: attend per head, merge, project.

    ``queries (..., h, T, d_h)``, ``keys (..., h, T_k, d_h)``, ``values (..., h, T_k, d_v)``, ``W_o (h d_v, d_out)``;
    ``mask`` broadcastable to ``(..., T, T_k)``, shared by every head. Returns ``out (..., T, d_out)`` and the
    weights ``(..., h, T, T_k)``. ``record``: a dict that gets what a backward pass needs (notebook 14).
    ``dropout``: in training, each weight is set to 0 with this probability (``rng`` draws which) and the
    others divided by ``1 - dropout``; the returned weights are the softmax's, before dropout. ``bias``
    (broadcastable to ``(..., h, T, T_k)``) and ``scale``: those of
    :func:`~attn_helpers.core.scaled_dot_product_attention`.
    Inputs are not checked here: :func:`multi_head_attention` checks them.

    >>> heads = np.ones((2, 3, 4))   # h=2 heads, T=3, d_h=4
    >>> out, weights = attend_heads(heads, heads, heads, np.eye(8))
    >>> out.shape, weights.shape
    ((3, 8), (2, 3, 3))
    """
    mask = None if mask is None else mask[..., None, :, :]  # (..., 1, T, T_k): the same mask for every head
    # 3. Attend, every head at once: the head axis is one more batch axis.
    context, weights = scaled_dot_product_attention(queries, keys, values, mask, scale, bias)
    keep = dropout_mask(weights.shape, dropout, rng, weights.dtype)
    if keep is not None:  # 3a. Dropout (training only): the context is made with what is left of the weights
        context = (weights * keep) @ values  # (..., h, T, T_k) @ (..., h, T_k, d_v) -> (..., h, T, d_v)
    # 4. Concatenate the heads and project: (..., T, h * d_v) @ (h * d_v, d_out) -> (..., T, d_out).
    merged = merge_heads(context)
    if record is not None:
        record.update(queries=queries, keys=keys, values=values, weights=weights, keep=keep, merged=merged,
                      scale=scale)
    return add_bias(merged @ W_o, b_o), weights


@checked(all_multi_head_inputs)
def multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None,
                         memory=None, record=None, dropout=0.0, rng=None, rotate=None, bias=None, scale=None):
    r"""Multi-head attention; self-attention, or cross-attention when keys and values come from ``memory``.

    .. math:: \mathrm{out} = \mathrm{Concat}_i\big(\mathrm{Attention}(X W_q^{(i)}, M W_k^{(i)}, M W_v^{(i)})\big)\, W_o

    ``x (..., T, d_model)``; ``M`` is ``memory (..., T_k, d_memory)``, or ``x`` itself by default;
    ``W_q (d_model, h d_h)``, ``W_k, W_v (d_memory, h d_h)``, ``W_o (h d_h, d_out)``, biases optional;
    ``mask`` broadcastable to ``(..., T, T_k)``, shared by every head. Returns ``out (..., T, d_out)``
    and the weights ``(..., h, T, T_k)``. ``record``: a dict that gets ``x`` and every head's queries, keys,
    values, weights and merged context, for a backward pass (notebook 14). ``dropout`` (off by default; None is
    off too): the probability of dropping each attention weight in training (:func:`attend_heads`), ``rng``
    draws which. Positions (notebook 09), for a model that needs them: ``rotate(heads, positions)`` turns the
    queries and keys ``(..., h, T, d_h)`` of the tokens at ``positions`` (0, 1, ...), as
    :func:`~attn_helpers.positions.rope` does; ``bias`` (broadcastable to ``(..., h, T, T_k)``) is added to the
    scores before the softmax (ALiBi); ``scale``: 1/sqrt(d_h) by default.

    >>> x, W_q, W_k, W_v, W_o = np.random.default_rng(0).standard_normal((5, 8, 8))
    >>> out, weights = multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads=2)
    >>> out.shape, weights.shape
    ((8, 8), (2, 8, 8))
    """
    source = x if memory is None else memory  # the sequence that is looked up
    # 1. Project, 2. split into heads: (..., T, d_model) @ (d_model, h * d_h) -> (..., T, h * d_h) -> (..., h, T, d_h)
    queries = project_heads(x, W_q, b_q, num_heads)
    keys = project_heads(source, W_k, b_k, num_heads)  # (..., h, T_k, d_h)
    values = project_heads(source, W_v, b_v, num_heads)  # (..., h, T_k, d_v)
    if rotate is not None:  # 2a. Turn each query and key by its position (RoPE); never the values
        queries, keys = rotate(queries, np.arange(x.shape[-2])), rotate(keys, np.arange(source.shape[-2]))
    if record is not None:
        record.update(x=x, rotate=rotate)
    return attend_heads(queries, keys, values, W_o, mask, b_o, record, dropout, rng, bias, scale)  # 3., 4.


def head_contributions(context, W_o):
    r"""Each head's part of the output, shape (h, T, d_out): :math:`\mathrm{head}_i\, W_o^{(i)}` (they sum to it).

    :math:`W_o^{(i)}` is the block of rows ``[i * d_h : (i + 1) * d_h]`` of ``W_o``; ``context``: (h, T, d_h).

    >>> context = np.ones((2, 3, 1))                  # h=2 heads, T=3, d_h=1
    >>> W_o = np.array([[1.0, 0.0], [0.0, 2.0]])      # rows: head 0, head 1
    >>> head_contributions(context, W_o)[1]
    array([[0., 2.],
           [0., 2.],
           [0., 2.]])
    """
    num_heads, _, head_dim = np.shape(context)
    w_o_heads = np.reshape(W_o, (num_heads, head_dim, -1))  # (h, d_h, d_out): row blocks of W_o
    return context @ w_o_heads  # (h, T, d_h) @ (h, d_h, d_out) -> (h, T, d_out)


def head_shares(parts):
    """Each head's share (h, T) of each token's output: the norm of its part over the sum of all heads' norms.

    Columns sum to 1: "how much each head pushes", not an exact decomposition (parts can cancel).

    >>> head_shares(np.array([[[3.0, 4.0]], [[0.0, 5.0]]]))   # norms 5 and 5
    array([[0.5],
           [0.5]])
    """
    norms = np.linalg.norm(np.asarray(parts, dtype=np.float64), axis=-1)  # (h, T)
    total = norms.sum(axis=0, keepdims=True)
    return np.divide(norms, total, out=np.zeros_like(norms), where=total > 0)
