"""The KV cache (notebook 13): generate token by token without recomputing earlier tokens' keys and values.

:class:`Decoder` stacks notebook 10's pre-norm blocks under a causal mask; with a :class:`KVCache` per block,
``decoder_block(x_new, params, mask, kv_cache=cache)`` runs only the new rows (:func:`grouped_query_attention`:
query heads may share key/value heads). :func:`kv_cache_bytes` and :func:`cache_table` give what the cache costs.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ._validate import (
    as_flag,
    as_float_array,
    as_float_dtype,
    as_positive_int,
    as_positive_number,
    attention_weights_inputs,
    check_mask,
    checked,
)
from .block import BlockParams, init_block_params, layer_norm
from .config import SEED
from .core import scaled_dot_product_attention
from .multihead import _plus, merge_heads, split_heads
from .positions import positional_encoding

__all__ = [
    "KVCache",
    "repeat_kv_heads",
    "grouped_query_attention",
    "decoder_block",
    "Decoder",
    "random_decoder",
    "decoder_forward",
    "generate",
    "kv_cache_bytes",
    "attention_weights_bytes",
    "PUBLISHED_CONFIGS",
    "cache_table",
]


@dataclasses.dataclass(eq=False)
class KVCache:
    """The keys and values of one attention layer for every position seen so far.

    ``keys`` has shape ``(..., h_kv, T, d_h)``: only the key/value heads are stored, so
    grouped-query attention (``h_kv < h``) stores ``h / h_kv`` times less. Pass one to
    :func:`grouped_query_attention` or :func:`decoder_block` as ``kv_cache=``.

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
    group = num_heads // x.shape[-3]
    return x if group == 1 else np.repeat(x, group, axis=-3)  # (..., h_kv, T, d_h) -> (..., h, T, d_h)


def _cached_length(kv_cache):
    if kv_cache is None:
        return 0
    if not isinstance(kv_cache, KVCache):
        raise TypeError(f"kv_cache must be a KVCache (attn_helpers.kv_cache) or None; got {type(kv_cache).__name__}")
    return kv_cache.length


def _grouped_inputs(x, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None,
                    num_kv_heads=None, kv_cache=None):
    x, W_q, W_k, W_v, W_o, num_heads, b_q, b_k, b_v, b_o, _ = attention_weights_inputs(
        x, W_q, W_k, W_v, W_o, num_heads, b_q, b_k, b_v, b_o, num_kv_heads=num_kv_heads)
    T, T_k = x.shape[-2], x.shape[-2] + _cached_length(kv_cache)  # the keys: the cached ones, then those of x
    mask = check_mask(mask, T, T_k, "(..., T, T)" if T_k == T else "(..., T, T_past + T)")
    num_kv_heads = num_heads if num_kv_heads is None else int(num_kv_heads)
    return x, W_q, W_k, W_v, W_o, num_heads, mask, b_q, b_k, b_v, b_o, num_kv_heads, kv_cache


