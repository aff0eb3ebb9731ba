"""Checkers for notebook 05 (Q, K and V projections)."""

from __future__ import annotations

import numpy as np

from ..core import softmax
from ..examples import SEED, i_love_ai, journey_embeddings
from ._grader import Case, Verdict, Wrong, grade_function, read_answer, register_solution

__all__ = ["check_self_attention_qkv", "check_asymmetric_keys"]


@register_solution("self_attention_qkv")
def self_attention_qkv(X, W_q, W_k, W_v):
    """Self-attention with trainable projections: the output, shape (T, d_v)."""
    Q = X @ W_q  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    K = X @ W_k  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    V = X @ W_v  # (T, d_in) @ (d_in, d_v) -> (T, d_v)
    d_k = K.shape[-1]
    scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
    weights = softmax(scores / np.sqrt(d_k), axis=-1)  # each row (one query) sums to 1
    return weights @ V  # (T, T) @ (T, d_v) -> (T, d_v)


def _cases():
    ex = i_love_ai()
    rng = np.random.default_rng(SEED + 5)
    X6 = journey_embeddings()
    return [
        Case((ex["X"], ex["W_q"], ex["W_k"], ex["W_v"]), label="'I love AI' with the worked-example matrices"),
        Case((X6, rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 4))),
             label="the 'journey' sentence, d_in = 3, d_k = 2, d_v = 4"),
        Case(tuple(rng.standard_normal((2, 2)) for _ in range(4)),
             label="a square case: T = d_in = d_k = d_v = 2"),
        Case((rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5)),
              rng.standard_normal((3, 2))), label="T = 4, d_in = 3, d_k = 5, d_v = 2"),
    ]


def _attend(Q, K, V, scale=None, axis=-1):
    scale = 1 / np.sqrt(K.shape[-1]) if scale is None else scale
    return softmax(Q @ K.T * scale, axis=axis) @ V


def _wrongs():
    def qkv(X, W_q, W_k, W_v):
        return X @ W_q, X @ W_k, X @ W_v

    def weights_of(X, W_q, W_k, W_v):
        Q, K, _ = qkv(X, W_q, W_k, W_v)
        return softmax(Q @ K.T / np.sqrt(K.shape[-1]))

    return [
        Wrong(weights_of, "you returned the weights, shape (T, T). Multiply them with the values: weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1.0),
              "you forgot to scale: divide the scores Q @ K.T by np.sqrt(d_k) before the softmax"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / W_k.shape[-1]),
              "you divided the scores by d_k; divide by its square root, np.sqrt(d_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / np.sqrt(X.shape[-1])),
              "you scaled by the square root of d_in = X.shape[-1]. d_k is the length of the queries and keys: "
              "K.shape[-1] (the number of columns of W_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), axis=0),
              "your softmax ran down the columns (axis=0). Each query is a row and its weights must sum to 1: "
              "use axis=-1"),
        Wrong(lambda X, W_q, W_k, W_v: (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[-1]) @ (X @ W_v),
              "you forgot the softmax: scaled scores are not weights. Apply softmax(..., axis=-1) so each row "
              "sums to 1"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_k, X @ W_q, X @ W_v),
              "you swapped the roles of queries and keys (K @ Q.T). Row i of the scores is query i against every "
              "key: scores = Q @ K.T"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q, X @ W_k, X),
              "you multiplied the weights with X. The output mixes the values: V = X @ W_v, then weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q, X @ W_k, X @ W_k),
              "you multiplied the weights with K. The output mixes the values: V = X @ W_v, then weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(W_q @ X, W_k @ X, W_v @ X),
              "you wrote W @ X. X holds one token per row, so the projection is X @ W_q: "
              "(T, d_in) @ (d_in, d_k) -> (T, d_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q.T, X @ W_k.T, X @ W_v.T),
              "you used transposed matrices (X @ W_q.T). Here W_q has shape (d_in, d_k) and Q = X @ W_q"),
        Wrong(lambda X, W_q, W_k, W_v: _attend((X @ W_q).T, (X @ W_k).T, (X @ W_v).T),
              "you transposed Q, K and V: they have one row per token, shape (T, d_k)"),
    ]


