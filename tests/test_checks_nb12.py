"""Notebook 12 checkers (previous-token weight and head, the sink prediction) and the head-view widget."""

import numpy as np
import pytest
from learner_inputs import wrong_answers

from attn_helpers.checks import (
    Verdict,
    check_ablation_prediction,
    check_previous_token_head,
    check_previous_token_weight,
    check_sink_prediction,
    check_two_back_head,
    solution,
)
from attn_helpers.checks.nb12 import (
    ABLATION_QUESTIONS,
    SINK_CHOICES,
    ablated_heads,
    measured_ablation,
    my_previous_token_weight,
    sink_measurements,
    sink_prediction,
    sink_shares,
)
from attn_helpers.pretrained import FINGERPRINT_SENTENCES, head_fingerprints, load_minilm
from attn_helpers.widgets import nb12

GARBAGE = wrong_answers(lambda *a: np.full((2, 3), np.nan), (0, 2, 1), (True, False), {"layer": 0}, 1.5, b"c",
                        float("nan"))


@pytest.fixture(scope="module")
def fingerprints():
    model = load_minilm()
    return head_fingerprints([model.run(s).attentions for s in FINGERPRINT_SENTENCES])


# --- 12.3 (a) ------------------------------------------------------------------------------------


def test_previous_weight_solution_and_core_agree(fingerprints):
    assert check_previous_token_weight(my_previous_token_weight).passed
    model = load_minilm()
    attentions = [model.run(s).attentions for s in FINGERPRINT_SENTENCES]
    mine = np.mean([my_previous_token_weight(a) for a in attentions], axis=0)
    np.testing.assert_allclose(mine, fingerprints["previous"], rtol=1e-6)


def test_previous_weight_alternative_correct_answers_pass():
    def loop(a):
        T = a.shape[-1]
        return sum(a[..., i, i - 1] for i in range(1, T)) / (T - 1)

    assert check_previous_token_weight(loop).passed
    assert check_previous_token_weight(lambda a: np.diagonal(a, -1, -2, -1).mean(-1)).passed


@pytest.mark.parametrize("wrong, hint", [
    (lambda a: np.diagonal(a, offset=1, axis1=-2, axis2=-1).mean(axis=-1), "NEXT token"),
    (lambda a: np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(axis=-1) / a.shape[-1], "divided by T"),
    (lambda a: np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(axis=-1), "sum over tokens"),
    (lambda a: np.diagonal(a, axis1=-2, axis2=-1).mean(axis=-1), "token itself"),
    (lambda a: np.diagonal(a, offset=-1).mean(axis=-1), "axis1=-2"),
    (lambda a: a[..., np.arange(a.shape[-1]), np.arange(a.shape[-1]) - 1].mean(axis=-1), "wraps around"),
    (lambda a: np.diagonal(np.roll(a, 1, axis=-1), axis1=-2, axis2=-1).mean(axis=-1), "wraps around"),
    (lambda a: np.diagonal(a, offset=-1, axis1=-2, axis2=-1), "one number per head"),
])
def test_previous_weight_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_previous_token_weight(wrong)
    assert not verdict.passed
    assert hint in verdict.hint


@pytest.mark.parametrize("answer", GARBAGE)
def test_checkers_never_raise(answer):
    for check in (check_previous_token_weight, check_previous_token_head, check_sink_prediction,
                  check_ablation_prediction, check_two_back_head):
        verdict = check(answer)
        assert isinstance(verdict, Verdict) and not verdict.passed and verdict.message


# --- 12.3 (b) ------------------------------------------------------------------------------------


def test_previous_head_right_answer_is_the_measured_one(fingerprints):
    best = np.unravel_index(np.argmax(fingerprints["previous"]), fingerprints["previous"].shape)
    assert check_previous_token_head(tuple(int(i) for i in best)).passed
    assert check_previous_token_head([int(i) for i in best]).passed
    assert check_previous_token_head(tuple(np.int64(i) for i in best)).passed


def test_previous_head_hints(fingerprints):
    layer, head = (int(i) for i in np.unravel_index(np.argmax(fingerprints["previous"]), (6, 12)))
    nxt = tuple(int(i) for i in np.unravel_index(np.argmax(fingerprints["next"]), (6, 12)))
    assert "flattened" in check_previous_token_head(layer * 12 + head).message
    assert "counts from 1" in check_previous_token_head((layer + 1, head + 1)).message
    assert "no head" in check_previous_token_head((6, 0)).message
    assert "NEXT-token head" in check_previous_token_head(nxt).message
    if head < 6:
        assert "swapped" in check_previous_token_head((head, layer)).message
    other = (5, 0) if (layer, head) != (5, 0) else (5, 1)
    assert "puts only" in check_previous_token_head(other).message


