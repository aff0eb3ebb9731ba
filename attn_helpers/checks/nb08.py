"""Checkers for notebook 08 (multi-head attention): split heads, merge heads, count parameters."""

from __future__ import annotations

import numpy as np

from ..examples import creature_example
from ._grader import (
    Case,
    TimeLimit,
    Verdict,
    Wrong,
    call_quietly,
    failed_call,
    grade_function,
    grade_value,
    register_solution,
    shows_verdict,
)
from ._predict import as_shape

__all__ = ["check_split_heads", "check_merge_heads", "check_parameter_count", "check_parameter_count_with_biases",
           "check_weights_shape"]


def _labelled(T, d_model):
    """``x[t, f] = 10 * t + f``: every number says which token and feature it came from."""
    return (10.0 * np.arange(T)[:, None] + np.arange(d_model)[None, :]).astype(np.float64)


# Exercise 08.1: split the features into heads
@register_solution("my_split_heads")
def my_split_heads(x, num_heads):
    """(T, d_model) -> (num_heads, T, head_dim): head i takes features [i*head_dim : (i+1)*head_dim]."""
    T, d_model = x.shape
    if d_model % num_heads != 0:
        raise ValueError(f"d_model = {d_model} is not divisible by num_heads = {num_heads}")
    head_dim = d_model // num_heads                 # integer division: a shape must be made of ints
    x = x.reshape(T, num_heads, head_dim)           # cut each token's row into num_heads pieces
    return x.transpose(1, 0, 2)                     # (T, h, d_h) -> (h, T, d_h): heads first


def _split_cases():
    rng = np.random.default_rng(8)
    return [
        Case((_labelled(3, 4), 2), label="x[t, f] = 10*t + f with T=3, d_model=4, num_heads=2"),
        Case((rng.standard_normal((8, 16)), 4), label="x of shape (8, 16), num_heads=4"),
        Case((rng.standard_normal((5, 6)), 3), label="x of shape (5, 6), num_heads=3"),
        Case((rng.standard_normal((4, 8)), 4), label="x of shape (4, 8), num_heads=4 (T == num_heads)"),
        Case((rng.standard_normal((2, 6)), 1), label="x of shape (2, 6), num_heads=1"),
    ]


#: Words of numpy's own errors when the features cannot be cut evenly (reshape, np.split, a float shape).
_NUMPY_ERRORS = ("cannot reshape", "equal division", "could not be broadcast", "must be integers")


def _dims(x, h):
    T, d_model = x.shape
    return T, h, d_model // h


_SPLIT_WRONGS = [
    Wrong(lambda x, h: x.reshape(h, _dims(x, h)[0], _dims(x, h)[2]),
          "reshape straight to (h, T, d_h) cuts the flat array in order, so head 0 gets whole tokens (the first "
          "T/h rows) instead of features [0 : d_h] of every token. Reshape to (T, h, d_h) first, then swap the "
          "first two axes"),
    Wrong(lambda x, h: x.reshape(*_dims(x, h)),
          "the grouping is right but the axes are (T, h, d_h): move the head axis to the front, "
          "for example with .transpose(1, 0, 2), to get (h, T, d_h)"),
    Wrong(lambda x, h: x.reshape(_dims(x, h)[0], _dims(x, h)[2], h).transpose(2, 0, 1),
          "head i got the strided features i, i+h, i+2h, ... Head i must take the block "
          "[i*d_h : (i+1)*d_h]: reshape to (T, h, d_h), with h before d_h"),
    Wrong(lambda x, h: x.reshape(*_dims(x, h)).transpose(1, 2, 0),
          "each head came out as (d_h, T), transposed: one row per token, please. Use .transpose(1, 0, 2), "
          "not (1, 2, 0)"),
    Wrong(lambda x, h: np.stack(np.split(x, h, axis=0)),
          "you split the tokens (axis 0). Heads split the features (the last axis): every head keeps all T tokens"),
]


