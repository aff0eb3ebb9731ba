"""Checkers for notebook 13 (online softmax, tiled attention, the KV cache)."""

from __future__ import annotations

import functools
import math

import numpy as np

from ..core import scaled_dot_product_attention, softmax
from ..efficient import tile_count
from ..kv_cache import PUBLISHED_CONFIGS, kv_cache_bytes
from ._grader import Case, Wrong, each_slip, grade_function, grade_value, never_raises, register_solution, shows_verdict

__all__ = ["check_online_softmax", "check_online_attention", "check_skipped_tiles", "check_cache_prediction",
           "check_merge_softmax_states", "check_attention_by_splits"]


# Exercise 13.1: the online softmax of one row
@register_solution("online_softmax_row")
def online_softmax_row(scores):
    """Softmax of a 1-D row, its max and sum found in ONE pass (a loop over the entries)."""
    m, l = -np.inf, 0.0  # running max, running sum of exp(score - m)
    for s in scores:
        if s == -np.inf:
            continue  # a masked score adds exp(-inf) = 0 (and m - new_m would be -inf - (-inf) = NaN)
        new_m = max(m, s)
        l = l * np.exp(m - new_m) + np.exp(s - new_m)  # rescale the old sum to the new max, add the new term
        m = new_m
    return np.exp(np.asarray(scores, dtype=float) - m) / l


def _no_rescale_sum(scores):
    m, l = -np.inf, 0.0
    for s in scores:
        m = max(m, s)
        l = l + np.exp(s - m)  # forgot: l * exp(m_old - m_new)
    return np.exp(np.asarray(scores, dtype=float) - m) / l


def _rescale_upside_down(scores):
    m, l = -np.inf, 0.0
    for s in scores:
        new_m = max(m, s)
        l = l * np.exp(new_m - m) + np.exp(s - new_m) if m > -np.inf else np.exp(s - new_m)
        m = new_m
    return np.exp(np.asarray(scores, dtype=float) - m) / l


def _first_term_dropped(scores):
    """Seeded with m = scores[0] but l = 0, then looped from the second score: the first exp() is never added."""
    m, l = scores[0], 0.0
    for s in scores[1:]:
        new_m = max(m, s)
        l = l * np.exp(m - new_m) + np.exp(s - new_m)
        m = new_m
    return np.exp(np.asarray(scores, dtype=float) - m) / l


_ONLINE_SOFTMAX_WRONGS = [
    Wrong(_no_rescale_sum,
          "your sum is not rescaled when the max grows: the terms added before were exp(s - m_old), and they must "
          "all be relative to the same max. Multiply the running sum by exp(m_old - m_new) before adding the new "
          "term"),
    Wrong(_rescale_upside_down,
          "the rescaling factor is upside down: the old terms were exp(s - m_old); to make them exp(s - m_new), "
          "multiply by exp(m_old - m_new), which is <= 1"),
    Wrong(_first_term_dropped,
          "the first score's term is missing from the sum: you start from m = scores[0] and loop from the second "
          "score, but with l = 0 the first exp(scores[0] - m) = 1 is never added. Start with l = 1.0, or loop over "
          "every score from m = -inf, l = 0"),
    Wrong(lambda scores: np.exp(np.asarray(scores, dtype=float) - np.max(scores)),
          "the weights do not sum to 1: divide exp(score - m) by the running sum l at the end"),
]


