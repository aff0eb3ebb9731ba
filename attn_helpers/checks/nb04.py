"""Checkers for notebook 04 (context vectors)."""

from __future__ import annotations

import numpy as np

from ..core import softmax
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ._grader import Case, Verdict, Wrong, call_quietly, grade_choice, grade_function, register_solution, shows_verdict

__all__ = ["check_context_vectors", "check_doubled_weights", "DOUBLING_CHOICES"]

#: The answers offered for what doubling every embedding does to a query's largest weight.
DOUBLING_CHOICES = ("grow", "shrink", "stay the same")


@register_solution("context_vectors")
def context_vectors(X):
    """Every context vector at once: weight-free (unscaled) self-attention."""
    scores = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
    weights = softmax(scores, axis=-1)  # each row (one query) sums to 1
    return weights @ X  # (T, T) @ (T, d_model) -> (T, d_model)


def _cases():
    rng = np.random.default_rng(4)
    X = journey_embeddings()
    return [
        Case((X,), label="the 'journey' sentence, X of shape (6, 3)"),
        Case((rng.standard_normal((3, 3)),), label="a square X of shape (3, 3) with negative entries"),
        Case((rng.standard_normal((2, 5)),), label="X of shape (2, 5): two tokens, five features"),
        Case((X * 10,), label="the 'journey' X times 10 in float32 (scores near 150: a naive exp() overflows)"),
    ]


_MATMUL_HINT = ("a matrix product's inner sizes must agree. The scores are X @ X.T, (T, d_model) @ (d_model, T) -> "
                "(T, T); the context vectors are weights @ X, (T, T) @ (T, d_model) -> (T, d_model). "
                "Look for a missing .T or a swapped order (X @ weights)")


_AXIS0_HINT = ("your weights sum to 1 down the columns: a softmax that ran over axis=0, or the weights transposed "
               "(weights.T @ X). Each query is a row and its weights must sum to 1: softmax(scores, axis=-1), "
               "then weights @ X")

_KEEPDIMS_HINT = ("forgot keepdims=True? exps.sum(axis=-1) has shape (T,), which numpy lines up with the COLUMNS, so "
                  "entry (i, j) was divided by the sum of row j. Keep the axis: exps.sum(axis=-1, keepdims=True) has "
                  "shape (T, 1) and divides each row by its own sum")


def _slipped(X, max_keepdims=True, sum_keepdims=True, whole_sum=False):
    """The context vectors with a hand-written softmax that forgets keepdims=True (on the max, the sum) or divides
    by the sum of the whole matrix."""
    scores = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=max_keepdims))
    total = exps.sum() if whole_sum else exps.sum(axis=-1, keepdims=sum_keepdims)
    return exps / total @ X  # (T, T) @ (T, d_model) -> (T, d_model)


def _sums_rows_without_keepdims(fn, X) -> bool:
    """Whether ``fn(X)`` takes a sum over the last axis of a matrix without keepdims=True (``exps.sum(axis=1)``).

    On the symmetric scores X @ X.T that slip gives exactly the weights of a softmax over axis=0, so only
    watching the sums tells the two apart."""
    seen = []

    class Watched(np.ndarray):  # an array (and every array computed from it) that notes such sums
        def sum(self, axis=None, *args, keepdims=False, **kwargs):
            if self.ndim == 2 and axis in (1, -1) and not keepdims:
                seen.append(axis)
            return super().sum(axis, *args, keepdims=keepdims, **kwargs)

    call_quietly(fn, np.asarray(X).view(Watched))
    return bool(seen)