@shows_verdict
def check_split_heads(fn):
    """Grade ``fn(x, num_heads)``: ``(T, d_model) -> (num_heads, T, d_model // num_heads)``."""
    if callable(fn):
        _, err = call_quietly(fn, _labelled(3, 4), 2)
        if isinstance(err, TimeLimit):
            return failed_call(err, _split_cases()[0].label)
        if isinstance(err, TypeError) and "float" in str(err):
            return Verdict(False, f"on x of shape (3, 4) with num_heads=2, your function raised TypeError: {err}",
                           "d_model / num_heads is a float (2.0 here), and shapes must be integers: use integer "
                           "division, head_dim = d_model // num_heads")
    verdict = grade_function(fn, my_split_heads, _split_cases(), what="my_split_heads", wrongs=_SPLIT_WRONGS,
                             shape_hint="the result is (num_heads, T, head_dim): heads first, then one row per token",
                             success="head i holds features [i*d_h : (i+1)*d_h] of every token.")
    if not verdict.passed:
        return verdict
    result, err = call_quietly(fn, np.zeros((3, 10)), 4)
    if isinstance(err, TimeLimit):
        return failed_call(err, "x of shape (3, 10) with num_heads=4")
    if err is not None and (not isinstance(err, ValueError) or any(words in str(err) for words in _NUMPY_ERRORS)):
        numpy = " (numpy's own error)" if isinstance(err, ValueError) else ""
        return Verdict(False, f"with d_model=10 and num_heads=4 your function raised {type(err).__name__}: "
                              f"{err}{numpy}; the exercise asks for a ValueError with a message of your own",
                       "check d_model % num_heads before reshaping, and raise ValueError(f\"d_model = {d_model} is "
                       "not divisible by num_heads = {num_heads}\"): a learner who calls your function then reads "
                       "what to change")
    if err is None:
        try:
            got = f"a result of shape {np.shape(result)}"
        except Exception:  # noqa: BLE001 - a ragged list has no shape
            got = f"a {type(result).__name__}"
        return Verdict(False, f"with d_model=10 and num_heads=4 your function returned {got} instead of refusing",
                       "10 features cannot be cut into 4 equal heads: check d_model % num_heads and raise a "
                       "ValueError that says so")
    return Verdict(True, "head i holds features [i*d_h : (i+1)*d_h] of every token, and d_model=10 with "
                         f"num_heads=4 is refused with your message: {err}")


# Exercise 08.2: merge the heads back
@register_solution("my_merge_heads")
def my_merge_heads(heads):
    """(num_heads, T, head_dim) -> (T, num_heads * head_dim): the inverse of my_split_heads."""
    num_heads, T, head_dim = heads.shape
    heads = heads.transpose(1, 0, 2)                # (h, T, d_h) -> (T, h, d_h): tokens first again
    return heads.reshape(T, num_heads * head_dim)   # glue each token's h pieces side by side


def _merge_cases():
    rng = np.random.default_rng(80)
    return [
        Case((my_split_heads(_labelled(3, 4), 2),), label="the 2 heads of x[t, f] = 10*t + f, T=3, d_model=4 "
                                                          "(merging must give x back)"),
        Case((rng.standard_normal((4, 8, 4)),), label="heads of shape (4, 8, 4)"),
        Case((rng.standard_normal((3, 2, 5)),), label="heads of shape (3, 2, 5)"),
        Case((rng.standard_normal((4, 4, 2)),), label="heads of shape (4, 4, 2) (T == num_heads)"),
        Case((rng.standard_normal((1, 3, 4)),), label="one head of shape (1, 3, 4)"),
    ]


