"""Checkers for notebook 07 (causal masking, padding masks)."""

from __future__ import annotations

import numpy as np

from ..core import attention_scores, causal_mask, scaled_dot_product_attention, softmax
from ..examples import CREATURE_TOKENS, creature_example
from ._grader import Case, Verdict, Wrong, call_quietly, failed_call, grade_function, register_solution, shows_verdict
from ._predict import grade_token_set

__all__ = ["check_causal_mask", "check_masked_attention", "check_masked_key_prediction"]


# Exercise 07.1: a causal mask
@register_solution("build_causal_mask")
def build_causal_mask(T):
    """Boolean (T, T) mask: True on and below the diagonal, so query i may attend to keys j <= i."""
    return np.tril(np.ones((T, T), dtype=bool))  # lower triangle, diagonal included


_MASK_WRONGS = [
    Wrong(lambda T: np.triu(np.ones((T, T), dtype=bool)),
          "that is the upper triangle: every token may see the FUTURE and not the past. Row i is the query, "
          "column j the key; allow j <= i, which is the lower triangle (np.tril)"),
    Wrong(lambda T: np.tril(np.ones((T, T), dtype=bool), k=-1),
          "the diagonal is missing: a token may attend to itself (j == i), and without it the first row has no "
          "key at all. Use np.tril(..., k=0)"),
    Wrong(lambda T: np.triu(np.ones((T, T), dtype=bool), k=1),
          "you marked the positions to BLOCK (True = masked, as in PyTorch's boolean attn_mask). In this series "
          "True means 'may attend': invert it, or use the lower triangle with the diagonal"),
    Wrong(lambda T: np.ones((T, T), dtype=bool),
          "everything is allowed: that is no mask at all. Block the keys after the query (j > i)"),
    Wrong(lambda T: np.eye(T, dtype=bool),
          "only the diagonal: each token would see nothing but itself. Allow every key j <= i"),
]


def _as_mask_problem(result, T):
    """A specific message when the learner's mask is right in value but not boolean, else ''."""
    if not isinstance(result, np.ndarray) or result.dtype == np.bool_:
        return ""
    try:
        same = result.shape == (T, T) and bool(np.array_equal(result.astype(bool), build_causal_mask(T)))
    except Exception:  # noqa: BLE001 - entries whose truth value raises: the grader names the problem
        return ""
    if same:
        return (f"the pattern is right but the dtype is {result.dtype}, not bool",
                "np.tril(np.ones((T, T))) is a float array of 0.0 and 1.0. A mask is boolean (True = may attend): "
                "pass dtype=bool to np.ones, or compare positions (j <= i)")
    return ""


@shows_verdict
def check_causal_mask(fn):
    """Grade ``fn(T) -> (T, T)`` boolean causal mask (True = may attend)."""
    cases = [Case((4,), label="T = 4"), Case((1,), label="T = 1"), Case((8,), label="T = 8 (the creature sentence)")]
    if callable(fn):
        for case in cases:
            result, error = call_quietly(fn, *case.args)
            if error is not None:
                return failed_call(error, case.label)
            problem, _ = call_quietly(_as_mask_problem, result, case.args[0])
            if problem:
                message, hint = problem
                return Verdict(False, f"on {case.label}, {message}", hint)
    return grade_function(fn, build_causal_mask, cases, what="build_causal_mask", wrongs=_MASK_WRONGS,
                          shape_hint="the mask has one row per query and one column per key: shape (T, T)",
                          success="True on and below the diagonal: token i sees itself and everything before it.")


# Exercise 07.2: masked scaled dot-product attention
@register_solution("masked_attention")
def masked_attention(queries, keys, values, mask):
    """Scaled dot-product attention with a boolean mask (True = may attend); returns (context, weights)."""
    d_k = queries.shape[-1]
    scores = queries @ np.swapaxes(keys, -1, -2) / np.sqrt(d_k)  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    scores = np.where(mask, scores, -np.inf)  # masked keys get -inf, so exp() gives exactly 0
    row_max = scores.max(axis=-1, keepdims=True)  # (..., T_q, 1); -inf on a fully masked row
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # avoid -inf - (-inf) = NaN
    exps = np.exp(scores - row_max)
    total = exps.sum(axis=-1, keepdims=True)  # 0 on a fully masked row
    weights = exps / np.where(total > 0, total, 1.0)  # a fully masked row stays all 0
    context = weights @ values  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)
    return context, weights