@checked(_grouped_inputs)
def grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None,
                            num_kv_heads=None, kv_cache=None):
    r"""Multi-head attention with ``h_kv`` key/value heads, each shared by ``h / h_kv`` query heads, and a KV cache.

    .. math:: \mathrm{head}_i = \mathrm{Attention}(X W_q^{(i)}, X W_k^{(g(i))}, X W_v^{(g(i))}),
              \quad g(i) = \lfloor i\, h_{kv} / h \rfloor

    ``W_k, W_v (d_model, h_kv d_h)``: ``num_kv_heads=1`` is multi-query attention (Shazeer 2019),
    ``1 < h_kv < h`` grouped-query attention (Ainslie et al. 2023), the default ``h_kv = h`` notebook
    08's multi-head attention. With ``kv_cache``, ``x`` holds only the new positions: their keys and
    values are appended to the cache, and their queries attend to all of them (``T_k = T_past + T``).

    >>> x, W_q, W_o = np.ones((3, 8)), np.eye(8), np.eye(8)
    >>> out, weights = grouped_query_attention(x, W_q, W_q[:, :4], W_q[:, :4], W_o, 4, num_kv_heads=2)
    >>> out.shape, weights.shape
    ((3, 8), (4, 3, 3))
    """
    # 1. Project every token: (..., T, d_model) @ (d_model, h * d_h) -> (..., T, h * d_h).
    # 2. Split the features into heads: (..., T, h * d_h) -> (..., h, T, d_h).
    queries = split_heads.unchecked(_plus(x @ W_q, b_q), num_heads)
    keys = split_heads.unchecked(_plus(x @ W_k, b_k), num_kv_heads)  # (..., h_kv, T, d_h), h_kv = h unless grouped
    values = split_heads.unchecked(_plus(x @ W_v, b_v), num_kv_heads)  # (..., h_kv, T, d_v)
    if kv_cache is not None:  # 2a. KV cache: the earlier positions' keys and values, then these
        keys, values = kv_cache.append(keys, values)  # (..., h_kv, T_past + T, d_h): earlier ones not recomputed
    # 2b. Grouped-query attention: each key/value head serves h / h_kv query heads.
    keys, values = repeat_kv_heads(keys, num_heads), repeat_kv_heads(values, num_heads)  # (..., h, T_k, d)
    if mask is not None:
        mask = mask[..., None, :, :]  # (..., 1, T, T_k): the same mask for every head
    # 3. Attend, every head at once: the head axis is one more batch axis.
    context, weights = scaled_dot_product_attention.unchecked(queries, keys, values, mask)  # (..., h, T, d_v)
    # 4. Concatenate the heads and project: (..., T, h * d_v) @ (h * d_v, d_out) -> (..., T, d_out).
    return _plus(merge_heads.unchecked(context) @ W_o, b_o), weights


def _decoder_block_inputs(x, params, mask=None, kv_cache=None):
    if not isinstance(params, BlockParams):
        raise TypeError(f"params must be a BlockParams (see init_block_params); got {type(params).__name__}")
    inputs = _grouped_inputs(x, params.W_q, params.W_k, params.W_v, params.W_o, params.num_heads, mask,
                             num_kv_heads=params.num_kv_heads, kv_cache=kv_cache)
    return inputs[0], params, inputs[6], kv_cache  # x and mask checked


@checked(_decoder_block_inputs)
def decoder_block(x, params, mask=None, kv_cache=None):
    r"""A pre-norm :func:`~attn_helpers.block.transformer_block` that may have grouped-query heads and a KV cache.

    .. math:: x \leftarrow x + \mathrm{GQA}(\mathrm{LN}_1(x)), \qquad x \leftarrow x + \mathrm{FFN}(\mathrm{LN}_2(x))

    With ``kv_cache``, ``x (..., T, d_model)`` is only the new positions: attention reads the cache
    (which grows by ``T``); layer norms and the feed-forward network work row by row, so ``out`` is
    what the block gives those rows of the whole sequence. ``mask`` broadcasts to ``(..., T, T_past + T)``.

    >>> params, cache = init_block_params(d_model=8, num_heads=2), KVCache()
    >>> out, weights = decoder_block(np.ones((3, 8)), params, kv_cache=cache)
    >>> out.shape, weights.shape, cache.length
    ((3, 8), (2, 3, 3), 3)
    """
    p = params
    attended, weights = grouped_query_attention.unchecked(p.norm_1(x), p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads, mask,
                                                          p.b_q, p.b_k, p.b_v, p.b_o, p.kv_heads, kv_cache)
    x = x + attended  # (..., T, d_model)
    return x + p.feed_forward(p.norm_2(x)), weights  # (..., T, d_model)