_MERGE_WRONGS = [
    Wrong(lambda x: x.reshape(x.shape[1], x.shape[0] * x.shape[2]),
          "reshape alone glues the numbers in memory order: the first rows come from head 0 only, so tokens "
          "get mixed. Swap the first two axes back, (h, T, d_h) -> (T, h, d_h), then reshape"),
    Wrong(lambda x: x.transpose(1, 0, 2),
          "the axes are right, (T, h, d_h), but not yet glued: reshape to (T, h * d_h)"),
    Wrong(lambda x: x.transpose(1, 2, 0).reshape(x.shape[1], -1),
          "the features are interleaved (head 0's first feature, head 1's first feature, ...). Concatenation puts "
          "all d_h features of head 0 first, then head 1's: transpose to (T, h, d_h), not (T, d_h, h)"),
    Wrong(lambda x: np.concatenate(list(x), axis=0),
          "you stacked the heads under each other (h * T rows). Concatenate along the feature axis: "
          "each token keeps one row, h * d_h features wide"),
    Wrong(lambda x: x.sum(axis=0),
          "you added the heads. Concatenate them instead: each head keeps its own d_h columns (W_o mixes them later)"),
    Wrong(lambda x: x.mean(axis=0),
          "you averaged the heads. Concatenate them instead: each head keeps its own d_h columns"),
]


@shows_verdict
def check_merge_heads(fn):
    """Grade ``fn(heads)``: ``(num_heads, T, head_dim) -> (T, num_heads * head_dim)``, the inverse of split."""
    return grade_function(fn, my_merge_heads, _merge_cases(), what="my_merge_heads", wrongs=_MERGE_WRONGS,
                          shape_hint="the result is (T, num_heads * head_dim): one row per token",
                          success="merge(split(x)) gives x back: each token's heads sit side by side again.")


# Exercise 08.3: the parameters of one attention layer, in the two conventions
@register_solution("parameter_count")
def parameter_count(d_model=512, num_heads=8):
    """The original Transformer's attention layer: W_q, W_k, W_v, W_o and no biases (as in its equations)."""
    head_dim = d_model // num_heads
    qkv_weights = 3 * d_model * (num_heads * head_dim)   # W_q, W_k, W_v: (d_model, h * d_h) each
    output_weights = (num_heads * head_dim) * d_model    # W_o: (h * d_h, d_model)
    return qkv_weights + output_weights                  # = 4 * d_model**2, whatever h


@register_solution("parameter_count_with_biases")
def parameter_count_with_biases(d_model=512, num_heads=8):
    """PyTorch's nn.MultiheadAttention (bias=True by default) and GPT-2: each projection has a bias too."""
    head_dim = d_model // num_heads
    biases = 3 * (num_heads * head_dim) + d_model        # one bias per output feature of each projection
    return parameter_count(d_model, num_heads) + biases  # = 4 * d_model**2 + 4 * d_model


_D, _H = 512, 8
_D_H = _D // _H

#: Wrong counts that are wrong in both conventions.
_HEAD_WRONGS = [
    (3 * _D**2, "you left out the output projection W_o, a (d_model, d_model) matrix"),
    (_H * 4 * _D**2, "you multiplied by h: the heads share W_q, W_k, W_v (each head owns only d_h of their "
                     "columns), so the count does not depend on h"),
    (4 * _D * _D_H, "that counts one head's columns only (d_model x d_h per projection): there are h = 8 heads, "
                    "whose columns together make d_model x d_model"),
]


def _example_wrongs(with_biases):
    """The count for this notebook's example (d_model = 8) instead of the exercise's 512."""
    d = creature_example()["X"].shape[1]
    hint = (f"that is the count for this notebook's example, d_model = {d}: the exercise asks for the original "
            f"Transformer's base model, d_model = {_D} and h = {_H}. Give the sizes names of your own "
            f"(d_base = {_D}), so that d_model keeps its value for the cells above")
    return [(4 * d**2 + 4 * d * with_biases, hint)]


