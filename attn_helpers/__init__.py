"""attn_helpers: the helper package of the attention notebook series.

The top level is numpy only: importing it never imports matplotlib or ipywidgets.
Figures live in :mod:`attn_helpers.plotting`, widgets in :mod:`attn_helpers.widgets`,
exercise checkers in :mod:`attn_helpers.checks`.
"""

from . import block
from .block import *  # noqa: F403 - the block's public names, listed once: in block.__all__
from .config import SEED, setup_printing
from .core import (
    attention_scores,
    causal_mask,
    cosine_similarity,
    entropy,
    padding_mask,
    scaled_dot_product_attention,
    softmax,
)
from .multihead import merge_heads, multi_head_attention, split_heads
from .positions import (
    alibi_bias,
    alibi_slopes,
    frequencies,
    inverse_permutation,
    learned_positions,
    order_sensitivity,
    permutation_matrix,
    positional_encoding,
    rope,
)

__version__ = "0.1.0"

__all__ = [
    "alibi_bias",
    "alibi_slopes",
    "attention_scores",
    "causal_mask",
    "cosine_similarity",
    "entropy",
    "frequencies",
    "inverse_permutation",
    "learned_positions",
    "merge_heads",
    "multi_head_attention",
    "order_sensitivity",
    "padding_mask",
    "permutation_matrix",
    "positional_encoding",
    "rope",
    "SEED",
    "setup_printing",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]
__all__ += block.__all__  # layer_norm, gelu, feed_forward, the block and its parameter counts


def __getattr__(name):  # imported on first use: progress() reads the checkers' lists, load_tiny_gpt() a model
    if name == "progress":
        from .checks._progress import progress
        return progress
    if name == "load_tiny_gpt":
        from .gpt import load_tiny_gpt
        return load_tiny_gpt
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
