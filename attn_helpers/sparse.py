r"""Sparse attention (notebook 17): each query reads only ``k`` keys, chosen by their scores (an oracle), by a cheap
low-dimensional **indexer** (DeepSeek-V3.2's lightning indexer, in miniature), or by position (a window).

.. math:: \mathrm{keep}_{ij} = \big[s_{ij} \text{ is among the } k \text{ largest of row } i\big]

>>> top_k_mask(np.array([[0.1, 0.9, 0.5, -1.0]]), 2).astype(int)
array([[0, 1, 1, 0]])
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import as_float_array, as_positive_int, check_mask, checked
from .core import scaled_dot_product_attention
from .kv_cache import repeat_kv_heads
from .multihead import merge_heads, project_heads

__all__ = ["top_k_mask", "indexer_projection", "top_k_attention", "SELECTORS"]


def _top_k_inputs(scores, k, mask=None):
    scores = as_float_array(scores, "scores", min_ndim=2, allow_neg_inf=True)
    return scores, as_positive_int(k, "k"), check_mask(mask, scores.shape[-2], scores.shape[-1])


@checked(_top_k_inputs)
def top_k_mask(scores, k, mask=None):
    """Boolean mask of the ``k`` largest scores of each row (among those ``mask`` allows); a row with fewer than
    ``k`` allowed keys keeps them all. ``scores (..., T_q, T_k)`` -> ``(..., T_q, T_k)``."""
    allowed = np.ones(scores.shape, bool) if mask is None else np.broadcast_to(mask, scores.shape)
    masked = np.where(allowed, scores, -np.inf)  # a key that may not be seen never makes the top k
    if k >= scores.shape[-1]:
        return allowed.copy()
    kth = np.partition(masked, -k, axis=-1)[..., [-k]]  # (..., T_q, 1): the k-th largest score of each row
    return allowed & (masked >= kth)


def indexer_projection(keys, rank):
    """The indexer's ``rank`` directions for keys ``(..., T, d_h)``: the leading right singular vectors of the
    keys, ``(..., d_h, rank)``. Scoring ``(q P)(k P)^T`` costs ``rank / d_h`` of the full scores."""
    keys = as_float_array(keys, "keys", min_ndim=2)
    rank = as_positive_int(rank, "rank")
    return np.swapaxes(np.linalg.svd(keys, full_matrices=False)[2], -1, -2)[..., :rank]  # (..., d_h, rank)


#: How a query picks its keys: by the true scores, by an indexer of ``rank`` dimensions, or the last ``k``.
SELECTORS = ("oracle top-k", "indexer top-k", "window")


def top_k_attention(block, k, how="oracle top-k", rank=8):
    """The attention of a grouped-query ``block`` (SmolLM2's) where each query of each head reads only ``k`` keys,
    picked by ``how`` (one of :data:`SELECTORS`): pass it to :func:`~attn_helpers.windows.masked_logits` as
    ``attention=lambda block: top_k_attention(block, k)``. The chosen keys are attended with their exact scores."""
    k, rank = as_positive_int(k, "k"), as_positive_int(rank, "rank")
    if how not in SELECTORS:
        raise ValueError(f"how={how!r} is not one of {SELECTORS}")
    h, h_kv = block.num_heads, block.num_kv_heads

    def attention(x, mask=None, record=None, dropout=0.0, rng=None):
        positions = np.arange(x.shape[-2])
        queries = block.rotate(project_heads(x, block.W_q, block.b_q, h), positions)  # (..., h, T, d_h)
        keys = block.rotate(project_heads(x, block.W_k, block.b_k, h_kv), positions)  # (..., h_kv, T, d_h)
        values = project_heads(x, block.W_v, block.b_v, h_kv)  # (..., h_kv, T, d_h)
        keys, values = repeat_kv_heads(keys, h), repeat_kv_heads(values, h)  # (..., h, T, d_h)
        causal = np.tri(x.shape[-2], dtype=bool) if mask is None else mask[..., None, :, :]
        if how == "window":
            keep = causal & ~np.tri(x.shape[-2], k=-k, dtype=bool)  # j > i - k: the k last keys
        else:
            if how == "oracle top-k":
                scores = queries @ np.swapaxes(keys, -1, -2)  # (..., h, T, d_h) @ (..., h, d_h, T) -> (h, T, T)
            else:
                P = indexer_projection(keys, rank)  # (..., h, d_h, rank): the indexer's few directions
                scores = (queries @ P) @ np.swapaxes(keys @ P, -1, -2)  # (h, T, rank) @ (h, rank, T) -> (h, T, T)
            keep = top_k_mask(scores, k, causal)
        context, weights = scaled_dot_product_attention(queries, keys, values, keep, 1 / math.sqrt(queries.shape[-1]))
        out = merge_heads(context) @ block.W_o  # (..., T, h d_h) @ (h d_h, d_model) -> (..., T, d_model)
        return out if block.b_o is None else out + block.b_o, weights
    return attention