def _weights(q, k, mask=None, scale=None):
    """The core's weights: what a slip changes is passed in (no mask, another scale)."""
    return scaled_dot_product_attention(q, k, k, mask=mask, scale=scale)[1]


def _weights_wrongs():
    return [
        Wrong(lambda q, k, v, m: masked_attention(q, k, v, m)[0],
              "your function returns (weights, context), the other way round: return context, weights, like the "
              "helper (the context first)"),
        Wrong(lambda q, k, v, m: _weights(q, k),
              "the mask is not applied: set masked scores to -inf BEFORE the softmax, "
              "np.where(mask, scores, -np.inf)"),
        Wrong(lambda q, k, v, m: np.where(m, _weights(q, k), 0.0),
              "you zeroed the masked weights AFTER the softmax, so the rows no longer sum to 1. Mask the scores "
              "before the softmax (or renormalise each row)"),
        Wrong(lambda q, k, v, m: masked_attention(q, k, v, ~np.asarray(m, dtype=bool))[1],
              "your mask is inverted: True means 'may attend', so keep the scores where mask is True: "
              "np.where(mask, scores, -np.inf)"),
        Wrong(lambda q, k, v, m: _weights(q, k, m, scale=1.0),
              "you forgot to scale: divide the scores by sqrt(d_k) before the softmax"),
        Wrong(lambda q, k, v, m: _weights(q, k, m, scale=np.sqrt(q.shape[-1])),
              "you multiplied the scores by sqrt(d_k); divide by it"),
        Wrong(lambda q, k, v, m: _weights(q, k, m, scale=1.0 / q.shape[-1]),
              "you divided by d_k; divide by its square root, sqrt(d_k)"),
        Wrong(lambda q, k, v, m: _weights(q, k, m, scale=1.0 / np.sqrt(v.shape[-1])),
              "you divided by sqrt(d_v), the dimension of the values; d_k is the last axis of the queries and keys"),
        Wrong(lambda q, k, v, m: _weights(q, k, m, scale=1.0 / np.sqrt(k.shape[-2])),
              "you divided by sqrt(T_k), the number of keys; d_k is the LAST axis: queries.shape[-1]"),
        Wrong(_shifted_by_the_largest_score,
              "one row reaches 1000 and another is near 0: you subtracted the maximum of the WHOLE array, so "
              "every exp() of the small row underflows to 0. Subtract each row's own maximum: "
              "scores.max(axis=-1, keepdims=True)"),
        Wrong(lambda q, k, v, m: softmax(np.where(m, attention_scores(q, k) / np.sqrt(q.shape[-1]), -1e9)),
              "a fully masked row came out uniform (1/T_k each): that is what the magic constant -1e9 does, "
              "since every score in the row is then equal. Use -np.inf, which needs no constant, and give a row "
              "with no allowed key all-zero weights"),
    ]


def _shifted_by_the_largest_score(q, k, v, m):
    """The weights when every row is shifted by the largest score of the whole array (a row far below underflows)."""
    scores = np.where(m, attention_scores(q, k) / np.sqrt(q.shape[-1]), -np.inf)
    exps = np.exp(scores - scores.max())
    total = exps.sum(axis=-1, keepdims=True)
    return exps / np.where(total > 0, total, 1.0)


def _cases(rng=None):
    """Sizes that tell the divisors apart: sqrt(d_k) = 1.73, d_k = 3, sqrt(d_v) = 1.41, sqrt(T) = 2 in the first."""
    rng = np.random.default_rng(7) if rng is None else rng
    q1, k1, v1 = rng.standard_normal((4, 3)), rng.standard_normal((4, 3)), rng.standard_normal((4, 2))
    q2, k2 = rng.standard_normal((2, 5, 4)), rng.standard_normal((2, 5, 4))
    v2 = rng.standard_normal((2, 5, 3))
    lengths = np.array([5, 3])
    padding = np.arange(5) < lengths[:, None]  # (B, T): True for real tokens
    q3 = np.array([[40.0, 0, 0, 0], [0.01, 0, 0, 0], [0, 40.0, 0, 0]])  # rows 0 and 2 large, row 1 near 0
    k3 = np.array([[50.0, 0, 0, 0], [49.95, 25.0, 0, 0], [-30.0, 24.98, 0, 0]])  # scaled scores: row 0 1000, 999, -600
    return [
        Case((q1, k1, v1, np.tril(np.ones((4, 4), dtype=bool))), label="T = 4, d_k = 3, a causal mask"),
        Case((q2, k2, v2, padding[:, None, :]),
             label="a batch of 2 sequences of lengths 5 and 3, key-padding mask of shape (2, 1, 5)"),
        Case((q3, k3, rng.standard_normal((3, 2)), np.ones((3, 3), dtype=bool)), label=LARGE_LABEL),
    ]


