"""Checkers for notebook 11 (training attention in numpy)."""

from __future__ import annotations

import re

import numpy as np

from ..backprop import numerical_gradient, relative_error, softmax_backward
from ..core import softmax
from ..examples import SEED
from ..training import TASKS, load_runs
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    grade_function,
    never_raises,
    register_solution,
    shows_verdict,
    whole_number,
)
from ._predict import read_choice, read_letter

__all__ = ["check_softmax_backward", "check_attention_prediction", "check_induction_prediction",
           "check_training_prediction", "TRAINING_QUESTIONS", "read_choice"]


@register_solution("softmax_backward")
def softmax_backward_solution(weights, grad_weights):
    """dL/ds = J^T g with J = diag(p) - p p^T, row by row: p * (g - g . p)."""
    p, g = weights, grad_weights
    dot = (g * p).sum(axis=-1, keepdims=True)  # g . p for each row (a sum over the keys): shape (..., 1)
    return p * (g - dot)  # (..., T_k)


def _cases():
    rng = np.random.default_rng(SEED + 11)
    scores_2d = rng.standard_normal((3, 5))
    masked = np.where(np.tri(4, dtype=bool), rng.standard_normal((4, 4)), -np.inf)  # a causal row pattern
    fully_masked = np.array([[0.5, -np.inf, 1.5], [-np.inf, -np.inf, -np.inf]])
    batch = rng.standard_normal((2, 2, 4))
    return [
        Case((softmax(np.array([1.0, 2.0, 0.5])), np.array([1.0, 0.0, 0.0])), label="one row of 3 weights"),
        Case((softmax(scores_2d), rng.standard_normal((3, 5))), label="3 queries x 5 keys (a (3, 5) matrix)"),
        Case((softmax(masked), rng.standard_normal((4, 4))), label="a causally masked (4, 4) matrix (zeros above "
             "the diagonal)"),
        Case((softmax(fully_masked), np.ones((2, 3))), label="a fully masked row (all weights 0)"),
        Case((softmax(batch), rng.standard_normal((2, 2, 4))), label="a batch of shape (2, 2, 4)"),
    ]


def _wrongs():
    def dot(p, g, axis=-1):
        return (g * p).sum(axis=axis, keepdims=True)

    def transposed_result(p, g):
        if p.ndim < 2:
            raise ValueError("a single row cannot be transposed")
        return np.swapaxes(p * (g - dot(p, g)), -1, -2)

    def column_jacobian(p, g):
        if p.ndim < 2:
            raise ValueError("a single row has no columns")
        return p * (g - dot(p, g, axis=-2))  # J = diag(p) - p p^T built from a column of the weights

    return [
        Wrong(lambda p, g: p * g, "you dropped the - (g · p) term: the softmax's Jacobian is diag(p) - p pᵀ, and the "
              "p pᵀ part gives p * (g · p). Every weight depends on every score, through the shared sum"),
        Wrong(lambda p, g: p * (g - p * g), "you multiplied g and p element by element where the dot product belongs: "
              "g · p is one number per row, a sum of g * p over the keys (axis=-1), kept as a column "
              "(keepdims=True) so that it lines up with g"),
        Wrong(column_jacobian, "your sum ran over the wrong axis (down the queries): each ROW of the weights is one "
              "softmax over the keys, so sum over axis=-1, with keepdims=True"),
        Wrong(lambda p, g: p * (g - (g * p).sum()), "you summed g * p over the whole array. Each row is its own "
              "softmax: sum over the keys only (axis=-1), and keep the result as a column (keepdims=True)"),
        Wrong(lambda p, g: g - dot(p, g), "you forgot the factor p in front: dL/ds = p * (g - g · p). A weight "
              "that is 0 (a masked key) must get zero gradient"),
        Wrong(lambda p, g: p * (dot(p, g) - g), "the sign is flipped: dL/ds = p * (g - g · p)"),
        Wrong(transposed_result, "your result is transposed (a transposed Jacobian-vector product: keys along the "
              "rows). Jᵀ g has one entry per key for each query: the result has the shape of grad_weights, "
              "(..., T_k)"),
    ]


#: The one-row code of section 1, ``g @ p``, copied into the batched function: on an array ``@`` is a
#: matrix product. The hint gives the idea, not the code.
_ONE_ROW_DOT_HINT = ("g @ p is the dot product g · p only for ONE row (section 1); on an array, @ is a matrix "
                     "product, which mixes the rows. You need one number per row: a sum over the key axis, kept "
                     "as a column of shape (..., 1) so that it lines up with g")


