"""Checkers for notebook 14 (a tiny GPT of your own, part 1): the prediction of the first BPE merge, one BPE merge,
layer_norm_backward."""

from __future__ import annotations

import collections
import numbers
from functools import lru_cache

import numpy as np

from ..backprop import layer_norm_backward, numerical_gradient, relative_error
from ..block import layer_norm
from ..bpe import merge_pair, most_frequent_pair, pair_counts, pretokenize
from ..examples import SEED
from ..gpt import corpus_split
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    failed_call,
    grade_function,
    register_solution,
    shows_verdict,
    whole_number,
)
from ._predict import filled_in

__all__ = ["check_first_pair", "check_merge_pair", "check_layer_norm_backward"]


# ------------------------------------------------------------------------------- predict, then run

@lru_cache(maxsize=1)
def first_pair_counts():
    """How often each pair of neighbouring bytes occurs inside the chunks of the training text (a Counter)."""
    counts = collections.Counter()
    for chunk, times in collections.Counter(pretokenize(corpus_split("train"))).items():
        pair_counts(list(chunk.encode("utf-8")), counts, times)  # each distinct chunk once, weighted
    return counts


def _as_pair(answer):
    """A prediction as a pair of byte ids: a two-character string or two ids; else None."""
    if isinstance(answer, str) and len(answer.encode("utf-8")) == 2:
        return tuple(answer.encode("utf-8"))
    if isinstance(answer, (tuple, list)) and len(answer) == 2 and all(
            whole_number(i) is not None and 0 <= whole_number(i) < 256 for i in answer):
        return tuple(whole_number(i) for i in answer)
    return None


@register_solution("first_pair")
def first_pair():
    """The measured answer: the most frequent pair of neighbouring bytes inside the training text's chunks."""
    return bytes(most_frequent_pair(first_pair_counts())).decode("utf-8")


@shows_verdict
@filled_in("my_first_pair", example='two characters in quotes, e.g. "ab"')
def check_first_pair(prediction):
    """Grade a prediction of the most frequent pair of neighbouring bytes in the training text (inside chunks)."""
    pair = _as_pair(prediction)
    if pair is None:
        what = "two characters" if isinstance(prediction, (str, tuple, list)) else "a string"
        return Verdict(False, f"{prediction!r:.40} is not {what}",
                       'write the pair as a string of two characters, e.g. "ab" (a space counts: " a")')
    try:
        counts = first_pair_counts()
    except Exception as err:  # noqa: BLE001 - a missing text becomes a message, never a traceback
        return Verdict(False, f"the training text could not be read ({type(err).__name__}: {err})")
    best = tuple(first_pair().encode("utf-8"))
    ranked = sorted(counts, key=lambda p: (-counts[p], p))
    said = bytes(pair).decode("utf-8", errors="replace")
    if pair == best:
        return Verdict(True, f"{said!r}, {counts[best]:,} times: a chunk is a word with the space before it, so the "
                             "space and the word's first letter make a pair in every chunk that starts with a space.")
    if counts[pair] == 0:
        where = ("a chunk is a word with the space BEFORE it, so inside a chunk a space never follows another "
                 "character" if said.endswith(" ") else "look at the chunks printed above: which pairs can occur "
                                                            "inside one?")
        return Verdict(False, f"{said!r} never occurs inside a chunk", where)
    return Verdict(False, f"{said!r} occurs {counts[pair]:,} times, the pair ranked {ranked.index(pair) + 1} "
                          f"of {len(ranked):,}",
                   "a space counts as a character, and it opens most chunks (\" is\", \" a\", \" truth\"): which "
                   "letter begins the most words?")


# ------------------------------------------------------------------------------- one BPE merge

@register_solution("merge_pair")
def merge_pair_solution(ids, pair, new_id):
    """Scan left to right; where the pair starts, write new_id and jump over both tokens."""
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2  # both tokens of the pair are used up
        else:
            out.append(ids[i])
            i += 1
    return out