#: The case whose scores reach 1000 (rows 0 and 2) and near 0 (row 1): notebook 03's overflow lesson.
LARGE_LABEL = "T = 3, no key masked, scaled scores up to 1000 in rows 0 and 2 and near 0 in row 1"

_LARGE_HINT = ("exp() of scores near 1000 overflows to inf, and inf / inf = NaN: subtract each row's own "
               "maximum before exp(), scores - scores.max(axis=-1, keepdims=True), so the largest exponent is 0 "
               "(notebook 03). Shifting by the row's minimum, or adding the maximum, makes the exponents larger "
               "instead")


def _fully_masked_case():
    rng = np.random.default_rng(70)
    q, k = rng.standard_normal((2, 4, 4)), rng.standard_normal((2, 4, 4))
    v = rng.standard_normal((2, 4, 2))
    real = np.arange(4) < np.array([4, 2])[:, None]  # (B, T)
    mask = real[:, :, None] & real[:, None, :]  # padded queries may attend to nothing: rows 2, 3 of sequence 1
    return Case((q, k, v, mask), label="lengths 4 and 2 with padded QUERIES masked too (two fully masked rows)")


def _pick(fn, index):
    """``fn`` with its result's item ``index`` (context 0, weights 1), with a clear error when it is no pair."""

    def picked(*args):
        result = fn(*args)
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            raise TypeError(f"expected the pair (context, weights), got {type(result).__name__}")
        return result[index]

    return picked


def _nan_rows_hint(fn, case):
    """A specific verdict when the learner's weights are NaN exactly on the fully masked rows."""
    weights, error = call_quietly(lambda: np.asarray(_pick(fn, 1)(*case.args), dtype=np.float64))
    if error is not None:
        return None
    mask = np.asarray(case.args[3])
    if weights.shape != mask.shape or not np.isnan(weights).any():
        return None
    empty_rows = ~mask.any(axis=-1)  # (B, T_q)
    nan_rows = np.isnan(weights).any(axis=-1)
    where = "exactly on" if np.array_equal(nan_rows, empty_rows) else "on"
    return Verdict(False, f"on {case.label}, your weights are NaN {where} the fully masked rows",
                   "on a row where every key is masked, the row max is -inf and -inf - (-inf) = NaN, so exp() gives "
                   "NaN. Subtract 0 instead of -inf on such rows (np.where(np.isfinite(row_max), row_max, 0)) and "
                   "do not divide by a zero sum: those rows must be all 0")


def _full_transposes(fn, case):
    """The shapes of the batched inputs that ``fn`` reversed whole with ``.T`` or ``.transpose()`` on ``case``."""
    seen = []

    class Watched(np.ndarray):  # an array that notes when all of its axes are reversed
        @property
        def T(self):  # noqa: N802 - numpy's own name
            if self.ndim >= 3:
                seen.append(self.shape)
            return np.asarray(self).T

        def transpose(self, *axes):
            if self.ndim >= 3 and axes in ((), (None,)):
                seen.append(self.shape)
            return np.asarray(self).transpose(*axes)

    queries, keys, values, mask = case.args
    call_quietly(fn, *(np.asarray(a).view(Watched) for a in (queries, keys, values)), mask)
    return seen


