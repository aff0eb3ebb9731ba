"""The KV cache: generate token by token without recomputing the keys and values of earlier tokens.

A causal decoder (here: layers of causal multi-head self-attention with a residual
connection, random weights, notebook 13) produces the output of position ``t`` from
positions ``0..t`` only (notebook 07). So when it generates, the keys and values of the
earlier positions never change: a :class:`KVCache` keeps them, and each new token costs
one row of queries against the cached keys, O(T), instead of the whole sequence again,
O(T^2) for the attention alone.

:func:`kv_cache_bytes` and :data:`PUBLISHED_CONFIGS` give what the cache costs in real
models, and how grouped-query and multi-query attention shrink it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._validate import as_float_array, as_positive_int
from .core import causal_mask, scaled_dot_product_attention
from .examples import SEED
from .multihead import merge_heads, multi_head_attention, repeat_kv_heads, split_heads
from .positions import positional_encoding

__all__ = [
    "random_decoder",
    "decoder_forward",
    "KVCache",
    "decoder_step",
    "generate",
    "kv_cache_bytes",
    "attention_weights_bytes",
    "PUBLISHED_CONFIGS",
    "cache_table",
]


def random_decoder(vocab_size=8, d_model=16, num_heads=4, num_layers=2, num_kv_heads=None, seed=SEED):
    """A small causal decoder with seeded random weights (untrained: what it writes means nothing).

    Returns
    -------
    model : dict
        ``embeddings`` (vocab_size, d_model), ``unembedding`` (d_model, vocab_size) and ``layers``,
        one dict of ``w_q, w_k, w_v, w_o`` per layer. ``w_k`` and ``w_v`` have ``num_kv_heads * d_h``
        columns (default ``num_heads``: ordinary multi-head attention). Each matrix is standard
        normal, the projections divided by ``sqrt(d_model)``.

    Examples
    --------
    >>> model = random_decoder(d_model=8, num_heads=4, num_layers=2, num_kv_heads=2)
    >>> len(model["layers"]), model["layers"][0]["w_q"].shape, model["layers"][0]["w_k"].shape
    (2, (8, 8), (8, 4))
    """
    d_model = as_positive_int(d_model, "d_model")
    num_heads = as_positive_int(num_heads, "num_heads")
    num_kv_heads = num_heads if num_kv_heads is None else as_positive_int(num_kv_heads, "num_kv_heads")
    kv_width = d_model // num_heads * num_kv_heads
    rng = np.random.default_rng(seed)
    embeddings = rng.standard_normal((as_positive_int(vocab_size, "vocab_size"), d_model))
    unembedding = rng.standard_normal((d_model, vocab_size))
    shapes = {"w_q": (d_model, d_model), "w_k": (d_model, kv_width), "w_v": (d_model, kv_width),
              "w_o": (d_model, d_model)}
    layers = [{name: rng.standard_normal(shape) / np.sqrt(d_model) for name, shape in shapes.items()}
              for _ in range(as_positive_int(num_layers, "num_layers"))]
    return {"embeddings": embeddings, "unembedding": unembedding, "layers": layers}


def decoder_forward(x, layers, num_heads, num_kv_heads=None):
    """The whole sequence through the decoder, every position at once: ``x = x + attention(x)`` per layer.

    Parameters
    ----------
    x : array_like, shape (T, d_model)
    layers : list of dict
        As made by :func:`random_decoder`.
    num_heads, num_kv_heads : int

    Returns
    -------
    out : ndarray, shape (T, d_model)
        Row ``t`` depends on rows ``0..t`` of ``x`` only (a causal mask in every layer).
    """
    x = as_float_array(x, "x", min_ndim=2)
    mask = causal_mask(x.shape[-2])  # (T, T): no position sees a later one
    for layer in layers:
        attended, _ = multi_head_attention(x, layer["w_q"], layer["w_k"], layer["w_v"], layer["w_o"], num_heads,
                                           mask=mask, num_kv_heads=num_kv_heads)
        x = x + attended  # residual connection: (T, d_model)
    return x


@dataclass
class KVCache:
    """The keys and values of every position seen so far, one pair of arrays per layer.

    ``keys[layer]`` has shape ``(h_kv, T, d_h)``: only the key/value heads are stored, so
    grouped-query attention (``h_kv < h``) stores ``h / h_kv`` times less.
    """

    keys: list = field(default_factory=list)
    values: list = field(default_factory=list)

    @property
    def length(self) -> int:
        """The number of positions cached."""
        return self.keys[0].shape[-2] if self.keys else 0

    @property
    def nbytes(self) -> int:
        """The bytes the cache holds."""
        return sum(a.nbytes for a in self.keys + self.values)

    def append(self, layer, keys, values):
        """Add the keys and values of new positions, ``(h_kv, T_new, d_h)``, to ``layer``; return all of them.

        (A real implementation preallocates the maximum length; ``np.concatenate`` keeps this one short.)
        """
        if layer == len(self.keys):
            self.keys.append(keys)
            self.values.append(values)
        else:
            self.keys[layer] = np.concatenate([self.keys[layer], keys], axis=-2)  # (h_kv, T + T_new, d_h)
            self.values[layer] = np.concatenate([self.values[layer], values], axis=-2)
        return self.keys[layer], self.values[layer]


def decoder_step(x_new, layers, cache, num_heads, num_kv_heads=None):
    """The new positions through the decoder, attending to the cached ones; the cache grows by ``T_new``.

    Each layer projects only the new rows, appends their keys and values to the cache and
    lets the new queries attend to every cached key up to their own position.

    Parameters
    ----------
    x_new : array_like, shape (T_new, d_model)
        The inputs of the new positions (the prompt at the first call, then one token).
    layers : list of dict
    cache : KVCache
    num_heads, num_kv_heads : int

    Returns
    -------
    out : ndarray, shape (T_new, d_model)
        Equal to the last ``T_new`` rows of :func:`decoder_forward` on the whole sequence.

    Examples
    --------
    >>> layers = random_decoder(d_model=8, num_heads=2)["layers"]
    >>> x = np.random.default_rng(0).standard_normal((5, 8))
    >>> cache = KVCache()
    >>> prompt_out = decoder_step(x[:4], layers, cache, num_heads=2)   # the prompt: 4 positions at once
    >>> new_out = decoder_step(x[4:], layers, cache, num_heads=2)      # then one new token
    >>> cache.length, bool(np.allclose(new_out, decoder_forward(x, layers, num_heads=2)[4:]))
    (5, True)
    """
    x = as_float_array(x_new, "x_new", min_ndim=2)
    num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
    t_new = x.shape[-2]
    for i, layer in enumerate(layers):
        queries = split_heads(x @ layer["w_q"], num_heads)  # (T_new, d_model) @ (d_model, h d_h) -> (h, T_new, d_h)
        new_keys = split_heads(x @ layer["w_k"], num_kv_heads)  # -> (h_kv, T_new, d_h)
        new_values = split_heads(x @ layer["w_v"], num_kv_heads)  # -> (h_kv, T_new, d_h)
        keys, values = cache.append(i, new_keys, new_values)  # (h_kv, T, d_h): the old rows are reused, not recomputed
        t = keys.shape[-2]
        mask = np.tri(t_new, t, k=t - t_new, dtype=bool)  # new position i (absolute t - T_new + i) sees keys <= it
        context, _ = scaled_dot_product_attention(queries, repeat_kv_heads(keys, num_heads),
                                                  repeat_kv_heads(values, num_heads), mask=mask)  # (h, T_new, d_h)
        x = x + merge_heads(context) @ layer["w_o"]  # (T_new, h d_h) @ (h d_h, d_model) -> (T_new, d_model)
    return x


def generate(prompt, model, num_heads, steps, *, num_kv_heads=None, use_cache=True):
    """Greedy generation: append the most likely next token ``steps`` times.

    Each token's input is its embedding plus the sinusoidal encoding of its position; the
    output of the last position times ``unembedding`` gives one score per token of the
    vocabulary, and the best one is appended. With ``use_cache=False`` the whole sequence
    goes through :func:`decoder_forward` at each step; with ``use_cache=True`` only the new
    token goes through :func:`decoder_step`.

    Parameters
    ----------
    prompt : sequence of int
        Token ids of the prompt.
    model : dict
        As made by :func:`random_decoder`.
    num_heads, steps : int

    Returns
    -------
    ids : list of int
        The prompt followed by the ``steps`` generated ids.
    logits : ndarray, shape (steps, vocab_size)
        The scores of every token before each choice.

    Examples
    --------
    >>> model = random_decoder()
    >>> ids, _ = generate([0, 1, 2], model, num_heads=4, steps=5)
    >>> ids == generate([0, 1, 2], model, num_heads=4, steps=5, use_cache=False)[0]
    True
    """
    embeddings, unembedding, layers = model["embeddings"], model["unembedding"], model["layers"]
    steps = as_positive_int(steps, "steps", allow_zero=True)
    ids = [int(i) for i in prompt]
    positions = positional_encoding(len(ids) + steps, embeddings.shape[-1], dtype=embeddings.dtype)  # (T, d_model)
    cache = KVCache()
    new = slice(0, len(ids))  # the positions not yet seen by the decoder: the whole prompt, then one token
    all_logits = []
    for _ in range(steps):
        if use_cache:
            out = decoder_step(embeddings[ids[new]] + positions[new], layers, cache, num_heads, num_kv_heads)
        else:  # the whole sequence again: (T, d_model)
            out = decoder_forward(embeddings[ids] + positions[: len(ids)], layers, num_heads, num_kv_heads)
        logits = out[-1] @ unembedding  # (d_model,) @ (d_model, vocab) -> (vocab,)
        ids.append(int(np.argmax(logits)))
        all_logits.append(logits)
        new = slice(len(ids) - 1, len(ids))
    return ids, np.array(all_logits).reshape(steps, unembedding.shape[-1])


def kv_cache_bytes(num_layers, num_kv_heads, head_dim, T, bytes_per_number=2, batch=1):
    """Bytes of a KV cache: ``layers x 2 (keys and values) x h_kv x d_h x T x bytes x batch``.

    Examples
    --------
    >>> kv_cache_bytes(num_layers=32, num_kv_heads=32, head_dim=128, T=4096) / 2**30   # Llama 2 7B, float16
    2.0
    """
    return int(num_layers) * 2 * int(num_kv_heads) * int(head_dim) * int(T) * int(bytes_per_number) * int(batch)


def attention_weights_bytes(T, num_heads=1, bytes_per_number=4):
    """Bytes of the ``(h, T, T)`` attention weights of one layer, if they were built.

    Examples
    --------
    >>> attention_weights_bytes(4096, num_heads=8) / 2**20   # float32
    512.0
    """
    return int(num_heads) * int(T) ** 2 * int(bytes_per_number)


#: Published decoder configurations: layers, query heads, key/value heads, head width, and where the numbers are from.
PUBLISHED_CONFIGS = {
    "GPT-2 small": dict(num_layers=12, num_heads=12, num_kv_heads=12, head_dim=64,
                        source="Radford et al. 2019; Hugging Face gpt2 config.json (n_layer 12, n_head 12, "
                               "n_embd 768)"),
    "Llama 2 7B": dict(num_layers=32, num_heads=32, num_kv_heads=32, head_dim=128,
                       source="Touvron et al. 2023, Llama 2, Table 1 and config.json (hidden_size 4096, "
                              "32 heads, 32 layers)"),
    "Llama 2 70B": dict(num_layers=80, num_heads=64, num_kv_heads=8, head_dim=128,
                        source="Touvron et al. 2023, Llama 2 (GQA for 34B and 70B); config.json "
                               "(hidden_size 8192, 64 heads, num_key_value_heads 8, 80 layers)"),
    "Mistral 7B": dict(num_layers=32, num_heads=32, num_kv_heads=8, head_dim=128,
                       source="Jiang et al. 2023, Mistral 7B, Table 1 (n_layers 32, head_dim 128, n_heads 32, "
                              "n_kv_heads 8)"),
    "Falcon 7B": dict(num_layers=32, num_heads=71, num_kv_heads=1, head_dim=64,
                      source="tiiuae/falcon-7b config.json (hidden_size 4544, n_head 71, n_layer 32, "
                             "multi_query true)"),
    "PaLM 540B": dict(num_layers=118, num_heads=48, num_kv_heads=1, head_dim=256,
                      source="Chowdhery et al. 2022, PaLM, Table 1 (118 layers, 48 heads, d_model 18432, "
                             "multi-query attention)"),
}


def cache_table(T=4096, bytes_per_number=2, configs=None):
    """One row per configuration: its KV cache at ``T`` tokens, and the cache if every query head had its own K/V.

    Returns
    -------
    rows : list of dict
        ``name, num_layers, num_heads, num_kv_heads, head_dim, cache_bytes, full_mha_bytes, saving`` (the
        factor ``h / h_kv`` that grouped-query or multi-query attention saves).

    Examples
    --------
    >>> row = cache_table(T=4096)[2]
    >>> row["name"], row["cache_bytes"] / 2**30, row["saving"]
    ('Llama 2 70B', 1.25, 8.0)
    """
    rows = []
    for name, config in (PUBLISHED_CONFIGS if configs is None else configs).items():
        shape = {key: config[key] for key in ("num_layers", "num_heads", "num_kv_heads", "head_dim")}
        cache = kv_cache_bytes(shape["num_layers"], shape["num_kv_heads"], shape["head_dim"], T, bytes_per_number)
        full = kv_cache_bytes(shape["num_layers"], shape["num_heads"], shape["head_dim"], T, bytes_per_number)
        rows.append(dict(name=name, **shape, cache_bytes=cache, full_mha_bytes=full, saving=full / cache))
    return rows
