"""Backpropagation, written out (notebook 11): the backward pass of each piece of a tiny attention model.

Each ``*_backward`` takes what its forward saw and ``grad_*`` (the loss's gradient with respect to the forward's
output) and returns the gradients with respect to the forward's inputs, each of its input's shape.
"""

from __future__ import annotations

import math

import numpy as np

from ._validate import as_float_array, as_positive_int, batch_shape, checked, sdpa_inputs
from .core import scaled_dot_product_attention, softmax

__all__ = [
    "softmax_backward",
    "attention_backward",
    "linear_backward",
    "embedding_backward",
    "cross_entropy",
    "cross_entropy_backward",
    "numerical_gradient",
    "relative_error",
]


def check_same_shape(a_name: str, a, b_name: str, b) -> None:
    if a.shape != b.shape:
        raise ValueError(f"{a_name} has shape {a.shape} and {b_name} has shape {b.shape}; expected the same shape")


def softmax_backward_inputs(weights, grad_weights):
    p, g = as_float_array(weights, "weights"), as_float_array(grad_weights, "grad_weights")
    check_same_shape("weights", p, "grad_weights", g)
    return p, g


def attention_backward_inputs(queries, keys, values, grad_context, mask=None, scale=None, weights=None):
    """The inputs of :func:`~attn_helpers.backprop.attention_backward`: those of attention, then G and P."""
    q, k, v, mask, scale = sdpa_inputs(queries, keys, values, mask, scale)
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
    return q, k, v, grad, mask, scale, weights


