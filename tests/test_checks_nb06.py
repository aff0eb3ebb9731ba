"""Notebook 06 (scaling): its checkers, and the numeric helpers behind its explorer."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import softmax  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_attention_scale,
    check_scaled_scores,
    check_score_std_prediction,
    solution,
)
from attn_helpers.checks.nb06 import attention_scale, scaled_scores  # noqa: E402
from attn_helpers.scaling import (  # noqa: E402
    DK_CHOICES,
    NUM_KEYS,
    NUM_QUERIES,
    jacobian_norm,
    query_at_percentile,
    scaling_summary,
    score_sample,
)
from attn_helpers.widgets.nb06 import EXPLORERS, PERCENTILES, draw_scaling  # noqa: E402


def stub(*args):
    raise NotImplementedError


GARBAGE = [None, [1, 2, 3], "scale", 0.125, np.zeros(3), stub, lambda *a: 1 / 0, lambda *a: None, lambda *a: "text",
           lambda *a: (1, 2), lambda *a: np.full((2, 2), np.nan), lambda *a: [[1, 2], [3]], lambda: 0,
           lambda *a: object(), Ellipsis]


@pytest.mark.parametrize("checker", [check_attention_scale, check_scaled_scores])
def test_garbage_never_raises_and_never_passes(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert not verdict.passed, garbage
        assert verdict.message


# --- Exercise 06.1: attention_scale -----------------------------------------------------------------


def test_attention_scale_solution_passes():
    assert check_attention_scale(attention_scale).passed
    assert check_attention_scale(lambda d_model, num_heads: (d_model // num_heads) ** -0.5).passed
    assert check_attention_scale(lambda d_model, num_heads: np.float32(1 / np.sqrt(d_model / num_heads))).passed


def test_attention_scale_reference_values():
    assert attention_scale(512, 8) == pytest.approx(1 / 8)
    assert attention_scale(768, 12) == pytest.approx(1 / 8)
    assert attention_scale(64, 1) == pytest.approx(1 / np.sqrt(64))


@pytest.mark.parametrize("wrong, expected_hint", [
    (lambda d_model, num_heads: 1 / np.sqrt(d_model), "you divided by sqrt(d_model)"),
    (lambda d_model, num_heads: np.sqrt(d_model), "EMBEDDINGS"),
    (lambda d_model, num_heads: np.sqrt(d_model / num_heads), "DIVIDED by"),
    (lambda d_model, num_heads: num_heads / d_model, "divide by its square root"),
    (lambda d_model, num_heads: 1 / np.sqrt(num_heads), "1 / sqrt(h)"),
])
def test_attention_scale_common_mistakes(wrong, expected_hint):
    verdict = check_attention_scale(wrong)
    assert not verdict.passed
    assert expected_hint in verdict.hint


def test_attention_scale_array_result_gets_shape_hint():
    verdict = check_attention_scale(lambda d_model, num_heads: np.full(2, 1 / np.sqrt(d_model / num_heads)))
    assert not verdict.passed and "one number" in verdict.hint


# --- Exercise 06.2: scaled_scores ------------------------------------------------------------------


def test_scaled_scores_solution_passes():
    assert check_scaled_scores(scaled_scores).passed
    assert check_scaled_scores(lambda q, k: np.einsum("...id,...jd->...ij", q, k) / np.sqrt(q.shape[-1])).passed


def test_scaled_scores_against_a_loop():
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((3, 5)), rng.standard_normal((4, 5))
    loop = np.array([[sum(q[i, c] * k[j, c] for c in range(5)) / 5**0.5 for j in range(4)] for i in range(3)])
    np.testing.assert_allclose(scaled_scores(q, k), loop, rtol=1e-12)


def _raw(q, k):
    return q @ np.swapaxes(k, -1, -2)


@pytest.mark.parametrize("wrong, expected_hint", [
    (_raw, "raw scores"),
    (lambda q, k: _raw(q, k) * np.sqrt(q.shape[-1]), "you multiplied by sqrt(d_k)"),
    (lambda q, k: _raw(q, k) / q.shape[-1], "you divided by d_k"),
    (lambda q, k: _raw(q, k) / np.sqrt(q.shape[-2]), "sqrt(T_q)"),
    (lambda q, k: _raw(q, k) / np.sqrt(k.shape[-2]), "sqrt(T_k)"),
    (lambda q, k: q @ k.T / np.sqrt(q.shape[-1]), "swapaxes"),
    (lambda q, k: _raw(q, k) / np.sqrt(q.shape[-1] * (q.shape[-3] if q.ndim > 2 else 1)), "sqrt(d_model)"),
])
def test_scaled_scores_common_mistakes(wrong, expected_hint):
    verdict = check_scaled_scores(wrong)
    assert not verdict.passed
    assert expected_hint in verdict.hint


def test_scaled_scores_transposed_result():
    verdict = check_scaled_scores(lambda q, k: np.swapaxes(scaled_scores(q, k), -1, -2))
    assert not verdict.passed and "transposed" in verdict.hint


def test_solutions_are_hidden_but_readable():
    for name in ("attention_scale", "scaled_scores"):
        shown = solution(name)
        assert "hidden" in repr(shown) and "def " in shown.source


# --- The explorer's numeric helpers -----------------------------------------------------------------


def _jacobian_loop(p):
    T = len(p)
    return np.array([[p[i] * ((i == j) - p[j]) for j in range(T)] for i in range(T)])


def test_jacobian_norm_matches_the_explicit_matrix():
    rng = np.random.default_rng(0)
    for scale in (0.1, 1.0, 5.0, 50.0):
        p = softmax(scale * rng.standard_normal(7))
        assert jacobian_norm(p) == pytest.approx(np.linalg.norm(_jacobian_loop(p)), abs=1e-12)
    batch = softmax(rng.standard_normal((4, 3, 6)))
    expected = np.array([[np.linalg.norm(_jacobian_loop(row)) for row in rows] for rows in batch])
    np.testing.assert_allclose(jacobian_norm(batch), expected, atol=1e-12)


def test_jacobian_is_the_derivative_of_softmax():
    rng = np.random.default_rng(3)
    s = rng.standard_normal(5)
    eps = 1e-6
    numeric = np.stack([(softmax(s + eps * e) - softmax(s - eps * e)) / (2 * eps) for e in np.eye(5)], axis=1)
    np.testing.assert_allclose(_jacobian_loop(softmax(s)), numeric, atol=1e-8)


def test_jacobian_norm_limits():
    T = NUM_KEYS
    assert jacobian_norm(np.eye(T)[2]) == pytest.approx(0.0, abs=1e-15)  # one-hot: the gradient vanishes
    assert jacobian_norm(np.full(T, 1 / T)) == pytest.approx(np.sqrt(1 / T - 1 / T**2))


def test_score_sample_is_seeded_and_has_variance_d_k():
    for d_k in (2, 64, 1024):
        scores = score_sample(d_k)
        assert scores.shape == (NUM_QUERIES, NUM_KEYS)
        assert not scores.flags.writeable
        assert scores.var() == pytest.approx(d_k, rel=0.15)
    first = score_sample(64).copy()
    score_sample.cache_clear()
    np.testing.assert_array_equal(score_sample(64), first)


def test_scaling_summary_scaled_is_stable_and_unscaled_saturates():
    small, large = scaling_summary(2), scaling_summary(1024)
    for summary in (small, large):
        assert summary["scaled"]["score std"] == pytest.approx(1.0, rel=0.15)
    assert large["unscaled"]["largest weight"] > 0.9 > large["scaled"]["largest weight"]
    assert large["unscaled"]["gradient size ||J||"] < 0.2 * large["scaled"]["gradient size ||J||"]
    assert abs(small["scaled"]["entropy (nats)"] - large["scaled"]["entropy (nats)"]) < 0.2


def test_explorer_draws_every_d_k_and_odd_values():
    assert set(EXPLORERS) == {"scaling_explorer"}
    explorer = EXPLORERS["scaling_explorer"]()
    # 3, None and 33 are not offered: they fall back to d_k = 64 and the median query
    for d_k, percentile in ((DK_CHOICES[0], 10), (DK_CHOICES[-1], 90), (3, 33), (None, None)):
        fig = plt.figure()
        note = draw_scaling(fig, d_k=d_k, percentile=percentile)
        plt.close(fig)
        assert "without scaling" in note
    assert explorer.render_png(d_k=128)[:4] == b"\x89PNG"


def _pixels(png):
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def test_live_updates_leave_nothing_stale():
    """The fast path (update + blit) redraws only the changing artists: going back to the first values gives
    back the first frame, pixel for pixel, and the fixed parts never change."""
    explorer = EXPLORERS["scaling_explorer"]()
    first = _pixels(explorer.render_png(d_k=64, percentile=50))
    background = explorer._background
    for d_k, percentile in ((1024, 90), (2, 10), (8, 25), (None, 12_345)):
        assert explorer.render_png(d_k=d_k, percentile=percentile)[:4] == b"\x89PNG"
    assert explorer._background is background  # no full redraw on the way
    np.testing.assert_array_equal(_pixels(explorer.render_png(d_k=64, percentile=50)), first)


@pytest.mark.parametrize("d_k", [2, 64, 512, 1024])
def test_query_at_percentile_ranks_the_queries_by_their_largest_weight(d_k):
    largest = softmax(score_sample(d_k)).max(axis=-1)
    below = [int(np.sum(largest < largest[query_at_percentile(d_k, p)])) for p in PERCENTILES]
    assert below == sorted(below)  # a higher percentile never picks a more even query
    assert below[PERCENTILES.index(50)] == pytest.approx(NUM_QUERIES / 2, abs=1)
    assert largest[query_at_percentile(d_k, 0)] == largest.min()  # (ties at 1.0 for large d_k)
    assert largest[query_at_percentile(d_k, 100)] == largest.max()


def test_the_typical_query_at_512_shows_the_vanishing_gradient():
    """Issue 14 #5: the static figure's query is typical, and at d_k = 512 its unscaled row is nearly one-hot."""
    scores = score_sample(512)[query_at_percentile(512, 50)]
    unscaled, scaled = softmax(scores), softmax(scores / np.sqrt(512))
    assert unscaled.max() > 0.95 and jacobian_norm(unscaled) < 0.1
    assert scaled.max() < 0.6 and jacobian_norm(scaled) > 0.25