def _broadcast_hint(message):
    """The hint for "operands could not be broadcast together with shapes (3,5) (3,3)": which shape failed?"""
    shapes = re.findall(r"\(([\d,]*)\)", message.split("shapes", 1)[-1])
    sizes = [tuple(int(n) for n in shape.split(",") if n) for shape in shapes]
    if len(sizes) >= 2 and len(sizes[1]) >= 2 and sizes[1][-1] != 1:  # (T_q, T_q): a matrix product of rows
        return _ONE_ROW_DOT_HINT
    return ("the sum over the keys dropped the key axis, so it no longer lines up with g: keep it as a column, "
            "shape (..., 1), with keepdims=True")


@shows_verdict
def check_softmax_backward(fn):
    """Grade ``fn(weights, grad_weights) -> grad_scores``: against the core, then by a gradient check."""
    verdict = grade_function(
        fn, softmax_backward, _cases(), what="softmax_backward", wrongs=_wrongs(),
        shape_hint="the gradient with respect to the scores has the shape of the scores: that of grad_weights",
        success="",
        hints={"tuple": "return one array, dL/ds, of the shape of grad_weights", "matmul": _ONE_ROW_DOT_HINT},
    )
    if not verdict and "could not be broadcast" in verdict.message:
        return Verdict(False, verdict.message, _broadcast_hint(verdict.message))
    if not verdict:
        return verdict
    return _gradient_check(fn)


def _gradient_check(fn):
    """The learner's backward against central differences of the softmax itself, on one fresh row."""
    rng = np.random.default_rng(SEED + 111)
    scores, g = rng.standard_normal((2, 6)), rng.standard_normal((2, 6))
    numeric = numerical_gradient(lambda s: float((softmax(s) * g).sum()), scores)
    try:
        with np.errstate(all="ignore"):
            analytic = np.asarray(fn(softmax(scores), g.copy()), dtype=np.float64)
        error = relative_error(analytic, numeric)
    except Exception as err:  # noqa: BLE001 - a checker never raises
        return Verdict(False, f"the gradient check could not run your function ({type(err).__name__})",
                       "return one array of the shape of grad_weights")
    if not error < 1e-6:
        return Verdict(False, f"the gradient check fails: relative error {error:.1e} against central differences",
                       "compare your code with p * (g - g · p) one term at a time")
    return Verdict(True, "the gradient check passes (relative error below 1e-6 against central differences), "
                         "on masked and fully masked rows and on a batch too.")


def _read_keys(predicted_keys, n, queries, T, what="the prediction"):
    """``predicted_keys`` as ``n`` integers (key positions 0 .. T - 1), or the Verdict that says why not."""
    if predicted_keys is None or predicted_keys is Ellipsis:
        return Verdict(False, f"{what} is not filled in yet", "replace the ... with a list of key positions")
    got, err = call_quietly(np.asarray, predicted_keys)  # never raises, never hangs
    if err is not None:
        return Verdict(False, f"could not read {what} ({type(err).__name__})",
                       f"give a list of integers, one key position (0 .. {T - 1}) per query")
    if got.dtype.kind == "f" and got.shape == (n,) and all(whole_number(k) is not None for k in got):
        got = got.astype(int)  # whole numbers written as floats (3.0) are positions too
    if got.shape != (n,) or got.dtype.kind not in "iu":
        return Verdict(False, f"{what} has shape {got.shape} and dtype {got.dtype}, expected {n} integers",
                       f"one key position (0 .. {T - 1}) for {queries}")
    return got


@never_raises("could not use this prediction",
              "give a list of integers, one key position per query, e.g. [0, 0, 1, 2, 3, 4, 5, 6]")
def check_attention_prediction(predicted_keys, task="reverse"):
    """Compare a prediction ``predicted_keys[i]`` = the key that query ``i`` of ``task`` attends to, once trained."""
    known = [name for name, t in TASKS.items() if t.expected_pattern is not None]
    if task not in known:
        return Verdict(False, f"{task!r} is not a task with a pattern known in advance",
                       f"use one of {', '.join(repr(n) for n in known)}")
    T = TASKS[task].seq_len
    got = _read_keys(predicted_keys, T, f"each of the {T} queries", T, f"the {task} prediction")
    if isinstance(got, Verdict):
        return got
    expected = TASKS[task].expected_pattern(TASKS[task].seq_len).argmax(axis=-1)  # (T,): the key of each query
    wrong = np.flatnonzero(got != expected)
    if wrong.size == 0:
        return Verdict(True, f"{task}: query i attends to key {', '.join(map(str, expected))} for i = 0 .. {T - 1}: "
                             "the key that holds the token its output needs.")
    if np.array_equal(got, np.arange(T)):
        return Verdict(False, "you predicted the diagonal: each query attends to itself",
                       "the output at position i must be some OTHER token: which position holds it?")
    if task == "copy previous" and wrong.tolist() == [0]:
        return Verdict(False, "all right except query 0",
                       "under the causal mask query 0 may see only key 0, so all its weight lands there "
                       "(its output is not scored)")
    i = int(wrong[0])
    return Verdict(False, f"{wrong.size} of {T} queries differ, first query {i}: you said key {got[i]}",
                   f"the answer at position {i} is the token at position {expected[i]}: attention must fetch it")


