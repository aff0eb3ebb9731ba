"""The transformer block (notebook 10): layer norm, GELU, the feed-forward network, residuals.

``x`` is ``(..., T, d_model)``, one token per row; attention is :func:`~attn_helpers.multihead.multi_head_attention`.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._validate import (
    as_flag,
    as_float_array,
    block_params_input,
    check_mask,
    checked,
    cross_attention_inputs,
    feed_forward_inputs,
    gelu_inputs,
    hook,
    init_block_params_inputs,
    layer_norm_inputs,
    record_input,
)
from .config import SEED
from .core import add_bias, erfc
from .model_size import block_parameter_count, parameter_count  # noqa: F401 - notebook 10 counts a block here
from .multihead import attend_heads, multi_head_attention, project_heads

__all__ = ["layer_norm", "gelu", "feed_forward", "BlockParams", "init_block_params", "transformer_block",
           "residual_stream", "cross_attention", "block_parameter_count", "parameter_count"]  # (the counts: model_size)


@checked(layer_norm_inputs)
def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    """Layer normalization over the last axis: each token's features get mean 0 and variance 1.

        LN(x) = γ ⊙ (x − μ) / √(σ² + ε) + β

    ``x (..., d_model)``; ``gamma``, ``beta (d_model,)`` default to 1 and 0. Per token, not per feature.

    >>> layer_norm(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]], dtype=np.float32)).round(4)
    array([[-1.2247,  0.    ,  1.2247],
           [ 0.    ,  0.    ,  0.    ]], dtype=float32)
    """
    x64 = x.astype(np.float64)  # float64 arithmetic; the result comes back in x's dtype
    mean = x64.mean(axis=-1, keepdims=True)  # (..., 1): one mean per token
    variance = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1): one variance per token
    normalised = (x64 - mean) / np.sqrt(variance + eps)  # (..., d_model): mean 0, variance 1 per token
    out = add_bias(normalised if gamma is None else normalised * gamma, beta)  # (..., d) * (d,) + (d,)
    return out.astype(np.result_type(x, *(v for v in (gamma, beta) if v is not None)), copy=False)


@checked(gelu_inputs)
def gelu(x, approximate=False):
    """Gaussian error linear unit, ``GELU(x) = x Φ(x)`` with ``Φ`` the normal CDF.

        exact:      ½ x (1 + erf(x / √2))
        tanh form:  ½ x (1 + tanh(√(2/π) (x + 0.044715 x³)))

    BERT uses the exact form, GPT-2 the tanh form (``approximate=True``); they differ by < 1e-3.

    >>> gelu(np.array([-1.0, 0.0, 1.0, 3.0], dtype=np.float32)).round(4)
    array([-0.1587,  0.    ,  0.8413,  2.996 ], dtype=float32)
    """
    if approximate:
        with np.errstate(over="ignore"):  # x^3 may overflow to +-inf: tanh(+-inf) = +-1, the right limit
            inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * (x * x * x))  # x * x * x: numpy's x**3 is slow
        return 0.5 * x * (1.0 + np.tanh(inner))
    return x * (0.5 * erfc(-x / math.sqrt(2.0)))  # Phi(x) = (1 + erf(x / sqrt 2)) / 2 = erfc(-x / sqrt 2) / 2


#: The activations :func:`feed_forward` accepts, by name (the names are checked in ``_validate.ACTIVATIONS``).
ACTIVATIONS = {
    "gelu": gelu,
    "gelu_tanh": lambda x: gelu(x, approximate=True),
    "relu": lambda x: np.maximum(x, 0.0),
}


def _feed_forward_inputs(x, W_1, W_2, b_1=None, b_2=None, activation="gelu", record=None):  # (no dropout inside)
    return (*feed_forward_inputs(x, W_1, W_2, b_1, b_2, activation), record_input(record))


@checked(_feed_forward_inputs)
def feed_forward(x, W_1, W_2, b_1=None, b_2=None, activation="gelu", record=None):
    """The position-wise feed-forward network: the same two-layer MLP applied to every token.

        FFN(x) = act(x W_1 + b_1) W_2 + b_2

    ``x (..., T, d_model)``, ``W_1 (d_model, d_ff)``, ``W_2 (d_ff, d_out)``, biases optional;
    ``activation`` is ``"gelu"`` (BERT), ``"gelu_tanh"`` (GPT-2) or ``"relu"`` (the 2017 paper);
    ``record``: a dict that gets ``x``, ``pre`` (before the activation) and ``hidden``, for a backward pass.

    >>> W_1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]])   # d_model = 2, d_ff = 4
    >>> feed_forward([[1.0, -1.0]], W_1, np.ones((4, 2)), activation="relu")   # relu([1, -1, 0, 0])
    array([[1., 1.]])
    """
    pre = add_bias(x @ W_1, b_1)  # (..., T, d_model) @ (d_model, d_ff) -> (..., T, d_ff)
    hidden = ACTIVATIONS[activation](pre)  # (..., T, d_ff)
    if record is not None:
        record.update(x=x, pre=pre, hidden=hidden)
    return add_bias(hidden @ W_2, b_2)  # (..., T, d_ff) @ (d_ff, d_out) -> (..., T, d_out)


@dataclasses.dataclass(frozen=True, eq=False)
class BlockParams:
    """The parameters of one block, checked once: ``W_q .. W_o (d_model, d_model)``, ``W_1 (d_model, d_ff)``,
    ``W_2 (d_ff, d_model)``, optional biases; ``norm_1_*`` before attention, ``norm_2_*`` before the FFN
    (``None``: gamma 1, beta 0).

    >>> params = init_block_params(d_model=8, num_heads=2)
    >>> params.d_model, params.d_ff, params.num_heads, params.num_parameters
    (8, 32, 2, 800)
    """

    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    W_1: np.ndarray
    W_2: np.ndarray
    num_heads: int
    norm_1_gamma: np.ndarray | None = None
    norm_1_beta: np.ndarray | None = None
    norm_2_gamma: np.ndarray | None = None
    norm_2_beta: np.ndarray | None = None
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    b_o: np.ndarray | None = None
    b_1: np.ndarray | None = None
    b_2: np.ndarray | None = None
    eps: float = 1e-5
    activation: str = "gelu"

    def __post_init__(self):
        block_params_input(self)  # every array's shape, checked once (attn_helpers._validate)

    @property
    def d_model(self) -> int:
        return self.W_q.shape[0]

    @property
    def key_width(self) -> int:  # the width of W_k and W_v (narrower in notebook 13's grouped-query blocks)
        return self.W_q.shape[0]

    @property
    def d_ff(self) -> int:
        return self.W_1.shape[1]

    @property
    def num_parameters(self) -> int:
        return sum(value.size for value in vars(self).values() if isinstance(value, np.ndarray))

    #: A hook: ``rotate(heads, positions)`` turns queries and keys by position (RoPE), None: no rotation.
    rotate = None

    # The block's four steps, on inputs already checked (by transformer_block):
    def norm_1(self, x):
        return layer_norm(x, self.norm_1_gamma, self.norm_1_beta, self.eps)

    def norm_2(self, x):
        return layer_norm(x, self.norm_2_gamma, self.norm_2_beta, self.eps)

    @property
    def biases(self):
        """``(b_q, b_k, b_v, b_o)``, or None when the block has none (GPT-2 has them, Llama not)."""
        biases = (self.b_q, self.b_k, self.b_v, self.b_o)
        return None if all(b is None for b in biases) else biases

    def attention(self, x, mask=None, kv_cache=None):
        return multi_head_attention(x, self.W_q, self.W_k, self.W_v, self.W_o, self.num_heads, mask, self.biases,
                                    kv_cache, self.rotate)

    def feed_forward(self, x, record=None):
        return feed_forward(x, self.W_1, self.W_2, self.b_1, self.b_2, self.activation, record)


@checked(init_block_params_inputs)
def init_block_params(d_model, num_heads, d_ff=None, rng=None, bias=False, dtype=np.float32):
    """Random parameters of one block: weights ``N(0, 1 / d_in)``, gammas 1, betas and biases 0.

    ``d_ff`` defaults to ``4 * d_model``; ``rng`` a Generator or a seed (default ``SEED``); ``bias=True``
    adds zero biases.

    >>> params = init_block_params(d_model=6, num_heads=2, rng=np.random.default_rng(0), bias=True)
    >>> params.W_q.shape, params.W_1.shape, params.b_1.shape, params.W_q.dtype
    ((6, 6), (6, 24), (24,), dtype('float32'))
    """
    d_ff = 4 * d_model if d_ff is None else d_ff
    rng = np.random.default_rng(SEED if rng is None else rng)  # a Generator is used as it is
    shapes = {"W_q": (d_model, d_model), "W_k": (d_model, d_model), "W_v": (d_model, d_model),
              "W_o": (d_model, d_model), "W_1": (d_model, d_ff), "W_2": (d_ff, d_model)}  # (d_in, d_out) each
    # std 1/sqrt(d_in): x @ W keeps the scale of x
    weights = {name: (rng.standard_normal(shape) / math.sqrt(shape[0])).astype(dtype) for name, shape in shapes.items()}
    biases = {f"b_{name[2:]}": np.zeros(shape[1], dtype) for name, shape in shapes.items()} if bias else {}
    return BlockParams(**weights, **biases, num_heads=num_heads,
                       norm_1_gamma=np.ones(d_model, dtype), norm_1_beta=np.zeros(d_model, dtype),
                       norm_2_gamma=np.ones(d_model, dtype), norm_2_beta=np.zeros(d_model, dtype))


def _block_inputs(x, params, mask=None, norm_first=True, attention=None):
    x, params = block_input(x, params)
    attention = hook(attention, "attention", "attention(x, mask) -> (out, weights)")
    mask = check_mask(mask, x.shape[-2], x.shape[-2], "(..., T, T)") if attention is None else mask
    return x, params, mask, as_flag(norm_first, "norm_first"), attention


def block_input(x, params):
    """``x`` as a float array of shape ``(..., T, d_model)`` for the block ``params``, or a named error."""
    if not isinstance(params, BlockParams):
        raise TypeError(f"params must be a BlockParams (see init_block_params); got {type(params).__name__}")
    x = as_float_array(x, "x", min_ndim=2)
    if x.shape[-1] != params.d_model:
        raise ValueError(f"x has shape {x.shape}; expected (..., T, {params.d_model}) to match the block's d_model")
    return x, params


@checked(_block_inputs)
def transformer_block(x, params, mask=None, norm_first=True, attention=None):
    """One transformer block: attention, then the feed-forward network, each inside a residual connection.

        x ← x + MHA(LN₁(x)),    x ← x + FFN(LN₂(x))

    Pre-norm (GPT-2); ``norm_first=False`` is post-norm (2017, BERT): ``x ← LN₁(x + MHA(x))``, ... ``x (..., T,
    d_model)``, ``mask`` broadcastable to ``(..., T, T)``; returns ``out`` (as ``x``) and weights ``(..., h, T, T)``.
    ``attention(x, mask)`` replaces the block's own (a KV cache's, notebook 13). Training runs these same steps
    with dropout and a record of what the backward pass reads: :func:`~attn_helpers.backprop.training_block`.

    >>> [a.shape for a in transformer_block(np.ones((5, 8)), init_block_params(d_model=8, num_heads=2))]
    [(5, 8), (2, 5, 5)]
    """
    p, attention = params, attention or params.attention
    if not norm_first:  # post-norm
        attended, weights = attention(x, mask)
        x = p.norm_1(x + attended)
        return p.norm_2(x + p.feed_forward(x)), weights
    attended, weights = attention(p.norm_1(x), mask)
    x = x + attended  # (..., T, d_model): the residual stream
    x = x + p.feed_forward(p.norm_2(x))
    return x, weights


def _stream_inputs(x, blocks, mask=None, norm_first=True, residual=True):
    blocks = [blocks] if isinstance(blocks, BlockParams) else list(blocks)
    if not blocks:
        raise ValueError("blocks is empty; expected a sequence of BlockParams (see init_block_params)")
    x, _, mask, norm_first, *_ = [_block_inputs(x, params, mask, norm_first) for params in blocks][0]
    return x, blocks, mask, norm_first, as_flag(residual, "residual")


@checked(_stream_inputs)
def residual_stream(x, blocks, mask=None, norm_first=True, residual=True):
    """Run a stack of blocks; return the residual stream before and after each one, ``(N + 1, ..., T, d_model)``.

    ``states[0]`` is ``x``; ``residual=False`` removes every ``x +``, to see what residual connections do.

    >>> blocks = [init_block_params(8, 2, rng=seed) for seed in range(3)]
    >>> residual_stream(np.ones((4, 8)), blocks).shape
    (4, 4, 8)
    """
    states = [x]
    for p in blocks:
        if residual:
            x = transformer_block(x, p, mask, norm_first)[0]  # (..., T, d_model)
        elif norm_first:  # the block with both ``x +`` removed
            x = p.feed_forward(p.norm_2(p.attention(p.norm_1(x), mask)[0]))
        else:
            x = p.norm_2(p.feed_forward(p.norm_1(p.attention(x, mask)[0])))
        states.append(x)
    return np.stack(states)


@checked(cross_attention_inputs)
def cross_attention(x, memory, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None, b_o=None):
    """Multi-head cross-attention: queries from ``x`` (the decoder), keys and values from ``memory`` (the encoder).

    Multi-head attention whose keys and values come from another sequence: ``memory (..., T_k, d_memory)``,
    ``W_k, W_v (d_memory, h d_h)``, weights ``(..., h, T_q, T_k)``.

    >>> rng = np.random.default_rng(0)
    >>> target, source, (W_q, W_k, W_v, W_o) = np.ones((3, 4)), np.ones((5, 4)), rng.standard_normal((4, 4, 4))
    >>> out, weights = cross_attention(target, source, W_q, W_k, W_v, W_o, num_heads=2)
    >>> out.shape, weights.shape
    ((3, 4), (2, 3, 5))
    """
    queries = project_heads(x, W_q, b_q, num_heads)  # (..., T_q, d_model) -> (..., h, T_q, d_h): the decoder's
    keys = project_heads(memory, W_k, b_k, num_heads)  # (..., T_k, d_memory) -> (..., h, T_k, d_h): the encoder's
    values = project_heads(memory, W_v, b_v, num_heads)  # (..., h, T_k, d_v)
    return attend_heads(queries, keys, values, W_o, b_o, mask)  # steps 3 and 4 of notebook 08's attention
