r"""From GPT-2 to Llama (notebook 15): RMSNorm, SiLU, the SwiGLU feed-forward network, a Llama's parameter count.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ._validate import as_float_array, as_positive_int, check_bias, checked
from .published import CONFIG_COLUMNS, PUBLISHED_CONFIGS

__all__ = ["LLAMA2_7B", "rms_norm", "silu", "swiglu_ffn", "llama_parameter_count"]

#: Llama 2 7B's published configuration (a row of :data:`~attn_helpers.published.PUBLISHED_CONFIGS`).
LLAMA2_7B = PUBLISHED_CONFIGS["Llama 2 7B"]


def _rms_norm_inputs(x, gamma=None, eps=1e-6):
    x = as_float_array(x, "x")
    return x, check_bias("gamma", gamma, x.shape[-1]), eps


@checked(_rms_norm_inputs)
def rms_norm(x, gamma=None, eps=1e-6):
    r"""RMSNorm (Zhang & Sennrich 2019, used by Llama): divide each token by its root mean square.

    .. math:: \mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\frac1d \sum_c x_c^2 + \varepsilon}}

    Layer norm without the mean: nothing is subtracted and there is no ``beta``. ``x (..., d)``, ``gamma (d,)``.

    >>> rms_norm(np.array([[3.0, -4.0]])).round(4)   # the root mean square of (3, -4) is sqrt(12.5)
    array([[ 0.8485, -1.1314]])
    """
    out = x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # (..., d): root mean square 1 per token
    return out if gamma is None else out * gamma


def silu(x):
    r"""SiLU (swish): :math:`x\,\sigma(x)`, a smooth ReLU like GELU.

    >>> silu(np.array([-1.0, 0.0, 1.0])).round(4)
    array([-0.2689,  0.    ,  0.7311])
    """
    x = as_float_array(x, "x", min_ndim=0)
    with np.errstate(over="ignore"):  # exp(-x) overflows for very negative x: x / inf = -0, the right limit
        return x / (1.0 + np.exp(-x))


def swiglu_ffn(x, W_gate, W_up, W_down):
    r"""Llama's feed-forward network (Shazeer 2020): a SiLU-gated product of two projections, then down.

    .. math:: \mathrm{FFN}(x) = \left(\mathrm{SiLU}(x W_{gate}) \odot x W_{up}\right) W_{down}

    Three matrices instead of two and no biases; Llama keeps the parameter count of a
    ``4 d_model`` GELU network by making ``d_ff`` about ``8/3 d_model`` (11008 for 4096).

    >>> x = np.ones((2, 4))
    >>> swiglu_ffn(x, np.ones((4, 6)), np.ones((4, 6)), np.ones((6, 4))).shape
    (2, 4)
    """
    tokens = x.reshape(-1, x.shape[-1])  # (N, d_model): every token of every sequence as one matrix (numpy's
    # product of a stack of matrices with one matrix is several times slower than this 2-D product)
    gate = silu(tokens @ W_gate)  # (N, d_model) @ (d_model, d_ff) -> (N, d_ff)
    up = tokens @ W_up  # (N, d_ff)
    return ((gate * up) @ W_down).reshape(*x.shape[:-1], -1)  # (N, d_ff) @ (d_ff, d_model) -> (..., T, d_model)


_LLAMA_KEYS = ("num_layers", "d_model", "num_heads", "d_ff", "vocab_size")  # required; num_kv_heads optional


def llama_parameter_count(config):
    """Parameters of a Llama-style model from its configuration: no biases, RMSNorm, SwiGLU, untied output.

    Per layer: ``W_q, W_o`` (``d x d``), ``W_k, W_v`` (``d x h_kv d_h``), three SwiGLU matrices
    (``d x d_ff``) and two RMSNorm gains; then the token embeddings, one final RMSNorm and
    an output layer of its own. RoPE has no parameters. ``config``: ``num_layers``, ``d_model``, ``num_heads``,
    ``d_ff``, ``vocab_size``, optionally ``num_kv_heads`` (default ``num_heads``), ``tied_embeddings`` (default
    ``False``; ``True``: the embeddings are the output layer too, as in GPT-2 and SmolLM2, so it counts 0), and
    the other columns of :data:`PUBLISHED_CONFIGS` (``rope_base`` and ``eps`` too: they count no parameters).

    >>> llama_parameter_count(LLAMA2_7B)["total"]
    6738415616
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (a dict) with the keys {list(_LLAMA_KEYS)}; got "
                        f"{type(config).__name__}")
    known = {*_LLAMA_KEYS, "num_kv_heads", "tied_embeddings", "rope_base", "eps", *CONFIG_COLUMNS, "source"}
    unknown, missing = sorted(set(config) - known), [key for key in _LLAMA_KEYS if key not in config]
    if unknown or missing:
        raise ValueError(f"config: unknown keys {unknown}, missing keys {missing}; the keys are {sorted(known)}")
    layers, d, heads, d_ff, vocab = (as_positive_int(config[key], f"config[{key!r}]") for key in _LLAMA_KEYS)
    kv_heads = as_positive_int(config.get("num_kv_heads", heads), "config['num_kv_heads']")
    if d % heads or heads % kv_heads:
        raise ValueError(f"config: num_heads={heads} must divide d_model={d}, and num_kv_heads={kv_heads} must "
                         "divide num_heads")
    kv_width = d // heads * kv_heads
    attention = 2 * d * d + 2 * d * kv_width  # W_q, W_o; W_k, W_v (narrower with grouped-query attention)
    feed_forward_ = 3 * d * d_ff  # W_gate, W_up, W_down
    counts = {"token_embeddings": vocab * d, "attention": layers * attention, "feed_forward": layers * feed_forward_,
              "norms": layers * 2 * d + d, "output_head": 0 if config.get("tied_embeddings") else vocab * d}
    counts["total"] = sum(counts.values())
    return counts