@shows_verdict
def check_online_softmax(fn):
    """Grade ``fn(scores) -> weights`` for a 1-D row, against :func:`attn_helpers.softmax`."""
    cases = [
        Case((np.array([1.0, 3.0, 2.0]),), label="the row [1, 3, 2]"),
        Case((np.array([0.5, 1.0, 2.0, 4.0, 8.0]),), label="a row whose max grows at every step"),
        Case((np.array([1000.0, 1001.0, 999.0]),), label="large scores [1000, 1001, 999] (exp overflows unshifted)"),
        Case((np.array([2.0, -np.inf, 0.5, -np.inf]),), label="a row with masked (-inf) scores"),
        Case((np.array([-3.0]),), label="a row of one score"),
    ]
    common = dict(what="online_softmax_row", wrongs=_ONLINE_SOFTMAX_WRONGS,
                  shape_hint="return one weight per score: an array of the same shape as scores")
    verdict = grade_function(fn, softmax, cases, **common)
    if not verdict.passed:
        return verdict
    masked_first = [Case((np.array([-np.inf, 2.0, 0.5]),), label="the row [-inf, 2, 0.5], whose FIRST score is masked")]
    return grade_function(fn, softmax, masked_first, **common, hints={"nan": (
        "while m is still -inf, a masked score gives exp(m - new_m) = exp(-inf - (-inf)) = exp(NaN): skip a "
        "masked score (if s == -np.inf: continue), it adds exp(-inf) = 0 to the sum anyway")},
        success="one pass for the max and the sum, rescaled whenever the max grew, masked scores skipped: "
                "the softmax.")


# Exercise 13.2: one query's context in one pass over the keys
@register_solution("online_attention_row")
def online_attention_row(query, keys, values):
    """The context of one query (d_k,) over keys (T, d_k) and values (T, d_v), one key at a time."""
    m, l = -np.inf, 0.0  # running max and running sum
    acc = np.zeros(values.shape[1])  # running sum of exp(score - m) * value
    for key, value in zip(keys, values):
        s = query @ key / np.sqrt(len(query))  # (d_k,) @ (d_k,) -> a number: the scaled score
        new_m = max(m, s)
        correction = np.exp(m - new_m)  # rescales everything summed relative to the old max
        l = l * correction + np.exp(s - new_m)
        acc = acc * correction + np.exp(s - new_m) * value
        m = new_m
    return acc / l


def _attention_variant(rescale_sum=True, rescale_acc=True, divide=True, scale=True):
    """A version of the solution with one slip; ``scale``: True (sqrt(d_k)), False (none), "d_k" or "sqrt(T)"."""
    def variant(query, keys, values):
        m, l, acc = -np.inf, 0.0, np.zeros(values.shape[1])
        divisor = {True: np.sqrt(len(query)), False: 1.0, "d_k": len(query), "sqrt(T)": np.sqrt(len(keys))}[scale]
        for key, value in zip(keys, values):
            s = query @ key / divisor
            new_m = max(m, s)
            correction = np.exp(m - new_m)
            l = (l * correction if rescale_sum else l) + np.exp(s - new_m)
            acc = (acc * correction if rescale_acc else acc) + np.exp(s - new_m) * value
            m = new_m
        return acc / l if divide else acc

    return variant


#: The slips of exercise 13.2, each with its hint (``each_slip``).
_ONLINE_SLIPS = {
    "accumulator": ({"rescale_acc": False},
                    "the accumulator is not rescaled: when the max grows, the weighted values summed so far were "
                    "weighted by exp(s - m_old). Multiply acc by exp(m_old - m_new) too, exactly like the sum"),
    "sum": ({"rescale_sum": False},
            "the running sum is not rescaled when the max grows (the accumulator is): multiply l by "
            "exp(m_old - m_new) before adding the new term"),
    "neither": ({"rescale_sum": False, "rescale_acc": False},
                "neither the sum nor the accumulator is rescaled when the max grows: both hold terms relative to "
                "the old max; multiply both by exp(m_old - m_new)"),
    "no division": ({"divide": False}, "you returned the accumulator itself: divide it by the running sum l at the "
                                       "end (the softmax's denominator)"),
    "no scale": ({"scale": False}, "the scores are not scaled: divide query @ key by sqrt(d_k)"),
    "d_k": ({"scale": "d_k"}, "you divided the scores by d_k: divide by its square root, np.sqrt(d_k) (notebook 06)"),
    "sqrt(T)": ({"scale": "sqrt(T)"}, "you divided by the square root of the number of keys T: the scale is "
                                      "1 / sqrt(d_k), with d_k the length of the query (len(query)), whatever the "
                                      "number of keys"),
}


