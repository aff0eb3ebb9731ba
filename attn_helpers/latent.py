r"""Multi-head latent attention (MLA, DeepSeek-V2 and V3; notebook 17): cache one small **latent** per token instead
of every head's keys and values.

Each token is squeezed into a latent :math:`c = x W_{down}` of width ``d_c``; each head up-projects it into its key
and value, :math:`k^{(i)} = c\, W_{uk}^{(i)}`, :math:`v^{(i)} = c\, W_{uv}^{(i)}`. Because a score is a dot product,
the up-projection can move to the query side (the **absorption**):

.. math:: q \cdot (c\, W_{uk}) = (q\, W_{uk}^\top) \cdot c

so the cache holds only ``c`` (``d_c`` numbers per token and layer). RoPE turns a key by its position *between*
``W_uk`` and the query, which breaks the absorption: MLA adds a small **decoupled** RoPE key ``x W_kr``, shared by
the heads and cached beside ``c``.

>>> rng = np.random.default_rng(0)
>>> p = init_latent_params(d_model=8, num_heads=2, d_c=3, d_rope=2, rng=rng)
>>> x = rng.standard_normal((4, 8))
>>> out, weights = latent_attention(x, **p)
>>> bool(np.allclose(absorbed_latent_attention(x, **p)[0], out))
True
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import as_float_array, as_positive_int, check_mask, checked
from .core import scaled_dot_product_attention, softmax
from .multihead import merge_heads, project_heads
from .positions import rope

__all__ = ["init_latent_params", "latent_attention", "absorbed_latent_attention", "gqa_as_latent",
           "latent_block_attention", "latent_cache_table"]


def init_latent_params(d_model, num_heads, d_c, d_rope=0, head_dim=None, rng=None):
    """Random MLA weights (scaled as notebook 05's): ``W_q (d_model, h d_h)``, ``W_down (d_model, d_c)``, ``W_uk``
    and ``W_uv (h, d_c, d_h)``, ``W_o (h d_h, d_model)``, and with ``d_rope > 0`` the decoupled RoPE weights
    ``W_qr (d_model, h d_rope)`` and ``W_kr (d_model, d_rope)`` (``None`` otherwise)."""
    d_model, num_heads, d_c = (as_positive_int(n, name) for name, n in
                               (("d_model", d_model), ("num_heads", num_heads), ("d_c", d_c)))
    d_rope = as_positive_int(d_rope, "d_rope", allow_zero=True)
    head_dim = d_model // num_heads if head_dim is None else as_positive_int(head_dim, "head_dim")
    rng = np.random.default_rng(0) if rng is None else rng

    def weight(*shape):
        return rng.standard_normal(shape) / math.sqrt(shape[-2])

    return {"W_q": weight(d_model, num_heads * head_dim), "W_down": weight(d_model, d_c),
            "W_uk": weight(num_heads, d_c, head_dim), "W_uv": weight(num_heads, d_c, head_dim),
            "W_o": weight(num_heads * head_dim, d_model), "num_heads": num_heads,
            "W_qr": weight(d_model, num_heads * d_rope) if d_rope else None,
            "W_kr": weight(d_model, d_rope) if d_rope else None}


def _latent_inputs(x, W_q, W_down, W_uk, W_uv, W_o, num_heads, mask=None, W_qr=None, W_kr=None, rotate=None):
    x = as_float_array(x, "x", min_ndim=2)
    num_heads = as_positive_int(num_heads, "num_heads")
    W_q, W_down, W_uk, W_uv, W_o = (as_float_array(w, name, min_ndim=n) for name, w, n in (
        ("W_q", W_q, 2), ("W_down", W_down, 2), ("W_uk", W_uk, 3), ("W_uv", W_uv, 3), ("W_o", W_o, 2)))
    d_model, d_c = x.shape[-1], W_down.shape[-1]
    expected = {"W_q": (d_model, None), "W_down": (d_model, None), "W_uk": (num_heads, d_c, None),
                "W_uv": (num_heads, d_c, None), "W_o": (W_uv.shape[-1] * num_heads, None)}
    for name, w in (("W_q", W_q), ("W_down", W_down), ("W_uk", W_uk), ("W_uv", W_uv), ("W_o", W_o)):
        want = expected[name]
        if w.ndim != len(want) or any(e is not None and e != s for e, s in zip(want, w.shape)):
            raise ValueError(f"{name} has shape {w.shape}; expected {tuple('*' if e is None else e for e in want)} "
                             f"for x {x.shape}, num_heads={num_heads}, d_c={d_c}")
    if W_q.shape[1] != num_heads * W_uk.shape[-1]:
        raise ValueError(f"W_q has shape {W_q.shape}; expected ({d_model}, num_heads * d_h) = "
                         f"({d_model}, {num_heads * W_uk.shape[-1]}), d_h from W_uk {W_uk.shape}")
    if (W_qr is None) != (W_kr is None):
        raise ValueError("W_qr and W_kr come together (the decoupled RoPE query and key), or neither")
    if W_qr is not None:
        W_qr, W_kr = as_float_array(W_qr, "W_qr", min_ndim=2), as_float_array(W_kr, "W_kr", min_ndim=2)
        if W_kr.shape[0] != d_model or W_qr.shape != (d_model, num_heads * W_kr.shape[1]) or W_kr.shape[1] % 2:
            raise ValueError(f"W_qr {W_qr.shape} and W_kr {W_kr.shape}: expected ({d_model}, num_heads * d_rope) and "
                             f"({d_model}, d_rope) with d_rope even")
    if rotate is not None and not callable(rotate):
        raise TypeError(f"rotate must be a function rotate(heads, positions) or None; got {type(rotate).__name__}")
    mask = check_mask(mask, x.shape[-2], x.shape[-2], "(..., T, T)")
    return x, W_q, W_down, W_uk, W_uv, W_o, num_heads, mask, W_qr, W_kr, rotate


def _rope_parts(x, W_qr, W_kr, num_heads):
    """The decoupled RoPE query ``(..., h, T, d_rope)`` and key ``(..., 1, T, d_rope)``, turned by position."""
    positions = np.arange(x.shape[-2])
    return (rope(project_heads(x, W_qr, None, num_heads), positions),  # (..., T, d) @ (d, h d_r) -> (..., h, T, d_r)
            rope(project_heads(x, W_kr, None, 1), positions))  # (..., T, d) @ (d, d_r) -> (..., 1, T, d_r): shared


@checked(_latent_inputs)
def latent_attention(x, W_q, W_down, W_uk, W_uv, W_o, num_heads, mask=None, W_qr=None, W_kr=None, rotate=None):
    r"""MLA in its **expanded** form: up-project the latent into every head's keys and values, then attend.

    ``x (..., T, d_model)``; returns ``(out (..., T, d_model), weights (..., h, T, T))``. ``W_qr``, ``W_kr``: the
    decoupled RoPE query and key, concatenated to each head's query and key; ``rotate(heads, positions)``: turn
    the up-projected queries and keys instead (what grouped-query attention with RoPE does, :func:`gqa_as_latent`).
    """
    latent = x @ W_down  # (..., T, d_model) @ (d_model, d_c) -> (..., T, d_c): what the cache holds
    queries = project_heads(x, W_q, None, num_heads)  # (..., h, T, d_h)
    keys = latent[..., None, :, :] @ W_uk  # (..., 1, T, d_c) @ (h, d_c, d_h) -> (..., h, T, d_h)
    values = latent[..., None, :, :] @ W_uv  # (..., 1, T, d_c) @ (h, d_c, d_v) -> (..., h, T, d_v)
    if rotate is not None:
        positions = np.arange(x.shape[-2])
        queries, keys = rotate(queries, positions), rotate(keys, positions)
    if W_qr is not None:  # each head's key gets the shared RoPE key as extra features
        q_rope, k_rope = _rope_parts(x, W_qr, W_kr, num_heads)
        queries = np.concatenate([queries, q_rope], axis=-1)  # (..., h, T, d_h + d_r)
        keys = np.concatenate([keys, np.broadcast_to(k_rope, (*keys.shape[:-1], k_rope.shape[-1]))], axis=-1)
    mask = None if mask is None else mask[..., None, :, :]  # (..., 1, T, T): the same for every head
    context, weights = scaled_dot_product_attention(queries, keys, values, mask)
    return merge_heads(context) @ W_o, weights  # (..., T, h d_v) @ (h d_v, d_model) -> (..., T, d_model)


@checked(_latent_inputs)
def absorbed_latent_attention(x, W_q, W_down, W_uk, W_uv, W_o, num_heads, mask=None, W_qr=None, W_kr=None,
                              rotate=None):
    r"""MLA in its **absorbed** form: keys and values are never built; each query is turned into latent space.

    .. math:: s_{ij} = (q_i W_{uk}^\top) \cdot c_j + q^{R}_i \cdot k^{R}_j, \qquad
              \mathrm{out}_i = \Big(\sum_j w_{ij}\, c_j\Big) W_{uv}\, W_o

    The same result as :func:`latent_attention`; the cache holds ``c`` (and the RoPE key) only. ``rotate`` is
    refused: a rotation between ``W_uk`` and the query cannot be absorbed (use ``W_qr``, ``W_kr``).
    """
    if rotate is not None:
        raise ValueError("rotate cannot be absorbed: RoPE turns the key by its position between W_uk and the query, "
                         "so q W_uk^T would change with every key; give the decoupled W_qr and W_kr instead")
    latent = x @ W_down  # (..., T, d_c): the cache
    queries = project_heads(x, W_q, None, num_heads)  # (..., h, T, d_h)
    absorbed = queries @ np.swapaxes(W_uk, -1, -2)  # (..., h, T, d_h) @ (h, d_h, d_c) -> (..., h, T, d_c)
    scores = absorbed @ np.swapaxes(latent, -1, -2)[..., None, :, :]  # (..., h, T, d_c) @ (..., 1, d_c, T) -> (h, T, T)
    width = W_uk.shape[-1]
    if W_qr is not None:
        q_rope, k_rope = _rope_parts(x, W_qr, W_kr, num_heads)
        scores = scores + q_rope @ np.swapaxes(k_rope, -1, -2)  # (..., h, T, d_r) @ (..., 1, d_r, T) -> (h, T, T)
        width += W_kr.shape[-1]
    if mask is not None:
        scores = np.where(mask[..., None, :, :], scores, -np.inf)  # True = may attend
    weights = softmax(scores / math.sqrt(width))  # (..., h, T, T): stable, a fully masked row all zero
    mixed = weights @ latent[..., None, :, :]  # (..., h, T, T) @ (..., 1, T, d_c) -> (..., h, T, d_c)
    context = mixed @ W_uv  # (..., h, T, d_c) @ (h, d_c, d_v) -> (..., h, T, d_v): up-projected once per query
    return merge_heads(context) @ W_o, weights  # (..., T, h d_v) @ (h d_v, d_model) -> (..., T, d_model)


def gqa_as_latent(block):
    """A grouped-query block's attention as latent attention: ``W_down = [W_k | W_v]`` (``d_c = 2 h_kv d_h``) and
    ``W_uk``, ``W_uv`` that pick, for each query head, the columns of its key/value head. Returns the keyword
    arguments of :func:`latent_attention` (with the block's ``rotate``)."""
    from .block import BlockParams

    if not isinstance(block, BlockParams):
        raise TypeError(f"block must be a block's parameters (BlockParams, GroupedQueryParams, model.blocks[n]); got "
                        f"{type(block).__name__}")
    h, h_kv = block.num_heads, getattr(block, "num_kv_heads", block.num_heads)
    d_h = block.W_q.shape[1] // h
    W_down = np.concatenate([block.W_k, block.W_v], axis=1)  # (d_model, 2 h_kv d_h): keys' then values' columns
    W_uk = np.zeros((h, W_down.shape[1], d_h), W_down.dtype)
    W_uv = np.zeros_like(W_uk)
    for i in range(h):
        g = i * h_kv // h  # the key/value head that query head i shares (notebook 13)
        W_uk[i, g * d_h:(g + 1) * d_h] = np.eye(d_h)  # picks key head g from the latent
        W_uv[i, (h_kv + g) * d_h:(h_kv + g + 1) * d_h] = np.eye(d_h)  # picks value head g
    return {"W_q": block.W_q, "W_down": W_down, "W_uk": W_uk, "W_uv": W_uv, "W_o": block.W_o, "num_heads": h,
            "rotate": block.rotate}


def latent_block_attention(block):
    """The attention of ``block`` run as latent attention (:func:`gqa_as_latent`): pass it to
    :func:`~attn_helpers.windows.masked_logits` as ``attention=``."""
    latent = gqa_as_latent(block)

    def attention(x, mask=None, record=None, dropout=0.0, rng=None):
        return latent_attention(x, mask=mask, **latent)
    return attention


def latent_cache_table(config):
    """Cache per token and layer (numbers) of a published MLA configuration against multi-head and grouped-query
    attention of the same heads: ``{"MHA": ..., "GQA (h_kv = 8)": ..., "MLA": ...}``.

    ``config``: ``num_heads``, ``qk_nope_head_dim``, ``qk_rope_head_dim``, ``v_head_dim``, ``kv_lora_rank``.
    """
    needed = ("num_heads", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "kv_lora_rank")
    missing = [key for key in needed if key not in getattr(config, "keys", lambda: ())()]
    if missing:
        raise ValueError(f"config lacks {', '.join(missing)}: give an MLA configuration such as "
                         "ATTENTION_VARIANTS['DeepSeek-V3'] (attn_helpers.published)")
    h, key, value = (as_positive_int(config[k], k) for k in ("num_heads", "qk_nope_head_dim", "v_head_dim"))
    key += as_positive_int(config["qk_rope_head_dim"], "qk_rope_head_dim")
    return {"MHA": h * (key + value), "GQA (h_kv = 8)": 8 * (key + value),
            "MLA": config["kv_lora_rank"] + config["qk_rope_head_dim"]}
