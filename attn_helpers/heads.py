r"""One head of a block, on its own (notebooks 12 and 16): the rows of ``W_o`` it writes through, its values, the
block without it.

Multi-head attention concatenates the heads' context vectors and multiplies by ``W_o``: head ``h``'s ``d_h``
numbers meet only rows ``h d_h .. (h + 1) d_h - 1`` of ``W_o``, so those rows are everything the head adds to the
stream. A block here is anything with ``W_v``, ``b_v``, ``W_o``, ``b_o``, ``d_model``, ``num_heads`` (and
``num_kv_heads`` when key/value heads are shared): notebook 10's blocks, MiniLM's, SmolLM2's.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .core import add_bias
from .kv_cache import repeat_kv_heads
from .multihead import project_heads

__all__ = ["head_rows", "W_o_by_head", "head_values", "head_value_lengths", "ablate_heads"]


def head_rows(block, head) -> slice:
    """The rows of ``W_o`` that carry head ``head``'s output: ``head * d_h`` up to ``(head + 1) * d_h``.

    >>> from attn_helpers.block import init_block_params
    >>> head_rows(init_block_params(d_model=8, num_heads=4), 2)   # d_h = 8 / 4 = 2
    slice(4, 6, None)
    """
    head_dim = block.d_model // block.num_heads
    if not 0 <= int(head) < block.num_heads:
        raise ValueError(f"head must be in 0..{block.num_heads - 1}; got {head}")
    return slice(int(head) * head_dim, (int(head) + 1) * head_dim)


def W_o_by_head(block):
    """``W_o`` cut into each head's rows: ``(h, d_h, d_model)``; ``W_o_by_head(block)[h]`` is
    ``block.W_o[head_rows(block, h)]``."""
    return block.W_o.reshape(block.num_heads, -1, block.d_model)  # (h d_h, d_model) -> (h, d_h, d_model)


def head_values(block, x):
    """Each query head's values of ``x (..., T, d_model)`` (what the block's attention reads): ``(..., h, T, d_h)``;
    key/value heads shared by a group of query heads are repeated for each."""
    values = project_heads(x, block.W_v, block.b_v, getattr(block, "num_kv_heads", block.num_heads))  # (..., h_kv,
    return repeat_kv_heads(values, block.num_heads)  # T, d_h) -> (..., h, T, d_h)


def head_value_lengths(block, x):
    r"""How far each head could move the stream from each token: :math:`\lVert v_j W_o^{(h)} \rVert`, ``(..., h, T)``.

    ``x (..., T, d_model)``: what the block's attention reads (``record["normed_1"]`` of a pre-norm block, the
    block's input in MiniLM). Notebook 12's weighted value norms: the weight :math:`w_{ij}` is half of the story,
    the length of what head ``h`` writes from token ``j`` the other half.

    >>> from attn_helpers.block import init_block_params
    >>> head_value_lengths(init_block_params(d_model=8, num_heads=4), np.ones((3, 8))).shape
    (4, 3)
    """
    moved = head_values(block, x) @ W_o_by_head(block)  # (..., h, T, d_h) @ (h, d_h, d_model) -> (..., h, T, d_model)
    return np.linalg.norm(moved, axis=-1)  # (..., h, T)


def ablate_heads(block, heads, means=None):
    """A copy of ``block`` without the heads ``heads``: their rows of ``W_o`` are 0 (zero ablation).

    With ``means`` (one context vector ``(d_h,)`` per head of ``heads``), each head's output is replaced by that
    constant instead (mean ablation): ``mean @ W_o[rows]`` is added to the bias ``b_o``. ``block`` is not changed.

    >>> from attn_helpers.block import init_block_params
    >>> block = init_block_params(d_model=8, num_heads=4)
    >>> bool(ablate_heads(block, [1]).W_o[2:4].any()), bool(block.W_o[2:4].any())
    (False, True)
    """
    W_o, b_o = block.W_o.copy(), block.b_o
    for n, head in enumerate(heads):
        rows = head_rows(block, head)
        if means is not None:
            b_o = add_bias(np.asarray(means[n], dtype=W_o.dtype) @ W_o[rows], b_o)  # (d_h,) @ (d_h, d) -> (d,)
        W_o[rows] = 0
    return dataclasses.replace(block, W_o=W_o, b_o=b_o)
