"""Checkers for notebook 17 (attention in today's models: a rolling buffer's slot, the sink softmax, absorbing W_uk,
one step of linear attention, a top-k mask, and the predictions before each measurement)."""

from __future__ import annotations

import numpy as np

from ..core import softmax
from ..linear_attention import RECALL_METHODS, recall_accuracy
from ..published import ATTENTION_VARIANTS
from ..sparse import top_k_mask
from ._grader import Case, Wrong, grade_function, grade_value, never_raises, register_solution, shows_verdict
from ._predict import grade_measurement, grade_named_choice

__all__ = ["check_rolling_slot", "check_sink_weights", "check_absorbed_query", "check_linear_step",
           "check_top_k_mask", "check_window_loss_prediction", "check_latent_cache_prediction",
           "check_recall_prediction", "RECALL_CHOICES"]


# Exercise 17.1: where a rolling buffer writes token t
@register_solution("rolling_slot")
def rolling_slot(t, window, sinks):
    """The slot of token t in a cache of sinks + window slots: a sink keeps its own, the others roll."""
    if t < sinks:
        return t
    return sinks + (t - sinks) % window


def _slot_reference(t, window, sinks):
    return t if t < sinks else sinks + (t - sinks) % window


def slot_cases():
    """Tokens before, at and after the buffer wraps, with no sink, one, and four."""
    return [Case((t, window, sinks), label=f"token {t}, window {window}, {sinks} sink{'s' * (sinks != 1)}")
            for window, sinks in ((4, 0), (3, 1), (5, 4)) for t in (0, 1, sinks, window - 1, window, sinks + window,
                                                                    sinks + window + 2, 3 * window + sinks + 1)]


@shows_verdict
def check_rolling_slot(fn):
    """Grade ``fn(t, window, sinks) -> slot``: the slot of :func:`attn_helpers.windows.rolling_attention`'s buffer."""
    wrongs = [
        Wrong(lambda t, w, s: t % w,
              "t % window forgets the sinks: the first `sinks` slots are theirs for good, so the others roll "
              "through slots sinks .. sinks + window - 1: sinks + (t - sinks) % window"),
        Wrong(lambda t, w, s: t if t < s else (t - s) % w,
              "the rolling slots start after the sinks' slots: add sinks, or token `sinks` overwrites the first sink"),
        Wrong(lambda t, w, s: t if t < s else s + t % w,
              "count the rolling tokens from the first one after the sinks: (t - sinks) % window, then + sinks"),
        Wrong(lambda t, w, s: t if t < s else s + (t - s) % (w + s),
              "the rolling part has `window` slots, not window + sinks: % window"),
        Wrong(lambda t, w, s: t if t < s else s + (t - s) % (w - 1),
              "the rolling part has `window` slots (the query's own key is one of them): % window, not window - 1"),
    ]
    return grade_function(fn, _slot_reference, slot_cases(), what="rolling_slot", wrongs=wrongs, rtol=0, atol=0,
                          shape_hint="return one whole number, the slot",
                          success="a sink keeps its slot; every other token overwrites the oldest of the window's "
                                  "slots: the cache never grows past sinks + window.")


# Exercise 17.2: the sink softmax
@register_solution("sink_weights")
def sink_weights(scores, sink_logit):
    """Softmax over the keys and one extra logit, the sink; the sink's weight is dropped."""
    column = np.full((*scores.shape[:-1], 1), sink_logit)  # (T_q, 1): the same logit for every query
    weights = softmax(np.concatenate([scores, column], axis=-1))  # (T_q, T_k + 1)
    return weights[..., :-1]  # the keys' weights: each row sums to less than 1


def _sink_reference(scores, sink_logit):
    exps = np.exp(scores - np.maximum(scores.max(axis=-1, keepdims=True), sink_logit))
    return exps / (exps.sum(axis=-1, keepdims=True) + np.exp(sink_logit - np.maximum(
        scores.max(axis=-1, keepdims=True), sink_logit)))


