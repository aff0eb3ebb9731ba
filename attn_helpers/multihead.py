"""Multi-head attention (notebook 08): split ``d_model`` into heads, attend per head (the head axis is one more
batch axis), merge back. The one attention layer of the series: notebook 13's grouped-query attention is the same
layer with fewer key/value heads (``W_k``, ``W_v`` narrower) and a KV cache."""

from __future__ import annotations

import numpy as np

from ._validate import checked, heads_inputs, merge_heads_input, multi_head_inputs, repeat_kv_heads_inputs
from .core import add_bias, scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "project_heads", "repeat_kv_heads", "attention_heads", "attend_heads",
           "heads_mask", "multi_head_attention", "head_contributions", "head_shares", "dropout_mask"]


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
    """Steps 1 and 2 for one projection: project every token, then split into heads.

    ``x (..., T, d_in)``, ``W (d_in, h d_h)``, ``b (h d_h,)`` or None; returns ``(..., h, T, d_h)``.

    >>> project_heads(np.ones((3, 4)), np.eye(4), None, 2).shape
    (2, 3, 2)
    """
    return split_heads(add_bias(x @ W, b), num_heads)  # (..., T, d_in) @ (d_in, h d_h) -> (..., h, T, d_h)


@checked(repeat_kv_heads_inputs)
def repeat_kv_heads(x, num_heads):
    """Share key/value heads across groups of query heads: ``(..., h_kv, T, d_h) -> (..., h, T, d_h)``.

    Query head ``i`` uses key/value head ``i // (h / h_kv)`` (``h_kv = 1``: multi-query attention;
    ``h_kv = h``: ordinary multi-head attention, returned as is).

    >>> repeat_kv_heads(np.arange(4.0).reshape(2, 2, 1), 4)[:, :, 0]   # 4 query heads: 0 and 1 share head 0
    array([[0., 1.],
           [0., 1.],
           [2., 3.],
           [2., 3.]])
    """
    group = num_heads // x.shape[-3]  # query heads per key/value head
    return x if group == 1 else np.repeat(x, group, axis=-3)  # (..., h_kv, T, d_h) -> (..., h, T, d_h)


def attention_heads(x, W_q, W_k, W_v, num_heads, biases=None, kv_cache=None, rotate=None):
    """Steps 1 and 2 of multi-head attention: project every token, split into heads; queries ``(..., h, T, d_h)``,
    keys and values ``(..., h, T_k, d_h)``.

    ``W_k``, ``W_v`` of width ``h_kv d_h`` give ``h_kv`` key/value heads, each shared by ``h / h_kv`` query heads
    (notebook 13: grouped-query attention; ``h_kv = h`` is notebook 08's case). ``rotate(heads, positions)`` turns
    queries and keys by position (RoPE, notebook 09); ``kv_cache`` (notebook 13) adds the keys and values of the
    positions before ``x``'s, which come after them.

    >>> [a.shape for a in attention_heads(np.ones((3, 8)), np.eye(8), np.eye(8)[:, :4], np.eye(8)[:, :4], 4)]
    [(4, 3, 2), (4, 3, 2), (4, 3, 2)]
    """
    b_q, b_k, b_v = (None, None, None) if biases is None else biases[:3]
    # 1. Project every token, 2. split into heads: h query heads, h_kv key/value heads
    queries = project_heads(x, W_q, b_q, num_heads)  # (..., T, d_model) @ (d_model, h d_h) -> (..., h, T, d_h)
    num_kv_heads = W_k.shape[1] // queries.shape[-1]  # h_kv: as many as query heads in notebook 08
    keys = project_heads(x, W_k, b_k, num_kv_heads)  # (..., h_kv, T, d_h)
    values = project_heads(x, W_v, b_v, num_kv_heads)  # (..., h_kv, T, d_v)
    if rotate is not None:  # 2a. Turn each query and key by its position (after the cached ones); never the values
        positions = np.arange(x.shape[-2]) + (0 if kv_cache is None else kv_cache.length)
        queries, keys = rotate(queries, positions), rotate(keys, positions)
    if kv_cache is not None:  # 2b. The earlier positions' keys and values, then these: (..., h_kv, T_past + T, d)
        keys, values = kv_cache.append(keys, values)
    # 2c. Each key/value head serves h / h_kv query heads: (..., h_kv, T_k, d) -> (..., h, T_k, d)
    return queries, repeat_kv_heads(keys, num_heads), repeat_kv_heads(values, num_heads)


