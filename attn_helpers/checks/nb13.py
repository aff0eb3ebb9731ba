"""Checkers for notebook 13 (online softmax, tiled attention, the KV cache)."""

from __future__ import annotations

import math

import numpy as np

from ..core import scaled_dot_product_attention, softmax
from ..efficient import tile_count
from ..kv_cache import PUBLISHED_CONFIGS, kv_cache_bytes
from ._grader import Case, Wrong, grade_function, grade_value, never_raises, register_solution, shows_verdict

__all__ = ["check_online_softmax", "check_online_attention", "check_skipped_tiles", "check_cache_prediction"]


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

    wrongs = [
        Wrong(_attention_variant(rescale_acc=False),
              "the accumulator is not rescaled: when the max grows, the weighted values summed so far were "
              "weighted by exp(s - m_old). Multiply acc by exp(m_old - m_new) too, exactly like the sum"),
        Wrong(_attention_variant(rescale_sum=False),
              "the running sum is not rescaled when the max grows (the accumulator is): multiply l by "
              "exp(m_old - m_new) before adding the new term"),
        Wrong(_attention_variant(rescale_sum=False, rescale_acc=False),
              "neither the sum nor the accumulator is rescaled when the max grows: both hold terms relative to "
              "the old max; multiply both by exp(m_old - m_new)"),
        Wrong(_attention_variant(divide=False),
              "you returned the accumulator itself: divide it by the running sum l at the end (the softmax's "
              "denominator)"),
        Wrong(_attention_variant(scale=False),
              "the scores are not scaled: divide query @ key by sqrt(d_k)"),
        Wrong(_attention_variant(scale="d_k"),
              "you divided the scores by d_k: divide by its square root, np.sqrt(d_k) (notebook 06)"),
        Wrong(_attention_variant(scale="sqrt(T)"),
              "you divided by the square root of the number of keys T: the scale is 1 / sqrt(d_k), with d_k the "
              "length of the query (len(query)), whatever the number of keys"),
    ]
    return grade_function(fn, reference, cases, what="online_attention_row", wrongs=wrongs,
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
