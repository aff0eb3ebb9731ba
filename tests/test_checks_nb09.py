"""Notebook 09 (word order and positions): its checkers, and the numbers behind its explorers."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import positional_encoding  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_length_prediction,
    check_order_prediction,
    check_sinusoidal_encoding,
    solution,
)
from attn_helpers.checks.nb09 import (  # noqa: E402
    GOOD_ENOUGH,
    LONG_LENGTH,
    _encoding_wrongs,
    changed_words,
    length_accuracies,
    sinusoidal_encoding,
)


def stub(*args):
    raise NotImplementedError


GARBAGE = [None, [1, 2, 3], "pe", 0.5, np.zeros(3), stub, lambda *a: 1 / 0, lambda *a: None, lambda *a: "text",
           lambda *a: (1, 2), lambda *a: np.full((6, 8), np.nan), lambda *a: [[1, 2], [3]], lambda: 0,
           lambda *a: object(), Ellipsis, {"without positions": "x"}, {"with positions": 3}, {1: 2}]


@pytest.mark.parametrize("checker", [check_sinusoidal_encoding, check_order_prediction, check_length_prediction])
def test_garbage_never_raises_and_never_passes(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert not verdict.passed, garbage
        assert verdict.message


# --- Exercise 09.1: the sinusoidal encoding -----------------------------------------------------------


def test_sinusoidal_solution_passes_and_matches_the_helper():
    assert check_sinusoidal_encoding(sinusoidal_encoding).passed
    assert check_sinusoidal_encoding(lambda T, d: positional_encoding(T, d)).passed  # float32 is close enough
    np.testing.assert_allclose(sinusoidal_encoding(7, 12), positional_encoding(7, 12, dtype=np.float64))
    assert "hidden" in repr(solution("sinusoidal_encoding"))


def test_sinusoidal_loop_version_passes():
    def loops(T, d_model):
        pe = np.zeros((T, d_model))
        for p in range(T):
            for i in range(d_model // 2):
                angle = p / 10000 ** (2 * i / d_model)
                pe[p, 2 * i], pe[p, 2 * i + 1] = np.sin(angle), np.cos(angle)
        return pe

    assert check_sinusoidal_encoding(loops).passed


def _learner(angle_of, layout="interleaved", fn_sin=np.sin, fn_cos=np.cos):
    """A learner's encoding with one mistake, written the way a learner writes it (not the checker's lambdas)."""

    def encoding(T, d_model):
        angle = angle_of(np.arange(T), np.arange(0, d_model, 2), d_model)
        if layout == "halves":
            return np.concatenate([fn_sin(angle), fn_cos(angle)], axis=1)
        pe = np.zeros((T, d_model))
        pe[:, 0::2], pe[:, 1::2] = fn_sin(angle), fn_cos(angle)
        return pe.T if layout == "transposed" else pe

    return encoding


def _right(p, two_i, d):
    return p[:, None] / 10000 ** (two_i / d)


@pytest.mark.parametrize("wrong, expected_hint", [
    (_learner(_right, fn_sin=np.cos, fn_cos=np.sin), "swapped"),
    (_learner(_right, layout="halves"), "interleave"),
    (_learner(_right, layout="transposed"), "rows and columns are swapped"),
    (_learner(lambda p, two_i, d: p[:, None] / 10000 ** (2 * two_i / d)), "twice too large"),
    (_learner(lambda p, two_i, d: p[:, None] / 10000 ** two_i), "divided by d_model"),
    (_learner(lambda p, two_i, d: p[:, None] * 10000 ** (two_i / d)), "DECREASE"),
    (_learner(lambda p, two_i, d: np.radians(p[:, None] / 10000 ** (two_i / d))), "degrees"),
    (_learner(lambda p, two_i, d: np.degrees(p[:, None] / 10000 ** (two_i / d))), "radians"),
    (_learner(lambda p, two_i, d: (p[:, None] + 1) / 10000 ** (two_i / d)), "start at 1"),
    (_learner(lambda p, two_i, d: two_i[None, :] / 2 / 10000 ** (2 * p[:, None] / d)), "mixed up"),
    (_learner(lambda p, two_i, d: p / 10000 ** (two_i[:, None] / d)), "wrong orientation"),
    (_learner(lambda p, two_i, d: p[:, None] / 10000 ** (np.arange(d // 2) / d)), "i / d_model"),  # pair index i
    (_learner(lambda p, two_i, d: p[:, None] / 1000 ** (two_i / d)), "base is 1000"),
])
def test_sinusoidal_common_mistakes_get_their_hint(wrong, expected_hint):
    verdict = check_sinusoidal_encoding(wrong)
    assert not verdict.passed
    assert expected_hint in verdict.hint, verdict


def test_per_feature_frequency_mistakes():
    def per_feature(scale):
        def encoding(T, d_model):
            angle = np.arange(T)[:, None] / 10000 ** (scale * np.arange(d_model) / d_model)  # (T, d_model)
            return np.where(np.arange(d_model) % 2 == 0, np.sin(angle), np.cos(angle))
        return encoding

    assert "share ONE angle" in check_sinusoidal_encoding(per_feature(1)).hint
    assert "feature index" in check_sinusoidal_encoding(per_feature(2)).hint


def test_every_encoding_wrong_differs_from_the_right_answer():
    right = positional_encoding(6, 8, dtype=np.float64)
    for wrong in _encoding_wrongs():
        got = np.asarray(wrong.fn(6, 8))
        assert got.shape != right.shape or not np.allclose(got, right, atol=1e-6), wrong.hint


# --- Exercise 09.2: predict, then run -----------------------------------------------------------------


def test_changed_words_is_computed():
    assert changed_words(with_positions=False) == 0
    assert changed_words(with_positions=True) == 3
    assert changed_words(order=(0, 1, 2), with_positions=True) == 0


def test_right_prediction_passes():
    verdict = check_order_prediction({"without positions": 0, "with positions": 3})
    assert verdict.passed and "bites" in verdict.message
    assert check_order_prediction({"without positions": np.int64(0), "with positions": 3}).passed


@pytest.mark.parametrize("prediction, expected", [
    ({"without positions": 3, "with positions": 3}, "SET of words"),
    ({"without positions": 2, "with positions": 3}, "travel with them"),
    ({"without positions": 1, "with positions": 3}, "stays in the middle"),
    ({"without positions": 0, "with positions": 2}, "'bites' stays at position 1"),
    ({"without positions": 0, "with positions": 0}, "BEFORE the projections"),
    ({"without positions": 0, "with positions": 1}, "more than one word"),
    ({"without positions": 0, "with positions": 4}, "from 0 to 3"),
    ({"without positions": 0.5, "with positions": 3}, "whole number"),
    ({"without positions": True, "with positions": 3}, "whole number"),
    ({"without positions": ..., "with positions": 3}, "replace the ..."),
    ({"without": 0, "with": 3}, "with positions"),
])
def test_wrong_predictions_get_a_hint(prediction, expected):
    verdict = check_order_prediction(prediction)
    assert not verdict.passed
    assert expected in verdict.hint or expected in verdict.message, verdict


# --- Do positions generalise in length? -------------------------------------------------------------


def test_length_truth_is_computed_from_the_shipped_runs():
    from attn_helpers.position_runs import KINDS, accuracy_at_length, shipped_accuracy_by_position

    measured = length_accuracies()
    expected = accuracy_at_length(shipped_accuracy_by_position(), LONG_LENGTH).mean(axis=1)
    assert list(measured) == list(KINDS)
    np.testing.assert_allclose(list(measured.values()), expected)
    # what the hints below explain: the relative kinds carry over to 16 tokens, the absolute ones do not
    assert measured["rope"] >= GOOD_ENOUGH and measured["alibi"] >= GOOD_ENOUGH
    assert measured["learned"] < GOOD_ENOUGH and measured["sinusoidal"] < GOOD_ENOUGH


@pytest.mark.parametrize("prediction", [{"rope", "alibi"}, ["RoPE", "ALiBi"], ("alibi", "rope"), "rope and alibi",
                                        "RoPE, ALiBi", frozenset({"rotary", "alibi"})])
def test_right_length_prediction_passes_in_any_reasonable_form(prediction):
    verdict = check_length_prediction(prediction)
    assert verdict.passed, verdict
    assert f"rope {length_accuracies()['rope']:.0%}" in verdict.message  # the measured numbers, not typed ones


@pytest.mark.parametrize("prediction, expected", [
    ({"rope"}, "ALiBi was made for this"),
    ({"alibi"}, "same rotation at position 3 and at position 13"),
    (set(), "you left it out"),
    ("none", "you left it out"),
    ({"sinusoidal", "rope", "alibi"}, "PE[8] to PE[15] are new inputs"),
    ("all", "never trained"),
    ({"learned", "rope", "alibi"}, "never trained"),
    ({"learned", "sinusoidal"}, "you included it"),
    ({"rope", "alibi", "absolute"}, "not a kind of positions"),
    ([2, 3], "name the kinds as"),
    ({"rope": 1, "alibi": 1}, "not one of the kinds nor a set of them"),
    (1j, "not one of the kinds"),
    (..., "replace the ..."),
])
def test_wrong_length_predictions_get_a_specific_hint(prediction, expected):
    verdict = check_length_prediction(prediction)
    assert not verdict.passed
    assert expected in verdict.hint or expected in verdict.message, verdict


# --- Explorers: every number they show comes from the core --------------------------------------------

from attn_helpers import rope  # noqa: E402
from attn_helpers.examples import reorder_outputs  # noqa: E402
from attn_helpers.widgets.nb09 import (  # noqa: E402
    D_MODEL_CHOICES,
    ENCODING_POSITIONS,
    EXPLORERS,
    ORDERS,
    ROPE_KEY,
    ROPE_QUERY,
    rotated_pair,
)


def test_explorer_registry():
    assert set(EXPLORERS) == {"order_explorer", "encoding_explorer", "rotation_explorer"}
    assert len(ORDERS) == 6 and ORDERS["man bites dog"] == (2, 1, 0)


@pytest.mark.parametrize("positions", [False, True])
def test_order_explorer_every_order(positions):
    explorer = EXPLORERS["order_explorer"]()
    for sentence, order in ORDERS.items():
        fig = explorer.figure(sentence=sentence, positions=positions)
        change = reorder_outputs(order, with_positions=positions)["change"]
        if not positions:
            assert "every word keeps exactly its context vector" in fig.note
        elif sentence == "dog bites man":
            assert "nothing moved" in fig.note
        else:
            assert f"the largest distance is {change.max():.2f}" in fig.note
        bars = fig.axes[1].patches  # left heatmap, right bars, then the colorbar
        np.testing.assert_allclose([bar.get_height() for bar in bars], change)
    assert explorer.render_png(sentence="bites man dog", positions=True).startswith(b"\x89PNG")
    assert "dog bites man" in explorer.figure(sentence="no such order").note  # unknown order: the original


def test_reorder_outputs_matches_a_direct_computation():
    result = reorder_outputs((1, 2, 0), with_positions=True)
    from attn_helpers import scaled_dot_product_attention
    from attn_helpers.examples import dog_bites_man

    ex = dog_bites_man()
    X = ex["X"][[1, 2, 0]] + positional_encoding(3, 50)
    context, _ = scaled_dot_product_attention(X @ ex["W_q"], X @ ex["W_k"], X @ ex["W_v"])
    np.testing.assert_allclose(result["context"], context, rtol=1e-5)
    assert result["tokens"] == ("bites", "man", "dog")


def test_encoding_explorer_extremes_and_note():
    explorer = EXPLORERS["encoding_explorer"]()
    for d_model in D_MODEL_CHOICES:
        for position in (0, ENCODING_POSITIONS - 1):
            fig = explorer.figure(position=position, d_model=d_model)
            pe = positional_encoding(ENCODING_POSITIONS, d_model, dtype=np.float64)
            neighbour = position + 1 if position + 1 < ENCODING_POSITIONS else position - 1
            assert f"= {pe[position] @ pe[neighbour]:.2f}, the same for any two neighbours" in fig.note
            assert f"= {d_model // 2} at every position" in fig.note
    assert explorer.figure(position=999).note  # clipped to the last position, never raises


def test_rotation_pair_and_explorer():
    q, k, score = rotated_pair(3, 1)
    np.testing.assert_allclose(q, rope(np.array([ROPE_QUERY]), positions=[3])[0])
    np.testing.assert_allclose(np.linalg.norm(k), np.hypot(*ROPE_KEY))
    for shift in (0, 5, 20):
        assert rotated_pair(3, 1, shift)[2] == pytest.approx(score)
    assert rotated_pair(4, 1)[2] != pytest.approx(score)
    explorer = EXPLORERS["rotation_explorer"]()
    fig = explorer.figure(query_position=8, key_position=0, shift=20)
    assert f"score = {rotated_pair(8, 0)[2]:.3f}" in fig.note and "Offset m − n = 8" in fig.note
    assert explorer.render_png(query_position=0, key_position=8).startswith(b"\x89PNG")
    assert "The key at position 0 is not turned" in explorer.figure(query_position=3, key_position=0).note
    assert "query and the key at position 0 are" in explorer.figure(query_position=0, key_position=0).note
    assert "position 0" not in explorer.figure().note and "position 0" not in fig.note  # shifted: both turned


def test_rotation_explorer_shows_both_dashed_arrows_by_default():
    """Both pairs are turned at the default positions, so both unrotated (dashed) arrows show beside them."""
    fig = EXPLORERS["rotation_explorer"]().figure()
    ax = fig.axes[0]
    arrows = [a for a in ax.texts if getattr(a, "arrow_patch", None) is not None]
    dashed = [a for a in arrows if a.arrow_patch.get_linestyle() != "solid"]
    solid = [a for a in arrows if a.arrow_patch.get_linestyle() == "solid"]
    assert len(dashed) == 2 and len(solid) == 2
    for before in dashed:
        assert all(not np.allclose(before.xy, after.xy) for after in solid)  # no dashed arrow hidden under a solid one


@pytest.mark.parametrize("name, changes", [
    ("order_explorer", [{"sentence": "dog man bites"}, {"positions": True}, {"sentence": "man dog bites"},
                        {"positions": False}]),
    ("encoding_explorer", [{"position": 0}, {"position": 49}, {"d_model": 16}, {"position": 3}]),
    ("rotation_explorer", [{"query_position": 8}, {"shift": 20}, {"key_position": 5}]),
])
def test_update_path_matches_a_full_drawing(name, changes):
    """The live widget's fast path (update over a cached background) says what a fresh figure says."""
    explorer = EXPLORERS[name]()
    explorer.render()
    values = dict(explorer.values)
    for change in changes:
        values.update(change)
        png, note = explorer.render(**values)
        assert png.startswith(b"\x89PNG")
        assert note == explorer.figure(**values).note


# --- order_sensitivity as the notebook uses it -------------------------------------------------------


def test_order_sensitivity_reads_the_context_of_an_attend_that_returns_context_and_weights():
    from attn_helpers import order_sensitivity, scaled_dot_product_attention

    for T, d in [(2, 2), (3, 3), (3, 5)]:  # T == d once: a stacked (context, weights) must not pass for outputs
        X = np.random.default_rng(T).standard_normal((T, d))
        order = np.arange(T)[::-1]

        def context_only(X):
            return scaled_dot_product_attention(X, X, X)[0]

        both = order_sensitivity(lambda X: scaled_dot_product_attention(X, X, X), X, order)
        np.testing.assert_array_equal(both, order_sensitivity(context_only, X, order))
        np.testing.assert_allclose(both, 0, atol=1e-12)  # no positions: nothing moves
    with pytest.raises(ValueError, match="one output row per token"):
        order_sensitivity(lambda X: X.sum(axis=0), np.ones((3, 2)), [2, 0, 1])