def _wrongs():
    def scores(X):
        return X @ X.T

    return [
        Wrong(lambda X: softmax(scores(X)), "you returned the weights, shape (T, T). Multiply them with X: "
                                           "context = weights @ X"),
        Wrong(lambda X: scores(X) @ X, "you forgot the softmax: the raw scores are not weights. Use "
                                      "weights = softmax(scores, axis=-1), so each row sums to 1"),
        Wrong(lambda X: softmax(scores(X), axis=0) @ X, _AXIS0_HINT),
        *(Wrong(fn, "you divided by the sum of the WHOLE score matrix, so all T x T weights together sum to 1 and each "
                    "row sums to less. Divide each row by its own sum: exps.sum(axis=-1, keepdims=True)")
          for fn in (lambda X: np.exp(scores(X)) / np.exp(scores(X)).sum() @ X,
                     lambda X: _slipped(X, whole_sum=True))),
        Wrong(lambda X: _slipped(X, sum_keepdims=False), _KEEPDIMS_HINT),
        Wrong(lambda X: _slipped(X, max_keepdims=False), "forgot keepdims=True on the max? scores.max(axis=-1) has "
              "shape (T,), which numpy lines up with the COLUMNS, so each column, not each row, had a max "
              "subtracted. Use scores.max(axis=-1, keepdims=True), shape (T, 1)"),
        Wrong(lambda X: _slipped(X, max_keepdims=False, sum_keepdims=False), "forgot keepdims=True on the max and on "
              "the sum? Both have shape (T,), which numpy lines up with the COLUMNS. Use keepdims=True on both"),
        Wrong(lambda X: (scores(X) / scores(X).sum(axis=-1, keepdims=True)) @ X,
              "you divided the scores by their row sum. The rows now sum to 1, but that is not softmax "
              "(negative scores give negative weights): exponentiate first, use softmax(scores, axis=-1)"),
        Wrong(lambda X: X @ softmax(scores(X)),
              "you computed X @ weights, which mixes the features of each token, not the tokens. "
              "The context is weights @ X: row i is the weighted average of all the token rows"),
        Wrong(lambda X: softmax(scores(X) / np.sqrt(X.shape[-1])) @ X,
              "you scaled the scores by 1/sqrt(d_model). That comes in notebook 06; here the scores are the "
              "plain dot products X @ X.T"),
        Wrong(lambda X: softmax(X.T @ X) @ X,
              "you used X.T @ X (features x features) as scores. The scores compare tokens: X @ X.T, shape (T, T)"),
    ]


@shows_verdict
def check_context_vectors(fn):
    """Grade ``fn(X) -> context`` of shape ``(T, d_model)``: softmax(X X^T) X, unscaled."""
    verdict = grade_function(
        fn, context_vectors, _cases(), what="context_vectors", wrongs=_wrongs(),
        shape_hint="the context vectors have one row per token and one column per feature: shape (T, d_model), "
                   "the same shape as X",
        success="every context vector is a weighted average of the token rows: weights @ X.",
        hints={"matmul": _MATMUL_HINT,
               "tuple": "return only the context vectors (one array of shape (T, d_model)), not (context, weights)"},
    )
    if verdict.hint == _AXIS0_HINT and _sums_rows_without_keepdims(fn, _cases()[0].args[0]):
        return Verdict(False, verdict.message, _KEEPDIMS_HINT)
    return verdict


@shows_verdict
def check_doubled_weights(prediction, query="with"):
    """Grade a prediction: what happens to ``query``'s largest weight when every embedding is doubled (X -> 2 X)."""
    X = journey_embeddings()
    i = JOURNEY_TOKENS.index(query)
    before = softmax(X @ X.T, axis=-1)[i].max()  # (T, d_model) @ (d_model, T) -> (T, T); its row i
    after = softmax((2 * X) @ (2 * X).T, axis=-1)[i].max()
    outcome = "grow" if after > before + 1e-6 else "shrink" if after < before - 1e-6 else "stay the same"
    return grade_choice(prediction, outcome, DOUBLING_CHOICES, name="prediction", wrongs={
        "stay the same": "a softmax is not scale-free: doubling both vectors of a dot product multiplies every score "
                         "by 4, so the differences between scores grow 4-fold (like τ = 1/4 in notebook 03)",
        "shrink": "larger scores spread further apart, and the softmax of scores further apart is sharper, not "
                  "flatter (notebook 03: a small temperature sharpens)",
    }, success=f"the largest weight of {query!r} grows from {before:.4f} to {after:.4f}: every score is 4 times "
               "larger, as if τ = 1/4. Longer vectors make sharper attention (notebook 06 comes back to this).")