def sink_cases():
    rng = np.random.default_rng(1602)
    return [Case((rng.standard_normal((3, 4)), 0.5), label="3 queries, 4 keys, sink logit 0.5"),
            Case((rng.standard_normal((2, 5)) * 3, -1.0), label="2 queries, 5 keys, sink logit -1"),
            Case((np.array([[0.0, 1.0, 2.0]]), 4.0), label="one query whose sink logit is above every score"),
            Case((rng.standard_normal((2, 3, 4)), 1.0), label="2 heads of 3 queries and 4 keys, sink logit 1")]


@shows_verdict
def check_sink_weights(fn):
    """Grade ``fn(scores (..., T_q, T_k), sink_logit) -> weights (..., T_q, T_k)`` (gpt-oss's sink softmax)."""
    wrongs = [
        Wrong(lambda s, b: softmax(s), "these rows sum to 1: the sink logit is missing (adding it to every score "
                                       "changes nothing: a softmax ignores a shift). Append it as one more column "
                                       "before the softmax, then drop that column"),
        Wrong(lambda s, b: softmax(np.concatenate([s, np.full((*s.shape[:-1], 1), b)], axis=-1)),
              "you kept the sink's column: drop it (weights[..., :-1]); its weight goes to no value"),
        Wrong(lambda s, b: softmax(np.concatenate([np.full((*s.shape[:-1], 1), b), s], axis=-1))[..., :-1],
              "the sink's column went first, and you dropped the last key instead of it: drop the column you added"),
        Wrong(lambda s, b: np.exp(s) / (np.exp(s).sum(axis=-1, keepdims=True) + b),
              "the sink adds exp(sink_logit) to the denominator, not sink_logit itself"),
    ]
    return grade_function(fn, _sink_reference, sink_cases(), what="sink_weights", wrongs=wrongs, rtol=1e-6,
                          atol=1e-9, shape_hint="return the keys' weights only: the shape of scores",
                          success="one more logit in the softmax, its weight thrown away: a head may now give "
                                  "its keys less than 1 in total, and the first token need not be its parking place.")


# Exercise 17.3: absorb W_uk into the query
@register_solution("absorbed_query")
def absorbed_query(query, W_uk):
    """(h, d_h) queries and (h, d_c, d_h) up-projections -> (h, d_c): each head's query in latent space."""
    return np.einsum("hcd,hd->hc", W_uk, query)  # per head i: W_uk[i] (d_c, d_h) @ q_i (d_h,) = q_i W_uk[i]^T


def _absorbed_reference(query, W_uk):
    return np.stack([W_uk[i] @ query[i] for i in range(len(query))])  # (d_c, d_h) @ (d_h,) per head


def absorbed_cases():
    rng = np.random.default_rng(1603)
    square = Case((rng.standard_normal((2, 3)), rng.standard_normal((2, 3, 3))), label="2 heads, d_h = d_c = 3")
    return [square,
            Case((rng.standard_normal((2, 3)), rng.standard_normal((2, 5, 3))), label="2 heads, d_h = 3, d_c = 5"),
            Case((rng.standard_normal((3, 4)), rng.standard_normal((3, 2, 4))), label="3 heads, d_h = 4, d_c = 2")]


@shows_verdict
def check_absorbed_query(fn):
    """Grade ``fn(query (h, d_h), W_uk (h, d_c, d_h)) -> (h, d_c)``: q W_uk^T per head."""
    wrongs = [
        Wrong(lambda q, W: np.einsum("hd,hdc->hc", q, W),
              "W_uk is (h, d_c, d_h): multiply by its TRANSPOSE, q @ W_uk[i].T, since k = c @ W_uk[i] and q . (c "
              "W_uk) = (q W_uk^T) . c"),
        Wrong(lambda q, W: np.einsum("hd,gcd->hc", q, W),
              "each head has its own up-projection: head i's query meets W_uk[i] only, not the sum over heads"),
        Wrong(lambda q, W: np.einsum("hd,hcd->hc", q, W) / np.sqrt(q.shape[-1]),
              "the 1/sqrt(d_h) belongs to the scores, once, after the dot product with the latent: leave it out here"),
    ]
    return grade_function(fn, _absorbed_reference, absorbed_cases(), what="absorbed_query", wrongs=wrongs,
                          shape_hint="one vector of width d_c per head: shape (h, d_c)",
                          success="(q W_uk^T) . c = q . (c W_uk): the query meets the cached latent directly, and "
                                  "no key is ever built.")


