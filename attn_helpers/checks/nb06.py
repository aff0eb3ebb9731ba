"""Checkers for notebook 06 (scaling by sqrt(d_k))."""

from __future__ import annotations

import numpy as np

from ..examples import SEED
from ._grader import Case, Verdict, Wrong, grade_function, grade_value, register_solution, shows_verdict

__all__ = ["check_attention_scale", "check_scaled_scores", "check_score_std_prediction"]


# Exercise 06.1: the scale factor of one head
@register_solution("attention_scale")
def attention_scale(d_model, num_heads):
    """The factor that multiplies the scores of each head: 1 / sqrt(d_k), with d_k = d_model / h."""
    d_k = d_model / num_heads  # each head's queries and keys have d_k = d_model / h features
    return 1.0 / np.sqrt(d_k)


_SCALE_CASES = [
    Case((512, 8), label="d_model = 512, h = 8 (the paper's base model)"),
    Case((768, 12), label="d_model = 768, h = 12 (GPT-2 small)"),
    Case((1024, 16), label="d_model = 1024, h = 16 (the paper's big model)"),
    Case((256, 4), label="d_model = 256, h = 4"),
    Case((64, 1), label="d_model = 64, h = 1 (a single head)"),
]


_SCALE_WRONGS = [
    Wrong(lambda d_model, num_heads: 1.0 / np.sqrt(d_model),
          "you divided by sqrt(d_model). The scores of one head are dot products of d_k = d_model / h numbers, "
          "so the scale is 1 / sqrt(d_model / num_heads). The two agree only when h = 1"),
    Wrong(lambda d_model, num_heads: np.sqrt(d_model),
          "sqrt(d_model) is the factor the paper multiplies the token EMBEDDINGS by, a different thing. "
          "The attention scale is 1 / sqrt(d_k) with d_k = d_model / h"),
    Wrong(lambda d_model, num_heads: np.sqrt(d_model / num_heads),
          "that is sqrt(d_k), the number the scores are DIVIDED by. "
          "Return the factor that multiplies them: 1 / sqrt(d_k)"),
    Wrong(lambda d_model, num_heads: num_heads / d_model,
          "you divided by d_k itself; divide by its square root: 1 / sqrt(d_model / num_heads)"),
    Wrong(lambda d_model, num_heads: 1.0 / np.sqrt(num_heads),
          "that is 1 / sqrt(h); the scale depends on the features per head, d_k = d_model / h"),
    Wrong(lambda d_model, num_heads: 1.0 / np.sqrt(d_model) / num_heads,
          "you divided by h outside the square root. d_k = d_model / h goes INSIDE it: "
          "1 / np.sqrt(d_model / num_heads)"),
    *(Wrong(fn, "in Python ** binds tighter than / : x ** 1/2 is (x ** 1) / 2, and d_model / num_heads ** 0.5 is "
                "d_model / sqrt(h). Put the parentheses around d_model / num_heads, or use np.sqrt")
      for fn in (lambda d_model, num_heads: num_heads / d_model / 2,  # 1 / (d_model / num_heads) ** 1/2
                 lambda d_model, num_heads: d_model / num_heads ** 0.5)),
]


@shows_verdict
def check_attention_scale(fn):
    """Grade ``fn(d_model, num_heads) -> 1 / sqrt(d_k)`` (one number)."""
    return grade_function(fn, attention_scale, _SCALE_CASES, what="attention_scale", wrongs=_SCALE_WRONGS,
                          shape_hint="return one number (a float), not an array",
                          success="scale = 1 / sqrt(d_k) with d_k = d_model / h: for d_model = 512 and h = 8 that is "
                                  "1 / sqrt(64) = 1/8, not 1 / sqrt(512).")


# Exercise 06.2: scaled scores
@register_solution("scaled_scores")
def scaled_scores(queries, keys):
    """Scores Q K^T / sqrt(d_k) over the last two axes (works for (T, d_k) and (B, h, T, d_k))."""
    d_k = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, -1, -2)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    return scores / np.sqrt(d_k)


def _scores_cases():
    rng = np.random.default_rng(6)
    return [
        Case((rng.standard_normal((3, 4)), rng.standard_normal((5, 4))),
             label="queries (3, 4), keys (5, 4): T_q = 3, T_k = 5, d_k = 4"),
        Case((rng.standard_normal((4, 16)), rng.standard_normal((4, 16))), label="queries and keys of shape (4, 16)"),
        Case((rng.standard_normal((2, 3, 4, 8)), rng.standard_normal((2, 3, 6, 8))),
             label="per-head arrays: queries (B, h, T_q, d_k) = (2, 3, 4, 8), keys (2, 3, 6, 8)"),
    ]


def _unscaled(queries, keys):
    return queries @ np.swapaxes(keys, -1, -2)


