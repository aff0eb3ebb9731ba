"""The transformer block in numpy: layer norm, GELU, the feed-forward network, residuals.

One block (notebook 10) is two sub-layers, each wrapped in a residual connection:

* pre-norm (GPT-2 and most modern models): ``x + MHA(LN(x))``, then ``x + FFN(LN(x))``;
* post-norm (the original paper, BERT): ``LN(x + MHA(x))``, then ``LN(x + FFN(x))``.

Attention itself is :func:`~attn_helpers.multihead.multi_head_attention` (self-attention)
and :func:`cross_attention` (queries from one sequence, keys and values from another),
both built on :func:`~attn_helpers.core.scaled_dot_product_attention`. Shapes follow the
series: ``x`` is ``(..., T, d_model)``, one token per row. float32 in, float32 out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np

from ._validate import (
    as_bool_mask,
    as_float_array,
    as_positive_int,
    as_positive_number,
    result_float_dtype,
)
from .config import SEED
from .core import scaled_dot_product_attention
from .multihead import _check_bias, _check_weight, _plus, merge_heads, multi_head_attention, split_heads

__all__ = [
    "layer_norm",
    "gelu",
    "feed_forward",
    "BlockParams",
    "init_block_params",
    "transformer_block",
    "residual_stream",
    "cross_attention",
    "block_parameter_count",
    "parameter_count",
]


def _eps(eps):
    return as_positive_number(eps, "eps", " (it keeps a constant token from dividing by 0)")


def layer_norm(x, gamma=None, beta=None, eps=1e-5):
    r"""Layer normalization over the last axis: each token's features get mean 0 and variance 1.

    .. math:: \mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta,
              \qquad \mu = \frac{1}{d}\sum_{c} x_c, \quad \sigma^2 = \frac{1}{d}\sum_c (x_c - \mu)^2

    The statistics are per token, over its ``d_model`` features (not per feature over
    the tokens, which is batch norm's direction). The variance divides by ``d`` (not
    ``d - 1``), as in PyTorch's ``nn.LayerNorm``. The arithmetic runs in float64 and the
    result comes back in the dtype of ``x``.

    Parameters
    ----------
    x : array_like, shape (..., d_model)
    gamma : array_like, shape (d_model,), optional
        Learned scale, one per feature; default 1 (no scaling).
    beta : array_like, shape (d_model,), optional
        Learned shift, one per feature; default 0 (no shift).
    eps : float, default 1e-5
        Added to the variance, so a token whose features are all equal gives 0, not 0 / 0.
        GPT-2 uses 1e-5, BERT 1e-12.

    Returns
    -------
    out : ndarray, shape (..., d_model)

    Examples
    --------
    >>> layer_norm(np.array([[1.0, 2.0, 3.0], [5.0, 5.0, 5.0]], dtype=np.float32)).round(4)
    array([[-1.2247,  0.    ,  1.2247],
           [ 0.    ,  0.    ,  0.    ]], dtype=float32)
    >>> layer_norm([[1.0, 2.0, 3.0]], gamma=[2.0, 2.0, 2.0], beta=[0.0, 0.0, 10.0]).round(4)
    array([[-2.4495,  0.    , 12.4495]])
    """
    x = as_float_array(x, "x")
    d_model = x.shape[-1]
    gamma, beta = _check_bias("gamma", gamma, d_model), _check_bias("beta", beta, d_model)
    eps = _eps(eps)
    dtype = result_float_dtype(x, *(v for v in (gamma, beta) if v is not None))
    x64 = x.astype(np.float64)  # float64: the squares of large float32 values would overflow
    mean = x64.mean(axis=-1, keepdims=True)  # (..., 1): one mean per token
    variance = ((x64 - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1): one variance per token
    normalised = (x64 - mean) / np.sqrt(variance + eps)  # (..., d_model): mean 0, variance 1 per token
    out = normalised if gamma is None else normalised * gamma  # (..., d_model) * (d_model,)
    out = _plus(out, beta)
    return out.astype(dtype, copy=False)


def _erfc(z):
    """Complementary error function, fractional error < 1.2e-7 everywhere (float32 precision).

    numpy has no ``erf``. This is the Chebyshev fit ``erfcc`` of Press et al.,
    *Numerical Recipes* (2nd ed., section 6.2): ``erfc(z) ~ t exp(-z^2 + P(t))`` with
    ``t = 1 / (1 + z / 2)`` for ``z >= 0``, and ``erfc(-z) = 2 - erfc(z)``.
    """
    a = np.abs(z)
    t = 1.0 / (1.0 + 0.5 * a)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (
        -0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    with np.errstate(over="ignore", under="ignore"):  # a huge |z|: exp(-inf) = 0, the right limit
        tail = t * np.exp(-a * a + poly)
    return np.where(z >= 0, tail, 2.0 - tail)


def gelu(x, approximate=False):
    r"""Gaussian error linear unit: :math:`\mathrm{GELU}(x) = x\,\Phi(x)`, with :math:`\Phi` the normal CDF.

    .. math:: \text{exact: } x \cdot \tfrac12\left(1 + \mathrm{erf}(x/\sqrt2)\right), \qquad
              \text{tanh form: } \tfrac12 x\left(1 + \tanh\!\left(\sqrt{2/\pi}\,(x + 0.044715\,x^3)\right)\right)

    BERT uses the exact form, GPT-2 the tanh form (PyTorch: ``F.gelu(x)`` and
    ``F.gelu(x, approximate="tanh")``); they differ by less than 1e-3 everywhere.
    numpy has no ``erf``: the exact form uses a Chebyshev fit of ``erfc`` (Numerical
    Recipes' ``erfcc``) whose relative error is below 1.2e-7 for every ``x``: exact to
    float32 precision, not to float64's 1e-16.

    Parameters
    ----------
    x : array_like, shape (...)
    approximate : bool, default False
        ``True`` for the tanh form.

    Returns
    -------
    out : ndarray, shape like ``x``

    Examples
    --------
    >>> gelu(np.array([-1.0, 0.0, 1.0, 3.0], dtype=np.float32)).round(4)
    array([-0.1587,  0.    ,  0.8413,  2.996 ], dtype=float32)
    >>> gelu([-1.0, 0.0, 1.0, 3.0], approximate=True).round(4)
    array([-0.1588,  0.    ,  0.8412,  2.9964])
    """
    x = as_float_array(x, "x", min_ndim=0)
    if not isinstance(approximate, (bool, np.bool_)):
        raise TypeError(f"approximate must be True (tanh form) or False (exact erf form); got {approximate!r}")
    x64 = x.astype(np.float64)
    if approximate:
        with np.errstate(over="ignore"):  # x**3 may overflow to +-inf: tanh(+-inf) = +-1, the right limit
            inner = math.sqrt(2.0 / math.pi) * (x64 + 0.044715 * x64**3)
        out = 0.5 * x64 * (1.0 + np.tanh(inner))
    else:
        normal_cdf = 0.5 * _erfc(-x64 / math.sqrt(2.0))  # Phi(x) = (1 + erf(x / sqrt 2)) / 2 = erfc(-x / sqrt 2) / 2
        out = x64 * normal_cdf
    return out.astype(x.dtype, copy=False)


def _relu(x):
    return np.maximum(x, 0.0)


#: The activations :func:`feed_forward` accepts, by name.
ACTIVATIONS = {
    "gelu": gelu,
    "gelu_tanh": lambda x: gelu(x, approximate=True),
    "relu": _relu,
}


def _activation(activation):
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}")
    return ACTIVATIONS[activation]


def feed_forward(x, w_1, w_2, b_1=None, b_2=None, activation="gelu"):
    r"""The position-wise feed-forward network: the same two-layer MLP applied to every token.

    .. math:: \mathrm{FFN}(x) = \mathrm{act}(x W_1 + b_1)\, W_2 + b_2

    usually ``d_model -> d_ff = 4 d_model -> d_model``. Tokens do not interact here
    (that is attention's job): row ``i`` of the output depends on row ``i`` of ``x`` only.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    w_1 : array_like, shape (d_model, d_ff)
    w_2 : array_like, shape (d_ff, d_out)
    b_1 : array_like, shape (d_ff,), optional
    b_2 : array_like, shape (d_out,), optional
    activation : {"gelu", "gelu_tanh", "relu"}, default "gelu"
        The exact GELU (BERT), its tanh form (GPT-2) or ReLU (the original paper).

    Returns
    -------
    out : ndarray, shape (..., T, d_out)

    Examples
    --------
    >>> x = np.array([[1.0, -1.0]], dtype=np.float32)
    >>> w_1 = np.array([[1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 1.0, 0.0]], dtype=np.float32)  # d_ff = 4
    >>> w_2 = np.ones((4, 2), dtype=np.float32)
    >>> feed_forward(x, w_1, w_2, activation="relu")  # hidden relu([1, -1, 0, 0]) = [1, 0, 0, 0]
    array([[1., 1.]], dtype=float32)
    """
    x = as_float_array(x, "x", min_ndim=1)
    w_1, w_2 = as_float_array(w_1, "w_1", min_ndim=2), as_float_array(w_2, "w_2", min_ndim=2)
    _check_weight("w_1", w_1, x.shape[-1])
    _check_weight("w_2", w_2, w_1.shape[1])
    b_1, b_2 = _check_bias("b_1", b_1, w_1.shape[1]), _check_bias("b_2", b_2, w_2.shape[1])
    act = _activation(activation)
    hidden = act(_plus(x @ w_1, b_1))  # (..., T, d_model) @ (d_model, d_ff) -> (..., T, d_ff)
    out = _plus(hidden @ w_2, b_2)  # (..., T, d_ff) @ (d_ff, d_out) -> (..., T, d_out)
    dtype = result_float_dtype(x, w_1, w_2, *(b for b in (b_1, b_2) if b is not None))
    return out.astype(dtype, copy=False)


_ARRAY_FIELDS = ("w_q", "w_k", "w_v", "w_o", "w_1", "w_2", "norm_1_gamma", "norm_1_beta", "norm_2_gamma",
                 "norm_2_beta", "b_q", "b_k", "b_v", "b_o", "b_1", "b_2")


@dataclasses.dataclass(frozen=True, eq=False)
class BlockParams:
    """The parameters of one transformer block, by readable name.

    Attention: ``w_q``, ``w_k``, ``w_v`` ``(d_model, d_model)``, ``w_o`` ``(d_model, d_model)``
    and optional biases ``b_q``, ``b_k``, ``b_v``, ``b_o`` ``(d_model,)``; with ``num_kv_heads``
    (grouped-query attention, notebook 13) ``w_k``, ``w_v``, ``b_k``, ``b_v`` are
    ``num_kv_heads * d_h`` wide instead of ``d_model``. Feed-forward:
    ``w_1`` ``(d_model, d_ff)``, ``w_2`` ``(d_ff, d_model)``, optional ``b_1`` ``(d_ff,)``,
    ``b_2`` ``(d_model,)``. Layer norms: ``norm_1_*`` goes with the attention sub-layer,
    ``norm_2_*`` with the feed-forward one (``None`` = gamma 1, beta 0). Shapes are checked
    when the parameters are made; arrays become float arrays.

    Examples
    --------
    >>> params = init_block_params(d_model=8, num_heads=2)
    >>> params.d_model, params.d_ff, params.num_heads, params.num_parameters
    (8, 32, 2, 800)
    """

    w_q: np.ndarray
    w_k: np.ndarray
    w_v: np.ndarray
    w_o: np.ndarray
    w_1: np.ndarray
    w_2: np.ndarray
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
    num_kv_heads: int | None = None  # None: every query head has its own key/value head

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        for name in ("w_q", "w_k", "w_v", "w_o", "w_1", "w_2"):
            put(name, as_float_array(getattr(self, name), name, min_ndim=2))
        d_model = self.w_q.shape[0]
        put("num_heads", as_positive_int(self.num_heads, "num_heads"))
        if d_model % self.num_heads:
            raise ValueError(f"d_model={d_model} must be divisible by num_heads={self.num_heads}")
        if self.num_kv_heads is not None:
            put("num_kv_heads", as_positive_int(self.num_kv_heads, "num_kv_heads"))
            if self.num_heads % self.num_kv_heads:
                raise ValueError(f"num_kv_heads={self.num_kv_heads} must divide num_heads={self.num_heads}")
        kv_width = self.kv_heads * (d_model // self.num_heads)  # d_model unless grouped-query
        for name, width in (("w_q", d_model), ("w_k", kv_width), ("w_v", kv_width), ("w_o", d_model)):
            if getattr(self, name).shape != (d_model, width):
                raise ValueError(f"{name} has shape {getattr(self, name).shape}; expected ({d_model}, {width})")
        _check_weight("w_1", self.w_1, d_model)
        if self.w_2.shape != (self.w_1.shape[1], d_model):
            raise ValueError(f"w_2 has shape {self.w_2.shape}; expected ({self.w_1.shape[1]}, {d_model})")
        for name in ("norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta", "b_q", "b_o", "b_2"):
            put(name, _check_bias(name, getattr(self, name), d_model))
        put("b_k", _check_bias("b_k", self.b_k, kv_width))
        put("b_v", _check_bias("b_v", self.b_v, kv_width))
        put("b_1", _check_bias("b_1", self.b_1, self.w_1.shape[1]))
        put("eps", _eps(self.eps))
        _activation(self.activation)

    @property
    def d_model(self) -> int:
        """The width of the residual stream."""
        return self.w_q.shape[0]

    @property
    def kv_heads(self) -> int:
        """The number of key/value heads: ``num_kv_heads``, or ``num_heads`` when that is None."""
        return self.num_heads if self.num_kv_heads is None else self.num_kv_heads

    @property
    def d_ff(self) -> int:
        """The hidden width of the feed-forward network."""
        return self.w_1.shape[1]

    @property
    def num_parameters(self) -> int:
        """How many numbers the block learns (every array field that is not ``None``)."""
        return sum(getattr(self, name).size for name in _ARRAY_FIELDS if getattr(self, name) is not None)


def init_block_params(d_model, num_heads, d_ff=None, rng=None, bias=False, dtype=np.float32, num_kv_heads=None):
    """Random parameters of one block: weights ``N(0, 1 / d_in)``, gammas 1, betas and biases 0.

    Parameters
    ----------
    d_model : int
    num_heads : int
        Must divide ``d_model``.
    d_ff : int, optional
        Hidden width of the feed-forward network; default ``4 * d_model``.
    rng : numpy.random.Generator or int, optional
        The random generator, or a seed; default ``np.random.default_rng(SEED)``.
    bias : bool, default False
        Add zero biases to every projection (as GPT-2, BERT and PyTorch do).
    dtype : numpy dtype, default float32
    num_kv_heads : int, optional
        Key/value heads for grouped-query attention (1: multi-query); default ``num_heads``.
        ``w_k`` and ``w_v`` are then ``(d_model, num_kv_heads * d_h)``.

    Returns
    -------
    params : BlockParams

    Examples
    --------
    >>> params = init_block_params(d_model=6, num_heads=2, rng=np.random.default_rng(0), bias=True)
    >>> params.w_q.shape, params.w_1.shape, params.b_1.shape, params.w_q.dtype
    ((6, 6), (6, 24), (24,), dtype('float32'))
    >>> init_block_params(d_model=8, num_heads=4, num_kv_heads=1).w_k.shape   # multi-query: one key head of d_h = 2
    (8, 2)
    """
    d_model = as_positive_int(d_model, "d_model")
    d_ff = 4 * d_model if d_ff is None else as_positive_int(d_ff, "d_ff")
    num_heads = as_positive_int(num_heads, "num_heads")
    kv_heads = num_heads if num_kv_heads is None else as_positive_int(num_kv_heads, "num_kv_heads")
    kv_width = d_model // num_heads * kv_heads  # d_model unless grouped-query
    if rng is None:
        rng = SEED
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(as_positive_int(rng, "rng", allow_zero=True))
    if not isinstance(bias, (bool, np.bool_)):
        raise TypeError(f"bias must be True or False; got {bias!r}")

    def weight(d_in, d_out):  # std 1/sqrt(d_in): x @ weight keeps the scale of x
        return (rng.standard_normal((d_in, d_out)) / math.sqrt(d_in)).astype(dtype)

    def zeros(n):
        return np.zeros(n, dtype=dtype) if bias else None

    return BlockParams(
        w_q=weight(d_model, d_model), w_k=weight(d_model, kv_width), w_v=weight(d_model, kv_width),
        w_o=weight(d_model, d_model), w_1=weight(d_model, d_ff), w_2=weight(d_ff, d_model),
        num_heads=num_heads, num_kv_heads=num_kv_heads,
        norm_1_gamma=np.ones(d_model, dtype=dtype), norm_1_beta=np.zeros(d_model, dtype=dtype),
        norm_2_gamma=np.ones(d_model, dtype=dtype), norm_2_beta=np.zeros(d_model, dtype=dtype),
        b_q=zeros(d_model), b_k=zeros(kv_width), b_v=zeros(kv_width), b_o=zeros(d_model),
        b_1=zeros(d_ff), b_2=zeros(d_model),
    )


def _attention(x, p, mask, kv_cache=None):
    return multi_head_attention(x, p.w_q, p.w_k, p.w_v, p.w_o, p.num_heads, mask, b_q=p.b_q, b_k=p.b_k,
                                b_v=p.b_v, b_o=p.b_o, num_kv_heads=p.num_kv_heads, kv_cache=kv_cache)


def _ffn(x, p):
    return feed_forward(x, p.w_1, p.w_2, p.b_1, p.b_2, activation=p.activation)


def transformer_block(x, params, mask=None, norm_first=True, *, residual=True, kv_cache=None):
    r"""One transformer block: attention, then the feed-forward network, each in a residual connection.

    .. math:: \text{pre-norm: } x \leftarrow x + \mathrm{MHA}(\mathrm{LN}_1(x)), \quad
              x \leftarrow x + \mathrm{FFN}(\mathrm{LN}_2(x))

    .. math:: \text{post-norm: } x \leftarrow \mathrm{LN}_1(x + \mathrm{MHA}(x)), \quad
              x \leftarrow \mathrm{LN}_2(x + \mathrm{FFN}(x))

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    params : BlockParams
    mask : array_like of bool, broadcastable to (..., T, T_k), optional
        ``True`` = may attend; ``causal_mask(T)`` makes a decoder (GPT) block. ``T_k = T``
        without a cache.
    norm_first : bool, default True
        Pre-norm (GPT-2) if True, post-norm (the original paper, BERT) if False.
    residual : bool, default True
        ``False`` drops the ``x +`` of both sub-layers: only to see what residuals do.
    kv_cache : attn_helpers.kv_cache.KVCache, optional
        Generation (notebook 13): the keys and values of this block for ``T_past`` earlier
        positions. ``x`` is then only the new positions; attention reads the cache (which
        grows by ``T``) and everything else works row by row, so ``out`` is what the block
        gives those rows of the whole sequence. ``T_k = T_past + T``.

    Returns
    -------
    out : ndarray, shape (..., T, d_model)
        The same shape as ``x``: that is what lets blocks stack.
    weights : ndarray, shape (..., h, T, T_k)
        The attention weights of every head.

    Examples
    --------
    >>> params = init_block_params(d_model=8, num_heads=2)
    >>> x = np.random.default_rng(0).standard_normal((5, 8)).astype(np.float32)
    >>> out, weights = transformer_block(x, params, mask=causal_mask(5))
    >>> out.shape, weights.shape, out.dtype
    ((5, 8), (2, 5, 5), dtype('float32'))
    """
    if not isinstance(params, BlockParams):
        raise TypeError(f"params must be a BlockParams (see init_block_params); got {type(params).__name__}")
    for name, flag in (("norm_first", norm_first), ("residual", residual)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False; got {flag!r}")
    x = as_float_array(x, "x", min_ndim=2)
    p = params
    skip = x if residual else 0.0  # the residual stream that each sub-layer adds to
    if norm_first:
        attended, weights = _attention(layer_norm(x, p.norm_1_gamma, p.norm_1_beta, p.eps), p, mask, kv_cache)
        x = skip + attended  # (..., T, d_model)
        skip = x if residual else 0.0
        x = skip + _ffn(layer_norm(x, p.norm_2_gamma, p.norm_2_beta, p.eps), p)  # (..., T, d_model)
    else:
        attended, weights = _attention(x, p, mask, kv_cache)
        x = layer_norm(skip + attended, p.norm_1_gamma, p.norm_1_beta, p.eps)  # (..., T, d_model)
        skip = x if residual else 0.0
        x = layer_norm(skip + _ffn(x, p), p.norm_2_gamma, p.norm_2_beta, p.eps)  # (..., T, d_model)
    return x, weights


def residual_stream(x, blocks, mask=None, norm_first=True, *, residual=True):
    """Run a stack of blocks and return the residual stream before and after each one.

    Parameters
    ----------
    x : array_like, shape (..., T, d_model)
    blocks : sequence of BlockParams
        Applied in order (``N`` blocks).
    mask, norm_first, residual
        As in :func:`transformer_block`, the same for every block.

    Returns
    -------
    states : ndarray, shape (N + 1, ..., T, d_model)
        ``states[0]`` is ``x``; ``states[n]`` is the output of block ``n``; ``states[-1]``
        the output of the stack (a pre-norm model such as GPT-2 then applies one final
        layer norm).

    Examples
    --------
    >>> blocks = [init_block_params(8, 2, rng=seed) for seed in range(3)]
    >>> x = np.ones((4, 8), dtype=np.float32)
    >>> residual_stream(x, blocks).shape
    (4, 4, 8)
    """
    blocks = list(blocks) if not isinstance(blocks, BlockParams) else [blocks]
    states = [as_float_array(x, "x", min_ndim=2)]
    for params in blocks:
        out, _ = transformer_block(states[-1], params, mask, norm_first, residual=residual)
        states.append(out)  # (..., T, d_model): the same shape as the input, so the next block fits
    return np.stack(states)


def cross_attention(x, memory, w_q, w_k, w_v, w_o, num_heads, mask=None, *, b_q=None, b_k=None, b_v=None,
                    b_o=None):
    r"""Multi-head cross-attention: queries from ``x`` (the decoder), keys and values from ``memory`` (the encoder).

    .. math:: \mathrm{head}_i = \mathrm{Attention}(X W_q^{(i)}, M W_k^{(i)}, M W_v^{(i)})

    The same four steps as :func:`~attn_helpers.multihead.multi_head_attention`; only the
    source of the keys and values changes, so the weights are a ``T_q x T_k`` rectangle.

    Parameters
    ----------
    x : array_like, shape (..., T_q, d_model)
        The sequence that asks (the target sentence so far).
    memory : array_like, shape (..., T_k, d_memory)
        The sequence that is looked up (the encoder's output for the source sentence).
    w_q : array_like, shape (d_model, h * d_h)
    w_k : array_like, shape (d_memory, h * d_h)
    w_v : array_like, shape (d_memory, h * d_v)
    w_o : array_like, shape (h * d_v, d_out)
    num_heads : int
    mask : array_like of bool, broadcastable to (..., T_q, T_k), optional
        ``True`` = may attend (for example a padding mask of the source).
    b_q, b_k, b_v, b_o : array_like, optional
        Biases of the four projections.

    Returns
    -------
    out : ndarray, shape (..., T_q, d_out)
    weights : ndarray, shape (..., h, T_q, T_k)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> target, source = rng.standard_normal((3, 4)), rng.standard_normal((5, 4))
    >>> w_q, w_k, w_v, w_o = rng.standard_normal((4, 4, 4))
    >>> out, weights = cross_attention(target, source, w_q, w_k, w_v, w_o, num_heads=2)
    >>> out.shape, weights.shape
    ((3, 4), (2, 3, 5))
    """
    x = as_float_array(x, "x", min_ndim=2)
    memory = as_float_array(memory, "memory", min_ndim=2)
    num_heads = as_positive_int(num_heads, "num_heads")
    w_q, w_k, w_v, w_o = (as_float_array(w, name, min_ndim=2) for w, name in
                          ((w_q, "w_q"), (w_k, "w_k"), (w_v, "w_v"), (w_o, "w_o")))
    _check_weight("w_q", w_q, x.shape[-1])
    _check_weight("w_k", w_k, memory.shape[-1])
    _check_weight("w_v", w_v, memory.shape[-1])
    _check_weight("w_o", w_o, w_v.shape[1])
    b_q, b_k = _check_bias("b_q", b_q, w_q.shape[1]), _check_bias("b_k", b_k, w_k.shape[1])
    b_v, b_o = _check_bias("b_v", b_v, w_v.shape[1]), _check_bias("b_o", b_o, w_o.shape[1])
    if mask is not None and np.ndim(mask) >= 2:
        mask = as_bool_mask(mask)[..., None, :, :]  # (..., 1, T_q, T_k): the same mask for every head
    # 1. Project: queries from x, keys and values from memory; 2. split into heads.
    queries = split_heads(_plus(x @ w_q, b_q), num_heads)  # (..., T_q, d_model) @ (d_model, h d_h) -> (.., h, T_q, d_h)
    keys = split_heads(_plus(memory @ w_k, b_k), num_heads)  # (..., T_k, d_mem) @ (d_mem, h d_h) -> (.., h, T_k, d_h)
    values = split_heads(_plus(memory @ w_v, b_v), num_heads)  # (..., h, T_k, d_v)
    # 3. Attend, every head at once: (..., h, T_q, T_k) weights.
    context, weights = scaled_dot_product_attention(queries, keys, values, mask=mask)  # (..., h, T_q, d_v)
    # 4. Concatenate the heads and project: (..., T_q, h d_v) @ (h d_v, d_out) -> (..., T_q, d_out).
    out = _plus(merge_heads(context) @ w_o, b_o)
    dtype = result_float_dtype(x, memory, w_q, w_k, w_v, w_o, *(b for b in (b_q, b_k, b_v, b_o) if b is not None))
    return out.astype(dtype, copy=False), weights.astype(dtype, copy=False)


def block_parameter_count(d_model, d_ff=None, bias=True):
    """How many parameters one block has, by part.

    Parameters
    ----------
    d_model : int
    d_ff : int, optional
        Default ``4 * d_model``.
    bias : bool, default True
        Whether the six projections have biases (GPT-2, BERT: yes).

    Returns
    -------
    counts : dict
        ``attention`` (``w_q, w_k, w_v, w_o`` and their biases), ``feed_forward``
        (``w_1, w_2`` and biases), ``layer_norms`` (two gammas and two betas), ``total``.
        The number of heads does not appear: splitting ``d_model`` into heads adds no parameters.

    Examples
    --------
    >>> block_parameter_count(768)  # one GPT-2 small block
    {'attention': 2362368, 'feed_forward': 4722432, 'layer_norms': 3072, 'total': 7087872}
    """
    d_model = as_positive_int(d_model, "d_model")
    d_ff = 4 * d_model if d_ff is None else as_positive_int(d_ff, "d_ff")
    if not isinstance(bias, (bool, np.bool_)):
        raise TypeError(f"bias must be True or False; got {bias!r}")
    attention = 4 * d_model * d_model + (4 * d_model if bias else 0)  # w_q, w_k, w_v, w_o (d_model, d_model)
    feed_forward_ = d_model * d_ff + d_ff * d_model + ((d_ff + d_model) if bias else 0)  # w_1, w_2 (+ b_1, b_2)
    layer_norms = 2 * (d_model + d_model)  # two layer norms, each a gamma and a beta of d_model
    return {"attention": attention, "feed_forward": feed_forward_, "layer_norms": layer_norms,
            "total": attention + feed_forward_ + layer_norms}


#: The keys :func:`parameter_count` understands, with their defaults (``None`` = required).
CONFIG_KEYS = {
    "num_layers": None,
    "d_model": None,
    "num_heads": None,
    "vocab_size": None,
    "context_length": None,
    "d_ff": None,  # default 4 * d_model
    "bias": True,
    "tied_embeddings": True,
    "learned_positions": True,
    "token_types": 0,
    "embedding_norm": False,
    "final_norm": True,
}
_REQUIRED = ("num_layers", "d_model", "num_heads", "vocab_size", "context_length")


def parameter_count(config):
    """How many parameters a transformer has, computed from its configuration, by part.

    Parameters
    ----------
    config : mapping
        ``num_layers``, ``d_model``, ``num_heads``, ``vocab_size``, ``context_length``
        (required), and optionally ``d_ff`` (default ``4 * d_model``), ``bias`` (True),
        ``tied_embeddings`` (True: the output layer reuses the token embeddings),
        ``learned_positions`` (True: a position table; False: sinusoidal, no parameters),
        ``token_types`` (0; BERT: 2), ``embedding_norm`` (False; BERT: True),
        ``final_norm`` (True: a pre-norm model's last layer norm; BERT: False).

    Returns
    -------
    counts : dict
        ``token_embeddings``, ``position_embeddings``, ``token_type_embeddings``,
        ``embedding_norm``, ``attention``, ``feed_forward``, ``layer_norms`` (all blocks),
        ``final_norm``, ``output_head`` and ``total`` (the sum of the others).

    Examples
    --------
    >>> from attn_helpers.examples import GPT2_SMALL
    >>> counts = parameter_count(GPT2_SMALL)
    >>> counts["total"]
    124439808
    >>> counts["token_embeddings"], counts["attention"], counts["feed_forward"]
    (38597376, 28348416, 56669184)
    """
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping (a dict) with the keys {list(CONFIG_KEYS)}; "
                        f"got {type(config).__name__}")
    unknown = sorted(set(config) - set(CONFIG_KEYS))
    missing = [key for key in _REQUIRED if key not in config]
    if unknown or missing:
        raise ValueError(f"config: unknown keys {unknown}, missing keys {missing}; the keys are {list(CONFIG_KEYS)}")
    c = {**CONFIG_KEYS, **config}
    num_layers, d_model, num_heads, vocab_size, context_length = (as_positive_int(c[key], key) for key in _REQUIRED)
    token_types = as_positive_int(c["token_types"], "token_types", allow_zero=True)
    if d_model % num_heads:
        raise ValueError(f"config: d_model={d_model} must be divisible by num_heads={num_heads}")
    for key in ("tied_embeddings", "learned_positions", "embedding_norm", "final_norm"):
        if not isinstance(c[key], (bool, np.bool_)):
            raise TypeError(f"config[{key!r}] must be True or False; got {c[key]!r}")
    block = block_parameter_count(d_model, c["d_ff"], c["bias"])
    counts = {
        "token_embeddings": vocab_size * d_model,  # one row of d_model per token of the vocabulary
        "position_embeddings": context_length * d_model if c["learned_positions"] else 0,
        "token_type_embeddings": token_types * d_model,
        "embedding_norm": 2 * d_model if c["embedding_norm"] else 0,
        "attention": num_layers * block["attention"],
        "feed_forward": num_layers * block["feed_forward"],
        "layer_norms": num_layers * block["layer_norms"],
        "final_norm": 2 * d_model if c["final_norm"] else 0,
        "output_head": 0 if c["tied_embeddings"] else d_model * vocab_size,  # tied: reuses the token embeddings
    }
    counts["total"] = sum(counts.values())
    return counts
