"""Notebook 17: the rolling-slot, sink-softmax, absorbed-query, linear-step and top-k checkers, and the three
predictions (the window's loss, MLA's cache, associative recall)."""

import numpy as np
import pytest

from attn_helpers.checks import (
    check_absorbed_query,
    check_latent_cache_prediction,
    check_linear_step,
    check_recall_prediction,
    check_rolling_slot,
    check_sink_weights,
    check_top_k_mask,
    check_window_loss_prediction,
    solution,
)
from attn_helpers.checks.nb17 import absorbed_query, linear_step, rolling_slot, sink_weights, top_k_keep
from attn_helpers.core import softmax
from attn_helpers.windows import attention_with_sink, load_streaming_runs


def slot_by_simulation(t, window, sinks):
    """An independent buffer: replay tokens 0..t, each into a free slot or over the oldest non-sink token."""
    slots = {}
    for token in range(t + 1):
        if token < sinks:
            slots[token] = token
        elif len(slots) < sinks + window:
            slots[token] = len(slots)
        else:
            oldest = min(k for k in slots if k >= sinks)
            slots[token] = slots.pop(oldest)
    return slots[t]


def absorbed_loop(query, W_uk):
    return np.array([[sum(query[i, d] * W_uk[i, c, d] for d in range(query.shape[1])) for c in range(W_uk.shape[1])]
                     for i in range(len(query))])


def top_k_by_sorting(scores, k):
    flat = scores.reshape(-1, scores.shape[-1])
    keep = np.zeros(flat.shape, bool)
    for row, values in enumerate(flat):
        keep[row, sorted(range(len(values)), key=lambda j: -values[j])[:k]] = True
    return keep.reshape(scores.shape)


@pytest.mark.parametrize("check, right", [
    (check_rolling_slot, rolling_slot), (check_rolling_slot, slot_by_simulation),
    (check_sink_weights, sink_weights), (check_absorbed_query, absorbed_query), (check_absorbed_query, absorbed_loop),
    (check_linear_step, linear_step), (check_linear_step, lambda S, k, v: S + k[:, None] * v[None, :]),
    (check_top_k_mask, top_k_keep), (check_top_k_mask, top_k_by_sorting),
])
def test_solutions_and_independent_references_pass(check, right):
    assert check(right).passed


def test_the_sink_softmax_is_attention_with_a_sink_on_scores():
    scores = np.random.default_rng(0).standard_normal((3, 4))
    weights = attention_with_sink(np.eye(1)[[0, 0, 0]], np.zeros((4, 1)), np.ones((4, 1)), 0.5)[1]
    np.testing.assert_allclose(weights, sink_weights(np.zeros((3, 4)), 0.5))
    np.testing.assert_allclose(sink_weights(scores, 0.5).sum(-1), 1 - softmax(np.c_[scores, np.full(3, 0.5)])[:, -1])


def test_solutions_are_hidden_until_asked():
    for name in ("rolling_slot", "sink_weights", "absorbed_query", "linear_step", "top_k_keep"):
        assert "hidden" in repr(solution(name)) and "def " in solution(name).source


@pytest.mark.parametrize("check, fn, hint", [
    (check_rolling_slot, lambda t, w, s: t % w, "forgets the sinks"),
    (check_rolling_slot, lambda t, w, s: t if t < s else (t - s) % w, "add sinks"),
    (check_sink_weights, lambda s, b: softmax(s), "sink logit is missing"),
    (check_sink_weights, lambda s, b: softmax(np.concatenate([s, np.full((*s.shape[:-1], 1), b)], axis=-1)),
     "kept the sink"),
    (check_absorbed_query, lambda q, W: np.einsum("hd,hdc->hc", q, W), "TRANSPOSE"),
    (check_absorbed_query, lambda q, W: np.einsum("hd,gcd->hc", q, W), "own up-projection"),
    (check_linear_step, lambda S, k, v: np.outer(k, v), "replaced the state"),
    (check_linear_step, lambda S, k, v: S + np.outer(v, k), "transpose"),
    (check_linear_step, lambda S, k, v: S + np.outer(k, v - k @ S), "delta rule"),
    (check_top_k_mask, lambda s, k: top_k_keep(-s, k), "SMALLEST"),
])
def test_each_slip_gets_its_hint(check, fn, hint):
    verdict = check(fn)
    assert not verdict.passed and hint in verdict.hint, verdict


def test_window_loss_prediction_is_graded_on_the_shipped_run():
    truth = float(load_streaming_runs()["losses"][1, 256:].mean())
    assert check_window_loss_prediction(round(truth, 1)).passed
    assert not check_window_loss_prediction(3.23).passed  # full attention's loss: the window is not free
    assert "higher" in check_window_loss_prediction(3.2).hint


def test_latent_cache_prediction():
    assert check_latent_cache_prediction(576).passed
    for wrong, hint in ((512, "RoPE key"), (1152, "one latent c serves both"), (576 * 128, "shared by the 128")):
        verdict = check_latent_cache_prediction(wrong)
        assert not verdict.passed and hint in verdict.hint


def test_recall_prediction():
    assert check_recall_prediction("a").passed and check_recall_prediction("(a)").passed
    assert not check_recall_prediction("c").passed and "32 independent keys" in check_recall_prediction("c").hint