_SCORES_WRONGS = [
    Wrong(lambda q, k: _unscaled(q, k),
          "these are the raw scores Q K^T: divide them by sqrt(d_k), with d_k = queries.shape[-1]"),
    Wrong(lambda q, k: _unscaled(q, k) * np.sqrt(q.shape[-1]),
          "you multiplied by sqrt(d_k); divide instead, so that the scores' spread stays near 1"),
    Wrong(lambda q, k: _unscaled(q, k) / q.shape[-1],
          "you divided by d_k; divide by its square root, np.sqrt(d_k): the standard deviation grows like sqrt(d_k)"),
    Wrong(lambda q, k: _unscaled(q, k) / np.sqrt(q.shape[-2]),
          "you divided by sqrt(T_q), the number of tokens; d_k is the LAST axis: queries.shape[-1]"),
    Wrong(lambda q, k: _unscaled(q, k) / np.sqrt(k.shape[-2]),
          "you divided by sqrt(T_k), the number of keys; d_k is the LAST axis: queries.shape[-1]"),
    Wrong(lambda q, k: _unscaled(q, k) / np.sqrt(q.shape[-1] * q.shape[-3]),
          "you divided by sqrt(h * d_k) = sqrt(d_model); each head's dot products have d_k = queries.shape[-1] terms"),
    Wrong(lambda q, k: _unscaled(q, k) / np.sqrt(q.shape[1]),
          "queries.shape[1] is d_k only for a 2-D array: for the per-head arrays (B, h, T_q, d_k) it is h. "
          "d_k is always the LAST axis: queries.shape[-1]"),
    Wrong(lambda q, k: q @ k.reshape(*k.shape[:-2], k.shape[-1], k.shape[-2]) / np.sqrt(q.shape[-1]),
          "you reshaped keys to (..., d_k, T_k). A reshape keeps the numbers in their order and refills the new "
          "shape row by row; it does not turn rows into columns. Transpose instead: np.swapaxes(keys, -1, -2)"),
]

_TRANSPOSE_HINT = ("keys.T reverses ALL the axes of a 4-D array, (B, h, T_k, d_k) -> (d_k, T_k, h, B); "
                   "swap only the last two: np.swapaxes(keys, -1, -2)")


@shows_verdict
def check_scaled_scores(fn):
    """Grade ``fn(queries, keys) -> Q K^T / sqrt(d_k)`` on 2-D and per-head (4-D) arrays."""
    verdict = grade_function(
        fn, scaled_scores, _scores_cases(), what="scaled_scores", wrongs=_SCORES_WRONGS,
        shape_hint="the scores have shape (..., T_q, T_k): swap only the last two axes of keys "
                   "(np.swapaxes(keys, -1, -2)); keys.T reverses ALL the axes of a 4-D array",
        success="scores / sqrt(d_k): the same code serves one head (T, d_k) and all heads at once (B, h, T, d_k).",
    )
    raised_in_matmul = "raised" in verdict.message and ("matmul" in verdict.message or "aligned" in verdict.message)
    if not verdict.passed and "per-head" in verdict.message and raised_in_matmul:
        return Verdict(False, verdict.message, _TRANSPOSE_HINT)
    if not verdict.passed and "axes don't match array" in verdict.message:
        return Verdict(False, verdict.message, "keys.transpose(0, 1, 3, 2) names four axes, so it works only for "
                                               "4-D arrays, and the first case is 2-D (one head). "
                                               "np.swapaxes(keys, -1, -2) swaps the last two axes of any array")
    return verdict


# Predict, then run: the spread of unscaled scores at d_k = 256
#: The key/query dimension of the prediction question.
PREDICT_D_K = 256


#: How many query/key pairs notebook 06 samples to measure the spread of the scores at ``PREDICT_D_K``.
PREDICT_PAIRS = 5000


def sampled_score_std(d_k=PREDICT_D_K, pairs=PREDICT_PAIRS):
    """The standard deviation of ``pairs`` sampled raw scores q · k: the number notebook 06 prints after the prediction.

    >>> round(sampled_score_std(), 2)
    16.0
    """
    rng = np.random.default_rng(SEED)  # the notebook cell's own generator: the same sample, the same number
    q, k = rng.standard_normal((2, pairs, d_k))  # (pairs, d_k) each
    return float((q * k).sum(axis=1).std())


@shows_verdict
def check_score_std_prediction(value):
    """Grade a prediction of the standard deviation of unscaled scores q · k at d_k = 256 (unit-variance parts)."""
    d_k = PREDICT_D_K
    sampled = sampled_score_std(d_k)
    big = 2 * d_k  # the other row printed above the question
    return grade_value(
        value, np.sqrt(d_k), name="prediction", rtol=0.1, atol=0.0,
        wrongs=[
            (d_k, f"{d_k} is the VARIANCE of the scores, d_k. The standard deviation is its square root"),
            (1.0, "1 is the standard deviation AFTER dividing by sqrt(d_k); the question is about raw scores q · k"),
            (1 / np.sqrt(d_k), "that is the scale factor 1 / sqrt(d_k), not the spread of the scores"),
            (d_k / 2, "each of the d_k products q_i k_i has variance 1, and variances add: Var = d_k, std = sqrt(d_k)"),
            (np.sqrt(d_k) / 2, "each of the d_k products q_i k_i has variance 1 (not 1/4): Var = d_k, std = sqrt(d_k)"),
            (0.0, "the mean of the scores is 0, but they spread around it: Var(q · k) = d_k"),
            (np.sqrt(big), f"that is sqrt({big}), the spread at d_k = {big}, the second row above; the question "
                           f"is about d_k = {d_k}"),
        ],
        hint=f"compare your number with the spread the sampling cell printed for {PREDICT_PAIRS} scores. Each "
             f"product q_i k_i has variance 1, and the variances of the d_k = {d_k} terms add up: Var(q · k) = d_k; "
             "the standard deviation is its square root",
        success=f"sqrt({d_k}) = {np.sqrt(d_k):.0f}, and the {PREDICT_PAIRS} sampled scores above have std "
                f"{sampled:.2f}: raw scores spread like sqrt(d_k), so a softmax over them is nearly one-hot.",
    )