@shows_verdict
def check_online_attention(fn):
    """Grade ``fn(query, keys, values) -> context`` (one query row) against the core."""
    rng = np.random.default_rng(1313)
    cases = []
    for T, d_k, d_v, spread, label in ((5, 4, 3, 1.0, "T = 5, d_k = 4, d_v = 3"),
                                       (12, 8, 2, 3.0, "T = 12 with large scores, so the max grows often")):
        query = rng.standard_normal(d_k) * spread
        keys = np.sort(rng.standard_normal((T, d_k)) * spread, axis=0)  # scores tend to grow along the keys
        cases.append(Case((query, keys, rng.standard_normal((T, d_v))), label=label))

    def reference(query, keys, values):
        return scaled_dot_product_attention(query[None, :], keys, values)[0][0]  # (1, d_v) -> (d_v,)

    return grade_function(fn, reference, cases, what="online_attention_row",
                          wrongs=each_slip(_attention_variant, _ONLINE_SLIPS),
                          shape_hint="the context of one query has one number per value feature: shape (d_v,)",
                          success="the context of scaled_dot_product_attention, in one pass over the keys and "
                                  "without ever storing a weight.")


# Predict, then run
#: Two slips give the same count: the tiles above the diagonal with those on it, and the tiles computed.
_WITH_DIAGONAL = ("that counts the tiles ON the diagonal too (it is also the number of tiles computed, on and below "
                  "the diagonal): they hold the diagonal itself (token i attends to itself) and the keys before it, "
                  "so they are computed; only the tiles strictly above it are skipped")


