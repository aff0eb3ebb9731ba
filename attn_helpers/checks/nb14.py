"""Checkers for notebook 14 (a tiny GPT of your own): its two predictions (the first BPE merge, the previous-token
heads), one BPE merge, layer_norm_backward, top-p."""

from __future__ import annotations

import collections
import numbers
from functools import lru_cache

import numpy as np

from ..backprop import layer_norm_backward, numerical_gradient, relative_error
from ..block import layer_norm
from ..bpe import merge_pair, most_frequent_pair, pair_counts, pretokenize
from ..examples import SEED
from ..gpt import attention_weights, corpus_split, filter_logits, load_tiny_gpt
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
from ._predict import filled_in, is_complex

__all__ = ["check_first_pair", "check_previous_token_heads", "check_merge_pair", "check_layer_norm_backward",
           "check_top_p"]


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


def previous_token_weights(model, sentence, max_tokens=24):
    """``(layers, heads)``: each head's mean weight on the token just before the query, on ``sentence``'s first
    ``max_tokens`` tokens, as ``decoder_forward`` computes them."""
    ids = model.tokenizer.encode(sentence)[:max_tokens]
    return np.diagonal(attention_weights(model.decoder, ids), offset=-1, axis1=-2, axis2=-1).mean(axis=-1)


def attention_sentence():
    """Line 10 of the validation text, its first 100 characters: the sentence of the notebook's question."""
    return corpus_split("val").splitlines()[10][:100]


@register_solution("previous_token_heads")
def previous_token_heads():
    """The measured answer: how many heads put more than half of their weight on the previous token."""
    return int((previous_token_weights(load_tiny_gpt(), attention_sentence()) > 0.5).sum())


@shows_verdict
@filled_in("my_previous_token_heads", example="a whole number from 0 to 8")
def check_previous_token_heads(prediction):
    """Grade a prediction of how many of the tiny GPT's heads put more than half of their weight on the previous
    token, on :func:`attention_sentence`."""
    if whole_number(prediction) is None:
        kind = "complex" if is_complex(prediction) else type(prediction).__name__
        return Verdict(False, f"{prediction!r:.40} is {kind}, not a whole number",
                       "write a whole number from 0 to 8")
    prediction = whole_number(prediction)
    try:
        with np.errstate(all="ignore"):
            previous = previous_token_weights(load_tiny_gpt(), attention_sentence())
    except Exception as err:  # noqa: BLE001 - a missing model becomes a message, never a traceback
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    heads, count, strongest = previous.size, int((previous > 0.5).sum()), float(previous.max())
    if not 0 <= prediction <= heads:
        return Verdict(False, f"the model has {heads} heads; you predicted {prediction}",
                       f"write a whole number from 0 to {heads}")
    measured = (f"{count} of {heads} heads put more than half of their weight on the previous token; the strongest "
                f"puts {strongest:.2f} there")
    if prediction == count:
        return Verdict(True, f"measured: {measured}. The cells below show every head.")
    if prediction > count:
        return Verdict(False, f"you predicted {prediction}; measured: {measured}",
                       "a head counts only if MORE than half of its weight goes one step back; the rest of its "
                       "weight goes to the other tokens it may see (the heat maps below show where)")
    return Verdict(False, f"you predicted {prediction}; measured: {measured}",
                   "predicting the next token rewards looking one step back: a model learns it early")


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


# ------------------------------------------------------------------------------- top-p

@register_solution("top_p_keep")
def top_p_keep_solution(probs, top_p):
    """Sort by probability; keep a token while the tokens ranked above it sum to less than top_p."""
    order = np.argsort(-probs, kind="stable")  # the most probable first
    before = np.cumsum(probs[order]) - probs[order]  # the probability ranked above each token
    keep = np.zeros(len(probs), dtype=bool)
    keep[order] = before < top_p
    return keep