# --- predict, then run: the spread of raw scores at d_k = 256 -----------------------------------------


def test_score_std_prediction_accepts_sqrt_d_k_and_what_sampling_shows():
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 20_000, 256))
    sampled = float((q * k).sum(axis=1).std())  # independently of the package: about 16
    assert abs(sampled - 16) < 0.5
    for value in (16, 16.0, np.float32(16), sampled, 15, 17):
        assert check_score_std_prediction(value).passed, value


@pytest.mark.parametrize("value, hint", [
    (256, "VARIANCE"),
    (1, "AFTER dividing"),
    (1 / 16, "scale factor"),
    (128, "variances add"),
    (8, "not 1/4"),
    (0, "mean of the scores is 0"),
])
def test_score_std_prediction_wrong_values_get_hints(value, hint):
    verdict = check_score_std_prediction(value)
    assert not verdict.passed and hint in verdict.hint


def test_score_std_verdict_quotes_the_number_the_notebook_prints():
    # notebook 06 samples 5000 pairs at d_k = 256 with its own generator and prints their std (16.00); the verdict
    # must quote that number, not the explorer's different sample (15.94)
    import json
    import re
    from pathlib import Path

    from attn_helpers.examples import SEED

    q, k = np.random.default_rng(SEED).standard_normal((2, 5000, 256))
    printed = f"{(q * k).sum(axis=1).std():.2f}"
    verdict = check_score_std_prediction(16)
    assert verdict.passed and f"have std {printed}" in verdict.message
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "06_scaling.ipynb").read_text())
    outputs = "".join("".join(o.get("text", "")) for c in nb["cells"] if c["cell_type"] == "code"
                      for o in c.get("outputs", []))
    assert re.search(rf"5000 sampled scores q · k at d_k = 256: {re.escape(printed)}\b", outputs)


