"""Checkers for notebook 03 (softmax)."""

from __future__ import annotations

import numpy as np

from ..core import softmax
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    grade_choice,
    grade_function,
    grade_value,
    read_answer,
    read_filled,
    register_solution,
    shows_verdict,
)

__all__ = ["check_softmax_any_axis", "check_cold_choice", "check_spot_the_slip", "NOTES_SCORES", "NOTES_WEIGHTS"]

#: The column of scores in the lecture notes this series grew from, and the "softmax" they printed for it.
NOTES_SCORES = (0.7, -0.93, -0.24, -5.0)
NOTES_WEIGHTS = (0.02, 0.92, 0.89, 0.0)

#: Label of the case whose rows live on very different scales (catches a max over the whole array).
_MIXED_LABEL = "a (2, 3) array whose row 0 is in the 1000s and row 1 near 0, axis=-1"


@register_solution("softmax_any_axis")
def softmax_any_axis(x, axis=-1):
    """Stable softmax along ``axis`` for an array of any shape."""
    x = np.asarray(x, dtype=float)
    shifted = x - x.max(axis=axis, keepdims=True)  # each slice's own max; keepdims so it broadcasts against x
    exps = np.exp(shifted)  # every exponent is <= 0, so every exp is in (0, 1]: no overflow
    return exps / exps.sum(axis=axis, keepdims=True)  # each slice along axis sums to 1


def _reference(x, axis=-1):
    return softmax(np.asarray(x, dtype=np.float64), axis=axis)


def _cases():
    rng = np.random.default_rng(4)
    X = journey_embeddings(np.float64)
    scores = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
    return [
        Case((np.array([1.0, 2.0, 3.0]),), label="the 1-D scores [1, 2, 3] (default axis)"),
        Case((np.random.default_rng(40).standard_normal((3, 3)),), label="a square (3, 3) array (default axis)"),
        Case((scores,), label="the (6, 6) 'journey' score matrix (default axis)"),
        Case((rng.standard_normal((3, 4)),), {"axis": -1}, label="a (3, 4) array, axis=-1"),
        Case((rng.standard_normal((3, 4)),), {"axis": 0}, label="a (3, 4) array, axis=0"),
        Case((rng.standard_normal((3, 3)),), {"axis": 0}, label="a square (3, 3) array, axis=0"),
        Case((rng.standard_normal((2, 3, 4)),), {"axis": -1}, label="a batch of shape (2, 3, 4), axis=-1"),
        Case((rng.standard_normal((2, 3, 4)),), {"axis": 1}, label="a batch of shape (2, 3, 4), axis=1"),
        Case((np.array([1000.0, 1001.0, 1002.0]),), label="large scores [1000, 1001, 1002]"),
        Case((np.array([-1000.0, -1001.0, -1002.0]),), label="large negative scores [-1000, -1001, -1002]"),
        Case((np.array([[1000.0, 1001.0, 1002.0], [0.0, 1.0, 2.0]]),), {"axis": -1}, label=_MIXED_LABEL),
        Case((np.array([[1000.0, 2000.0, 3000.0], [1.0, 2.0, 3.0]]),), {"axis": 0},
             label="a (2, 3) array in the 1000s, axis=0"),
    ]


def _no_keepdims(on_max, on_sum):
    """A softmax that forgets keepdims=True on the max, on the sum, or on both."""

    def wrong(x, axis=-1):
        exps = np.exp(x - x.max(axis=axis, keepdims=on_max))
        return exps / exps.sum(axis=axis, keepdims=on_sum)

    return wrong


def _max_along(x, max_axis, axis):
    """A softmax along ``axis`` whose max was taken along ``max_axis``."""
    exps = np.exp(x - x.max(axis=max_axis, keepdims=True))
    return exps / exps.sum(axis=axis, keepdims=True)


def _keepdims_hint():
    return ("forgot keepdims=True? x.max(axis=axis) and exps.sum(axis=axis) drop that axis, so they no longer line "
            "up with x. Use x.max(axis=axis, keepdims=True) and exps.sum(axis=axis, keepdims=True)")


_AXIS_HINT = ("the slices don't sum to 1 along the axis you were asked for: you normalised over another axis. "
              "Pass the axis argument to both the max and the sum")


def _wrongs():
    axis_hint = _AXIS_HINT
    return [
        Wrong(lambda x, axis=-1: _reference(x, axis=-1), axis_hint + " (your function always uses axis=-1)"),
        Wrong(lambda x, axis=-1: _reference(x, axis=0), axis_hint + " (your function always uses axis=0)"),
        Wrong(lambda x, axis=-1: _reference(x, axis=0 if axis in (-1, 1) else -1), axis_hint),
        Wrong(_no_keepdims(False, False), _keepdims_hint()),
        Wrong(_no_keepdims(True, False), _keepdims_hint()),
        Wrong(_no_keepdims(False, True), _keepdims_hint()),
        Wrong(lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True)),
              "you stopped after the exponential: divide by the sum along the axis so that each slice sums to 1"),
        Wrong(lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(),
              "you divided by the sum of the WHOLE array: sum along the axis, with keepdims=True"),
        Wrong(lambda x, axis=-1: _max_along(x, -1 if axis in (0, -2) else 0, axis),
              "you subtracted the max along one axis and summed along another: take the max along the same axis "
              "as the sum, x.max(axis=axis, keepdims=True)"),
        Wrong(lambda x, axis=-1: x / x.sum(axis=axis, keepdims=True),
              "you divided the scores by their sum; softmax exponentiates first: exp(x - max) / sum(exp(x - max))"),
    ]


