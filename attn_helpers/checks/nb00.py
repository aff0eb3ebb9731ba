"""Checkers for notebook 00 (start here)."""

from __future__ import annotations

import numpy as np

from ..examples import journey_embeddings
from ._grader import Case, Wrong, grade_function, grade_value, register_solution

__all__ = ["check_mean_embedding", "check_num_tokens"]


@register_solution("mean_embedding")
def mean_embedding(X):
    """The average of the token vectors: one vector of d_model numbers."""
    return X.mean(axis=0)  # average over the token axis (rows); (T, d_model) -> (d_model,)


def _cases():
    rng = np.random.default_rng(0)
    return [
        Case((journey_embeddings(),), label="the 'journey' sentence, X of shape (6, 3)"),
        Case((np.array([[1.0, 2.0], [3.0, 4.0]]),), label="X = [[1, 2], [3, 4]]"),
        Case((rng.standard_normal((5, 5)),), label="a square X of shape (5, 5)"),
    ]


def check_mean_embedding(fn):
    """Grade ``fn(X) -> mean token vector`` of shape ``(d_model,)``."""
    return grade_function(
        fn, mean_embedding, _cases(), what="mean_embedding",
        wrongs=[
            Wrong(lambda X: X.mean(axis=1), "you averaged each token's features (axis=1). Tokens are rows: average "
                                            "over axis=0 so that one number per feature remains"),
            Wrong(lambda X: X.sum(axis=0), "that is the sum; divide by the number of tokens T"),
            Wrong(lambda X: np.mean(X), "np.mean(X) averages everything into one number; keep one value per feature"),
        ],
        shape_hint="the result should have one number per feature: shape (d_model,)",
        success="one number per feature: averaging over axis=0 runs down the token rows.",
    )


def check_num_tokens(value):
    """Grade the number of tokens T of the 'journey' sentence."""
    X = journey_embeddings()
    return grade_value(value, X.shape[0], name="T",
                       wrongs=[(X.shape[1], "that is d_model, the number of features (columns); T counts the rows"),
                               (X.size, "that is T * d_model, every entry; T counts only the rows")],
                       success="T = 6 tokens, one per row of X.")