@pytest.mark.parametrize("wrong, hint", [
    (lambda d_model, h: 1 / np.sqrt(d_model) / h, "outside the square root"),
    (lambda d_model, h: 1 / (d_model / h) ** 1 / 2, "** binds tighter than /"),
    (lambda d_model, h: (d_model / h) ** -1 / 2, "** binds tighter than /"),
    (lambda d_model, h: d_model / h ** 0.5, "** binds tighter than /"),
    (lambda d_model, h: 1 / np.sqrt(d_model / h) + 0.01, "compare each step with the formula"),
])
def test_attention_scale_slips_are_named(wrong, hint):
    verdict = check_attention_scale(wrong)
    assert not verdict.passed and hint in verdict.hint, verdict


def _reshaped_keys(queries, keys):
    keys_t = keys.reshape(*keys.shape[:-2], keys.shape[-1], keys.shape[-2])  # a reshape where a transpose belongs
    return queries @ keys_t / np.sqrt(queries.shape[-1])


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[1]), "queries.shape[1] is d_k only for a 2-D array"),
    (lambda q, k: q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[0]), "sqrt(T_q)"),
    (_reshaped_keys, "A reshape keeps the numbers in their order"),
])
def test_scaled_scores_slips_are_named(wrong, hint):
    verdict = check_scaled_scores(wrong)
    assert not verdict.passed and hint in verdict.hint, verdict


@pytest.mark.parametrize("value, hint", [(np.sqrt(512), "second row above"), (20, "sampling cell printed")])
def test_score_std_prediction_slips_and_fallback(value, hint):
    verdict = check_score_std_prediction(value)
    assert not verdict.passed and hint in verdict.hint and "tiny example" not in verdict.hint, verdict


def test_a_four_axis_transpose_on_one_head_is_named():
    verdict = check_scaled_scores(lambda q, k: q @ k.transpose(0, 1, 3, 2) / np.sqrt(q.shape[-1]))
    assert not verdict.passed and "works only for 4-D arrays" in verdict.hint, verdict
