"""Checkers for notebook 16 (a real small LLM: one Q4_1 block, shared key/value heads, an induction score, and the
predictions before each measurement)."""

from __future__ import annotations

import numpy as np

from ..gguf_file import dequantize_q4_1
from ..kv_cache import kv_cache_bytes, repeat_kv_heads
from ..llm import SMOLLM2_CONFIG
from ..llm_measures import induction_score
from ._grader import Case, Wrong, each_slip, grade_function, grade_value, never_raises, register_solution, shows_verdict
from ._predict import grade_measurement, grade_named_choice

__all__ = ["check_q4_1_block", "check_shared_kv_heads", "check_induction_score", "check_late_sink_prediction",
           "check_induction_layers_prediction", "check_cache_size_prediction", "q4_1_cases"]


# Exercise 16.1: one Q4_1 block by hand
@register_solution("q4_1_block")
def q4_1_block(block):
    """The 32 numbers of one Q4_1 block of 20 bytes (uint8): w = d * q + m."""
    d = block[0:2].view(np.float16).astype(np.float32)[0]  # the scale: 2 bytes, a float16
    m = block[2:4].view(np.float16).astype(np.float32)[0]  # the minimum: 2 bytes, a float16
    codes = block[4:20]  # 16 bytes, two 4-bit codes each
    q = np.concatenate([codes & 0x0F, codes >> 4])  # numbers 0..15: the low halves; 16..31: the high halves
    return d * q + m


def _q4_1_variant(order="halves", plus_m=True, swap=False, offset=0, as_int=False, high="shifted", low="masked"):
    def variant(block):
        block = np.asarray(block, dtype=np.uint8)
        d, m = (block[0:2].view(np.uint16) if as_int else block[0:2].view(np.float16)).astype(np.float32)[0], \
            block[2:4].view(np.float16).astype(np.float32)[0]
        if swap:
            d, m = m, d
        codes = block[4:20]
        lows = codes & 0x0F if low == "masked" else codes  # "whole": the byte, high bits and all
        highs = codes >> 4 if high == "shifted" else codes & 0xF0  # "masked": the high bits kept where they are
        if order == "halves":
            q = np.concatenate([lows, highs])
        elif order == "high_first":
            q = np.concatenate([highs, lows])
        else:  # interleaved: low, high of byte 0, then of byte 1...
            q = np.stack([lows, highs], axis=1).reshape(-1)
        return d * (q.astype(np.float32) - offset) + (m if plus_m else 0)
    return variant


def q4_1_cases():
    """Three blocks: two from random bytes with chosen scales and minima, one with codes 0..15 in order."""
    rng = np.random.default_rng(1501)
    blocks = []
    for d, m in ((0.25, -1.5), (0.0123, 0.05)):
        block = rng.integers(0, 256, 20, dtype=np.uint8)
        block[0:4] = np.array([d, m], dtype=np.float16).view(np.uint8)
        blocks.append(block)
    ordered = np.concatenate([np.array([0.5, -2.0], dtype=np.float16).view(np.uint8),
                              (np.arange(16) + 16 * (15 - np.arange(16))).astype(np.uint8)])
    return [*blocks, ordered]


#: The slips of exercise 16.1, each with its hint (``each_slip``).
_Q4_1_SLIPS = {
    "interleaved": ({"order": "interleaved"},
                    "your codes are interleaved (low half, high half of byte 0, then of byte 1...): Q4_1 puts the 16 "
                    "LOW halves first (numbers 0..15), then the 16 HIGH halves (numbers 16..31)"),
    "high first": ({"order": "high_first"},
                   "the halves are the wrong way round: numbers 0..15 are the LOW four bits (byte & 0x0F), numbers "
                   "16..31 the HIGH four bits (byte >> 4)"),
    "no minimum": ({"plus_m": False}, "the minimum m is missing: each number is d * q + m"),
    "swapped": ({"swap": True}, "d and m are swapped: the first two bytes are the scale d, the next two the minimum m"),
    "Q4_0": ({"offset": 8, "plus_m": False},
             "d * (q - 8) is Q4_0, the format without a minimum; Q4_1 stores m and computes d * q + m"),
    "d as a whole number": ({"as_int": True}, "d was read as a 16-bit whole number: its two bytes are a float16, "
                                              "block[0:2].view(np.float16)"),
    "high halves not shifted": ({"high": "masked"},
                                "your high halves are masked but not shifted: byte & 0xF0 keeps the four high bits "
                                "where they are, 16 times their value (0, 16, ..., 240); shift them down to 0..15 "
                                "with byte >> 4"),
    "low halves whole": ({"low": "whole"},
                         "your low halves are the whole byte: byte & 0x0F keeps only the four low bits (0..15)"),
}