def _strongest_head_on_offset(offset):
    """An independent reference: a loop over sentences, heads and query rows."""
    model = load_minilm()
    total = np.zeros((6, 12))
    for sentence in FINGERPRINT_SENTENCES:
        attentions = model.run(sentence).attentions
        T = attentions.shape[-1]
        rows = [i for i in range(T) if 0 <= i + offset < T]
        for layer in range(6):
            for head in range(12):
                total[layer, head] += np.mean([attentions[layer, head, i, i + offset] for i in rows])
    return tuple(int(i) for i in np.unravel_index(np.argmax(total), total.shape))


def test_two_back_head_is_graded_on_the_measurement_and_names_the_other_offsets():
    best = _strongest_head_on_offset(-2)
    assert check_two_back_head(best).passed and check_two_back_head(list(best)).passed
    assert best != _strongest_head_on_offset(-1)  # not the previous-token head that section 5 prints
    assert "ONE place back" in check_two_back_head(_strongest_head_on_offset(-1)).message
    assert "AHEAD" in check_two_back_head(_strongest_head_on_offset(2)).message
    assert "flattened" in check_two_back_head(best[0] * 12 + best[1]).message
    assert "counts from 1" in check_two_back_head((best[0] + 1, best[1] + 1)).message
    assert "no head" in check_two_back_head((6, 0)).message
    assert "not filled in" in check_two_back_head(...).message


# --- 12.1 --------------------------------------------------------------------------------------------


def test_sink_prediction_is_graded_on_the_measurement():
    weight, share = sink_shares()
    assert weight > 0.8  # the head parks most of its weight on [CLS] ...
    assert share < 0.35  # ... but [CLS] supplies little of what it writes (measured: 0.89 and 0.23)
    right = sink_prediction()
    assert right == "c"
    assert check_sink_prediction(right).passed and check_sink_prediction(" (C) ").passed
    for said in ("c.", "C)", "under a third", "Under a third.", "(c) under a third"):
        assert check_sink_prediction(said).passed, said
    for wrong in set(SINK_CHOICES) - {right}:
        verdict = check_sink_prediction(wrong)
        assert not verdict.passed and "short vector" in verdict.hint


def test_sink_shares_are_the_means_of_the_per_sentence_measurements():
    weights, shares = sink_measurements()
    assert weights.shape == shares.shape == (len(FINGERPRINT_SENTENCES),)
    assert sink_shares() == pytest.approx((weights.mean(), shares.mean()))
    assert shares.max() < 0.35 < 0.75 < weights.min()  # every sentence, not only the mean


# --- 12.2 --------------------------------------------------------------------------------------------


def test_ablation_predictions_are_graded_on_the_measurement():
    effects = measured_ablation()
    names = list(ablated_heads())
    assert names[0].startswith("previous-token (0, 2)") and names[1].startswith("sink (4, 5)")
    block = [effects[name, "zero"]["block"].mean() for name in names]
    assert block[0] > max(block[1:])  # right after its block, the previous-token head's removal changes most
    previous = effects[names[0], "zero"]
    assert np.abs(previous["similarity change"]).max() < 0.05 and previous["neighbours changed"] == 0
    for question, right in (("largest change", "a"), ("similarities", "b")):
        assert check_ablation_prediction(right, question).passed
        assert check_ablation_prediction(f"({right}).", question).passed
        for wrong in set(ABLATION_QUESTIONS[question]["choices"]) - {right}:
            verdict = check_ablation_prediction(wrong, question)
            assert not verdict.passed and verdict.hint == ABLATION_QUESTIONS[question]["hints"][wrong]


@pytest.mark.parametrize("answer, question, words", [
    (..., "largest change", "not filled in"),
    ("d", "largest change", "not one of the choices"),
    (1, "similarities", "not a string"),
    ("a", None, "not one of this exercise's questions"),
    ("b", "largest change", "a different vector for every token"),
    ("a", "similarities", "averages out"),
])
def test_ablation_prediction_hints(answer, question, words):
    verdict = check_ablation_prediction(answer, question)
    assert not verdict.passed and words in verdict.message + verdict.hint, repr(verdict)


def test_solutions_are_registered():
    for name in ("my_previous_token_weight", "sink_prediction"):
        assert name in solution(name).source


# --- the head view ----------------------------------------------------------------------------


def test_head_mosaic_places_each_head():
    attentions = np.random.default_rng(0).random((2, 3, 4, 4))
    mosaic = nb12.head_mosaic(attentions, gap=1)
    assert mosaic.shape == (2 * 5 - 1, 3 * 5 - 1)
    np.testing.assert_array_equal(mosaic[5:9, 10:14], attentions[1, 2])
    assert np.isnan(mosaic[4]).all() and np.isnan(mosaic[:, 4]).all()
    with pytest.raises(ValueError, match="layers, heads, T, T"):
        nb12.head_mosaic(np.ones((2, 3, 4)))
    assert nb12.head_mosaic(attentions.astype(np.float32)).dtype == np.float32  # float32 in, float32 out
    assert nb12.head_mosaic(np.ones((1, 1, 2, 2), dtype=int)).dtype == np.float64