def _merge_cases():
    return [
        Case(([1, 2, 3, 1, 2], (1, 2), 256), label="ids [1, 2, 3, 1, 2], pair (1, 2)"),
        Case(([104, 101, 32, 116, 104, 101], (104, 101), 300), label="b'he the' as bytes, pair (h, e)"),
        Case(([2, 1, 2, 1], (1, 2), 256), label="ids [2, 1, 2, 1], pair (1, 2) (in the middle only)"),
        Case(([7, 7, 7, 7, 7], (7, 7), 256), label="ids [7, 7, 7, 7, 7], pair (7, 7) (overlapping pairs)"),
        Case(([5, 6], (6, 5), 256), label="ids [5, 6] and the pair (6, 5), which does not occur"),
        Case(([9], (9, 9), 256), label="a single token"),
    ]


def _merge_wrongs():
    def first_only(ids, pair, new_id):
        for i in range(len(ids) - 1):
            if (ids[i], ids[i + 1]) == tuple(pair):
                return [*ids[:i], new_id, *ids[i + 2:]]
        return list(ids)

    def no_skip(ids, pair, new_id):  # writes new_id but keeps the pair's second token too
        return [new_id if (a, b) == tuple(pair) else a for a, b in zip(ids, [*ids[1:], None])]

    def from_the_right(ids, pair, new_id):
        return merge_pair(list(ids)[::-1], tuple(pair)[::-1], new_id)[::-1]

    def no_skip_no_last(ids, pair, new_id):  # a for loop over range(len(ids) - 1), without skipping
        return no_skip(ids, pair, new_id)[:-1]

    def drops_last(ids, pair, new_id):  # skips right, but stops before the last token
        out, i = [], 0
        while i < len(ids) - 1:
            merged = (ids[i], ids[i + 1]) == tuple(pair)
            out.append(new_id if merged else ids[i])
            i += 2 if merged else 1
        return out

    return [
        Wrong(first_only, "only the first occurrence was merged: replace EVERY occurrence of the pair, in one scan"),
        Wrong(no_skip, "after writing new_id, skip both tokens of the pair (i += 2): the second token is part of "
                       "the new token, so it must not be written again. (If you wrote a `for` loop: i += 2 does "
                       "not skip there, the loop resets i; use `while i < len(ids)`)"),
        Wrong(no_skip_no_last, "two slips: after writing new_id the pair's second token is written again (skip both "
                               "tokens, i += 2, in a `while` loop), and the last token is lost (a loop over "
                               "range(len(ids) - 1) never reaches it)"),
        Wrong(drops_last, "the last token is lost when it is not part of a pair: loop while i < len(ids), and "
                          "check i + 1 < len(ids) before reading ids[i + 1]"),
        Wrong(from_the_right, "overlapping pairs go to the left: scan from the start, so [7, 7, 7] with the pair "
                              "(7, 7) becomes [new_id, 7]"),
    ]


def _as_ids(result):
    """The learner's result as a list of ints, or ``(None, why not)``."""
    if result is None:
        return None, "your function returned None. Did you forget the `return` statement?"
    if not isinstance(result, (list, tuple, np.ndarray)) or np.ndim(result) != 1 and len(result):
        return None, f"your function returned {type(result).__name__}, not a list of token ids"
    items = list(result)
    if not all(isinstance(i, numbers.Integral) and not isinstance(i, bool) for i in items):
        bad = next(i for i in items if not isinstance(i, numbers.Integral) or isinstance(i, bool))
        return None, f"your list contains {bad!r:.30}, not a token id (a whole number)"
    return [int(i) for i in items], ""


@shows_verdict
def check_merge_pair(fn):
    """Grade ``fn(ids, pair, new_id) -> list``: one BPE merge over a list of token ids."""
    if not callable(fn):
        return grade_function(fn, merge_pair, [], what="merge_pair")  # the machinery's "pass the function" verdict
    wrongs = _merge_wrongs()
    for case in _merge_cases():
        ids, pair, new_id = case.args
        result, error = call_quietly(fn, list(ids), tuple(pair), new_id)  # copies: the learner may change them
        if error is not None:
            return failed_call(error, case.label, {"index": (
                "ids[i + 1] went past the end of the list: on the last token there is no next one. Check "
                "i + 1 < len(ids) before reading ids[i + 1] (the last token is then copied as it is)")})
        got, problem = call_quietly(_as_ids, result)[0] or (None, "your function returned something unreadable")
        if problem:
            return Verdict(False, f"on {case.label}, {problem}", "build a new list and return it")
        expected = merge_pair(ids, pair, new_id)
        if got == expected:
            continue
        said = f"on {case.label}, you returned {got}, expected {expected}"
        hint = next((w.hint for w in wrongs if w.fn(ids, pair, new_id) == got), None)
        if hint is not None:
            return Verdict(False, f"{said}: a common mistake", hint)
        return Verdict(False, said, "every occurrence of the pair becomes new_id, and every other token is copied "
                                    "once, in order, the last one included")
    return Verdict(True, "your merge step matches attn_helpers.bpe.merge_pair on every case, overlapping pairs "
                         "included.")