@dataclasses.dataclass(frozen=True, eq=False)
class Decoder:
    """A GPT-style decoder made of notebook 10's blocks (untrained, unless you give it trained weights).

    ``x = embeddings[ids] + positional_encoding(T)``; each of ``blocks`` is a pre-norm
    transformer block (:func:`decoder_block`) with a causal mask; then
    ``layer_norm(x, final_norm_gamma, final_norm_beta) @ embeddings.T`` gives one score per
    token of the vocabulary (the output layer is tied to the embeddings, as in GPT-2).

    ``embeddings (vocab_size, d_model)``; ``blocks``: every block has the same ``d_model``, ``num_heads`` and
    ``num_kv_heads``; ``final_norm_gamma, final_norm_beta (d_model,)``.
    """

    embeddings: np.ndarray
    blocks: tuple
    final_norm_gamma: np.ndarray | None = None
    final_norm_beta: np.ndarray | None = None

    def __post_init__(self):
        embeddings = as_float_array(self.embeddings, "embeddings", min_ndim=2)
        if embeddings.ndim != 2:
            raise ValueError(f"embeddings must have shape (vocab_size, d_model); got shape {embeddings.shape}")
        blocks = (self.blocks,) if isinstance(self.blocks, BlockParams) else tuple(self.blocks)
        if not blocks or not all(isinstance(block, BlockParams) for block in blocks):
            raise TypeError("blocks must be a non-empty sequence of BlockParams (see init_block_params); got "
                            f"{[type(block).__name__ for block in blocks]}")
        shapes = {(block.d_model, block.num_heads, block.kv_heads) for block in blocks}
        if shapes != {(embeddings.shape[1], blocks[0].num_heads, blocks[0].kv_heads)}:
            raise ValueError(f"every block needs d_model = {embeddings.shape[1]} (the embeddings' width) and the "
                             f"same heads; got (d_model, num_heads, num_kv_heads) = {sorted(shapes)}")
        object.__setattr__(self, "embeddings", embeddings)
        object.__setattr__(self, "blocks", blocks)

    @property
    def vocab_size(self) -> int:
        return self.embeddings.shape[0]

    @property
    def d_model(self) -> int:
        return self.embeddings.shape[1]

    def empty_cache(self) -> list:
        """One empty :class:`KVCache` per block."""
        return [KVCache() for _ in self.blocks]


def random_decoder(vocab_size=8, d_model=16, num_heads=4, num_layers=2, *, num_kv_heads=None, dtype=np.float32,
                   seed=SEED):
    """A decoder with seeded random weights: what it writes means nothing, but it computes like a GPT.

    Block ``n`` is ``init_block_params(d_model, num_heads, rng=np.random.default_rng([seed, n]))``
    and the embeddings ``np.random.default_rng(seed).standard_normal((vocab_size, d_model))``:
    with the defaults these are notebook 10's creature sentence and blocks
    (:func:`~attn_helpers.examples.creature_block_example`), one embedding per word.
    ``num_kv_heads`` gives every block that many key/value heads (grouped-query attention; 1: multi-query).

    >>> decoder = random_decoder(d_model=8, num_heads=4, num_layers=2, num_kv_heads=2)
    >>> len(decoder.blocks), decoder.blocks[0].W_q.shape, decoder.blocks[0].W_k.shape
    (2, (8, 8), (8, 4))
    """
    vocab_size, d_model = as_positive_int(vocab_size, "vocab_size"), as_positive_int(d_model, "d_model")
    seed, dtype = as_positive_int(seed, "seed", allow_zero=True), as_float_dtype(dtype)
    embeddings = np.random.default_rng(seed).standard_normal((vocab_size, d_model)).astype(dtype)
    blocks = [init_block_params(d_model, num_heads, rng=np.random.default_rng([seed, n]), dtype=dtype,
                                num_kv_heads=num_kv_heads) for n in range(as_positive_int(num_layers, "num_layers"))]
    return Decoder(embeddings, blocks, np.ones(d_model, dtype=dtype), np.zeros(d_model, dtype=dtype))