def test_head_view_draws_updates_and_survives_bad_text():
    explorer = nb12.EXPLORERS["head_view"]()
    assert list(explorer.controls) == ["sentence", "layer", "head"]  # the browser test types a sentence first
    assert explorer.controls["sentence"].continuous_update is False
    fig = explorer.figure(layer=0, head=2)
    assert "previous 1.00" in fig.note and "13 tokens:</b> [CLS] the cat" in fig.note
    first = explorer.render_png()
    assert explorer.render_png(head=3) != first  # fast path: another head
    explorer.controls["sentence"].value = "A completely different sentence."
    assert "different" in explorer.text.value and explorer.image.value != first
    explorer.controls["sentence"].value = "word " * 300  # too long: a message, not a traceback
    assert "at most 256" in explorer.text.value
    explorer.controls["sentence"].value = ""
    assert "[CLS] [SEP]" in explorer.text.value


def _pixels(png):
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def test_a_new_sentence_redraws_only_the_middle_layer_and_matches_a_fresh_drawing():
    """A typed sentence redraws the grid, tokens and axis titles over the kept background (no axis
    drawn again); a layer or head only the dynamic artists. Either way, the pixels of a figure drawn
    from scratch for those values."""
    explorer = nb12.EXPLORERS["head_view"]()
    explorer.render_png()
    background = explorer._background
    long_text = " ".join(["word"] * 20)  # 22 tokens: every other one labelled, in the smaller size
    for text, layer, head in (("A dog barked.", 2, 3), (long_text, 5, 11), (nb12.EXAMPLE_TEXT, 0, 2)):
        live = _pixels(explorer.render_png(sentence=text, layer=layer, head=head))
        fresh = _pixels(nb12.EXPLORERS["head_view"]().render_png(sentence=text, layer=layer, head=head))
        np.testing.assert_array_equal(live, fresh)
    assert explorer._background is background  # the axes were never drawn again
    middle = explorer._middle
    assert not np.array_equal(_pixels(explorer.render_png(head=4)), live)
    assert explorer._middle is middle  # another head: the sentence's layer is kept


def test_the_token_labels_are_a_fixed_pool():
    explorer = nb12.EXPLORERS["head_view"]()
    explorer.render_png()
    labels = list(explorer._live.handles["labels"])
    assert len(labels) == 2 * nb12.MAX_LABELS
    for text in ("Short one.", " ".join(["word"] * 40), nb12.EXAMPLE_TEXT):
        explorer.render_png(sentence=text)
        assert explorer._live.handles["labels"] == labels  # the same artists, refilled
        tokens = explorer._live.handles["result"].tokens
        shown = [label.get_text() for label in labels[:nb12.MAX_LABELS] if label.get_visible()]
        every = max(1, -(-len(tokens) // nb12.MAX_LABELS))
        assert shown == tokens[::every]
        assert {label.get_fontsize() for label in labels if label.get_visible()} == {11 if every == 1 else 9}


def test_the_axis_titles_follow_the_labels_shown():
    """Beyond 16 tokens some go unlabelled (a long word among them): the axis titles stay next to the
    labels shown, in their smaller size, clear of the grid on the left."""
    explorer = nb12.EXPLORERS["head_view"]()
    explorer.render_png(sentence="Transformers use attention to let every word in a sentence look at all the other "
                             "words, weighted by relevance.")
    fig = explorer._live
    renderer = fig.canvas.get_renderer()
    query = fig.handles["axis_titles"][1].get_window_extent(renderer)
    assert query.x0 > fig.handles["grid_ax"].get_window_extent(renderer).x1 + 20


def test_head_summary_numbers_come_from_the_fingerprints():
    model = load_minilm()
    result = model.run(nb12.EXAMPLE_TEXT)
    fp = head_fingerprints(result.attentions)
    line = nb12.head_summary(result, 1, 8)
    assert f"next {fp['next'][1, 8]:.2f}" in line and f"entropy {fp['entropy'][1, 8]:.2f}" in line


def test_a_mean_started_at_token_2_is_named():
    def from_token_2(attentions):
        rows = np.arange(2, attentions.shape[-1])
        return attentions[..., rows, rows - 1].mean(axis=-1)

    verdict = check_previous_token_weight(from_token_2)
    assert not verdict.passed and "started at token 2" in verdict.hint


@pytest.mark.parametrize("form", [np.float32, np.int64, float])
def test_the_previous_token_head_as_numpy_or_float_numbers_passes(form):
    fingerprints = head_fingerprints([load_minilm().run(s).attentions for s in FINGERPRINT_SENTENCES])
    best = np.unravel_index(np.argmax(fingerprints["previous"]), fingerprints["previous"].shape)
    assert check_previous_token_head(tuple(form(i) for i in best)).passed