# ------------------------------------------------------------------------------- layer_norm_backward

@register_solution("layer_norm_backward")
def layer_norm_backward_solution(grad_out, x, gamma, eps=1e-5):
    """Through x_hat = (x - mean) / sigma: the mean and the variance depend on every feature of the row."""
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)  # (..., 1)
    x_hat = (x - mean) / sigma  # (..., d)
    g = grad_out * gamma  # the gradient with respect to x_hat
    grad_x = (g - g.mean(axis=-1, keepdims=True) - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / sigma
    rows = tuple(range(x.ndim - 1))  # gamma and beta are shared by every row
    return grad_x, (grad_out * x_hat).sum(axis=rows), grad_out.sum(axis=rows)


def _ln_cases():
    rng = np.random.default_rng(SEED + 14)
    d = 5
    return [
        Case((rng.standard_normal((1, d)), rng.standard_normal((1, d)), np.ones(d)), label="one token, gamma = 1"),
        Case((rng.standard_normal((3, d)), rng.standard_normal((3, d)) * 2 + 1, rng.standard_normal(d)),
             label="3 tokens of 5 features, a random gamma"),
        Case((rng.standard_normal((2, 3, d)), rng.standard_normal((2, 3, d)), rng.standard_normal(d)),
             label="a batch of shape (2, 3, 5)"),
    ]


def _part(fn, index):
    def part(*args):
        result = fn(*args)
        if not isinstance(result, tuple) or len(result) != 3:
            raise TypeError(f"expected (grad_x, grad_gamma, grad_beta), a tuple of 3 arrays; got "
                            f"{type(result).__name__}" + (f" of {len(result)}" if isinstance(result, tuple) else ""))
        return result[index]
    return part


def _ln_wrongs():
    def stats(x, eps=1e-5):
        mean = x.mean(axis=-1, keepdims=True)
        sigma = np.sqrt(((x - mean) ** 2).mean(axis=-1, keepdims=True) + eps)
        return mean, sigma, (x - mean) / sigma

    def only_scale(grad_out, x, gamma):
        return grad_out * gamma / stats(x)[1]

    def no_variance_path(grad_out, x, gamma):
        g = grad_out * gamma
        return (g - g.mean(axis=-1, keepdims=True)) / stats(x)[1]

    def no_gamma(grad_out, x, gamma):
        return layer_norm_backward(grad_out, x)[0]

    def whole_array_mean(grad_out, x, gamma):  # g.mean(): one mean over every number, not one per token
        g, x_hat = grad_out * gamma, stats(x)[2]
        return (g - g.mean() - x_hat * (g * x_hat).mean(axis=-1, keepdims=True)) / stats(x)[1]

    def both_whole_array_means(grad_out, x, gamma):
        g, x_hat = grad_out * gamma, stats(x)[2]
        return (g - g.mean() - x_hat * (g * x_hat).mean()) / stats(x)[1]

    def over_tokens(grad_out, x, gamma, axis=0):  # every statistic over the tokens (axis 0): batch norm's axis
        mean = x.mean(axis=axis, keepdims=True)
        sigma = np.sqrt(((x - mean) ** 2).mean(axis=axis, keepdims=True) + 1e-5)
        g, x_hat = grad_out * gamma, (x - mean) / sigma
        return (g - g.mean(axis=axis, keepdims=True) - x_hat * (g * x_hat).mean(axis=axis, keepdims=True)) / sigma

    def means_over_tokens(grad_out, x, gamma):  # the forward's statistics right, the backward's means over axis 0
        g, x_hat = grad_out * gamma, stats(x)[2]
        return (g - g.mean(axis=0, keepdims=True) - x_hat * (g * x_hat).mean(axis=0, keepdims=True)) / stats(x)[1]

    def sums_not_means(grad_out, x, gamma):
        g, x_hat = grad_out * gamma, stats(x)[2]
        return (g - g.sum(axis=-1, keepdims=True) - x_hat * (g * x_hat).sum(axis=-1, keepdims=True)) / stats(x)[1]

    return [
        Wrong(whole_array_mean, "g.mean() without an axis averages EVERY number of the array; each token needs "
                                "its own mean over its features: g.mean(axis=-1, keepdims=True)"),
        Wrong(both_whole_array_means, "both means lack an axis: g.mean() and (g * x_hat).mean() average the "
                                      "whole array; each token needs its own, .mean(axis=-1, keepdims=True)"),
        Wrong(over_tokens, "your statistics run over axis 0, the tokens: that is batch norm's direction "
                           "(notebook 10's slip). Layer norm's mean, sigma and both means of its backward pass are "
                           "per token, over its features: axis=-1, keepdims=True"),
        Wrong(means_over_tokens, "the two means of the backward pass run over axis 0, the tokens: like the forward "
                                 "pass, they are per token, over its features: .mean(axis=-1, keepdims=True)"),
        Wrong(sums_not_means, "you summed over the features where the equation takes a mean: divide by d, or "
                              "use .mean(axis=-1, keepdims=True)"),
        Wrong(only_scale, "you divided by sigma only: the mean and the variance depend on every feature too. "
                          "Subtract the mean of g and x_hat times the mean of g * x_hat"),
        Wrong(no_variance_path, "the path through the mean is there, the one through the variance is missing: "
                                "subtract x_hat * (g * x_hat).mean(axis=-1, keepdims=True) as well"),
        Wrong(no_gamma, "gamma is missing: the gradient reaching x_hat is g = grad_out * gamma"),
    ]


def _ln_gamma_wrongs():
    return [Wrong(lambda grad_out, x, gamma: (grad_out * x).reshape(-1, x.shape[-1]).sum(axis=0),
                  "grad_gamma multiplies grad_out by the NORMALISED x (x_hat), not by x itself"),
            Wrong(lambda grad_out, x, gamma: grad_out * layer_norm(x),
                  "gamma is shared by every token: sum grad_out * x_hat over all the rows (every axis but the last)")]


@shows_verdict
def check_layer_norm_backward(fn):
    """Grade ``fn(grad_out, x, gamma, eps=1e-5) -> (grad_x, grad_gamma, grad_beta)``, then a gradient check."""
    hints = {"tuple": "return the three gradients as one tuple: grad_x, grad_gamma, grad_beta"}
    for index, name, wrongs in ((0, "grad_x", _ln_wrongs()), (1, "grad_gamma", _ln_gamma_wrongs()),
                                (2, "grad_beta", [])):
        verdict = grade_function(_part(fn, index), lambda *a, i=index: layer_norm_backward(*a)[i], _ln_cases(),
                                 what=f"layer_norm_backward's {name}", wrongs=wrongs, hints=hints,
                                 shape_hint="grad_x has the shape of x; grad_gamma and grad_beta one number per "
                                            "feature, (d,): sum over every other axis")
        if not verdict:
            if "expected (grad_x" in verdict.message:
                return Verdict(False, verdict.message, hints["tuple"])
            if "could not be broadcast" in verdict.message:
                return Verdict(False, verdict.message, "a mean over the last axis keeps that axis only with "
                               "keepdims=True: (T, d) minus a (T,) mean cannot broadcast, (T, d) minus (T, 1) can")
            return verdict
    rng = np.random.default_rng(SEED + 141)
    x, gamma, weights = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((3, 4))
    numeric = numerical_gradient(lambda v: float((layer_norm(v, gamma) * weights).sum()), x)
    grad_x, error = call_quietly(lambda: np.asarray(fn(weights.copy(), x.copy(), gamma.copy())[0], dtype=np.float64))
    if error is not None:
        return Verdict(False, "the gradient check could not run your function",
                       "return grad_x, grad_gamma, grad_beta from fn(grad_out, x, gamma)")
    error = relative_error(grad_x, numeric)
    if not error < 1e-6:
        return Verdict(False, f"the gradient check fails: relative error {error:.1e}", "compare term by term with "
                       "the equations of section 2")
    return Verdict(True, f"all three gradients are right, and grad_x agrees with central differences (relative "
                         f"error {error:.0e}).")