# Exercise 17.4: one step of linear attention
@register_solution("linear_step")
def linear_step(state, key, value):
    """S_t = S_{t-1} + k_t^T v_t: (d_k, d_v) state, (d_k,) key, (d_v,) value."""
    return state + np.outer(key, value)  # (d_k, 1) (1, d_v) -> (d_k, d_v)


def step_cases():
    rng = np.random.default_rng(1604)
    return [Case((rng.standard_normal((2, 2)), rng.standard_normal(2), rng.standard_normal(2)),
                 label="d_k = d_v = 2"),
            Case((rng.standard_normal((3, 2)), rng.standard_normal(3), rng.standard_normal(2)),
                 label="d_k = 3, d_v = 2"),
            Case((np.zeros((2, 4)), np.array([1.0, 0.0]), np.arange(4.0)), label="an empty state, key e_0")]


@shows_verdict
def check_linear_step(fn):
    """Grade ``fn(state (d_k, d_v), key (d_k,), value (d_v,)) -> new state (d_k, d_v)``."""
    wrongs = [
        Wrong(lambda S, k, v: S + np.outer(v, k),
              "np.outer(value, key) is v^T k, the transpose: the state's rows belong to the key's features, "
              "np.outer(key, value)"),
        Wrong(lambda S, k, v: np.outer(k, v), "the new pair replaced the state: ADD it, S + k^T v (linear attention "
                                              "keeps the sum of every pair so far)"),
        Wrong(lambda S, k, v: S + np.outer(k, v - k @ S),
              "that is the delta rule (it writes only the error v - k S): plain linear attention adds the whole "
              "k^T v"),
    ]
    return grade_function(fn, linear_step, step_cases(), what="linear_step", wrongs=wrongs,
                          shape_hint="the state keeps its shape (d_k, d_v)",
                          success="one outer product added per token: the state is (d_k, d_v) after 10 tokens or "
                                  "10 million, and q_t S_t reads the output.")


# Exercise 17.5: a top-k mask
@register_solution("top_k_keep")
def top_k_keep(scores, k):
    """Boolean (T_q, T_k): True on the k largest scores of each row."""
    order = np.argsort(scores, axis=-1)  # each row's keys, lowest score first
    keep = np.full(scores.shape, False)  # nothing kept yet
    np.put_along_axis(keep, order[..., -k:], True, axis=-1)  # the last k: the largest
    return keep


def top_k_cases():
    rng = np.random.default_rng(1605)
    return [Case((rng.standard_normal((3, 6)), 2), label="3 queries, 6 keys, k = 2"),
            Case((rng.standard_normal((4, 5)), 3), label="4 queries, 5 keys, k = 3"),
            Case((rng.standard_normal((2, 4)), 1), label="k = 1: each query's best key only"),
            Case((rng.standard_normal((2, 3, 5)), 2), label="2 heads of 3 queries and 5 keys, k = 2")]


@shows_verdict
def check_top_k_mask(fn):
    """Grade ``fn(scores (..., T_q, T_k), k) -> keep`` against :func:`~attn_helpers.sparse.top_k_mask`."""
    wrongs = [
        Wrong(lambda s, k: top_k_mask(-s, k),
              "these are the k SMALLEST scores: argsort sorts upwards, so the largest are its last k "
              "(order[..., -k:])"),
        Wrong(lambda s, k: top_k_mask(s, k + 1), "one key too many: keep exactly k per row"),
        Wrong(lambda s, k: np.swapaxes(top_k_mask(np.swapaxes(s, -1, -2), k), -1, -2),
              "you chose along the queries (axis 0): each QUERY picks its keys, so sort along the last axis"),
        Wrong(lambda s, k: top_k_mask(s, k - 1),
              "one key too few: keep exactly k per row"),
    ]
    return grade_function(fn, lambda s, k: top_k_mask(s, k), top_k_cases(), what="top_k_keep", wrongs=wrongs,
                          shape_hint="one True/False per score: the shape of scores",
                          success="k keys per query: the attention then runs on those alone, k per row instead of T.")