@shows_verdict
def check_masked_attention(fn):
    """Grade ``fn(queries, keys, values, mask) -> (context, weights)``: weights first, then context."""
    if not callable(fn):
        return grade_function(fn, masked_attention, [], what="masked_attention")
    cases = _cases()
    wrongs = _weights_wrongs()
    verdict = grade_function(_pick(fn, 1), lambda *a: masked_attention(*a)[1], cases, what="masked_attention weights",
                             wrongs=wrongs, shape_hint="the weights have shape (..., T_q, T_k), one row per query")
    if not verdict.passed:
        batched = next(case for case in cases if np.ndim(case.args[1]) >= 3)
        transposed = _full_transposes(fn, batched)
        if transposed:
            shape = transposed[0]
            return Verdict(False, f"on {batched.label}, you transposed an array of shape {shape} with .T, which "
                                  f"reverses EVERY axis: {shape} -> {shape[::-1]}",
                           "for a batch, swap only the last two axes: np.swapaxes(keys, -1, -2) turns "
                           "(B, T_k, d_k) into (B, d_k, T_k), so queries @ np.swapaxes(keys, -1, -2) has shape "
                           "(B, T_q, T_k)")
        if LARGE_LABEL in verdict.message and "NaN or inf" in verdict.message:
            return Verdict(False, verdict.message, _LARGE_HINT)
        return _clean(verdict)
    full = _fully_masked_case()
    nan_verdict = _nan_rows_hint(fn, full)
    if nan_verdict is not None:
        return nan_verdict
    verdict = grade_function(_pick(fn, 1), lambda *a: masked_attention(*a)[1], [full],
                             what="masked_attention weights", wrongs=wrongs)
    if not verdict.passed:
        return _clean(verdict)
    verdict = grade_function(_pick(fn, 0), lambda *a: masked_attention(*a)[0], [*cases, full],
                             what="masked_attention context",
                             wrongs=[Wrong(lambda q, k, v, m: np.swapaxes(masked_attention(q, k, v, m)[0], -1, -2),
                                           "your context looks transposed: context = weights @ values, "
                                           "shape (..., T_q, d_v)")],
                             shape_hint="context = weights @ values has shape (..., T_q, d_v)")
    if not verdict.passed:
        return _clean(verdict)
    return Verdict(True, "masked before the softmax with -inf, rows sum to 1, fully masked rows are all 0 (no NaN), "
                         "and context = weights @ values.")


def _clean(verdict):
    """Make the pair-unpacking error of ``_pick`` read like a hint about the return value."""
    if "expected the pair (context, weights)" in verdict.message:
        return Verdict(False, verdict.message.replace("your function raised TypeError: ", "your function returned "
                                                      "something else: "),
                       "return two arrays, like the helper does: return context, weights")
    return verdict


# Predict, then run: mask one more key under the causal mask
def masked_key_rows(key="creature"):
    """The queries of the creature example whose weights change when ``key`` is masked too (causal mask on)."""
    ex = creature_example(dtype=np.float64)
    X = ex["X"]
    T = len(CREATURE_TOKENS)
    queries, keys, values = X @ ex["W_q"], X @ ex["W_k"], X @ ex["W_v"]  # (T, d_model) @ (d_model, d) -> (T, d)
    mask = causal_mask(T)
    _, before = scaled_dot_product_attention(queries, keys, values, mask=mask)
    hidden = mask.copy()
    hidden[:, CREATURE_TOKENS.index(key)] = False  # nobody may attend to this key any more
    _, after = scaled_dot_product_attention(queries, keys, values, mask=hidden)
    return {int(i) for i in np.flatnonzero(~np.isclose(before, after, atol=1e-9).all(axis=1))}


@shows_verdict
def check_masked_key_prediction(prediction):
    """Grade a prediction: with the causal mask on, which queries' weights change when key "creature" is masked too?"""
    return grade_token_set(
        prediction, masked_key_rows("creature"), CREATURE_TOKENS, "your prediction",
        why="every query from 'creature' on could see it, so each of those rows loses that key and renormalises; "
            "the queries before it never saw it (causal mask).",
        hints={"creature": "masking a KEY hides a column of the weights, not a row: every query that could see "
                           "'creature' loses it and spreads its weight over the keys it has left"},
        extra="{extra} come(s) before 'creature': the causal mask already hid it from them, so hiding it again "
              "changes nothing in their rows",  # the rows that change are 'creature' and every one after it
        missed="every query from 'creature' on could see key 'creature' (j <= i), and each of them gave it some "
               "weight: all those rows renormalise over the keys that are left")