def induction_queries(probe):
    """The queries of exercise 11.3 on the induction ``probe``: those of layer 0 (up to the repeat's first token) and
    layer 1 (the repeat's scored queries), and the keys an induction circuit attends to from them.

    Layer 0: the key just before the query (query 0, under the causal mask, only key 0); layer 1: the key just after
    the earlier copy of the query's own token.
    """
    probe = np.asarray(probe)
    T = len(probe)
    first = next(i for i in range(T) if probe[i] in probe[:i])  # the repeat's first token
    layer_0 = np.arange(first + 1)
    layer_1 = np.arange(first, T - 1)
    after_copy = np.array([np.flatnonzero(probe[:i] == probe[i])[0] + 1 for i in layer_1])
    return layer_0, np.maximum(layer_0 - 1, 0), layer_1, after_copy


def _induction_slip(layer, got, queries, expected, probe):
    """The verdict on one layer's keys (None if right): the slip named where it is a known one."""
    n, wrong = len(queries), np.flatnonzero(got != expected)
    if wrong.size == 0:
        return None
    earlier = np.array([np.flatnonzero(probe[:i] == probe[i])[0] if probe[i] in probe[:i] else -1 for i in queries])
    if (got > queries).any():
        i = int(queries[np.argmax(got > queries)])
        return (f"layer {layer}: query {i} cannot attend to key {int(got[np.argmax(got > queries)])}",
                f"the mask is causal: query {i} sees only {'key 0' if i == 0 else f'keys 0 .. {i}'}")
    if np.array_equal(got, queries):
        return (f"layer {layer}: you predicted the diagonal, each query on itself",
                "a query's own position holds its own token already: attending to it adds nothing new. What does "
                "the position need that another position holds?")
    if layer == 0 and wrong.tolist() == [0]:
        return ("layer 0: all right except query 0",
                "under the causal mask query 0 may see only key 0, so all its weight lands there")
    if layer == 0 and wrong.tolist() == [n - 1] and got[-1] in (earlier[-1], earlier[-1] + 1):
        return (f"layer 0: query {int(queries[-1])} on key {int(got[-1])}, "
                + ("the earlier copy of its own token" if got[-1] == earlier[-1] else
                   "one after the earlier copy of its own token: that is the second step"),
                "in layer 0 no position holds more than its own token and position yet, so a query cannot find the "
                "key after the earlier copy: that key's own token has nothing in common with the query's. Layer 0 "
                "must first write into each position something a later query can match")
    if layer == 1 and np.array_equal(got, earlier):
        return ("layer 1: each query on the earlier copy of its own token",
                "that key holds the same token as the query: fetching it outputs the current token again. The "
                "answer is the token that came AFTER the earlier copy")
    if np.array_equal(got, np.maximum(queries - 1, 0)):
        return ("layer 1: each query on the key just before itself: the previous-token pattern",
                "that key holds the token before the current one; it says nothing about what comes next. Which key "
                "holds the answer, and what did layer 0 write there that the query can match?")
    if np.array_equal(got, expected + 1):
        return (f"layer {layer}: each key one too far right",
                "positions count from 0: the probe's table above numbers them under the tokens")
    i = int(wrong[0])
    return (f"layer {layer}: {wrong.size} of {n} queries differ, first query {int(queries[i])}: you said key "
            f"{int(got[i])}",
            "layer 0 copies into each position the token before it; layer 1 then looks for the position whose "
            "previous token is the query's own token" if layer == 1 else
            "what must a position hold, besides its own token, for a later query to find it by matching?")