@shows_verdict
def check_q4_1_block(fn):
    """Grade ``fn(block) -> (32,)`` on 20-byte Q4_1 blocks, against :func:`attn_helpers.gguf_file.dequantize_q4_1`."""
    blocks = q4_1_cases()
    cases = [Case((blocks[0],), label="a block with d = 0.25, m = -1.5"),
             Case((blocks[1],), label="a block with d = 0.0123, m = 0.05"),
             Case((blocks[2],), label="a block whose low halves count 0..15 and high halves 15..0")]
    return grade_function(fn, dequantize_q4_1, cases, what="q4_1_block", wrongs=each_slip(_q4_1_variant, _Q4_1_SLIPS),
                          rtol=1e-5, atol=1e-6,
                          shape_hint="one block of 20 bytes holds 32 numbers: return an array of shape (32,)",
                          success="scale, minimum and 32 codes of 4 bits, low halves first: exactly what the "
                                  "loader does for every block of the file.")


# Exercise 16.2: 3 key/value heads shared by 9 query heads
@register_solution("share_kv_heads")
def share_kv_heads(keys, num_heads):
    """(h_kv, T, d_h) -> (h, T, d_h): query head i uses key/value head i // (h / h_kv)."""
    group = num_heads // keys.shape[0]  # query heads per key/value head
    return np.repeat(keys, group, axis=0)  # each key/value head copied group times, in place


