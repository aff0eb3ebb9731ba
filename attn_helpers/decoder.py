r"""One decoder runner and one generation loop, shared by the tiny GPT (notebooks 13 to 15) and SmolLM2 (notebook 16).

:func:`run_blocks` runs a stack of notebook 10's blocks on embedded tokens under the decoder's mask, through a KV
cache or without one; :func:`generate_tokens` appends tokens one at a time, each chosen from the scores of the last
position. The two GPTs differ only in what comes before the blocks (the tiny GPT adds position vectors, SmolLM2 turns
queries and keys inside them), what comes after (layer norm or RMSNorm) and how they choose a token.
"""

from __future__ import annotations

import numpy as np

from ._validate import checked_by_caller
from .backprop import training_block
from .block import transformer_block
from .kv_cache import KVCache, cached_attention

__all__ = ["decoder_mask", "empty_cache", "check_cache", "cached_length", "run_blocks", "generate_tokens"]


def decoder_mask(T, T_past=0):
    """Which keys each new position may see: new position ``i`` is position ``T_past + i``, so it sees keys
    ``0 .. T_past + i``. ``(T, T_past + T)``, ``True`` = may attend; with ``T_past = 0`` it is ``causal_mask(T)``.

    >>> decoder_mask(2, T_past=1)
    array([[ True,  True, False],
           [ True,  True,  True]])
    """
    return np.tri(T, T_past + T, k=T_past, dtype=bool)  # (T, T_past + T)


def empty_cache(blocks) -> list:
    """One empty :class:`~attn_helpers.kv_cache.KVCache` per block."""
    return [KVCache() for _ in blocks]


def check_cache(cache, blocks) -> list:
    """``cache`` itself once it is one :class:`~attn_helpers.kv_cache.KVCache` per block, all of the same length."""
    if not isinstance(cache, list) or len(cache) != len(blocks) or not all(isinstance(c, KVCache) for c in cache):
        raise TypeError(f"cache must be a list of {len(blocks)} KVCache, one per block (model.empty_cache()); got "
                        f"{type(cache).__name__}")
    lengths = {layer.length for layer in cache}
    if len(lengths) != 1:
        raise ValueError(f"cache: its layers hold different numbers of positions {sorted(lengths)}")
    return cache


def cached_length(cache) -> int:
    """How many positions ``cache`` holds (0 without a cache): the position of the first new token."""
    return 0 if cache is None else cache[0].length


@checked_by_caller  # its callers check the blocks, the input and the cache
def run_blocks(x, blocks, cache=None, records=None, weights=None, dropout=0.0, rng=None):
    """The decoder's blocks on ``x (..., T, d_model)``, the embedded tokens after the ``cache``'s positions.

    Each block is :func:`~attn_helpers.block.transformer_block` (pre-norm) under :func:`decoder_mask`; with a
    ``cache`` (a list of one :class:`~attn_helpers.kv_cache.KVCache` per block) each block's attention reads the
    cached keys and values and appends the new ones. ``records`` (a list) gets each block's record, ``weights``
    (a list) each block's attention weights ``(..., h, T, T_past + T)``. Returns the stream ``(..., T, d_model)``.

    >>> from attn_helpers.block import init_block_params
    >>> blocks = [init_block_params(d_model=8, num_heads=2, rng=n) for n in range(2)]
    >>> weights = []
    >>> run_blocks(np.ones((3, 8), np.float32), blocks, weights=weights).shape, weights[0].shape
    ((3, 8), (2, 3, 3))
    """
    mask = decoder_mask(x.shape[-2], cached_length(cache))  # (T, T_past + T)
    for n, block in enumerate(blocks):
        if records is None and not dropout:
            attention = None if cache is None else cached_attention(block, cache[n])  # notebook 13: read the cache
            x, block_weights = transformer_block(x, block, mask, True, attention)  # (..., T, d_model)
        elif cache is not None:
            raise ValueError("a KV cache is for generation: training (records= or dropout=) runs without one")
        else:  # training: the same block with dropout, keeping what the backward pass reads
            record = None if records is None else {}
            x, block_weights = training_block(x, block, mask, True, record, dropout, rng)  # (..., T, d_model)
        if records is not None:
            records.append(record)
        if weights is not None:
            weights.append(block_weights)
    return x


def generate_tokens(forward, ids, max_new_tokens, choose, *, context_length=None, at_full="jump",
                    use_cache=True, new_cache=None, stop_id=None):
    """Append ``max_new_tokens`` tokens to ``ids``, one at a time; yield ``(logits, token)`` for each.

    ``forward(ids, cache)`` returns the scores ``(len(ids), vocab)`` of the tokens after ``ids``, the positions that
    follow the ``cache``'s (``cache=None``: ``ids`` is the whole window); ``choose(logits)`` picks the next token from
    the last row. With ``use_cache``, ``new_cache()`` gives an empty cache and each step runs only the tokens the
    cache has not seen (the whole prompt first, then one). The model sees at most ``context_length`` tokens
    (None: no limit). When the window is full, ``at_full="jump"`` keeps its last half and, with a cache, refills a new
    cache from it; ``at_full="stop"`` stops. Generation also stops after ``stop_id``.

    >>> counts = lambda ids, cache: np.eye(4)[np.asarray(ids) % 4]   # scores: the next token is (token + 1) mod 4
    >>> [int(token) for _, token in generate_tokens(counts, [0], 5, lambda row: (np.argmax(row) + 1) % 4,
    ...                                             use_cache=False)]
    [1, 2, 3, 0, 1]
    """
    ids = list(ids)
    start = 0 if context_length is None else max(0, len(ids) - context_length)  # the model sees ids[start:]
    cache, fed = (new_cache() if use_cache else None), start
    for _ in range(max_new_tokens):
        if context_length is not None and len(ids) - start >= context_length + 1:  # the window is full
            if at_full == "stop":
                return
            start = len(ids) - max(1, context_length // 2)  # keep its second half
            cache, fed = (new_cache() if use_cache else None), start
        logits = forward(np.array(ids[fed:] if use_cache else ids[start:]), cache)[-1]  # (vocab,)
        fed = len(ids)
        ids.append(int(choose(logits)))
        yield logits, ids[-1]
        if ids[-1] == stop_id:
            return