def _as_ids(ids, vocab_size, name):
    array = np.asarray(ids)
    if array.ndim != 1 or not (array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f")):
        raise TypeError(f"{name} must be a 1-D sequence of integer token ids; got {type(ids).__name__} of "
                        f"shape {array.shape} and dtype {array.dtype}")
    if array.size == 0:
        raise ValueError(f"{name} is empty; expected at least one token id")
    if array.min() < 0 or array.max() >= vocab_size:
        raise ValueError(f"{name} must be token ids in 0 .. {vocab_size - 1}; got ids from {array.min()} to "
                         f"{array.max()}")
    return array.astype(np.intp)


def _check_cache(cache, decoder):
    if not isinstance(cache, list) or len(cache) != len(decoder.blocks) or not all(
            isinstance(layer, KVCache) for layer in cache):
        raise TypeError(f"cache must be a list of {len(decoder.blocks)} KVCache, one per block "
                        f"(decoder.empty_cache()); got {type(cache).__name__}")
    lengths = {layer.length for layer in cache}
    if len(lengths) != 1:
        raise ValueError(f"cache: its layers hold different numbers of positions {sorted(lengths)}")
    return lengths.pop()


def decoder_forward(decoder, ids, cache=None):
    """Scores of the next token after each position of ``ids``; with a ``cache``, of the new positions only.

    Without a cache the whole sequence goes through every block at once, under
    ``causal_mask(T)``. With one, ``ids`` are the tokens that follow the ``T_past`` cached
    positions: only their rows go through the blocks, attending to the cached keys and
    values and to each other's up to their own position; the cache (``decoder.empty_cache()``,
    then passed again at every step) grows by ``len(ids)``. Returns logits ``(T, vocab_size)``: row
    ``i`` scores the token after position ``T_past + i``, equal to row ``T_past + i`` of
    ``decoder_forward(decoder, all_ids)`` to rounding (notebook 13 says why not bit for bit).

    >>> decoder = random_decoder()
    >>> cache = decoder.empty_cache()
    >>> prompt_logits = decoder_forward(decoder, [0, 1, 2], cache)   # the prompt: 3 positions at once
    >>> next_logits = decoder_forward(decoder, [5], cache)          # then one new token
    >>> full = decoder_forward(decoder, [0, 1, 2, 5])                  # everything again
    >>> cache[0].length, bool(np.allclose(next_logits, full[3:], rtol=1e-5, atol=1e-5))
    (4, True)
    """
    if not isinstance(decoder, Decoder):
        raise TypeError(f"decoder must be a Decoder (see random_decoder); got {type(decoder).__name__}")
    ids = _as_ids(ids, decoder.vocab_size, "ids")
    T_past = 0 if cache is None else _check_cache(cache, decoder)
    T = len(ids)
    positions = positional_encoding(T_past + T, decoder.d_model, dtype=decoder.embeddings.dtype)[T_past:]  # (T, d)
    x = decoder.embeddings[ids] + positions  # (T, d_model)
    # New position i is position T_past + i: it may see keys 0 .. T_past + i (causal_mask(T) when T_past = 0).
    mask = np.tri(T, T_past + T, k=T_past, dtype=bool)  # (T, T_past + T)
    for n, block in enumerate(decoder.blocks):
        x, _ = decoder_block.unchecked(x, block, mask, None if cache is None else cache[n])  # (T, d_model)
    x = layer_norm.unchecked(x, decoder.final_norm_gamma, decoder.final_norm_beta)  # the final layer norm of GPT-2
    return x @ decoder.embeddings.T  # (T, d_model) @ (d_model, vocab_size) -> (T, vocab_size)


def generate(decoder, prompt, steps, *, use_cache=True):
    """Greedy generation: append the highest-scoring next token ``steps`` times.

    With ``use_cache=False`` the whole sequence goes through :func:`decoder_forward` at every
    step; with ``use_cache=True`` the prompt goes through once, filling a cache, and then
    each step runs only the newest token. Returns the ids (the prompt, then the ``steps`` new
    ones) and the logits ``(steps, vocab_size)`` before each choice.

    >>> decoder = random_decoder()
    >>> ids, _ = generate(decoder, [0, 1, 2], steps=5)
    >>> ids == generate(decoder, [0, 1, 2], steps=5, use_cache=False)[0]
    True
    """
    if not isinstance(decoder, Decoder):
        raise TypeError(f"decoder must be a Decoder (see random_decoder); got {type(decoder).__name__}")
    ids = [int(i) for i in _as_ids(prompt, decoder.vocab_size, "prompt")]
    steps = as_positive_int(steps, "steps", allow_zero=True)
    use_cache = as_flag(use_cache, "use_cache")
    cache = decoder.empty_cache() if use_cache else None
    new = list(ids)  # the tokens the model has not seen yet: the whole prompt, then one at a time
    all_logits = np.zeros((steps, decoder.vocab_size), dtype=decoder.embeddings.dtype)
    for step in range(steps):
        logits = decoder_forward(decoder, new, cache) if use_cache else decoder_forward(decoder, ids)
        all_logits[step] = logits[-1]  # the scores after the last position
        ids.append(int(np.argmax(logits[-1])))
        new = ids[-1:]
    return ids, all_logits


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


_CONFIG_COLUMNS = ("num_layers", "num_heads", "num_kv_heads", "head_dim", "context_length")
_CONFIG_ROWS = {  # layers, query heads h, key/value heads h_kv, head width d_h, context length (tokens)
    "GPT-2 small": (12, 12, 12, 64, 1024),
    "Llama 2 7B": (32, 32, 32, 128, 4096),
    "Llama 2 70B": (80, 64, 8, 128, 4096),
    "Mistral 7B": (32, 32, 8, 128, 8192),
    "Falcon 7B": (32, 71, 1, 64, 2048),
    "PaLM 540B": (118, 48, 1, 256, 2048),
}
_CONFIG_SOURCES = {
    "GPT-2 small": "Radford et al. 2019; Hugging Face openai-community/gpt2 config.json: n_layer 12, n_head 12, "
                   "n_embd 768 (so d_h = 64), n_ctx 1024",
    "Llama 2 7B": "Touvron et al. 2023, Llama 2, Table 1 (context 4k, no GQA at 7B); meta-llama/Llama-2-7b-hf "
                  "config.json: num_hidden_layers 32, num_attention_heads 32, num_key_value_heads 32, hidden_size 4096",
    "Llama 2 70B": "Touvron et al. 2023, Llama 2, Table 1 (context 4k, GQA at 34B and 70B); meta-llama/Llama-2-70b-hf "
                   "config.json: num_hidden_layers 80, num_attention_heads 64, num_key_value_heads 8, hidden_size 8192",
    "Mistral 7B": "Jiang et al. 2023, Mistral 7B, Table 1: n_layers 32, head_dim 128, n_heads 32, n_kv_heads 8, "
                  "context_len 8192; its sliding window of 4096 caps the cache it really keeps (a rolling buffer)",
    "Falcon 7B": "tiiuae/falcon-7b config.json: n_layer 32, n_head 71, hidden_size 4544 (d_h = 64), multi_query true; "
                 "model card: sequence length 2048",
    "PaLM 540B": "Chowdhery et al. 2022, PaLM, Table 1 and section 2: 118 layers, 48 heads, d_model 18432, head size "
                 "always 256, multi-query attention, sequence length 2048",
}

#: Published decoder configurations: layers, query heads, key/value heads, head width, context length, and
#: where the numbers are from (``source``).
PUBLISHED_CONFIGS = {name: {**dict(zip(_CONFIG_COLUMNS, row)), "source": _CONFIG_SOURCES[name]}
                     for name, row in _CONFIG_ROWS.items()}


def cache_table(T=4096, bytes_per_number=2, configs=None):
    """One row per configuration: its KV cache at ``T`` tokens, and the cache if every query head had its own K/V.

    Returns ``rows``:
    ``name, num_layers, num_heads, num_kv_heads, head_dim, context_length, cache_bytes, full_mha_bytes, saving`` (the
    factor ``h / h_kv`` that grouped-query or multi-query attention saves).

    >>> row = cache_table(T=4096)[2]
    >>> row["name"], row["cache_bytes"] / 2**30, row["saving"]
    ('Llama 2 70B', 1.25, 8.0)
    """
    T = as_positive_int(T, "T")  # (the saving compares two caches: at T = 0 both are empty)
    rows = []
    for name, config in (PUBLISHED_CONFIGS if configs is None else configs).items():
        shape = {key: config[key] for key in _CONFIG_COLUMNS if key in config}
        cache = kv_cache_bytes(shape["num_layers"], shape["num_kv_heads"], shape["head_dim"], T, bytes_per_number)
        full = kv_cache_bytes(shape["num_layers"], shape["num_heads"], shape["head_dim"], T, bytes_per_number)
        rows.append(dict(name=name, **shape, cache_bytes=cache, full_mha_bytes=full, saving=full / cache))
    return rows