@shows_verdict
def check_shared_kv_heads(fn):
    """Grade ``fn(keys (h_kv, T, d_h), num_heads) -> (num_heads, T, d_h)`` against notebook 13's repeat_kv_heads."""
    rng = np.random.default_rng(1502)
    cases = [Case((rng.standard_normal((3, 4, 2)), 9), label="3 key/value heads, 9 query heads (SmolLM2's groups)"),
             Case((rng.standard_normal((2, 3, 5)), 4), label="2 key/value heads, 4 query heads"),
             Case((rng.standard_normal((2, 1, 3)), 2), label="as many key/value heads as query heads")]
    wrongs = [
        Wrong(lambda keys, h: np.tile(keys, (h // keys.shape[0], 1, 1)),
              "np.tile repeats the whole stack (heads 0, 1, 2, 0, 1, 2, ...): query head i must use key/value head "
              "i // 3, so its neighbours share one head (0, 0, 0, 1, 1, 1, ...). Use np.repeat(..., axis=0)"),
        Wrong(lambda keys, h: np.repeat(keys, h // keys.shape[0], axis=1),
              "you repeated along the positions (axis 1): the copies belong on the heads' axis, axis 0"),
        Wrong(lambda keys, h: np.repeat(keys, h, axis=0),
              "each key/value head is repeated num_heads times: it serves num_heads / h_kv query heads"),
    ]
    return grade_function(fn, repeat_kv_heads, cases, what="share_kv_heads", wrongs=wrongs,
                          shape_hint="return one (T, d_h) array per QUERY head: shape (num_heads, T, d_h)",
                          success="each key/value head serves the query heads of its group: what "
                                  "grouped_query_attention does before it attends.")


# Exercise 16.3: an induction score
@register_solution("induction_score")
def my_induction_score(weights, period):
    """Mean weight of the queries period .. 2 period - 1 on the key just after the earlier copy of their token."""
    scores = [weights[i, i - period + 1] for i in range(period, 2 * period)]
    return np.mean(scores)


def _score_variant(offset=1, rows="repeat", transposed=False):
    """The score with one slip: the key ``i - period + offset`` (``offset=None``: the previous token, ``i - 1``), over
    the queries of the repeat (``rows``: ``"all"`` every query that has such a key; ``"one more"``, ``"one late"``:
    the repeat's range off by one at its end or its start; ``"shifted early"``: the whole range one query early),
    read as ``weights[j, i]`` if ``transposed``."""
    def variant(weights, period):
        queries = {"repeat": range(period, 2 * period), "all": range(len(weights)),
                   "one more": range(period, min(2 * period + 1, len(weights))),
                   "one late": range(period + 1, 2 * period),
                   "shifted early": range(period - 1, 2 * period - 1)}[rows]
        keys = [i - 1 if offset is None else i - period + offset for i in queries]
        read = (lambda i, j: weights[j, i]) if transposed else (lambda i, j: weights[i, j])
        return np.mean([read(i, j) for i, j in zip(queries, keys) if 0 <= j <= i])
    return variant


@shows_verdict
def check_induction_score(fn):
    """Grade ``fn(weights (T, T), period) -> score`` against :func:`attn_helpers.llm_measures.induction_score`."""
    rng = np.random.default_rng(1503)
    cases = []
    for T, period in ((8, 4), (11, 5)):  # the second has one token after the repeat
        raw = np.tril(rng.random((T, T)) + 0.05)
        cases.append(Case((raw / raw.sum(axis=1, keepdims=True), period),
                          label=f"random causal weights, T = {T}, period {period}"))
    wrongs = [
        Wrong(_score_variant(offset=0), "that is the weight on the earlier copy of the SAME token (a duplicate-token "
                                        "head); an induction head looks at the token AFTER it, key i - period + 1"),
        Wrong(_score_variant(offset=None), "that is the weight on the previous token, key i - 1 (a previous-token "
                                           "head); an induction head looks at key i - period + 1"),
        Wrong(_score_variant(offset=2), "one key too far: the token after the earlier copy is i - period + 1"),
        Wrong(_score_variant(rows="all"),
              "you averaged over every query; only the repeat (queries period .. 2 period - 1) has an earlier copy"),
        Wrong(lambda w, p: np.sum([w[i, i - p + 1] for i in range(p, 2 * p)]),
              "that is the sum over the queries: divide by their number (period) for the mean"),
        Wrong(_score_variant(transposed=True),
              "you read weights[j, i], the transpose: row i holds what QUERY i gives each key, so the weight of query "
              "i on key j is weights[i, j] (above the diagonal a causal row is 0)"),
        Wrong(_score_variant(rows="one more"),
              "one query too many: the repeat is queries period .. 2 period - 1, which range(period, 2 * period) "
              "gives (its end is left out)"),
        Wrong(_score_variant(rows="one late"),
              "your queries start one too late: the repeat's first query is position period (its earlier copy is "
              "position 0), so range(period, 2 * period)"),
        Wrong(_score_variant(rows="shifted early"),
              "your queries are one position early: the repeat is queries period .. 2 period - 1, "
              "range(period, 2 * period), not period - 1 .. 2 period - 2"),
    ]
    return grade_function(fn, induction_score, cases, what="induction score", wrongs=wrongs,
                          shape_hint="return one number, the mean weight",
                          success="the mean weight on the token that followed the earlier copy: the score the "
                                  "notebook computed for all 270 heads.")


# Predict, then run
@never_raises("could not grade this prediction", "give a number between 0 and 1, for example my_late_sink = 0.3")
def check_late_sink_prediction(prediction):
    """Grade a prediction (within 0.15) of the mean weight the heads of layers 15..29 put on the first token."""
    from ..llm import load_smollm2
    from ..llm_measures import sink_study

    with np.errstate(all="ignore"):  # the measurement, whatever np.seterr the learner set (cached after once)
        truth = float(sink_study(load_smollm2())[:, 15:].mean())  # (prompts, layers 15..29, heads) -> one number
    return grade_measurement(prediction, truth, atol=0.15, success=(
        f"measured {truth:.2f}: in the second half of the model, the typical head puts most of its weight on the "
        "first token, whatever the prompt."), hint=(
        "For scale: a head that spread its weight evenly would give the first token 1/(i+1) at query i; the next "
        "cells show it layer by layer"))


_THIRDS = {"a": "the first third (layers 0-9)", "b": "the middle third (layers 10-19)",
           "c": "the last third (layers 20-29)"}


@never_raises("could not grade this prediction", 'answer one letter in quotes: "a", "b" or "c"')
def check_induction_layers_prediction(prediction):
    """Grade a prediction of which third of the 30 layers holds the strongest induction head."""
    from ..llm import load_smollm2
    from ..llm_measures import induction_study

    with np.errstate(all="ignore"):
        layer = induction_study(load_smollm2())["top"][0][0]
    truth = "abc"[min(layer // 10, 2)]
    early = ("an induction head needs to know, at each earlier position, which token came BEFORE it: an earlier "
             "layer's previous-token head writes that first. It cannot sit in the very first layers")
    return grade_named_choice(prediction, truth, _THIRDS, wrongs={"a": early}, hint=(
        "run the test and look at the map of scores: the strongest heads share a few layers"), success=(
        f"the strongest induction head is in layer {layer}, {_THIRDS[truth]}: after the previous-token heads that it "
        "reads."))


@never_raises("could not grade this prediction", "give a number of MiB, for example my_cache_mib = 100")
def check_cache_size_prediction(prediction_mib, T=1000):
    """Grade a prediction, in MiB, of SmolLM2's KV cache for ``T`` tokens in float32 (as the series stores it)."""
    c = SMOLLM2_CONFIG
    size = kv_cache_bytes(c["num_layers"], c["num_kv_heads"], c["head_dim"], T, 4)
    mib = size / 2**20
    return grade_value(prediction_mib, mib, name="prediction", rtol=0.02, atol=0.0, success=(
        f"{c['num_layers']} layers x 2 (keys and values) x {c['num_kv_heads']} key/value heads x {c['head_dim']} x "
        f"{T} tokens x 4 bytes = {mib:.1f} MiB."), wrongs=[
        (mib * 3, "that counts 9 heads: only the 3 key/value heads are cached, each shared by 3 query heads"),
        (mib / 2, "half of it: the cache keeps the keys AND the values, 4 bytes each (float32; float16 would halve "
                  "it)"),
        (mib / c["num_layers"], "that is one layer; each of the 30 blocks keeps its own cache"),
        (size / 1e6, "that is in MB (10^6 bytes); a MiB is 2^20 bytes"),
        (float(size), "that is in bytes: divide by 2**20 for MiB"),
    ])
