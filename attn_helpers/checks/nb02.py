"""Checkers for notebook 02 (dot-product scores)."""

from __future__ import annotations

import numpy as np

from ..core import attention_scores
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ._grader import Case, Verdict, Wrong, call_quietly, grade_choice, grade_function, register_solution, shows_verdict

__all__ = ["check_dot_score", "check_score_matrix", "check_best_key"]


@register_solution("dot_score")
def dot_score(query, key):
    """The score of one query with one key: the sum of the products of their features."""
    total = 0.0
    for q_k, k_k in zip(query, key, strict=True):  # one term per feature
        total += q_k * k_k
    return total  # the same number as query @ key


@register_solution("score_matrix")
def score_matrix(X):
    """Every score at once: row i, column j is the dot product of token i with token j."""
    return X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)


def _dot_cases():
    X = journey_embeddings(np.float64)
    rng = np.random.default_rng(2)
    at = JOURNEY_TOKENS.index
    return [
        Case((X[at("journey")], X[at("with")]), label="query 'journey', key 'with'"),
        Case((np.array([1.0, -2.0, 3.0]), np.array([4.0, 5.0, -6.0])),
             label="[1, -2, 3] and [4, 5, -6] (negative entries)"),
        Case((np.array([3.0, 4.0]), np.array([3.0, 4.0])), label="[3, 4] with itself"),
        Case((rng.standard_normal(5), rng.standard_normal(5)), label="two random vectors of length 5"),
    ]


#: numpy's ready-made products, which exercise 02.1 asks the learner to re-create.
_PRODUCTS = {np.dot: "np.dot", np.inner: "np.inner", np.vdot: "np.vdot", np.tensordot: "np.tensordot",
             np.einsum: "np.einsum"}


def _products_used(fn, case):
    """The ready-made products (``@``, ``np.dot``, ``.dot``, ...) that ``fn`` calls on ``case``'s vectors."""
    used = []

    class Watched(np.ndarray):  # an array that notes which product is taken of it
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            if ufunc is np.matmul:
                used.append("@ (np.matmul)")
            return super().__array_ufunc__(ufunc, method, *(np.asarray(x) for x in inputs), **kwargs)

        def __array_function__(self, func, types, args, kwargs):
            if func in _PRODUCTS:
                used.append(_PRODUCTS[func])
            return super().__array_function__(func, types, args, kwargs)

        def dot(self, *args, **kwargs):
            used.append(".dot")
            return np.asarray(self).dot(*args, **kwargs)

    call_quietly(fn, *(np.asarray(a).view(Watched) for a in case.args))
    return used


@shows_verdict
def check_dot_score(fn):
    """Grade ``fn(query, key) -> score``, the dot product of two 1-D vectors (one number), without ``@`` or np.dot."""
    verdict = grade_function(
        fn, dot_score, _dot_cases(), what="dot_score",
        wrongs=[
            Wrong(lambda a, b: a * b, "that is the elementwise product, one number per feature; add the products up "
                                      "to get a single score"),
            Wrong(lambda a, b: (a @ b) / (np.linalg.norm(a) * np.linalg.norm(b)),
                  "you divided by the lengths: that is the cosine similarity. The score is the plain dot "
                  "product, which also grows with the lengths of the vectors"),
            Wrong(lambda a, b: np.linalg.norm(a) * np.linalg.norm(b),
                  "that is |query| * |key|, the dot product without the cos(angle) factor: multiply "
                  "feature by feature, then sum"),
            Wrong(lambda a, b: np.sum(a) * np.sum(b), "you multiplied the two sums; sum the products of matching "
                                                      "features instead: query[0]*key[0] + query[1]*key[1] + ..."),
            Wrong(lambda a, b: np.sum(a + b), "you added the vectors; a dot product multiplies matching features, "
                                              "then sums"),
            Wrong(lambda a, b: a[0] * b[0], "your function returned after the first feature: the `return` is inside "
                                            "the loop (indented under `for`). Move it out, to the indentation of "
                                            "`for`, so that it runs once every product has been added"),
            Wrong(lambda a, b: a[-1] * b[-1], "only the last product is left: `total = q * k` replaces the total at "
                                              "each step. Add to it instead: total += q * k"),
            Wrong(lambda a, b: a[:-1] @ b[:-1], "your loop stops one feature early: range(len(query)) already "
                                                "stops before len(query), so range(len(query) - 1) misses the last"),
            Wrong(lambda a, b: a[1:] @ b[1:], "your loop skips the first feature: indices start at 0, so loop over "
                                              "range(len(query)), not range(1, len(query))"),
        ],
        shape_hint="a score is one number: sum the products of matching features",
        success="a score is one number: the sum over the features of query[k] * key[k].",
    )
    if verdict.passed:
        used = _products_used(fn, _dot_cases()[0])
        if used:
            return Verdict(False, f"the numbers are right, but your dot_score uses {used[0]}, the product this "
                                  "exercise asks you to re-create",
                           "multiply matching features with query * key, then add them up with .sum() (or a loop "
                           "over the features): that is what @ computes")
    return verdict


