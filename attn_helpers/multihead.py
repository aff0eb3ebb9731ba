"""Multi-head bookkeeping: split ``d_model`` into heads, attend per head, merge back.

All heads run at once as one batched computation: the head axis is just another
leading batch axis for :func:`scaled_dot_product_attention`.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_bool_mask, as_float_array, as_positive_int, result_float_dtype
from .core import scaled_dot_product_attention

__all__ = ["split_heads", "merge_heads", "repeat_kv_heads", "multi_head_attention"]


def split_heads(x, num_heads):
    """Split the feature axis into heads: ``(..., T, d_model) -> (..., h, T, d_h)``.

    Head ``i`` takes features ``[i * d_h : (i + 1) * d_h]``, with ``d_h = d_model / h``.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    num_heads : int
        ``h``; must divide ``d_model``.

    Returns
    -------
    heads : ndarray, shape (..., h, T, d_h)
        A view of ``x`` where possible.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)      # T=2 tokens, d_model=4
    >>> split_heads(x, 2)                      # h=2 heads of d_h=2
    array([[[0., 1.],
            [4., 5.]],
    <BLANKLINE>
           [[2., 3.],
            [6., 7.]]])
    """
    x = as_float_array(x, "x", min_ndim=2)
    num_heads = as_positive_int(num_heads, "num_heads")
    *batch, T, d_model = x.shape
    if d_model % num_heads:
        raise ValueError(
            f"d_model must be divisible by num_heads: x has shape {x.shape} (d_model={d_model}) "
            f"and num_heads={num_heads}; expected d_model % num_heads == 0"
        )
    head_dim = d_model // num_heads
    x = x.reshape(*batch, T, num_heads, head_dim)  # (..., T, h, d_h)
    return np.swapaxes(x, -2, -3)  # (..., h, T, d_h)


def merge_heads(x):
    """Concatenate heads back: ``(..., h, T, d_h) -> (..., T, h * d_h)``; inverse of :func:`split_heads`.

    Parameters
    ----------
    x : array_like, shape (..., h, T, d_h)

    Returns
    -------
    merged : ndarray, shape (..., T, h * d_h)
        A new array, except when ``x`` came straight from :func:`split_heads`: then, like
        ``np.reshape``, it may be a view of the array that was split (``merge_heads(split_heads(x))``
        shares memory with ``x``); write into a ``.copy()`` if you need one.

    Examples
    --------
    >>> x = np.arange(8.0).reshape(2, 4)
    >>> np.array_equal(merge_heads(split_heads(x, 2)), x)
    True
    """
    x = as_float_array(x, "x", min_ndim=3)
    *batch, num_heads, T, head_dim = x.shape
    x = np.swapaxes(x, -2, -3)  # (..., T, h, d_h)
    return x.reshape(*batch, T, num_heads * head_dim)  # (..., T, h * d_h)


def repeat_kv_heads(x, num_heads):
    """Share key/value heads across groups of query heads: ``(..., h_kv, T, d_h) -> (..., h, T, d_h)``.

    Grouped-query attention: query head ``i`` uses key/value head ``i // (h / h_kv)``, so
    each key/value head serves ``h / h_kv`` consecutive query heads (``h_kv = 1``:
    multi-query attention; ``h_kv = h``: ordinary multi-head attention, returned as is).

    Examples
    --------
    >>> kv = np.arange(4.0).reshape(2, 2, 1)   # h_kv = 2 heads, T = 2, d_h = 1
    >>> repeat_kv_heads(kv, 4)[:, :, 0]          # 4 query heads: 0 and 1 share head 0
    array([[0., 1.],
           [0., 1.],
           [2., 3.],
           [2., 3.]])
    """
    group = num_heads // x.shape[-3]
    return x if group == 1 else np.repeat(x, group, axis=-3)  # (..., h_kv, T, d_h) -> (..., h, T, d_h)


def _check_weight(name, w, d_in):
    if w.ndim != 2:
        raise ValueError(f"{name} must be a matrix of shape (d_in, d_out); got shape {w.shape}")
    if w.shape[0] != d_in:
        raise ValueError(f"{name} has shape {w.shape}; expected ({d_in}, d_out) to match the {d_in} input features")


def _check_bias(name, b, width):
    if b is None:
        return None
    b = as_float_array(b, name)
    if b.shape != (width,):
        raise ValueError(f"{name} has shape {b.shape}; expected ({width},), one number per output feature")
    return b


def _mha_inputs(x, w_q, w_k, w_v, w_o, num_heads, mask, biases, num_kv_heads=None, kv_cache=None):
    """Validated inputs of :func:`multi_head_attention` (arrays as float arrays, mask as bool)."""
    x = as_float_array(x, "x", min_ndim=2)
    T, d_model = x.shape[-2:]
    T_k = T + _cached_length(kv_cache)  # the keys: the cached ones, then those of x
    num_heads = as_positive_int(num_heads, "num_heads")
    num_kv_heads = num_heads if num_kv_heads is None else as_positive_int(num_kv_heads, "num_kv_heads")
    if num_heads % num_kv_heads:
        raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}: each key/value head "
                         f"serves a group of num_heads / num_kv_heads query heads")
    w_q, w_k, w_v, w_o = (as_float_array(w, name, min_ndim=2) for w, name in
                          ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o")))
    for name, w, heads in (("w_q", w_q, num_heads), ("w_k", w_k, num_kv_heads), ("w_v", w_v, num_kv_heads)):
        _check_weight(name, w, d_model)
        if w.shape[1] % heads:
            count = "num_heads" if name == "w_q" or num_kv_heads == num_heads else "num_kv_heads"
            raise ValueError(f"{name} has shape {w.shape}: its output width {w.shape[1]} must be divisible by "
                             f"{count}={heads}")
    if w_k.shape[1] // num_kv_heads != w_q.shape[1] // num_heads:
        raise ValueError(
            f"w_q has shape {w_q.shape} and w_k has shape {w_k.shape}; queries and keys need the same head width d_h"
            + ("" if num_kv_heads == num_heads else
               f" (w_k of width num_kv_heads * d_h = {num_kv_heads} * {w_q.shape[1] // num_heads})")
        )
    _check_weight("w_o", w_o, w_v.shape[1] // num_kv_heads * num_heads)
    widths = {"b_q": w_q.shape[1], "b_k": w_k.shape[1], "b_v": w_v.shape[1], "b_o": w_o.shape[1]}
    biases = [_check_bias(name, b, widths[name]) for name, b in zip(widths, biases)]
    if mask is not None:
        shape = np.shape(mask)
        mask = as_bool_mask(mask)
        if mask.ndim < 2 or mask.shape[-2] not in (1, T) or mask.shape[-1] not in (1, T_k):
            scores = "(..., T, T)" if T_k == T else "(..., T, T_past + T)"
            raise ValueError(
                f"mask of shape {shape} does not broadcast to the scores' shape {scores} = (..., {T}, {T_k}); "
                f"expected its last two axes to be ({T} or 1, {T_k} or 1)"
            )
        mask = mask[..., None, :, :]  # (..., 1, T, T_k): the same mask for every head
    return x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, mask, biases


def _cached_length(kv_cache):
    """How many positions ``kv_cache`` holds (0 for None); a TypeError if it is not a cache."""
    if kv_cache is None:
        return 0
    if not (callable(getattr(kv_cache, "append", None)) and hasattr(kv_cache, "length")):
        raise TypeError(f"kv_cache must be a KVCache (attn_helpers.kv_cache) or None; got {type(kv_cache).__name__}")
    return kv_cache.length


def _plus(a, b):
    return a if b is None else a + b


def multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, mask=None, *, b_q=None, b_k=None, b_v=None, b_o=None,
                         num_kv_heads=None, kv_cache=None):
    r"""Multi-head self-attention (biases optional, off by default).

    .. math:: \mathrm{head}_i = \mathrm{Attention}(X W_q^{(i)}, X W_k^{(i)}, X W_v^{(i)}), \qquad
              \mathrm{out} = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_h)\, W_o

    where :math:`W_q^{(i)}` is the block of columns ``[i * d_h : (i + 1) * d_h]`` of ``w_q``.
    The paper's formulas have no biases; PyTorch's ``nn.MultiheadAttention``, GPT-2 and
    BERT add one to each projection (``b_q``, ``b_k``, ``b_v``, ``b_o``).

    With ``num_kv_heads`` (grouped-query attention, Ainslie et al. 2023; ``num_kv_heads=1``
    is multi-query attention, Shazeer 2019) there are only ``h_kv`` key and value heads,
    each shared by ``h / h_kv`` consecutive query heads (see :func:`repeat_kv_heads`):
    ``w_k`` and ``w_v`` are ``h_kv / h`` as wide, and so is a KV cache (notebook 13).

    With ``kv_cache`` (generation, notebook 13) ``x`` holds only the new positions: their
    keys and values are appended to the cache, and their queries attend to every cached
    key as well as to their own, so ``T_k = T_past + T``.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    w_q : array_like, shape (d_model, h * d_h)
    w_k : array_like, shape (d_model, h_kv * d_h)
    w_v : array_like, shape (d_model, h_kv * d_v)
    w_o : array_like, shape (h * d_v, d_out)
    num_heads : int
        ``h``; must divide the output width of every projection.
    mask : array_like of bool, broadcastable to (..., T, T_k), optional
        ``True`` = may attend; shared by every head. ``T_k = T`` without a cache.
    b_q : array_like, shape (h * d_h,), optional
    b_k : array_like, shape (h_kv * d_h,), optional
    b_v : array_like, shape (h_kv * d_v,), optional
    b_o : array_like, shape (d_out,), optional
    num_kv_heads : int, optional
        ``h_kv``, the number of key/value heads; must divide ``h``. Default ``h``.
    kv_cache : attn_helpers.kv_cache.KVCache, optional
        The keys and values of the ``T_past`` earlier positions, shape ``(..., h_kv, T_past, d_h)``;
        it grows by the ``T`` positions of ``x``.

    Returns
    -------
    out : ndarray, shape (..., T, d_out)
    weights : ndarray, shape (..., h, T, T_k)
        The attention weights of every head.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((5, 8), dtype=np.float32)
    >>> w_q, w_k, w_v, w_o = rng.standard_normal((4, 8, 8), dtype=np.float32)
    >>> out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=2, mask=causal_mask(5))
    >>> out.shape, weights.shape, out.dtype
    ((5, 8), (2, 5, 5), dtype('float32'))
    """
    x, w_q, w_k, w_v, w_o, num_heads, num_kv_heads, mask, (b_q, b_k, b_v, b_o) = _mha_inputs(
        x, w_q, w_k, w_v, w_o, num_heads, mask, (b_q, b_k, b_v, b_o), num_kv_heads, kv_cache)
    # 1. Project every token: (..., T, d_model) @ (d_model, h * d_h) -> (..., T, h * d_h).
    # 2. Split the features into heads: (..., T, h * d_h) -> (..., h, T, d_h).
    queries = split_heads(_plus(x @ w_q, b_q), num_heads)
    keys = split_heads(_plus(x @ w_k, b_k), num_kv_heads)  # (..., h_kv, T, d_h), h_kv = h unless grouped
    values = split_heads(_plus(x @ w_v, b_v), num_kv_heads)  # (..., h_kv, T, d_v)
    if kv_cache is not None:  # 2a. KV cache: the earlier positions' keys and values, then these
        keys, values = kv_cache.append(keys, values)  # (..., h_kv, T_past + T, d_h): earlier ones not recomputed
    # 2b. Grouped-query attention: each key/value head serves h / h_kv query heads.
    keys, values = repeat_kv_heads(keys, num_heads), repeat_kv_heads(values, num_heads)  # (..., h, T, d)
    # 3. Attend, every head at once: the head axis is one more batch axis.
    context, weights = scaled_dot_product_attention(queries, keys, values, mask=mask)  # (..., h, T, d_v)
    # 4. Concatenate the heads and project: (..., T, h * d_v) @ (h * d_v, d_out) -> (..., T, d_out).
    out = _plus(merge_heads(context) @ w_o, b_o)
    dtype = result_float_dtype(x, w_q, w_k, w_v, w_o, *(b for b in (b_q, b_k, b_v, b_o) if b is not None))
    return out.astype(dtype, copy=False), weights.astype(dtype, copy=False)