def _axis_used(fn):
    """The hint for a softmax over another axis, told apart by asking for both axes of one (3, 4) array: always
    axis=-1, always axis=0, or the other axis than asked."""
    x = np.random.default_rng(41).standard_normal((3, 4))
    used = []
    for asked in (-1, 0):
        got, error = call_quietly(fn, x.copy(), axis=asked)
        got, problem = read_answer(got) if error is None else (None, "raised")
        if problem or got.shape != x.shape:
            return _AXIS_HINT
        used += [axis for axis in (-1, 0) if np.allclose(got, _reference(x, axis=axis), rtol=1e-4, atol=1e-5)][:1]
    return {(-1, -1): _AXIS_HINT + " (your function always uses axis=-1)",
            (0, 0): _AXIS_HINT + " (your function always uses axis=0)"}.get(tuple(used), _AXIS_HINT)


def _refine(verdict: Verdict, fn=None) -> Verdict:
    """Replace the grader's generic hints by softmax-specific ones."""
    if verdict.passed:
        return verdict
    message = verdict.message
    if verdict.hint.startswith(_AXIS_HINT) and fn is not None:
        return Verdict(False, message, _axis_used(fn))
    if "NaN or inf" in message:
        if _MIXED_LABEL in message:
            return Verdict(False, message, "one row is in the 1000s and the other near 0: you subtracted the max of "
                                           "the whole array, so every exp() of the small row underflows to 0 and "
                                           "0/0 = NaN. Subtract each slice's own max: x.max(axis=axis, keepdims=True)")
        return Verdict(False, message, "exp() of scores in the 1000s overflows to inf (and inf/inf = NaN), or every "
                                       "exp() of scores in the -1000s underflows to 0 (and 0/0 = NaN). Subtract the "
                                       "max along the axis before exp(): the largest exponent becomes 0")
    if "could not be broadcast" in message:
        return Verdict(False, message, _keepdims_hint())
    return verdict


@shows_verdict
def check_softmax_any_axis(fn):
    """Grade ``fn(x, axis=-1)``: a stable softmax for any shape and axis (1-D, 2-D, batches, values in the 1000s)."""
    return _refine(fn=fn, verdict=grade_function(
        fn, _reference, _cases(), what="softmax_any_axis", wrongs=_wrongs(),
        shape_hint="a softmax returns an array of the same shape as its input: did a max or a sum drop an axis?",
        success="a stable softmax over any axis: each slice along `axis` is positive and sums to 1, even for "
                "scores in the 1000s.",
    ))


@shows_verdict
def check_cold_choice(token, query="one", temperature=0.001):
    """Grade a prediction: the key that takes (almost) all of ``query``'s weight as the temperature goes to 0."""
    X = journey_embeddings()
    i = JOURNEY_TOKENS.index(query)
    scores = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
    with np.errstate(all="ignore"):  # the reference, whatever np.seterr the learner has set (exp underflows here)
        weights = softmax(scores[i], temperature=temperature)
    winner = JOURNEY_TOKENS[int(np.argmax(weights))]
    return grade_choice(token, winner, JOURNEY_TOKENS, name="prediction", wrongs={
        query: f"a temperature never reorders the weights, it only sharpens them. Is the largest score of {query!r} "
               f"its score with itself? Compare row {i} of the score matrix: {query!r} with itself scores "
               f"{scores[i, i]:.4f}, with {winner!r} {scores[i].max():.4f}",
    }, hint="as τ → 0 all weight goes to the key with the largest score: find the largest entry of the query's row",
        success=f"at τ = {temperature:g}, {winner!r} takes {weights.max():.4f} of the weight of {query!r}: the "
                "largest score wins, and a token's score with itself is not always the largest.")


@register_solution("spot_the_slip")
def spot_the_slip(notes_scores, notes_weights):
    """The one line that exposes the slip, and the weights the notes should have printed."""
    total = notes_weights.sum()  # 1.83: a softmax always sums to 1, so these weights are not a softmax
    exps = np.exp(notes_scores - notes_scores.max())  # the stable softmax of the column of scores
    return total, exps / exps.sum()


@shows_verdict
def check_spot_the_slip(total, weights=...):
    """Grade the slip in the lecture notes: the sum of their printed weights, and the softmax they should have been."""
    notes = np.array(NOTES_WEIGHTS)
    _, problem = read_filled(total, "my_total", example="one line that adds up the printed weights, notes_weights",
                             numbers=False)
    if problem is not None:
        return problem
    found = grade_value(total, notes.sum(), name="the sum of the notes' weights", atol=1e-6, wrongs=[
        (1.0, "1 is what a softmax SHOULD sum to. Add up the four numbers the notes printed: notes.sum()"),
        (sum(NOTES_SCORES), "that is the sum of the SCORES, notes_scores: add up the printed weights, "
                            "notes_weights.sum()"),
    ])
    if not found.passed:
        return found
    scores = np.array(NOTES_SCORES)
    _, problem = read_filled(weights, f"my_total is right ({notes.sum():.2f}); my_weights",
                             example="one line: the softmax of notes_scores", numbers=False)
    if problem is not None:
        return problem
    return grade_value(weights, softmax(scores), name="my_weights", atol=5e-4, wrongs=[
        (notes, "those are the notes' own (wrong) numbers: compute softmax(scores) yourself"),
        (np.exp(scores), "you stopped after exp(): divide by the sum so that the weights add up to 1"),
        (notes / notes.sum(), "rescaling the wrong numbers makes them sum to 1 but does not make them a softmax: "
                              "start again from the scores"),
        (scores / scores.sum(), "you divided the scores by their sum: a softmax exponentiates first"),
    ], success=f"the notes' weights sum to {notes.sum():.2f}, so they cannot be a softmax; the right weights are "
               f"{np.array2string(softmax(scores), precision=3)}, summing to 1.")