def _cosine_matrix(X):
    lengths = np.linalg.norm(X, axis=1)  # (T,): one length per token
    return X @ X.T / np.outer(lengths, lengths)  # (T, d_model) @ (d_model, T) -> (T, T), divided entry by entry


def _matrix_cases():
    rng = np.random.default_rng(3)
    return [
        Case((journey_embeddings(np.float64),), label="the 'journey' sentence, X of shape (6, 3)"),
        Case((np.array([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]]),), label="X = [[1, 0], [0, 2], [1, 1]], shape (3, 2)"),
        Case((rng.standard_normal((4, 4)),), label="a square X of shape (4, 4)"),
        Case((rng.standard_normal((2, 5)),), label="X of shape (2, 5): more features than tokens"),
    ]


@shows_verdict
def check_score_matrix(fn):
    """Grade ``fn(X) -> scores`` of shape ``(T, T)`` with ``scores[i, j] = X[i] @ X[j]``."""
    return grade_function(
        fn, score_matrix, _matrix_cases(), what="score_matrix",
        wrongs=[
            Wrong(lambda X: X.T @ X, "you computed X.T @ X, of shape (d_model, d_model): it compares features, not "
                                     "tokens. Rows are tokens, so the product of every row with every row is X @ X.T, "
                                     "of shape (T, T)"),
            Wrong(lambda X: X * X, "X * X multiplies elementwise (shape (T, d_model)); you need a matrix product: "
                                   "X @ X.T, of shape (T, T)"),
            Wrong(lambda X: (X * X).sum(axis=1), "that is only the diagonal: each token with itself. The matrix "
                                                 "product X @ X.T pairs every token with every other token"),
            Wrong(lambda X: (X * X).sum(axis=0), "you summed over the tokens (axis=0). A score pairs two tokens and "
                                                 "sums over the features; use X @ X.T"),
            Wrong(lambda X: np.sum(X * X), "np.sum added everything into one number; use the matrix product "
                                           "X @ X.T"),
            Wrong(lambda X: X @ X.T / np.sqrt(X.shape[1]), "you divided by sqrt(d_model): that scaling comes in "
                                                           "notebook 06. Here the scores are the plain X @ X.T"),
            Wrong(_cosine_matrix,
                  "you divided by the lengths: that is the matrix of cosine similarities (notebook 01). The scores "
                  "are the plain dot products X @ X.T, which grow with the lengths"),
        ],
        shape_hint="the result should have one score per (query, key) pair: shape (T, T). Print X.shape and your "
                   "result's shape",
        success="X @ X.T puts the dot product of token i with token j at row i, column j.",
    )


@shows_verdict
def check_best_key(token, query="with"):
    """Grade a prediction: the key with which ``query`` has its highest score (the 'journey' sentence)."""
    X = journey_embeddings()
    row = JOURNEY_TOKENS.index(query)
    scores = attention_scores(X, X)[row]  # (T,): the query's row of X @ X.T
    best = JOURNEY_TOKENS[int(np.argmax(scores))]
    own = scores[row]
    read_row = f"row {row} of the score matrix printed above is the query {query!r}: find its largest entry"
    shortest = " (the shortest vector of the sentence)" if np.argmin(np.linalg.norm(X, axis=1)) == row else ""
    wrongs = {key: f"{query!r} scores {scores[j]:.4f} with {key!r}, not its highest: {read_row}. A score is "
                   "length x length x cosine, so look for a long vector at a small angle to the query"
              for j, key in enumerate(JOURNEY_TOKENS)}
    wrongs[query] = (f"a token's score with itself is its squared length, ||x||^2 = {own:.4f} for {query!r}"
                     f"{shortest}. A longer vector pointing almost the same way scores higher: {read_row}")
    return grade_choice(token, best, JOURNEY_TOKENS, name="prediction", wrongs=wrongs,
                        success=f"{query!r} scores highest with {best!r} ({scores.max():.4f}), not with itself "
                                f"({own:.4f}): a longer near-twin beats the token itself.")