@never_raises("could not use this prediction", "give two lists of integers, one key position per query")
def check_induction_prediction(layer_0_keys, layer_1_keys):
    """Grade exercise 11.3: the key each query of layer 0 and of layer 1 attends to most in the induction model."""
    probe = load_runs()["induction"].probe
    queries_0, expected_0, queries_1, expected_1 = induction_queries(probe)
    slips = []
    for layer, predicted, queries, expected in ((0, layer_0_keys, queries_0, expected_0),
                                                (1, layer_1_keys, queries_1, expected_1)):
        described = f"queries {', '.join(map(str, queries))}"
        got = _read_keys(predicted, len(queries), described, len(probe), f"the layer {layer} prediction")
        if isinstance(got, Verdict):
            return got
        slip = _induction_slip(layer, got, queries, expected, probe)
        if slip is not None:
            slips.append(slip)
    if not slips:
        return Verdict(True, f"layer 0: queries {queries_0[0]} .. {queries_0[-1]} -> keys {expected_0.tolist()}, "
                             f"the key just before; layer 1: queries {queries_1.tolist()} -> keys "
                             f"{expected_1.tolist()}, one after the earlier copy. Now run the next cells.")
    message = "; ".join(message for message, _ in slips)
    return Verdict(False, message if len(slips) == 2 else f"{message} (the other layer is right)", slips[0][1])


# Predict, then run: the ablations (answers measured on the shipped runs)
#: Each question of notebook 11's predictions: its choices, and a hint for each wrong choice.
TRAINING_QUESTIONS = {
    "one layer": {
        "choices": {"a": "both near 99 %, like two layers",
                    "b": "2 heads near 99 %, 1 head far below",
                    "c": "both far below 99 %"},
        "hints": {"a": "in one layer every head reads the same input, the token and position embeddings. No head can "
                       "look for 'the position whose previous token is P' before some head has written it there",
                  "b": "a second head side by side reads the same input as the first: it gives another look, not a "
                       "second step. Finding 'the position whose previous token is P' needs that fact written first"},
    },
    "unscaled": {
        "choices": {"a": "it stalls: the loss never gets below 0.1",
                    "b": "it gets below 0.1, but needs several times as many steps",
                    "c": "about as many steps as the scaled model"},
        "hints": {"a": "look at Adam's update (section 4): every parameter moves by about the learning rate, however "
                       "small its gradient, so the almost one-hot rows slow the unscaled model down without stopping "
                       "it",
                  "c": "at d_k = 128 the unscaled scores spread about √128 ≈ 11 times wider: most rows start almost "
                       "one-hot, and a one-hot row passes almost no gradient back to its scores (notebook 06)"},
    },
}


def _first_below(losses, level=0.1):
    """The first step (counted from 1) whose loss is below ``level``, or ``None``."""
    below = np.flatnonzero(np.asarray(losses) < level)
    return int(below[0]) + 1 if below.size else None


def training_answer(question, runs=None):
    """The right choice of ``question``, measured on the shipped runs of notebook 11 (never typed in)."""
    runs = load_runs() if runs is None else runs
    if question == "one layer":
        one, two = (runs[f"induction, 1 layer, {n}"].held_out_accuracy for n in ("1 head", "2 heads"))
        return "a" if one > 0.9 and two > 0.9 else "b" if two > 0.9 else "c"
    if question == "unscaled":
        scaled = _first_below(runs["reverse, d_model 128, scaled"].losses)
        unscaled = _first_below(runs["reverse, d_model 128, unscaled"].losses)
        return "a" if unscaled is None else "b" if unscaled >= 2 * scaled else "c"
    raise ValueError(f"no question {question!r}")


@never_raises("could not use this prediction", 'answer with one letter, e.g. "a"')
def check_training_prediction(answer, question=None):
    """Grade a prediction of notebook 11 (``question`` one of :data:`TRAINING_QUESTIONS`) on the shipped runs."""
    choice, problem = read_letter(answer, TRAINING_QUESTIONS, question, "this notebook's", '"{}"')
    if problem is not None:
        return problem
    choices = TRAINING_QUESTIONS[question]["choices"]
    right = training_answer(question)
    if choice == right:
        return Verdict(True, f"({right}) {choices[right]}. Run the next cells to see it in the trained models.")
    hint = TRAINING_QUESTIONS[question]["hints"].get(choice, "run the next cells and compare")
    if question == "unscaled":  # what the shipped runs measure
        runs = load_runs()
        scaled, unscaled = (_first_below(runs[f"reverse, d_model 128, {kind}"].losses) for kind in ("scaled",
                                                                                                     "unscaled"))
        hint += (f". Measured on the shipped runs: the loss first gets below 0.1 at step {unscaled} unscaled, "
                 f"at step {scaled} scaled" if unscaled else "")
    return Verdict(False, f"you predicted ({choice}) {choices[choice]}", hint)
