"""Checkers for notebook 00 (start here)."""

from __future__ import annotations

import numpy as np

from ..examples import journey_embeddings
from ..measures import summary_shares
from ._grader import Case, Verdict, Wrong, grade_function, grade_value, register_solution, shows_verdict

__all__ = ["check_mean_embedding", "check_num_tokens", "check_first_token_share"]


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


_LOOP_OVER_FEATURES = ("your loop runs over range(X.shape[1]) = range(d_model), so it takes only the first d_model "
                       "rows. Loop over the T rows, for row in X (or range(X.shape[0])), and divide by T")


@shows_verdict
def check_mean_embedding(fn):
    """Grade ``fn(X) -> mean token vector`` of shape ``(d_model,)``."""
    return grade_function(
        fn, mean_embedding, _cases(), what="mean_embedding",
        wrongs=[
            Wrong(lambda X: X.mean(axis=1), "you averaged each token's features (axis=1). Tokens are rows: average "
                                            "over axis=0 so that one number per feature remains"),
            Wrong(lambda X: X.sum(axis=0), "that is the sum; divide by the number of tokens T"),
            Wrong(lambda X: np.mean(X), "np.mean(X) averages everything into one number; keep one value per feature"),
            Wrong(lambda X: X.sum(axis=0) / X.shape[1], "you divided by d_model = X.shape[1]; the average over the "
                                                        "tokens divides by their number, T = X.shape[0]"),
            Wrong(lambda X: X[: X.shape[1]].sum(axis=0) / X.shape[0], _LOOP_OVER_FEATURES),
            Wrong(lambda X: X[: X.shape[1]].mean(axis=0), _LOOP_OVER_FEATURES),
            Wrong(lambda X: X.mean(axis=1)[: X.shape[1]],
                  "X[j].mean() averages ROW j, the features of token j. The average of feature j runs down column "
                  "j: X[:, j].mean(), or all of them at once with X.mean(axis=0)"),
            Wrong(lambda X: X.mean(axis=0, keepdims=True), "keepdims=True kept the token axis: shape (1, d_model). "
                                                           "Return one vector, shape (d_model,)"),
        ],
        shape_hint="the result should have one number per feature: shape (d_model,)",
        success="one number per feature: averaging over axis=0 runs down the token rows.",
    )


@shows_verdict
def check_num_tokens(value):
    """Grade the number of tokens T of the 'journey' sentence."""
    X = journey_embeddings()
    if isinstance(value, tuple) and value == X.shape:
        return Verdict(False, f"T is X.shape, the pair {X.shape}",
                       "X.shape is (T, d_model): T is its first entry, X.shape[0]")
    return grade_value(value, X.shape[0], name="T",
                       wrongs=[(X.shape[1], "that is d_model, the number of features (columns); T counts the rows"),
                               (X.size, "that is T * d_model, every entry; T counts only the rows"),
                               (X.shape[0] - 1, "that is the index of the last row: rows are numbered from 0, so "
                                                "there is one more row than the last index")],
                       success="T = 6 tokens, one per row of X. Computed from X (X.shape[0] or len(X)) rather than "
                               "counted, it stays right for any sentence.")


@shows_verdict
def check_first_token_share(value):
    """Grade a prediction: the share of the first token ('Your') in the running summary of the 6-token sentence."""
    T = journey_embeddings().shape[0]
    shares = summary_shares(T)  # s = 0.5 * s + 0.5 * x(t), starting from s = x(0)
    return grade_value(value, shares[0], name="share", atol=1e-6, wrongs=[
        (1 / T, "1/T would be a plain average, every token weighted equally. The summary halves what it holds at every "
                "step: count how many halvings 'Your' goes through"),
        (shares[-1], "that is the share of the LAST token, 'step': the newest token always gets half"),
        (shares[0] / 2, "one halving too many: the summary starts as x('Your') itself, then 5 more tokens come in"),
        (shares[0] * 2, "one halving too few: 5 more tokens come in after 'Your', each halving what came before"),
        (100 * shares[0], "that is the share in percent: write it as a number between 0 and 1"),
    ], hint="start from s = x('Your'), its share 1, and halve that share once for each token that comes after it",
        success=f"'Your' keeps (1/2)^{T - 1} = {shares[0]:.4f} of the summary: the first word has all but faded.")