_MATMUL_HINT = ("a matrix product's inner sizes must agree. Q = X @ W_q is (T, d_in) @ (d_in, d_k); scores = Q @ K.T "
                "is (T, d_k) @ (d_k, T); output = weights @ V is (T, T) @ (T, d_v). Look for W @ X or a missing .T")


def check_self_attention_qkv(fn):
    """Grade ``fn(X, W_q, W_k, W_v) -> output`` of shape ``(T, d_v)``: softmax(Q K^T / sqrt(d_k)) V."""
    return grade_function(
        fn, self_attention_qkv, _cases(), what="self_attention_qkv", wrongs=_wrongs(),
        shape_hint="the output has one row per token and d_v columns: shape (T, d_v), the shape of V",
        success="Q, K and V projected, scores scaled by √d_k, a softmax per row, and the values mixed.",
        hints={"matmul": _MATMUL_HINT,
               "tuple": "return only the output (one array of shape (T, d_v)), not (output, weights)"},
    )


@register_solution("asymmetric_keys")
def asymmetric_keys():
    """Change one entry of W_k: W_q @ W_k.T is no longer symmetric, and neither is Q @ K.T."""
    W_k = i_love_ai()["W_k"].copy()
    W_k[0, 0] = 1.0  # was 0
    return W_k


def check_asymmetric_keys(W_k):
    """Grade a ``W_k`` (2 x 2) that makes the scores Q K^T of "I love AI" asymmetric."""
    try:
        return _check_asymmetric_keys(W_k)
    except Exception as err:  # noqa: BLE001 - a checker never raises
        return Verdict(False, f"could not use this value ({type(err).__name__})",
                       "give a 2 x 2 numpy array, for example W_k.copy() with one entry changed")


def _check_asymmetric_keys(W_k):
    if W_k is None or W_k is Ellipsis:
        return Verdict(False, "my_W_k is not filled in yet", "replace the ... with a 2 x 2 array")
    W, problem = read_answer(W_k, "my_W_k")
    if problem:
        return Verdict(False, problem, "give a 2 x 2 numpy array, for example W_k.copy() with one entry changed")
    ex = i_love_ai(dtype=np.float64)
    if W.shape != ex["W_k"].shape:
        return Verdict(False, f"my_W_k has shape {W.shape}, expected (2, 2) = (d_in, d_k)",
                       "W_k maps the 2 input features to d_k = 2 key features: a 2 x 2 matrix")
    if not np.isfinite(W).all():
        return Verdict(False, "my_W_k contains NaN or inf", "use ordinary finite numbers")
    X, W_q = ex["X"], ex["W_q"]
    M = W_q @ W.T  # (d_in, d_k) @ (d_k, d_in) -> (d_in, d_in)
    S = (X @ W_q) @ (X @ W).T  # (T, d_k) @ (d_k, T) -> (T, T)
    if np.allclose(S, S.T, atol=1e-9):
        if np.allclose(W, ex["W_k"]):
            return Verdict(False, "that is the original W_k, whose scores are symmetric",
                           "change one entry, for example my_W_k = W_k.copy(); my_W_k[0, 0] = 1")
        shown = np.array2string(M, precision=2, separator=", ").replace("\n", "")
        return Verdict(False, "Q @ K.T is still symmetric",
                       f"the scores are X (W_q W_kᵀ) Xᵀ, symmetric exactly when M = W_q @ my_W_k.T is. Yours is "
                       f"{shown}: make M[0, 1] differ from M[1, 0]")
    tokens = ("I", "love", "AI")
    i, j = np.unravel_index(np.argmax(np.abs(S - S.T)), S.shape)
    return Verdict(True, f"score({tokens[i]} → {tokens[j]}) = {S[i, j]:.2f} but score({tokens[j]} → {tokens[i]}) = "
                         f"{S[j, i]:.2f}: now a token can attend to another without being attended back.")