def attend_heads(queries, keys, values, W_o, b_o=None, mask=None, scale=None, bias=None):
    """Steps 3 and 4 of multi-head attention, on heads already split: attend per head, merge, project.

    ``queries (..., h, T, d_h)``, ``keys (..., h, T_k, d_h)``, ``values (..., h, T_k, d_v)``, ``W_o (h d_v, d_out)``;
    ``mask`` broadcastable to ``(..., T, T_k)``, shared by every head; ``scale`` and ``bias``: those of
    :func:`~attn_helpers.core.scaled_dot_product_attention`. Returns ``out (..., T, d_out)`` and the weights
    ``(..., h, T, T_k)``.

    >>> heads = np.ones((2, 3, 4))   # h=2 heads, T=3, d_h=4
    >>> [a.shape for a in attend_heads(heads, heads, heads, np.eye(8))]
    [(3, 8), (2, 3, 3)]
    """
    # 3. Attend, every head at once: the head axis is one more batch axis; one mask (..., 1, T, T_k) for all heads
    context, weights = scaled_dot_product_attention(queries, keys, values, heads_mask(mask), scale, bias)
    # 4. Concatenate the heads and project: (..., T, h * d_v) @ (h * d_v, d_out) -> (..., T, d_out)
    return add_bias(merge_heads(context) @ W_o, b_o), weights


def heads_mask(mask):
    """A mask ``(..., T, T_k)`` for every head at once: ``(..., 1, T, T_k)`` (None stays None)."""
    return None if mask is None else mask[..., None, :, :]


@checked(multi_head_inputs)
def multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=None, biases=None, kv_cache=None, rotate=None,
                         bias=None, scale=None):
    """Multi-head attention: every head attends with its own projections; the heads are merged and projected.

        out = Concat_i( Attention(X W_q⁽ⁱ⁾, X W_k⁽ⁱ⁾, X W_v⁽ⁱ⁾) ) W_o

    ``x (..., T, d_model)``; ``W_q (d_model, h d_h)``, ``W_k, W_v (d_model, h_kv d_h)`` (``h_kv = h``: notebook 08;
    fewer, shared key/value heads: notebook 13's grouped-query attention), ``W_o (h d_h, d_out)``; ``mask``
    broadcastable to ``(..., T, T_k)``, shared by every head. Returns ``out (..., T, d_out)`` and the weights
    ``(..., h, T, T_k)``. The hooks of later notebooks: ``biases`` ``(b_q, b_k, b_v, b_o)`` (BERT's);
    ``kv_cache`` (13); ``rotate(heads, positions)`` (09's RoPE); ``bias`` added to the scores (09's ALiBi);
    ``scale`` (1/√d_h by default).

    >>> x, W_q, W_k, W_v, W_o = np.random.default_rng(0).standard_normal((5, 8, 8))
    >>> out, weights = multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads=2)
    >>> out.shape, weights.shape
    ((8, 8), (2, 8, 8))
    """
    # 1. Project every token, 2. split into heads: (..., T, d_model) -> (..., h, T, d_h)
    queries, keys, values = attention_heads(x, W_q, W_k, W_v, num_heads, biases, kv_cache, rotate)
    # 3. Attend, 4. merge the heads and project
    return attend_heads(queries, keys, values, W_o, None if biases is None else biases[3], mask, scale, bias)


def head_contributions(context, W_o):
    """Each head's part of the output, shape (h, T, d_out): ``headᵢ W_o⁽ⁱ⁾`` (they sum to it).

    ``W_o⁽ⁱ⁾`` is the block of rows ``[i * d_h : (i + 1) * d_h]`` of ``W_o``; ``context``: (h, T, d_h).

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
