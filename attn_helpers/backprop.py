"""Backpropagation, written out (notebook 11): the backward pass of each piece of a tiny attention model.

Each ``*_backward`` takes what its forward saw and ``grad_*`` (the loss's gradient with respect to the forward's
output) and returns the gradients with respect to the forward's inputs, each of its input's shape.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import (
    as_flag,
    as_float_array,
    as_positive_int,
    as_token_ids,
    batch_shape,
    check_bias,
    check_mask,
    checked,
    checked_by_caller,
    dropout_inputs,
    eps_input,
    record_input,
    sdpa_inputs,
    training_attention_inputs,
)
from .core import add_bias, default_scale, erfc, log_softmax, scaled_dot_product_attention, softmax
from .multihead import attention_heads, dropout_mask, heads_mask, merge_heads, split_heads

__all__ = ["softmax_backward", "attention_backward", "linear_backward", "embedding_backward", "cross_entropy",
           "cross_entropy_backward", "numerical_gradient", "relative_error", "layer_norm_backward", "gelu_backward",
           "feed_forward_backward", "attention_layer_backward", "block_backward", "attention_layer_forward",
           "training_block"]


def check_same_shape(a_name: str, a, b_name: str, b) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{a_name} has shape {a.shape} and {b_name} has shape {b.shape}; expected the same shape")


def softmax_backward_inputs(weights, grad_weights):
    p, g = as_float_array(weights, "weights"), as_float_array(grad_weights, "grad_weights")
    check_same_shape("weights", p, "grad_weights", g)
    return p, g


def attention_backward_inputs(queries, keys, values, grad_context, mask=None, scale=None, weights=None, keep=None):
    """The inputs of :func:`~attn_helpers.backprop.attention_backward`: those of attention, then G and P."""
    q, k, v, mask, scale, _ = sdpa_inputs(queries, keys, values, mask, scale)
    grad = as_float_array(grad_context, "grad_context", min_ndim=2)
    context = (*batch_shape("attention_backward", queries=q, keys=k, values=v), q.shape[-2], v.shape[-1])
    try:
        ok = grad.shape[-2:] == context[-2:] and np.broadcast_shapes(grad.shape, context) == context
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(f"grad_context has shape {grad.shape}; expected the context's shape (..., T_q, d_v) = "
                         f"{context}, from queries {q.shape} and values {v.shape}")
    if weights is not None:
        weights = as_float_array(weights, "weights", min_ndim=2)
        if weights.shape[-2:] != (q.shape[-2], k.shape[-2]):
            raise ValueError(f"weights has shape {weights.shape}; expected (..., T_q, T_k) = "
                             f"(..., {q.shape[-2]}, {k.shape[-2]})")
    if keep is not None and (weights is None or np.shape(keep) != weights.shape):
        raise ValueError(f"keep (the dropout mask) needs the weights it multiplied, of the same shape; got keep of "
                         f"shape {np.shape(keep)} and weights {None if weights is None else weights.shape}")
    return q, k, v, grad, mask, scale, weights, keep


@checked(softmax_backward_inputs)
def softmax_backward(weights, grad_weights):
    """Gradient of the loss with respect to the scores, given the softmax's output.

    With ``p = softmax(s)`` over the last axis and ``g = ∂L/∂p``, the chain rule through the Jacobian
    ``J = diag(p) − p pᵀ`` gives

        ∂L/∂s = Jᵀ g = p ⊙ (g − (g · p))

    (``J`` is symmetric), computed row by row without building ``J``. A masked entry
    (``p = 0``) and a fully masked row get zero gradient.

    ``weights (..., T_k)``: the softmax's output ``p`` (each row sums to 1, or is all 0 when fully masked);
    ``grad_weights (..., T_k)``: ``g``, the gradient of the loss with respect to ``p``. Returns
    ``grad_scores (..., T_k)``: each row sums to 0 (a softmax ignores a shift of all its scores).

    >>> p = np.array([0.25, 0.75])
    >>> softmax_backward(p, np.array([1.0, 0.0]))
    array([ 0.1875, -0.1875])
    """
    p, g = weights, grad_weights
    dot = (g * p).sum(axis=-1, keepdims=True)  # g . p for each row: (..., 1)
    return p * (g - dot)  # (..., T_k)


@checked(attention_backward_inputs)
def attention_backward(queries, keys, values, grad_context, mask=None, scale=None, weights=None, keep=None):
    """Gradients of scaled dot-product attention with respect to its queries, keys and values.

        ∂V = Pᵀ G,    ∂S = s P ⊙ (G Vᵀ − rowsum(G Vᵀ ⊙ P)),    ∂Q = ∂S K,    ∂K = ∂Sᵀ Q

    ``G`` is ``grad_context (..., T_q, d_v)``, the gradient of the loss with respect to the context;
    the other arguments are those of :func:`~attn_helpers.core.scaled_dot_product_attention` (scale
    ``s``), and optionally its ``weights`` ``P`` (recomputed when None). Returns the gradients of the
    queries, keys and values, each of its array's shape; a masked entry (``P = 0``) passes none. ``keep``:
    the dropout mask ``D`` that multiplied ``P`` (notebook 10's block in training): the context was
    ``(P ⊙ D) V``, so ``∂V = (P ⊙ D)ᵀ G`` and ``G Vᵀ`` is multiplied by ``D``.

    >>> x = np.eye(2)
    >>> grad_q, grad_k, grad_v = attention_backward(x, x, x, np.ones((2, 2)))
    >>> grad_v  # each value's gradient: the total weight it received, times G's rows
    array([[1., 1.],
           [1., 1.]])
    """
    scale = default_scale(queries.shape[-1]) if scale is None else scale
    if weights is None:
        _, weights = scaled_dot_product_attention(queries, keys, values, mask, scale)  # (..., T_q, T_k)
    G, used = grad_context, (weights if keep is None else weights * keep)  # the weights the context was made with
    grad_values = np.swapaxes(used, -1, -2) @ G  # (..., T_k, T_q) @ (..., T_q, d_v) -> (..., T_k, d_v)
    grad_weights = G @ np.swapaxes(values, -1, -2)  # (..., T_q, d_v) @ (..., d_v, T_k) -> (..., T_q, T_k)
    if keep is not None:
        grad_weights = grad_weights * keep  # a dropped weight passes no gradient
    grad_scores = softmax_backward(weights, grad_weights) * scale  # through the softmax and the scale
    grad_queries = grad_scores @ keys  # (..., T_q, T_k) @ (..., T_k, d_k) -> (..., T_q, d_k)
    grad_keys = np.swapaxes(grad_scores, -1, -2) @ queries  # (..., T_k, T_q) @ (..., T_q, d_k) -> (..., T_k, d_k)
    return tuple(_unbroadcast(g, a.shape) for g, a in ((grad_queries, queries), (grad_keys, keys),
                                                       (grad_values, values)))


def _unbroadcast(grad, shape):
    """Sum ``grad`` over the leading axes that broadcasting added, so it has ``shape`` again."""
    while grad.ndim > len(shape):
        grad = grad.sum(axis=0)
    axes = tuple(i for i, (g, s) in enumerate(zip(grad.shape, shape)) if s == 1 and g != 1)
    return grad.sum(axis=axes, keepdims=True) if axes else grad


def _linear_inputs(x, weight, grad_out):
    x, w, g = as_float_array(x, "x"), as_float_array(weight, "weight", min_ndim=2), as_float_array(grad_out, "grad_out")
    if w.ndim != 2 or x.shape[-1] != w.shape[0] or g.shape != (*x.shape[:-1], w.shape[1]):
        raise ValueError(f"x has shape {x.shape}, weight {w.shape} and grad_out {g.shape}; expected "
                         f"(..., d_in), (d_in, d_out) and (..., d_out)")
    return x, w, g


@checked(_linear_inputs)
def linear_backward(x, weight, grad_out):
    """Gradients of ``out = x @ weight`` (a bias-free linear layer, weight shared over all rows).

        ∂x = ∂out Wᵀ,    ∂W = Σₙ xₙᵀ ∂outₙ    (a sum over every row n)

    ``x (..., d_in)``; ``weight (d_in, d_out)``; ``grad_out (..., d_out)``. Returns ``grad_x (..., d_in)``;
    ``grad_weight (d_in, d_out)``.

    >>> grad_x, grad_w = linear_backward(np.array([[1.0, 2.0]]), np.eye(2), np.array([[0.5, -1.0]]))
    >>> grad_x, grad_w
    (array([[ 0.5, -1. ]]), array([[ 0.5, -1. ],
           [ 1. , -2. ]]))
    """
    g = grad_out
    grad_x = g @ weight.T  # (..., d_out) @ (d_out, d_in) -> (..., d_in)
    rows_x, rows_g = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])  # every row: (N, d_in), (N, d_out)
    grad_w = rows_x.T @ rows_g  # (d_in, N) @ (N, d_out) -> (d_in, d_out), summed over the N rows
    return grad_x, grad_w


def _embedding_inputs(token_ids, grad_embedded, vocab_size):
    vocab_size = as_positive_int(vocab_size, "vocab_size")
    ids = as_token_ids(token_ids, vocab_size, "token_ids", allow_empty=True)
    g = as_float_array(grad_embedded, "grad_embedded")
    if g.shape[:-1] != ids.shape:
        raise ValueError(f"grad_embedded has shape {g.shape}; expected token_ids' shape {ids.shape} + (d_model,)")
    return ids, g, vocab_size


@checked(_embedding_inputs)
def embedding_backward(token_ids, grad_embedded, vocab_size):
    """Gradient of an embedding lookup ``embedded = table[token_ids]`` with respect to ``table``.

    Row ``v`` of the gradient is the sum of the gradients of every position holding token ``v``
    (``np.add.at``, which adds repeated indices instead of overwriting them); rows of tokens that
    do not occur are 0.

    ``token_ids (...)``; ``grad_embedded (..., d_model)``. Returns ``grad_table (vocab_size, d_model)``.

    >>> embedding_backward([0, 2, 0], np.array([[1.0], [2.0], [3.0]]), vocab_size=3)
    array([[4.],
           [0.],
           [2.]])
    """
    ids, g = token_ids, grad_embedded
    grad_table = np.zeros((vocab_size, g.shape[-1]), dtype=g.dtype)
    np.add.at(grad_table, ids.reshape(-1), g.reshape(-1, g.shape[-1]))  # repeated tokens add up
    return grad_table


def _targets(logits, targets):
    z = as_float_array(logits, "logits")
    t = np.asarray(targets)
    if t.dtype.kind not in "iu":
        raise TypeError(f"targets must be integer class ids (negative = ignored); got dtype {t.dtype}")
    if t.shape != z.shape[:-1]:
        raise ValueError(f"targets has shape {t.shape}; expected logits' shape without its last axis, {z.shape[:-1]}")
    if t.size and t.max() >= z.shape[-1]:
        raise ValueError(f"targets must be < the number of classes {z.shape[-1]}; got {t.max()}")
    return z, t


def _counted(targets):
    counted = targets >= 0  # a negative target marks a position that the loss ignores
    return np.where(counted, targets, 0), counted, max(int(counted.sum()), 1)


@checked(_targets)
def cross_entropy(logits, targets):
    """Mean cross-entropy of the softmax of ``logits`` against integer ``targets``.

        L = −(1/N) Σₙ log softmax(zₙ)[tₙ]

    over the ``N`` positions whose target is ``>= 0`` (a negative target is ignored).

    ``logits (..., num_classes)``; ``targets (...)``.

    >>> round(cross_entropy(np.zeros((2, 4)), np.array([1, -1])), 4)  # uniform over 4 classes: log 4
    1.3863
    """
    z, (t, counted, n) = logits, _counted(targets)
    log_probs = log_softmax(z)  # (..., num_classes)
    picked = np.take_along_axis(log_probs, t[..., None], axis=-1)[..., 0]  # log p of each target: (...)
    return float(-(picked * counted).sum() / n)


@checked(_targets)
def cross_entropy_backward(logits, targets):
    """Gradient of :func:`cross_entropy` with respect to the logits: ``(softmax(z) - onehot(t)) / N``.

    Rows whose target is ignored (negative) get zero gradient.

    >>> cross_entropy_backward(np.zeros((2, 2)), np.array([0, -1]))
    array([[-0.5,  0.5],
           [ 0. ,  0. ]])
    """
    z, (t, counted, n) = logits, _counted(targets)
    probs = softmax(z, axis=-1)  # (..., num_classes)
    onehot = np.arange(z.shape[-1]) == t[..., None]  # (..., num_classes)
    grad = np.where(counted[..., None], probs - onehot, 0.0) / n  # an ignored row gets exactly 0
    return grad.astype(z.dtype, copy=False)


def numerical_gradient(f, x, eps=1e-6):
    """Central finite differences: ``grad[i] = (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)``.

    ``f`` maps an array shaped like ``x`` to a scalar. Use float64 and ``eps`` near ``1e-6``:
    the error of the formula is about ``eps**2`` times the third derivative, the rounding error
    about ``1e-16 / eps``.

    >>> numerical_gradient(lambda v: (v ** 2).sum(), np.array([1.0, -3.0])).round(6)
    array([ 2., -6.])
    """
    x = np.array(as_float_array(x, "x", min_ndim=0), dtype=np.float64)
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        original = x[index]
        x[index] = original + eps
        up = f(x)
        x[index] = original - eps
        down = f(x)
        x[index] = original
        grad[index] = (up - down) / (2 * eps)
    return grad


def relative_error(analytic, numeric):
    """``max |a - n| / max(|a| + |n|, tiny)``: near 1e-10 when a backward pass is right, near 1 when wrong.

    >>> relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])) < 1e-9
    True
    """
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    check_same_shape("analytic", a, "numeric", n)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - n).max() / max(float((np.abs(a) + np.abs(n)).max()), 1e-30))


# --- the training forward: the same steps as the lessons' functions, keeping what the backward pass reads ------

@checked(training_attention_inputs)
def attention_layer_forward(x, W_q, W_k, W_v, W_o, num_heads, mask=None, biases=None, rotate=None, bias=None,
                            scale=None, record=None, dropout=0.0, rng=None):
    """Notebook 08's :func:`~attn_helpers.multihead.multi_head_attention` in training: the same steps, with
    ``dropout`` on the attention weights (``rng`` draws which; the returned weights are the softmax's, before
    dropout), and ``record`` (a dict) gets what :func:`attention_layer_backward` reads.

    >>> x, W_q, W_k, W_v, W_o = np.random.default_rng(0).standard_normal((5, 4, 4))
    >>> record = {}
    >>> out, weights = attention_layer_forward(x, W_q, W_k, W_v, W_o, 2, record=record)
    >>> list(record)
    ['x', 'rotate', 'queries', 'keys', 'values', 'weights', 'keep', 'merged', 'scale']
    """
    queries, keys, values = attention_heads(x, W_q, W_k, W_v, num_heads, biases, None, rotate)  # (..., h, T, d_h)
    context, weights = scaled_dot_product_attention(queries, keys, values, heads_mask(mask), scale, bias)
    keep = dropout_mask(weights.shape, dropout, rng, weights.dtype)  # None without dropout
    if keep is not None:  # the context is made with what is left of the weights
        context = (weights * keep) @ values  # (..., h, T, T_k) @ (..., h, T_k, d_v) -> (..., h, T, d_v)
    merged = merge_heads(context)  # (..., T, h * d_v)
    if record is not None:
        record.update(x=x, rotate=rotate, queries=queries, keys=keys, values=values, weights=weights, keep=keep,
                      merged=merged, scale=scale)
    return add_bias(merged @ W_o, None if biases is None else biases[3]), weights


def _training_block_inputs(x, params, mask=None, norm_first=True, record=None, dropout=0.0, rng=None):
    from .block import block_input  # block.py builds on this module's pieces: imported when first called

    x, params = block_input(x, params)
    record, (dropout, rng), norm_first = record_input(record), dropout_inputs(dropout, rng), as_flag(norm_first,
                                                                                                   "norm_first")
    if record is not None and not norm_first:
        raise ValueError("record= keeps what the backward pass of a pre-norm block reads; norm_first=False has none")
    return x, params, check_mask(mask, x.shape[-2], x.shape[-2], "(..., T, T)"), norm_first, record, dropout, rng


@checked(_training_block_inputs)
def training_block(x, params, mask=None, norm_first=True, record=None, dropout=0.0, rng=None):
    """Notebook 10's :func:`~attn_helpers.block.transformer_block` in training: the same steps, with dropout on the
    attention weights and on each branch before it joins the stream (``rng`` draws which; the rest are scaled up),
    and ``record`` (a dict, pre-norm) gets what :func:`block_backward` reads, in the order the forward makes it.

    >>> from attn_helpers.block import init_block_params, transformer_block
    >>> x, params, record = np.ones((5, 8)), init_block_params(d_model=8, num_heads=2), {}
    >>> bool(np.allclose(training_block(x, params, record=record)[0], transformer_block(x, params)[0]))
    True
    >>> sorted(record)[:3]
    ['attention', 'drop_attention', 'drop_feed_forward']
    """
    p, saved = params, {} if record is None else record

    def attention(h, record=None):  # the block's attention, with dropout on its weights
        return attention_layer_forward(h, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads, mask, p.biases, p.rotate,
                                       record=record, dropout=dropout, rng=rng)

    def drop(branch, name):  # dropout on a branch before it joins the stream
        saved[name] = dropout_mask(branch.shape, dropout, rng, branch.dtype)
        return branch if saved[name] is None else branch * saved[name]

    if not norm_first:  # post-norm
        attended, weights = attention(x)
        x = p.norm_1(x + drop(attended, "drop_attention"))  # (..., T, d_model)
        return p.norm_2(x + drop(p.feed_forward(x), "drop_feed_forward")), weights
    saved["x"], saved["normed_1"] = x, p.norm_1(x)
    attended, weights = attention(saved["normed_1"], saved.setdefault("attention", {}))
    saved["middle"] = x = x + drop(attended, "drop_attention")  # (..., T, d_model): the residual stream
    saved["normed_2"] = p.norm_2(x)
    ffn = p.feed_forward(saved["normed_2"], saved.setdefault("feed_forward", {}))
    return x + drop(ffn, "drop_feed_forward"), weights  # (..., T, d_model)


# --- notebook 14: the backward pass of a whole pre-norm block, piece by piece -----------------------------

def _layer_norm_backward_inputs(grad_out, x, gamma=None, eps=1e-5):
    g_out, x = as_float_array(grad_out, "grad_out"), as_float_array(x, "x")
    if g_out.shape != x.shape:
        raise ValueError(f"grad_out has shape {g_out.shape} and x has shape {x.shape}; expected the same shape")
    return g_out, x, check_bias("gamma", gamma, x.shape[-1]), eps_input(eps)


@checked(_layer_norm_backward_inputs)
def layer_norm_backward(grad_out, x, gamma=None, eps=1e-5):
    """Gradients of :func:`~attn_helpers.block.layer_norm` with respect to ``x``, ``gamma`` and ``beta``.

    With ``x̂ = (x − μ) / σ``, ``σ = √(var + ε)`` and ``g = γ ⊙ ∂out`` (row by row, over the ``d`` features):

        ∂x = (g − mean(g) − x̂ mean(g ⊙ x̂)) / σ,    ∂γ = Σ_rows ∂out ⊙ x̂,    ∂β = Σ_rows ∂out

    (a mean over the features). The two subtracted terms are the paths through
    the mean and the variance: ``grad_x`` of each row sums to 0.

    ``grad_out (..., d)``; ``x (..., d)``: the layer norm's input; ``gamma (d,)``: default 1. Returns
    ``grad_x (..., d)``; ``grad_gamma, grad_beta (d,)``.

    >>> grad_x, grad_gamma, grad_beta = layer_norm_backward(np.array([[1.0, 0.0, 0.0]]), np.array([[1.0, 2.0, 4.0]]))
    >>> grad_x.shape, bool(abs(grad_x.sum()) < 1e-9), grad_beta   # each row of grad_x sums to 0
    ((1, 3), True, array([1., 0., 0.]))
    """
    g_out = grad_out
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) / sigma  # (..., d)
    g = g_out if gamma is None else g_out * gamma  # the gradient with respect to x_hat: (..., d)
    grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    rows = tuple(range(x.ndim - 1))  # gamma and beta are shared by every row
    return grad_x.astype(x.dtype, copy=False), (g_out * x_hat).sum(axis=rows), g_out.sum(axis=rows)


def _gelu_backward_inputs(grad_out, x, approximate=True):
    g, x = as_float_array(grad_out, "grad_out", min_ndim=0), as_float_array(x, "x", min_ndim=0)
    if g.shape != x.shape:
        raise ValueError(f"grad_out has shape {g.shape} and x has shape {x.shape}; expected the same shape")
    return g, x, as_flag(approximate, "approximate")


@checked(_gelu_backward_inputs)
def gelu_backward(grad_out, x, approximate=True):
    """Gradient of GELU with respect to ``x``: GPT-2's tanh form by default, the exact form with ``approximate=False``.

    With ``u = √(2/π) (x + 0.044715 x³)``, ``GELU(x) = ½ x (1 + tanh u)``, so

        dGELU/dx = ½ (1 + tanh u) + ½ x (1 − tanh² u) √(2/π) (1 + 3 · 0.044715 x²)

    (exact: ``Φ(x) + x φ(x)``). ``grad_out`` and ``x`` have the same shape.

    >>> gelu_backward(np.ones(3), np.array([-10.0, 0.0, 10.0])).round(6)  # 0 far left, 1/2 at 0, 1 far right
    array([-0. ,  0.5,  1. ])
    """
    g = grad_out
    if approximate:
        c = math.sqrt(2.0 / math.pi)
        t = np.tanh(c * (x + 0.044715 * (x * x * x)))
        slope = 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * c * (1.0 + 3 * 0.044715 * x * x)
    else:
        slope = 0.5 * erfc(-x / math.sqrt(2.0)) + x * np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return (g * slope).astype(np.result_type(g, x), copy=False)


def _rows_sum(grad):
    return grad.reshape(-1, grad.shape[-1]).sum(axis=0)  # a bias is shared by every row


_SLOPES = {"gelu_tanh": lambda g, x: gelu_backward(g, x, True),
           "gelu": lambda g, x: gelu_backward(g, x, False),
           "relu": lambda g, x: g * (x > 0)}


@checked_by_caller  # what its forward recorded: checked when the forward ran
def feed_forward_backward(grad_out, record, W_1, W_2, activation="gelu_tanh"):
    """Gradients of ``FFN(x) = act(x W_1 + b_1) W_2 + b_2``, from what the forward pass recorded.

    Backwards through each step of the forward pass: the second linear layer, the activation
    (:func:`gelu_backward`), the first linear layer (:func:`linear_backward`).

    ``record``: what :func:`~attn_helpers.block.feed_forward` wrote into its ``record`` (``x``, ``pre``,
    ``hidden``). Returns ``grad_x (..., d_model)``; ``grads``: ``W_1``, ``b_1``, ``W_2``, ``b_2``.
    """
    grad_hidden, grad_W_2 = linear_backward(record["hidden"], W_2, grad_out)  # (..., T, d_ff), (d_ff, d)
    grad_pre = _SLOPES[activation](grad_hidden, record["pre"])  # (..., T, d_ff)
    grad_x, grad_W_1 = linear_backward(record["x"], W_1, grad_pre)  # (..., T, d_model), (d_model, d_ff)
    return grad_x, {"W_1": grad_W_1, "b_1": _rows_sum(grad_pre), "W_2": grad_W_2, "b_2": _rows_sum(grad_out)}


@checked_by_caller  # what its forward recorded: checked when the forward ran
def attention_layer_backward(grad_out, record, params):
    """Gradients of multi-head self-attention ``out = Concat(heads) W_o + b_o`` with biased projections.

    Backwards: the output projection (:func:`linear_backward`), the concatenation (split the gradient back
    into heads), every head's attention at once (:func:`attention_backward`: the head axis is a batch axis),
    the merge of the heads, and the three projections; ``x`` feeds all three, so its gradient is the sum of theirs.

    ``grad_out (..., T, d_model)``; ``record``: what :func:`~attn_helpers.multihead.multi_head_attention` (or
    grouped-query attention, whose shared key/value heads get the sum of their group's gradients) wrote into its
    ``record``; ``params``: the block's :class:`~attn_helpers.block.BlockParams`. Returns
    ``grad_x (..., T, d_model)``; ``grads``: the gradient of each of the eight arrays.
    """
    r, h = record, params.num_heads
    grad_merged, grad_W_o = linear_backward(r["merged"], params.W_o, grad_out)  # (..., T, d), (d, d)
    grad_context = split_heads(grad_merged, h)  # (..., h, T, d_h)
    grad_q, grad_k, grad_v = attention_backward(r["queries"], r["keys"], r["values"], grad_context,
                                                          None, r["scale"], r["weights"], r["keep"])
    if r["rotate"] is not None:  # back through the rotation: its inverse, R(p)^T = R(-p)
        back = -np.arange(grad_q.shape[-2])
        grad_q, grad_k = r["rotate"](grad_q, back), r["rotate"](grad_k, back)
    h_kv = params.W_k.shape[1] // r["keys"].shape[-1]  # grouped-query attention: h / h_kv query heads share each
    grad_k, grad_v = _sum_groups(grad_k, h_kv), _sum_groups(grad_v, h_kv)  # (..., h_kv, T, d_h)
    grads = {"W_o": grad_W_o, "b_o": _rows_sum(grad_out)}
    grad_x = 0.0
    for name, grad_heads in (("q", grad_q), ("k", grad_k), ("v", grad_v)):
        grad_projected = merge_heads(grad_heads)  # (..., h, T, d_h) -> (..., T, d)
        grad_x_part, grads[f"W_{name}"] = linear_backward(r["x"], getattr(params, f"W_{name}"),
                                                                    grad_projected)
        grads[f"b_{name}"] = _rows_sum(grad_projected)
        grad_x = grad_x + grad_x_part  # x feeds the queries, the keys and the values
    return grad_x, grads


def _sum_groups(grad, num_kv_heads):
    """``(..., h, T, d) -> (..., h_kv, T, d)``: a key/value head shared by a group of query heads gets their sum."""
    *batch, h, T, d = grad.shape
    return grad if h == num_kv_heads else grad.reshape(*batch, num_kv_heads, h // num_kv_heads, T, d).sum(axis=-3)


@checked_by_caller  # what its forward recorded: checked when the forward ran
def block_backward(grad_out, record, params):
    """Gradients of one pre-norm block ``m = x + MHA(LN_1(x))``, ``out = m + FFN(LN_2(m))``.

    A residual connection copies the gradient: ``grad_m = grad_out + (the path through the
    FFN)``, ``grad_x = grad_m + (the path through attention)``. With dropout, the masks the forward pass
    recorded multiply the gradient of each branch (a dropped number passes none).

    ``grad_out (..., T, d_model)``; ``record``: what :func:`~attn_helpers.block.transformer_block` wrote into
    its ``record`` (pre-norm); ``params``: the block. Returns ``grad_x (..., T, d_model)``; ``grads``: one
    gradient per array of the block (biases, gammas and betas included).
    """
    p, drop_1, drop_2 = params, record["drop_attention"], record["drop_feed_forward"]  # dropout masks, or None
    grad_ffn = grad_out if drop_2 is None else grad_out * drop_2  # a dropped number passes no gradient
    grad_normed_2, grads = feed_forward_backward(grad_ffn, record["feed_forward"], p.W_1, p.W_2, p.activation)
    grad_middle_ffn, grads["norm_2_gamma"], grads["norm_2_beta"] = layer_norm_backward(
        grad_normed_2, record["middle"], p.norm_2_gamma, p.eps)
    grad_middle = grad_out + grad_middle_ffn  # the residual: the gradient goes straight through, plus the FFN's
    grad_attended = grad_middle if drop_1 is None else grad_middle * drop_1
    grad_normed_1, attention_grads = attention_layer_backward(grad_attended, record["attention"], p)
    grads.update(attention_grads)
    grad_x_attention, grads["norm_1_gamma"], grads["norm_1_beta"] = layer_norm_backward(
        grad_normed_1, record["x"], p.norm_1_gamma, p.eps)
    return grad_middle + grad_x_attention, grads