@never_raises("could not grade this prediction", "give a whole number, for example my_skipped_tiles = 3")
def check_skipped_tiles(prediction, T=8, block_size=2):
    """Grade a prediction of how many tiles a causal mask lets tiled attention skip."""
    tiles = math.isqrt(tile_count(T, block_size))  # tiles per row of tiles
    skipped = tiles * (tiles - 1) // 2  # the tiles strictly above the diagonal of tiles
    return grade_value(prediction, skipped, name="prediction", success=(
        f"{skipped} of the {tiles * tiles} tiles lie entirely above the diagonal: every key in them is in the "
        f"future of every query row. The {tiles} tiles ON the diagonal are computed, half masked."), wrongs=[
        (skipped + tiles, _WITH_DIAGONAL),
        (tiles * tiles - skipped, _WITH_DIAGONAL),  # the same number: t * t - t(t - 1)/2 = t(t - 1)/2 + t
        (T * (T - 1) // 2, "that is the number of masked CELLS; a tile is skipped only if all of its cells are"),
        (tiles * tiles / 2, "half the tiles: but the tiles ON the diagonal are computed (half masked), so fewer "
                            "than half are skipped"),
        (tiles - 1, "that is one row of tiles: count the tiles above the diagonal in every row of tiles"),
    ])


@never_raises("could not grade this prediction", "give a number of GiB, for example my_cache_gib = 1.5")
def check_cache_prediction(prediction_gib, model="Llama 2 7B", T=4096, bytes_per_number=2):
    """Grade a prediction, in GiB, of a published model's KV cache at ``T`` tokens in float16."""
    config = PUBLISHED_CONFIGS[model]
    layers, kv_heads, head_dim = config["num_layers"], config["num_kv_heads"], config["head_dim"]
    size = kv_cache_bytes(layers, kv_heads, head_dim, T, bytes_per_number)
    gib = size / 2**30
    return grade_value(prediction_gib, gib, name="prediction", rtol=0.02, atol=0.0, success=(
        f"{layers} layers x 2 (K and V) x {kv_heads} heads x {head_dim} x {T} tokens x {bytes_per_number} bytes "
        f"= {gib:g} GiB, for ONE sequence."), wrongs=[
        (gib / 2, "you counted the keys or the values, not both: the cache holds 2 arrays per layer"),
        (gib * 2, "float16 is 2 bytes per number, not 4"),
        (gib / layers, "that is one layer; every layer has its own keys and values"),
        (size / 1e9, "that is in GB (10^9 bytes); a GiB is 2^30 bytes: divide the bytes by 2**30"),
        (float(size), "that is the number of bytes: divide it by 2**30 for GiB"),
        (size / 2**20, "that is in MiB: divide by 1024 for GiB"),
    ])


# Exercise 13.1: merge what two processors found about the two halves of a row
@register_solution("merge_softmax_states")
def merge_softmax_states(m_a, l_a, m_b, l_b):
    """The max and sum of a whole row from those of its two halves; a fully masked half is m = -inf, l = 0."""
    m = max(m_a, m_b)  # the max of the whole row: the larger of the two
    if m == -np.inf:
        return m, 0.0  # both halves fully masked: e^(-inf - (-inf)) would be NaN, and nothing is allowed anyway
    return m, l_a * np.exp(m_a - m) + l_b * np.exp(m_b - m)  # each half's sum was relative to its OWN max


def _pair_result(fn):
    """The learner's ``(m, l)`` as a list the grader reads as two numbers; anything else passes through as is."""
    @functools.wraps(fn)  # pair.__wrapped__: the function as the learner wrote it
    def pair(*args):
        result = fn(*args)
        return list(result) if isinstance(result, tuple) else result

    return pair


def _merged(combine):
    """A slip in the merge: ``combine(m_a, l_a, m_b, l_b, m)`` gives the sum, with m the larger max; read as the
    learner's pair is (:func:`_pair_result`), so that the grader compares like with like."""
    def slip(m_a, l_a, m_b, l_b):
        m = max(m_a, m_b)
        return m, combine(m_a, l_a, m_b, l_b, m)

    return _pair_result(slip)


_MERGE_WRONGS = [
    Wrong(_merged(lambda m_a, l_a, m_b, l_b, m: l_a + l_b),
          "you added the two sums as they are: each half summed exp(s - its own max), so the two sums are in "
          "different units. Bring each to the common max m first: which factor turns exp(s - m_a) into "
          "exp(s - m)? (It is 1 for the half that holds the max, and below 1 for the other.)"),
    Wrong(_merged(lambda m_a, l_a, m_b, l_b, m: l_b * np.exp(m_b - m)),
          "you dropped the first term: the merged sum keeps the first half's terms too, l_a * exp(m_a - m), "
          "plus the second half's, l_b * exp(m_b - m)"),
    Wrong(_merged(lambda m_a, l_a, m_b, l_b, m: l_a * np.exp(m_a - m)),
          "you dropped the second term: the merged sum keeps the second half's terms too, l_b * exp(m_b - m), "
          "plus the first half's, l_a * exp(m_a - m)"),
    Wrong(_merged(lambda m_a, l_a, m_b, l_b, m: l_a * np.exp(m - m_a) + l_b * np.exp(m - m_b)),
          "the rescaling factors are upside down: a half's terms were exp(s - m_a); to make them exp(s - m), "
          "multiply by exp(m_a - m), which is <= 1"),
    Wrong(_pair_result(lambda m_a, l_a, m_b, l_b: (min(m_a, m_b), l_a * np.exp(m_a - min(m_a, m_b))
                                                   + l_b * np.exp(m_b - min(m_a, m_b)))),
          "the merged max is the LARGER of the two maxima (np.maximum or max), not the smaller"),
]


def _half_state(scores):
    scores = np.asarray(scores, dtype=float)
    m = scores.max()
    return (m, 0.0) if m == -np.inf else (m, float(np.exp(scores - m).sum()))


@shows_verdict
def check_merge_softmax_states(fn):
    """Grade ``fn(m_a, l_a, m_b, l_b) -> (m, l)``: the max and sum of a whole row from those of its halves."""
    halves = [([1.0, 3.0], [2.0, 5.0, 4.0], "the halves [1, 3] and [2, 5, 4] (the larger max in the second)"),
              ([4.0, 0.5, 2.0], [1.0, 3.5], "the halves [4, 0.5, 2] and [1, 3.5] (the larger max in the first)"),
              ([1000.0, 999.0], [1001.0], "the halves [1000, 999] and [1001] (exp overflows unshifted)"),
              ([2.0, 0.5], [2.0, 1.0], "the halves [2, 0.5] and [2, 1] (the same max)"),
              ([0.5, 1.5], [-np.inf, -np.inf], "the halves [0.5, 1.5] and [-inf, -inf] (the second fully masked)")]
    cases = [Case(_half_state(a) + _half_state(b), label=label) for a, b, label in halves]

    def reference(*state):
        return list(merge_softmax_states(*state))

    common = dict(what="merge_softmax_states", wrongs=_MERGE_WRONGS,
                  shape_hint="return the pair (m, l): the max of the whole row and its sum, two numbers")
    verdict = grade_function(_pair_result(fn), reference, cases, **common)
    if not verdict.passed:
        return verdict
    both_masked = [Case((-np.inf, 0.0, -np.inf, 0.0), label="two fully masked halves (m = -inf, l = 0 each)")]
    return grade_function(_pair_result(fn), reference, both_masked, **common, hints={"nan": (
        "when both maxima are -inf, exp(m_a - m) is exp(-inf - (-inf)) = exp(NaN): when the merged max is "
        "-inf, return (-inf, 0.0), the state of a row with nothing allowed")},
        success="each half's sum brought to the common max, then added: the max and sum of the whole row, "
                "whichever half held the max.")


# Exercise 13.2: one query against keys split among processors (a different tiling from section 3's)
@register_solution("attention_by_splits")
def attention_by_splits(query, keys, values, num_splits):
    """The context of one query (d_k,) over keys (T, d_k) and values (T, d_v): each split of the keys finds its own
    max, sum and weighted values (as separate processors would), then the partial results are merged."""
    partials = []
    for split_keys, split_values in zip(np.array_split(keys, num_splits), np.array_split(values, num_splits)):
        scores = split_keys @ query / np.sqrt(len(query))  # (T_s, d_k) @ (d_k,) -> (T_s,)
        m_s = scores.max()  # this split's own max
        terms = np.exp(scores - m_s)  # (T_s,)
        partials.append((m_s, terms.sum(), terms @ split_values))  # (T_s,) @ (T_s, d_v) -> (d_v,)
    m = max(m_s for m_s, _, _ in partials)  # the max over every key
    l = sum(l_s * np.exp(m_s - m) for m_s, l_s, _ in partials)  # each split brought to the common max
    acc = sum(acc_s * np.exp(m_s - m) for m_s, _, acc_s in partials)  # (d_v,)
    return acc / l


def _split_partials(query, keys, values, num_splits, divisor=None):
    divisor = np.sqrt(len(query)) if divisor is None else divisor
    partials = []
    for split_keys, split_values in zip(np.array_split(keys, num_splits), np.array_split(values, num_splits)):
        scores = split_keys @ query / divisor
        terms = np.exp(scores - scores.max())
        partials.append((scores.max(), terms.sum(), terms @ split_values))
    return partials


def _split_slip(merge):
    """A slip in the merge of the splits: ``merge(partials)`` gives the context."""
    def slip(query, keys, values, num_splits):
        return merge(_split_partials(query, keys, values, num_splits))

    return slip


def _split_scale_slip(divisor_of):
    def slip(query, keys, values, num_splits):
        partials = _split_partials(query, keys, values, num_splits, divisor=divisor_of(query, keys))
        m = max(p[0] for p in partials)
        return sum(a * np.exp(s - m) for s, _, a in partials) / sum(l * np.exp(s - m) for s, l, _ in partials)

    return slip


def _rescaled(partials, rescale_sum=True, rescale_acc=True):
    m = max(p[0] for p in partials)
    l = sum(l_s * (np.exp(m_s - m) if rescale_sum else 1.0) for m_s, l_s, _ in partials)
    acc = sum(acc_s * (np.exp(m_s - m) if rescale_acc else 1.0) for m_s, _, acc_s in partials)
    return acc, l


_SPLIT_WRONGS = [
    Wrong(_split_slip(lambda partials: np.mean([acc / l for _, l, acc in partials], axis=0)),
          "you averaged the splits' contexts: each split's context acc_s / l_s is normalised by its own sum, and "
          "a split whose scores are larger deserves more weight. Merge the sums and the accumulators first (each "
          "times exp(m_s - m)), then divide once"),
    Wrong(_split_slip(lambda partials: np.divide(*_rescaled(partials, rescale_sum=False, rescale_acc=False))),
          "neither the sums nor the accumulators are brought to the common max: each split summed exp(s - its own "
          "max); multiply each split's l_s and acc_s by exp(m_s - m) before adding them"),
    Wrong(_split_slip(lambda partials: np.divide(*_rescaled(partials, rescale_acc=False))),
          "the accumulators are not brought to the common max (the sums are): multiply each split's acc_s by "
          "exp(m_s - m) too, exactly like its sum"),
    Wrong(_split_slip(lambda partials: np.divide(*_rescaled(partials, rescale_sum=False))),
          "the sums are not brought to the common max (the accumulators are): multiply each split's l_s by "
          "exp(m_s - m) too, exactly like its accumulator"),
    Wrong(_split_slip(lambda partials: _rescaled(partials)[0]),
          "you returned the merged accumulator itself: divide it by the merged sum l at the end (the softmax's "
          "denominator)"),
    Wrong(_split_slip(lambda partials: max(partials, key=lambda p: p[0])[2] / max(partials, key=lambda p: p[0])[1]),
          "you kept only the split with the largest max: the other splits' keys have smaller weights, not zero "
          "weights; merge every split"),
    Wrong(_split_slip(lambda partials: partials[-1][2] / partials[-1][1]),
          "you kept only the last split: merge every split's sum and accumulator"),
    Wrong(_split_scale_slip(lambda query, keys: 1.0), "the scores are not scaled: divide query @ key by sqrt(d_k)"),
    Wrong(_split_scale_slip(lambda query, keys: len(query)),
          "you divided the scores by d_k: divide by its square root, np.sqrt(d_k) (notebook 06)"),
]


@shows_verdict
def check_attention_by_splits(fn):
    """Grade ``fn(query, keys, values, num_splits) -> context`` (one query row) against the core."""
    rng = np.random.default_rng(1313)
    cases = []
    for T, d_k, d_v, splits, spread, label in (
            (6, 4, 3, 2, 1.5, "T = 6 keys in 2 splits, d_k = 4, d_v = 3"),
            (7, 4, 2, 3, 2.0, "T = 7 keys in 3 splits of 3, 2 and 2 (np.array_split)"),
            (5, 8, 3, 5, 1.0, "T = 5 keys in 5 splits of one key each"),
            (4, 4, 2, 1, 1.0, "T = 4 keys in one split")):
        query = rng.standard_normal(d_k) * spread
        keys, values = rng.standard_normal((T, d_k)), rng.standard_normal((T, d_v))
        if np.argmax(keys @ query) >= T - T // splits:  # put the largest score in the first split, not the last,
            keys, values = keys[::-1], values[::-1]  # so that "only the last split" and "only the largest max" differ
        cases.append(Case((query, keys, values, splits), label=label))

    def reference(query, keys, values, num_splits):
        return scaled_dot_product_attention(query[None, :], keys, values)[0][0]  # (1, d_v) -> (d_v,)

    common = dict(what="attention_by_splits", wrongs=_SPLIT_WRONGS,
                  shape_hint="the context of one query has one number per value feature: shape (d_v,)")
    verdict = grade_function(fn, reference, cases, **common)
    if not verdict.passed:
        return verdict
    # Scores in the thousands (notebook 03): in the first split they span 2000 and the two splits' maxima are 1200
    # apart, so a shift by a split's minimum and a merge at the smaller maximum both overflow exp(); the two largest
    # scores, 1 apart, share the weight.
    keys = np.column_stack([[1.5, 1.499, -0.5, 0.3, -0.2, 0.0], rng.standard_normal((6, 3))])
    large = [Case((np.array([2000.0, 0.0, 0.0, 0.0]), keys, rng.standard_normal((6, 3)), 2),
                  label="scores from -1000 to 1500 in 2 splits, whose maxima are 1200 apart")]
    return grade_function(fn, reference, large, **common, hints={"nan": (
        "exp() overflowed: with scores in the thousands, exp(s - m) stays finite only if m is the MAXIMUM (every "
        "exponent <= 0). Shift each split's scores by its own maximum, scores.max(), and merge at the largest of "
        "the splits' maxima")}, success="the context of scaled_dot_product_attention, from splits that never saw "
                                        "each other's keys: each found its own max, sum and weighted values, merged "
                                        "at the end.")