@checked(softmax_backward_inputs)
def softmax_backward(weights, grad_weights):
    r"""Gradient of the loss with respect to the scores, given the softmax's output.

    With :math:`p = \mathrm{softmax}(s)` over the last axis and :math:`g = \partial L / \partial p`,
    the chain rule through the Jacobian :math:`J = \mathrm{diag}(p) - p\,p^\top` gives

    .. math:: \frac{\partial L}{\partial s} = J^\top g = p \odot \left(g - (g \cdot p)\right)

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
def attention_backward(queries, keys, values, grad_context, mask=None, scale=None, weights=None):
    r"""Gradients of scaled dot-product attention with respect to its queries, keys and values.

    .. math:: \partial V = P^\top G, \quad \partial S = s\, P \odot (G V^\top - \mathrm{rowsum}(G V^\top \odot P)),
              \quad \partial Q = \partial S\, K, \quad \partial K = \partial S^\top Q

    ``G`` is ``grad_context (..., T_q, d_v)``, the gradient of the loss with respect to the context;
    the other arguments are those of :func:`~attn_helpers.core.scaled_dot_product_attention` (scale
    ``s``), and optionally its ``weights`` ``P`` (recomputed when None). Returns the gradients of the
    queries, keys and values, each of its array's shape; a masked entry (``P = 0``) passes none.

    >>> x = np.eye(2)
    >>> grad_q, grad_k, grad_v = attention_backward(x, x, x, np.ones((2, 2)))
    >>> grad_v  # each value's gradient: the total weight it received, times G's rows
    array([[1., 1.],
           [1., 1.]])
    """
    scale = 1 / math.sqrt(queries.shape[-1]) if scale is None else scale
    if weights is None:
        _, weights = scaled_dot_product_attention.unchecked(queries, keys, values, mask, scale)  # (..., T_q, T_k)
    G = grad_context
    grad_values = np.swapaxes(weights, -1, -2) @ G  # (..., T_k, T_q) @ (..., T_q, d_v) -> (..., T_k, d_v)
    grad_weights = G @ np.swapaxes(values, -1, -2)  # (..., T_q, d_v) @ (..., d_v, T_k) -> (..., T_q, T_k)
    grad_scores = softmax_backward.unchecked(weights, grad_weights) * scale  # through the softmax and the scale
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


def linear_backward(x, weight, grad_out):
    r"""Gradients of ``out = x @ weight`` (a bias-free linear layer, weight shared over all rows).

    .. math:: \partial x = \partial\mathrm{out}\; W^\top, \qquad
              \partial W = \sum_{\text{rows } n} x_n^\top\, \partial\mathrm{out}_n

    ``x (..., d_in)``; ``weight (d_in, d_out)``; ``grad_out (..., d_out)``. Returns ``grad_x (..., d_in)``;
    ``grad_weight (d_in, d_out)``.

    >>> grad_x, grad_w = linear_backward(np.array([[1.0, 2.0]]), np.eye(2), np.array([[0.5, -1.0]]))
    >>> grad_x, grad_w
    (array([[ 0.5, -1. ]]), array([[ 0.5, -1. ],
           [ 1. , -2. ]]))
    """
    x = as_float_array(x, "x")
    w = as_float_array(weight, "weight", min_ndim=2)
    g = as_float_array(grad_out, "grad_out")
    if w.ndim != 2 or x.shape[-1] != w.shape[0] or g.shape != (*x.shape[:-1], w.shape[1]):
        raise ValueError(f"x has shape {x.shape}, weight {w.shape} and grad_out {g.shape}; expected "
                         f"(..., d_in), (d_in, d_out) and (..., d_out)")
    grad_x = g @ w.T  # (..., d_out) @ (d_out, d_in) -> (..., d_in)
    rows_x, rows_g = x.reshape(-1, x.shape[-1]), g.reshape(-1, g.shape[-1])  # every row: (N, d_in), (N, d_out)
    grad_w = rows_x.T @ rows_g  # (d_in, N) @ (N, d_out) -> (d_in, d_out), summed over the N rows
    return grad_x, grad_w


def embedding_backward(token_ids, grad_embedded, vocab_size):
    r"""Gradient of an embedding lookup ``embedded = table[token_ids]`` with respect to ``table``.

    Row ``v`` of the gradient is the sum of the gradients of every position holding token ``v``
    (``np.add.at``, which adds repeated indices instead of overwriting them); rows of tokens that
    do not occur are 0.

    ``token_ids (...)``; ``grad_embedded (..., d_model)``. Returns ``grad_table (vocab_size, d_model)``.

    >>> embedding_backward([0, 2, 0], np.array([[1.0], [2.0], [3.0]]), vocab_size=3)
    array([[4.],
           [0.],
           [2.]])
    """
    ids = np.asarray(token_ids)
    vocab_size = as_positive_int(vocab_size, "vocab_size")
    g = as_float_array(grad_embedded, "grad_embedded")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"token_ids must be integers; got dtype {ids.dtype}")
    if g.shape[:-1] != ids.shape:
        raise ValueError(f"grad_embedded has shape {g.shape}; expected token_ids' shape {ids.shape} + (d_model,)")
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"token_ids must lie in [0, vocab_size={vocab_size}); got {ids.min()}..{ids.max()}")
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
    counted = t >= 0  # a negative target marks a position that the loss ignores
    return z, np.where(counted, t, 0), counted, max(int(counted.sum()), 1)


def cross_entropy(logits, targets):
    r"""Mean cross-entropy of the softmax of ``logits`` against integer ``targets``.

    .. math:: L = -\frac{1}{N} \sum_{n} \log \mathrm{softmax}(z_n)_{t_n}

    over the ``N`` positions whose target is ``>= 0`` (a negative target is ignored).

    ``logits (..., num_classes)``; ``targets (...)``.

    >>> round(cross_entropy(np.zeros((2, 4)), np.array([1, -1])), 4)  # uniform over 4 classes: log 4
    1.3863
    """
    z, t, counted, n = _targets(logits, targets)
    shifted = z - z.max(axis=-1, keepdims=True)  # stable: the largest logit of each row becomes 0
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))  # (..., num_classes)
    picked = np.take_along_axis(log_probs, t[..., None], axis=-1)[..., 0]  # log p of each target: (...)
    return float(-(picked * counted).sum() / n)


def cross_entropy_backward(logits, targets):
    r"""Gradient of :func:`cross_entropy` with respect to the logits: ``(softmax(z) - onehot(t)) / N``.

    Rows whose target is ignored (negative) get zero gradient.

    >>> cross_entropy_backward(np.zeros((2, 2)), np.array([0, -1]))
    array([[-0.5,  0.5],
           [ 0. ,  0. ]])
    """
    z, t, counted, n = _targets(logits, targets)
    probs = softmax(z, axis=-1)  # (..., num_classes)
    onehot = np.arange(z.shape[-1]) == t[..., None]  # (..., num_classes)
    grad = np.where(counted[..., None], probs - onehot, 0.0) / n  # an ignored row gets exactly 0
    return grad.astype(z.dtype, copy=False)


def numerical_gradient(f, x, eps=1e-6):
    r"""Central finite differences: ``grad[i] = (f(x + eps e_i) - f(x - eps e_i)) / (2 eps)``.

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
    r"""``max |a - n| / max(|a| + |n|, tiny)``: near 1e-10 when a backward pass is right, near 1 when wrong.

    >>> relative_error(np.array([1.0, 2.0]), np.array([1.0, 2.0 + 1e-9])) < 1e-9
    True
    """
    a = np.asarray(analytic, dtype=np.float64)
    n = np.asarray(numeric, dtype=np.float64)
    check_same_shape("analytic", a, "numeric", n)
    if a.size == 0:
        return 0.0
    return float(np.abs(a - n).max() / max(float((np.abs(a) + np.abs(n)).max()), 1e-30))