@shows_verdict
def check_parameter_count(value):
    """Grade the count of the original Transformer's attention layer: d_model = 512, h = 8, no biases."""
    return grade_value(
        value, parameter_count(_D, _H), name="count_original", rtol=0.0, atol=0.5,
        wrongs=[
            (4 * _D**2 + 4 * _D, "that includes four bias vectors. The original Transformer's attention has none: "
                                 "its equations are XW_q, XW_k, XW_v and Concat(...)W_o, and its reference code "
                                 "(tensor2tensor) builds them without biases. Count the weights only"),
            (4 * _D**2 + 3 * _D, "the original Transformer's projections have no biases at all: weights only"),
            (4 * _D**2 + _D, "the original Transformer's projections have no biases at all: weights only"),
            *_example_wrongs(False),
            *_HEAD_WRONGS,
        ],
        success="4 * 512**2 = 1,048,576 weights, whatever the number of heads: the paper's attention has no biases.",
    )


@shows_verdict
def check_parameter_count_with_biases(value):
    """Grade the count with a bias on each projection (PyTorch's nn.MultiheadAttention, GPT-2): d_model = 512, h = 8."""
    return grade_value(
        value, parameter_count_with_biases(_D, _H), name="count_with_biases", rtol=0.0, atol=0.5,
        wrongs=[
            (4 * _D**2, "that is the weights only (the original Transformer's count): here each of the four "
                        "projections also has a bias vector of d_model numbers"),
            (4 * _D**2 + 3 * _D, "W_o has a bias too: four bias vectors of d_model numbers"),
            (4 * _D**2 + _D, "that counts one bias vector; each of the four projections (W_q, W_k, W_v, W_o) has "
                             "its own: 4 * d_model bias numbers"),
            *_example_wrongs(True),
            (3 * _D**2 + 3 * _D, "you left out the output projection W_o, a (d_model, d_model) matrix plus its bias"),
            (4 * _D**2 + 4 * _D_H, "a bias has one number per output feature: d_model = h * d_h numbers per "
                                   "projection, not d_h"),
            (_H * (4 * _D**2 + 4 * _D), "you multiplied by h: the heads share the projections and their biases"),
            (4 * _D * _D_H + 4 * _D, "that counts one head's columns only (d_model x d_h per projection): there are "
                                     "h = 8 heads, whose columns together make d_model x d_model"),
            *_HEAD_WRONGS,
        ],
        success="4 * 512**2 weights + 4 * 512 biases = 1,050,624, whatever the number of heads.",
    )


# Predict, then run: the shape of the weights of a batch
#: The question: a batch of B = 2 sentences of T = 8 tokens, d_model = 8, h = 4 heads.
BATCH, TOKENS, HEADS = 2, 8, 4


@shows_verdict
def check_weights_shape(prediction):
    """Grade a prediction of the shape of ``weights`` from ``multi_head_attention`` for X (2, 8, 8) and h = 4."""
    predicted, problem = as_shape(prediction, "your prediction")
    if problem is not None:
        return problem
    B, T, h = BATCH, TOKENS, HEADS
    hints = {
        (h, B, T, T): "the batch axis stays first: split_heads turns (B, T, d_model) into (B, h, T, d_h)",
        (B, T, T): "each head has its own attention matrix: there is an axis of h = 4 heads too",
        (h, T, T): "that is one sentence: the batch of B = 2 sentences keeps its axis in front",
        (B, h, T, 2): "those are the per-head queries, (B, h, T, d_h); the weights are T x T per head",
        (B, T, h, T): "after split_heads the head axis comes before the tokens: (B, h, T, ...)",
    }
    if predicted == (B, h, T, T):
        return Verdict(True, "(B, h, T, T) = (2, 4, 8, 8): one T x T matrix per head and per sentence; the core acts "
                             "on the last two axes, so batch and heads are just leading axes.")
    return Verdict(False, f"you predicted {predicted}",
                   hints.get(predicted, "follow the shapes: (B, T, d_model) -> split_heads -> (B, h, T, d_h); the "
                                        "scores compare every query with every key of the same head and sentence"))
