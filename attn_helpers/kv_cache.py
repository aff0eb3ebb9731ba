"""The KV cache (notebook 13): generate token by token without recomputing earlier tokens' keys and values.

Notebook 08's :func:`~attn_helpers.multihead.multi_head_attention` is the one attention layer: with ``W_k``,
``W_v`` narrower (``h_kv`` key/value heads shared by the query heads) it is grouped-query attention, with a
:class:`KVCache` it reads and extends the cache; :func:`grouped_query_attention` is that layer under the name notebook
13 gives it, with ``num_kv_heads`` checked. :class:`GroupedQueryParams` is notebook 10's block with such heads, and
:func:`cached_attention` the attention that :func:`~attn_helpers.block.transformer_block` runs with a cache.
:func:`kv_cache_bytes` and :func:`cache_table` give what the cache costs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._validate import (
    as_float_array,
    as_positive_int,
    as_positive_number,
    checked,
    multi_head_inputs,
    projection_inputs,
)
from .block import BlockParams, init_block_params
from .multihead import multi_head_attention, repeat_kv_heads  # noqa: F401 - notebook 13 imports repeat_kv_heads here
from .published import CONFIG_COLUMNS, PUBLISHED_CONFIGS

__all__ = ["KVCache", "repeat_kv_heads", "grouped_query_attention", "GroupedQueryParams", "init_grouped_query_params",
           "cached_attention", "kv_cache_bytes", "attention_weights_bytes", "PUBLISHED_CONFIGS", "cache_table"]


@dataclasses.dataclass(eq=False)
class KVCache:
    """The keys and values of one attention layer for every position seen so far.

    ``keys`` has shape ``(..., h_kv, T, d_h)``: only the key/value heads are stored, so
    grouped-query attention (``h_kv < h``) stores ``h / h_kv`` times less. Pass one to
    :func:`~attn_helpers.multihead.multi_head_attention` as ``kv_cache=``.

    >>> cache = KVCache()
    >>> keys, values = cache.append(np.zeros((2, 3, 4)), np.ones((2, 3, 4)))   # 2 heads, 3 positions
    >>> keys, values = cache.append(np.zeros((2, 1, 4)), np.ones((2, 1, 4)))   # then one more
    >>> cache.length, keys.shape, cache.nbytes
    (4, (2, 4, 4), 512)
    """

    keys: np.ndarray | None = None
    values: np.ndarray | None = None

    @property
    def length(self) -> int:
        """The number of positions cached."""
        return 0 if self.keys is None else self.keys.shape[-2]

    @property
    def nbytes(self) -> int:
        """The bytes the cache holds."""
        return 0 if self.keys is None else self.keys.nbytes + self.values.nbytes

    def append(self, keys, values):
        """Add the keys and values of new positions, ``(..., h_kv, T_new, d_h)``; return all of them.

        The cached rows are kept as they are: a new array is made, the old rows copied
        into it (a real implementation preallocates the maximum length instead).
        """
        keys = as_float_array(keys, "keys", min_ndim=3)
        values = as_float_array(values, "values", min_ndim=3)
        if keys.shape[:-1] != values.shape[:-1]:
            raise ValueError(f"keys and values need the same heads and positions: keys has shape {keys.shape}, "
                             f"values {values.shape}; expected (..., h_kv, T_new, d) for both")
        if self.keys is not None:
            for name, new, old in (("keys", keys, self.keys), ("values", values, self.values)):
                if new.shape[:-2] + new.shape[-1:] != old.shape[:-2] + old.shape[-1:]:
                    raise ValueError(f"new {name} of shape {new.shape} do not fit the cached {name} of shape "
                                     f"{old.shape}: expected (..., {old.shape[-3]}, T_new, {old.shape[-1]})")
            keys = np.concatenate([self.keys, keys], axis=-2)  # (..., h_kv, T_past + T_new, d_h)
            values = np.concatenate([self.values, values], axis=-2)  # (..., h_kv, T_past + T_new, d_v)
        self.keys, self.values = keys, values
        return keys, values

    def crop(self, length):
        """Keep only the first ``length`` positions (to undo steps, as speculative decoding does)."""
        length = as_positive_int(length, "length", allow_zero=True)
        if length > self.length:
            raise ValueError(f"length={length} is more than the {self.length} positions cached")
        if self.keys is not None:
            self.keys, self.values = self.keys[..., :length, :], self.values[..., :length, :]


def _grouped_inputs(x, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None,
                    num_kv_heads=None, kv_cache=None, rotate=None, bias=None, scale=None):
    num_heads = as_positive_int(num_heads, "num_heads")
    num_kv_heads = num_heads if num_kv_heads is None else as_positive_int(num_kv_heads, "num_kv_heads")
    projection_inputs(x, W_q, W_k, W_v, W_o, num_heads, None, None, num_kv_heads)  # W_k's width: h_kv d_h
    x, W_q, W_k, W_v, W_o, num_heads, mask, biases, kv_cache, rotate, bias, scale = multi_head_inputs(
        x, W_q, W_k, W_v, W_o, num_heads, mask, (b_q, b_k, b_v, b_o), kv_cache, rotate, bias, scale)
    return x, W_q, W_k, W_v, W_o, num_heads, mask, *biases, num_kv_heads, kv_cache, rotate, bias, scale


@checked(_grouped_inputs)
def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None,
                            num_kv_heads=None, kv_cache=None, rotate=None, bias=None, scale=None):
    """Multi-head attention with ``h_kv`` key/value heads, each shared by ``h / h_kv`` query heads, and a KV cache.

        headᵢ = Attention(X W_q⁽ⁱ⁾, X W_k⁽ᵍ⁽ⁱ⁾⁾, X W_v⁽ᵍ⁽ⁱ⁾⁾),   g(i) = ⌊i · h_kv / h⌋

    It is notebook 08's :func:`~attn_helpers.multihead.multi_head_attention` itself, under this name: ``W_k, W_v
    (d_model, h_kv d_h)``; ``num_kv_heads=1`` is multi-query attention (Shazeer 2019), ``1 < h_kv < h``
    grouped-query attention (Ainslie et al. 2023), ``h_kv = h`` (the default) multi-head attention; the number
    is checked against ``W_k``'s width. With ``kv_cache``, ``x`` holds only the new positions: their keys and
    values are appended to the cache, and their queries attend to all of them (``T_k = T_past + T``).

    >>> x, W_q, W_o = np.ones((3, 8)), np.eye(8), np.eye(8)
    >>> out, weights = grouped_query_attention(x, W_q, W_q[:, :4], W_q[:, :4], W_o, 4, num_kv_heads=2)
    >>> out.shape, weights.shape
    ((3, 8), (4, 3, 3))
    """
    biases = None if all(b is None for b in (b_q, b_k, b_v, b_o)) else (b_q, b_k, b_v, b_o)
    return multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads, mask, biases, kv_cache, rotate, bias, scale)


@dataclasses.dataclass(frozen=True, eq=False)
class GroupedQueryParams(BlockParams):
    """Notebook 10's block whose ``W_k``, ``W_v`` are ``(d_model, num_kv_heads * d_h)``: its attention (notebook
    08's, with narrower keys and values) shares each key/value head with ``num_heads / num_kv_heads`` query heads.

    >>> params = init_grouped_query_params(d_model=8, num_heads=4, num_kv_heads=2)
    >>> params.W_k.shape, params.num_kv_heads
    ((8, 4), 2)
    """

    num_kv_heads: int = 1

    def __post_init__(self):
        num_kv_heads = as_positive_int(self.num_kv_heads, "num_kv_heads")
        num_heads = as_positive_int(self.num_heads, "num_heads")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_kv_heads={num_kv_heads} must divide num_heads={num_heads}")
        object.__setattr__(self, "num_kv_heads", num_kv_heads)
        super().__post_init__()

    @property
    def key_width(self) -> int:
        """The width of ``W_k`` and ``W_v``: ``num_kv_heads * d_h``."""
        return self.W_q.shape[0] // self.num_heads * self.num_kv_heads



def init_grouped_query_params(d_model, num_heads, num_kv_heads, **kwargs):
    """:func:`~attn_helpers.block.init_block_params` with ``num_kv_heads`` key/value heads: the first
    ``num_kv_heads * d_h`` columns of its ``W_k``, ``W_v`` (and biases, if any)."""
    params = init_block_params(d_model, num_heads, **kwargs)
    width = d_model // params.num_heads * as_positive_int(num_kv_heads, "num_kv_heads")
    narrow = {name: getattr(params, name)[..., :width] for name in ("W_k", "W_v", "b_k", "b_v")
              if getattr(params, name) is not None}
    return GroupedQueryParams(**{**{f.name: getattr(params, f.name) for f in dataclasses.fields(params)}, **narrow},
                              num_kv_heads=num_kv_heads)


def cached_attention(params, kv_cache):
    """The attention of the block ``params`` reading and extending ``kv_cache``: pass it to
    :func:`~attn_helpers.block.transformer_block` as ``attention=``.

    >>> params, cache = init_block_params(d_model=8, num_heads=2), KVCache()
    >>> from attn_helpers.block import transformer_block
    >>> out, weights = transformer_block(np.ones((3, 8)), params, attention=cached_attention(params, cache))
    >>> out.shape, weights.shape, cache.length
    ((3, 8), (2, 3, 3), 3)
    """
    def attention(x, mask=None):
        return params.attention(x, mask, kv_cache)  # notebook 08's attention, reading and extending the cache
    return attention


def _counts(**counts):
    """Whole numbers >= 1 (``T`` may be 0), or a TypeError/ValueError naming the argument."""
    return [as_positive_int(n, name, allow_zero=name == "T") for name, n in counts.items()]


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, T, bytes_per_number=2, batch=1):
    """Bytes of a KV cache: ``layers x 2 (keys and values) x h_kv x d_h x T x bytes x batch``.

    ``bytes_per_number`` is 4 for float32, 2 for float16, 1 for 8-bit and 0.5 for a 4-bit cache.

    >>> kv_cache_bytes(num_layers=32, num_kv_heads=32, head_dim=128, T=4096) / 2**30   # Llama 2 7B, float16
    2.0
    """
    num_layers, num_kv_heads, head_dim, T, batch = _counts(
        num_layers=num_layers, num_kv_heads=num_kv_heads, head_dim=head_dim, T=T, batch=batch)
    if not isinstance(bytes_per_number, int):
        bytes_per_number = as_positive_number(bytes_per_number, "bytes_per_number", " (0.5 for a 4-bit cache)")
    else:
        bytes_per_number = as_positive_int(bytes_per_number, "bytes_per_number")
    return num_layers * 2 * num_kv_heads * head_dim * T * bytes_per_number * batch


def attention_weights_bytes(T, num_heads=1, bytes_per_number=4):
    """Bytes of the ``(h, T, T)`` attention weights of one layer, if they were built.

    >>> attention_weights_bytes(4096, num_heads=8) / 2**20   # float32
    512.0
    """
    T, num_heads, bytes_per_number = _counts(T=T, num_heads=num_heads, bytes_per_number=bytes_per_number)
    return num_heads * T**2 * bytes_per_number


def cache_table(T=4096, bytes_per_number=2, configs=None):
    """One row per configuration: its KV cache at ``T`` tokens, and the cache if every query head had its own K/V.

    Returns ``rows``:
    ``name, num_layers, num_heads, num_kv_heads, head_dim, context_length, cache_bytes, full_mha_bytes, saving`` (the
    factor ``h / h_kv`` that grouped-query or multi-query attention saves).

    >>> row = {row["name"]: row for row in cache_table(T=4096)}["Llama 2 70B"]
    >>> row["name"], row["cache_bytes"] / 2**30, row["saving"]
    ('Llama 2 70B', 1.25, 8.0)
    """
    T = as_positive_int(T, "T")  # (the saving compares two caches: at T = 0 both are empty)
    rows = []
    for name, config in (PUBLISHED_CONFIGS if configs is None else configs).items():
        shape = {key: config[key] for key in CONFIG_COLUMNS if key in config}
        cache = kv_cache_bytes(shape["num_layers"], shape["num_kv_heads"], shape["head_dim"], T, bytes_per_number)
        full = kv_cache_bytes(shape["num_layers"], shape["num_heads"], shape["head_dim"], T, bytes_per_number)
        rows.append(dict(name=name, **shape, cache_bytes=cache, full_mha_bytes=full, saving=full / cache))
    return rows