def _top_p_cases():
    return [
        Case((np.array([0.5, 0.25, 0.125, 0.125]), 0.7), label="probs [0.5, 0.25, 0.125, 0.125], top_p = 0.7"),
        Case((np.array([0.1, 0.3, 0.6]), 0.65), label="probs [0.1, 0.3, 0.6] (the largest last), top_p = 0.65"),
        Case((np.array([0.1, 0.6, 0.3]), 0.65), label="probs [0.1, 0.6, 0.3] (not sorted), top_p = 0.65"),
        Case((np.array([0.2, 0.7, 0.1]), 0.5), label="probs [0.2, 0.7, 0.1], top_p = 0.5: one token is enough"),
        Case((np.array([0.05, 0.15, 0.3, 0.5]), 0.9), label="probs [0.05, 0.15, 0.3, 0.5], top_p = 0.9"),
        Case((np.array([0.4, 0.35, 0.25]), 0.01), label="probs [0.4, 0.35, 0.25], a tiny top_p = 0.01"),
        Case((np.array([0.125, 0.5, 0.125, 0.25]), 0.75), label=_BOUNDARY_LABEL),
    ]


#: The case whose two most probable tokens sum to exactly top_p (binary fractions: every sum is exact).
_BOUNDARY_LABEL = "probs [0.125, 0.5, 0.125, 0.25], top_p = 0.75: the two most probable sum to exactly top_p"


def _top_p_wrongs():
    def cumulative_below(probs, top_p):  # stops before the token that crosses top_p
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) <= top_p
        return keep

    def unsorted(probs, top_p):  # cumulative sums in token-id order
        return np.cumsum(probs) - probs < top_p

    def in_sorted_order(probs, top_p):  # right mask, but in sorted order: never mapped back to the tokens
        ranked = probs[np.argsort(-probs, kind="stable")]
        return np.cumsum(ranked) - ranked < top_p

    def mapped_back_the_wrong_way(probs, top_p):  # keep = keep_sorted[order] instead of keep[order] = keep_sorted
        return in_sorted_order(probs, top_p)[np.argsort(-probs, kind="stable")]

    def up_to_and_including(probs, top_p):  # before <= top_p: one token too many where a sum hits top_p
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) - probs[order] <= top_p
        return keep

    def ascending(probs, top_p):  # np.argsort(probs): the LEAST probable first
        order = np.argsort(probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) - probs[order] < top_p
        return keep

    return [
        Wrong(in_sorted_order, "your mask is in SORTED order (entry 0 = the most probable token): put each "
                               "answer back at its token's position, keep[order] = kept_in_sorted_order"),
        Wrong(mapped_back_the_wrong_way, "keep_sorted[order] moves the answers the wrong way: write them into "
                                         "the tokens' positions, keep[order] = keep_sorted"),
        Wrong(cumulative_below, "you kept the tokens whose cumulative sum stays below top_p, which drops the token "
                                "that crosses it (and with a small top_p leaves nothing). Keep the SMALLEST set whose "
                                "sum reaches top_p: a token stays while the tokens ranked ABOVE it sum to < top_p"),
        Wrong(up_to_and_including, "the tokens ranked above the third one already sum to exactly top_p, so the "
                                   "nucleus is complete without it: keep a token while the tokens above it sum to "
                                   "LESS than top_p (before < top_p), not before <= top_p"),
        Wrong(unsorted, "sort first: the nucleus is the most PROBABLE tokens, so add them up from the largest "
                        "probability down (np.argsort(-probs)), not in token order"),
        Wrong(ascending, "np.argsort(probs) puts the LEAST probable token first: sort by -probs (or reverse the "
                         "order) so the sum starts at the most probable token"),
        Wrong(lambda probs, top_p: probs >= top_p, "top-p is not a threshold on each probability: it keeps the "
                                                   "most probable tokens until their probabilities add up to top_p"),
    ]


@shows_verdict
def check_top_p(fn):
    """Grade ``fn(probs, top_p) -> keep``: a boolean mask of the tokens top-p (nucleus) sampling keeps."""
    verdict = grade_function(fn, lambda probs, top_p: np.isfinite(filter_logits(np.log(probs), top_p=top_p)),
                             _top_p_cases(), what="top_p_keep", wrongs=_top_p_wrongs(),
                             shape_hint="return one True/False per token, in the tokens' original order",
                             success="your nucleus matches filter_logits(..., top_p=...) on every case.")
    if not verdict.passed:
        return verdict
    case = _top_p_cases()[0]
    dtype = np.asarray(call_quietly(fn, *(np.array(a, copy=True) for a in case.args))[0]).dtype
    if dtype != np.bool_:
        return Verdict(False, f"on {case.label}, the right tokens are marked, but with numbers of dtype {dtype}, "
                              "not True/False",
                       "np.zeros(len(probs)) makes an array of floats: pass dtype=bool, so that the mask can pick "
                       "tokens (probs[keep]) and be inverted (~keep)")
    return verdict

