"""Checkers for notebook 14 (a tiny GPT of your own): one BPE merge, layer_norm_backward, top-p."""

from __future__ import annotations

import numpy as np

from ..backprop import numerical_gradient, relative_error
from ..block import layer_norm
from ..bpe import merge_pair
from ..examples import SEED
from ..gpt import filter_logits, layer_norm_backward
from ._grader import Case, Verdict, Wrong, call_quietly, grade_function, register_solution, shows_verdict

__all__ = ["check_merge_pair", "check_layer_norm_backward", "check_top_p"]


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

    return [
        Wrong(first_only, "only the first occurrence was merged: replace EVERY occurrence of the pair, in one scan"),
        Wrong(no_skip, "after writing new_id, skip both tokens of the pair (i += 2): the second token is part of "
                       "the new token, so it must not be written again"),
        Wrong(from_the_right, "overlapping pairs go to the left: scan from the start, so [7, 7, 7] with the pair "
                              "(7, 7) becomes [new_id, 7]"),
    ]


@shows_verdict
def check_merge_pair(fn):
    """Grade ``fn(ids, pair, new_id) -> list``: one BPE merge over a list of token ids."""
    return grade_function(fn, merge_pair, _merge_cases(), what="merge_pair", wrongs=_merge_wrongs(),
                          shape_hint="each merged pair makes the list one token shorter; tokens that are not the "
                                     "pair stay as they are",
                          success="your merge step matches attn_helpers.bpe.merge_pair on every case, overlapping "
                                  "pairs included.")


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

    return [
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
                       "the equation above")
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
        Case((np.array([0.1, 0.6, 0.3]), 0.65), label="probs [0.1, 0.6, 0.3] (not sorted), top_p = 0.65"),
        Case((np.array([0.2, 0.7, 0.1]), 0.5), label="probs [0.2, 0.7, 0.1], top_p = 0.5: one token is enough"),
        Case((np.array([0.05, 0.15, 0.3, 0.5]), 0.9), label="probs [0.05, 0.15, 0.3, 0.5], top_p = 0.9"),
        Case((np.array([0.4, 0.35, 0.25]), 0.01), label="probs [0.4, 0.35, 0.25], a tiny top_p = 0.01"),
    ]


def _top_p_wrongs():
    def cumulative_below(probs, top_p):  # stops before the token that crosses top_p
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) <= top_p
        return keep

    def unsorted(probs, top_p):  # cumulative sums in token-id order
        return np.cumsum(probs) - probs < top_p

    return [
        Wrong(cumulative_below, "you kept the tokens whose cumulative sum stays below top_p, which drops the token "
                                "that crosses it (and with a small top_p leaves nothing). Keep the SMALLEST set whose "
                                "sum reaches top_p: a token stays while the tokens ranked ABOVE it sum to < top_p"),
        Wrong(unsorted, "sort first: the nucleus is the most PROBABLE tokens, so add them up from the largest "
                        "probability down (np.argsort(-probs)), not in token order"),
        Wrong(lambda probs, top_p: probs >= top_p, "top-p is not a threshold on each probability: it keeps the "
                                                   "most probable tokens until their probabilities add up to top_p"),
    ]


@shows_verdict
def check_top_p(fn):
    """Grade ``fn(probs, top_p) -> keep``: a boolean mask of the tokens top-p (nucleus) sampling keeps."""
    return grade_function(fn, lambda probs, top_p: np.isfinite(filter_logits(np.log(probs), top_p=top_p)),
                          _top_p_cases(), what="top_p_keep", wrongs=_top_p_wrongs(),
                          shape_hint="return one True/False per token, in the tokens' original order",
                          success="your nucleus matches filter_logits(..., top_p=...) on every case.")