# Predict, then run
@never_raises("could not grade this prediction", "give a number of nats, for example my_window_loss = 3.5")
def check_window_loss_prediction(prediction):
    """Grade a prediction (within 0.3 nats) of the 128-token window's loss over positions 256-1,023 (shipped run)."""
    from ..windows import load_streaming_runs

    runs = load_streaming_runs()
    losses = runs["losses"][:, int(runs["from_position"]):].mean(axis=1)  # (4,): one mean per run
    truth, full = float(losses[1]), float(losses[0])
    return grade_measurement(prediction, truth, atol=0.3, success=(
        f"measured {truth:.2f} nats against {full:.2f} with full attention: perplexity {np.exp(truth):.0f} instead "
        f"of {np.exp(full):.0f}. The window still holds the last 128 tokens, yet the model is lost."), hint=(
        f"Full attention gives {full:.2f}; the 128 tokens the window keeps are most of what a next word depends "
        "on, but not what the heads park on"))


@never_raises("could not grade this prediction", "give a whole number, for example my_latent_numbers = 1000")
def check_latent_cache_prediction(prediction):
    """Grade a prediction of DeepSeek-V3's cache per token and layer, in numbers: d_c + the decoupled RoPE key."""
    c = ATTENTION_VARIANTS["DeepSeek-V3"]
    truth = c["kv_lora_rank"] + c["qk_rope_head_dim"]
    heads = c["num_heads"] * (c["qk_nope_head_dim"] + c["qk_rope_head_dim"] + c["v_head_dim"])
    return grade_value(prediction, truth, name="prediction", rtol=0.0, atol=0.5, success=(
        f"{c['kv_lora_rank']} latent numbers + {c['qk_rope_head_dim']} of the shared RoPE key = {truth} per token "
        f"and layer, against {heads:,} for 128 heads' keys and values: {heads / truth:.0f} times less."), wrongs=[
        (c["kv_lora_rank"], "the latent alone: the decoupled RoPE key (64 numbers, shared by the heads) is cached too"),
        (2 * truth, "keys and values are not cached apart: the one latent c serves both"),
        (truth * c["num_heads"], "the latent is shared by the 128 heads: one per token, not one per head"),
        (truth * c["num_layers"], "that is all 61 layers: the question asks for one layer"),
        (heads, "that is what multi-head attention would cache: MLA keeps only the latent and the RoPE key"),
    ])


#: The choices of the recall prediction.
RECALL_CHOICES = {"a": "the softmax cache (every key kept)", "b": "the linear state (the sum of k^T v)",
                  "c": "the best fixed state (least squares)", "d": "none of them"}


@never_raises("could not grade this prediction", 'answer one letter in quotes: "a", "b", "c" or "d"')
def check_recall_prediction(prediction):
    """Grade a prediction of which memory still recalls every one of 64 pairs stored in 32 dimensions."""
    accuracy = {m: recall_accuracy(64, 32, m) for m in RECALL_METHODS}
    perfect = [m for m in ("softmax cache", "linear state", "best fixed state") if accuracy[m] == 1.0]
    truth = {"softmax cache": "a", "linear state": "b", "best fixed state": "c"}[perfect[0]] if perfect else "d"
    return grade_named_choice(prediction, truth, RECALL_CHOICES, wrongs={
        "c": "a state of 32 x 32 numbers can map at most 32 independent keys exactly: with 64 pairs, least squares "
             "spreads the error over all of them",
        "b": "the plain sum already blurs pairs at 8: every key's read-out picks up every other pair's value",
        "d": "one memory grows with the pairs: it keeps every key and value, and its softmax picks the one that "
             "matches"}, success=(
        f"recall at 64 pairs: softmax cache {accuracy['softmax cache']:.0%}, best fixed state "
        f"{accuracy['best fixed state']:.0%}, linear state {accuracy['linear state']:.0%}."))
