"""Notebook 03: the softmax checker (right answers pass, typical mistakes get their hint) and the widget helpers."""

from __future__ import annotations

import numpy as np
import pytest

from attn_helpers import softmax
from attn_helpers.checks import NOTES_SCORES, Verdict, check_cold_choice, check_softmax_any_axis, check_spot_the_slip
from attn_helpers.checks.nb03 import softmax_any_axis
from attn_helpers.examples import JOURNEY_TOKENS
from attn_helpers.measures import entropy_curve
from attn_helpers.widgets.nb03 import EXPLORERS, TEMPERATURES, temperature_explorer, temperature_slider


def _stub(x, axis=-1):
    raise NotImplementedError


def _via_logsumexp(x, axis=-1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.exp(x - m - np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)))


def _moveaxis_version(x, axis=-1):
    moved = np.moveaxis(np.asarray(x, dtype=float), axis, -1)
    exps = np.exp(moved - moved.max(axis=-1)[..., None])
    return np.moveaxis(exps / exps.sum(axis=-1)[..., None], -1, axis)


@pytest.mark.parametrize("answer", [softmax_any_axis, _via_logsumexp, _moveaxis_version,
                                    lambda x, axis=-1: softmax(x, axis=axis)])
def test_right_answers_pass(answer):
    assert check_softmax_any_axis(answer).passed


def test_solution_against_independent_loop():
    """The solution, slice by slice, against the 1-D formula written with a Python loop (shift by the slice max)."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 3, 4)) * 50
    for axis in (0, 1, 2, -1):
        got = softmax_any_axis(x, axis=axis)
        moved, out = np.moveaxis(x, axis, -1), np.moveaxis(got, axis, -1)
        for index in np.ndindex(moved.shape[:-1]):
            row = moved[index]
            exps = [np.exp(v - max(row)) for v in row]
            np.testing.assert_allclose(out[index], [e / sum(exps) for e in exps], rtol=1e-12)
    assert np.allclose(softmax_any_axis(np.array([1000.0, 1000.0])), [0.5, 0.5])


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True), "overflows to inf"),
    (lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(axis=axis, keepdims=True),
     "max of the whole array"),
    (lambda x, axis=-1: softmax(x, axis=-1), "always uses axis=-1"),
    (lambda x, axis=-1: softmax(x, axis=0), "normalised over another axis"),
    (lambda x, axis=-1: softmax(x, axis=0 if axis == -1 else -1), "normalised over another axis"),
    (lambda x, axis=-1: np.exp(x - x.max(axis=axis)) / np.exp(x - x.max(axis=axis)).sum(axis=axis), "keepdims"),
    (lambda x, axis=-1: (lambda e: e / e.sum(axis=axis))(np.exp(x - x.max(axis=axis, keepdims=True))), "keepdims"),
    (lambda x, axis=-1: np.exp(x - x.max(axis=axis, keepdims=True)), "stopped after the exponential"),
    (lambda x, axis=-1: np.exp(x - x.max()) / np.exp(x - x.max()).sum(), "WHOLE array"),
    (lambda x, axis=-1: x / x.sum(axis=axis, keepdims=True), "divided the scores by their sum"),
])
def test_typical_mistakes_get_their_hint(wrong, hint):
    verdict = check_softmax_any_axis(wrong)
    assert not verdict.passed
    assert hint in verdict.hint, verdict


def test_only_1d_support_is_caught():
    def one_d_only(x, axis=-1):
        exps = np.exp(x - x.max())
        return exps / exps.sum()

    verdict = check_softmax_any_axis(one_d_only)
    assert not verdict.passed and "(3, 3)" in verdict.message and "WHOLE array" in verdict.hint  # the first 2-D case


def test_other_failures():
    assert "not implemented yet" in check_softmax_any_axis(_stub).message
    assert "returned None" in check_softmax_any_axis(lambda x, axis=-1: None).message
    no_axis = check_softmax_any_axis(lambda x: softmax(x))
    assert not no_axis.passed and "axis" in no_axis.message
    transposed = check_softmax_any_axis(lambda x, axis=-1: softmax(x, axis=axis).T)
    assert not transposed.passed


@pytest.mark.parametrize("garbage", [None, 3, "text", [1, 2], np.zeros(3), Ellipsis, lambda *a, **k: "x",
                                     lambda *a, **k: [[1, 2], [3]], lambda *a, **k: (1, 2), lambda *a, **k: 1 / 0,
                                     lambda *a, **k: {"a": 1}, lambda *a, **k: np.full(3, np.nan)])
def test_checker_never_raises_on_garbage(garbage):
    verdict = check_softmax_any_axis(garbage)
    assert isinstance(verdict, Verdict) and not verdict.passed and verdict.message


# ---- widget helpers --------------------------------------------------------------------------


def test_entropy_curve_against_independent_loop():
    scores = np.array([0.5, -1.0, 2.0, 0.0])
    temperatures = [0.1, 1.0, 7.0]
    expected = []
    for tau in temperatures:
        exps = np.exp((scores - scores.max()) / tau)
        p = exps / exps.sum()
        expected.append(-sum(v * np.log(v) for v in p if v > 0))
    np.testing.assert_allclose(entropy_curve(scores, temperatures), expected, rtol=1e-10)


def test_entropy_curve_limits():
    scores = np.array([3.0, 1.0, 0.0, -2.0])
    low, high = entropy_curve(scores, [1e-3, 1e4])
    assert low == pytest.approx(0.0, abs=1e-6)
    assert high == pytest.approx(np.log(4), abs=1e-4)
    assert np.all(np.diff(entropy_curve(scores, np.geomspace(0.01, 100, 30))) >= -1e-12)  # flatter with larger τ


def test_temperature_slider_is_log_spaced_and_snaps():
    slider = temperature_slider(0.9)
    assert slider.value == 1.0 and not slider.continuous_update
    assert all(v > 0 for _, v in slider.options)
    ratios = np.diff(np.log(TEMPERATURES))
    assert ratios.min() > 0 and ratios.max() < np.log(2.1)


def test_registry():
    assert set(EXPLORERS) == {"temperature_explorer"}


SHARED_EXPLORER = temperature_explorer  # the conftest's shared_explorer fixture renders one for the module


@pytest.mark.parametrize("query", JOURNEY_TOKENS)
def test_temperature_explorer_draws_every_query(shared_explorer, query):
    for temperature in (TEMPERATURES[0], 1.0, TEMPERATURES[-1]):
        png, note = shared_explorer.render(query=query, temperature=temperature)
        assert png.startswith(b"\x89PNG") and f"τ = {temperature:g}" in note
        assert shared_explorer.figure(query=query, temperature=temperature).note == note


@pytest.mark.parametrize("temperature", [0.0, -1.0, float("nan"), None, "hot"])
def test_temperature_explorer_never_raises(shared_explorer, temperature):
    png, note = shared_explorer.render(query="nobody", temperature=temperature)
    assert png.startswith(b"\x89PNG") and "τ = 1" in note


def test_temperature_explorer_note(shared_explorer):
    _, note = shared_explorer.render(query="journey", temperature=1.0)
    assert "H = 1.7460" in note and "ln 6 = 1.7918" in note and "0.2379" in note


def test_temperature_explorer_fast_path_matches_a_fresh_drawing():
    """The blitted update (second render on) gives the same weights, curve and note as a fresh figure."""
    explorer = temperature_explorer()
    explorer.render_png()
    for query, temperature in [("one", 0.05), ("one", 3.0), ("step", 0.2), ("journey", 1.0)]:
        _, note = explorer.render(query=query, temperature=temperature)
        fresh = explorer.figure(query=query, temperature=temperature)
        assert note == fresh.note
        live, new = explorer._live.handles, fresh.handles
        np.testing.assert_allclose([b.get_height() for b in live["bars"]], [b.get_height() for b in new["bars"]])
        np.testing.assert_allclose(live["curve"].get_ydata(), new["curve"].get_ydata())
        np.testing.assert_allclose(np.asarray(live["reference"].get_segments()),
                                   np.asarray(new["reference"].get_segments()))


def test_live_figure_reuses_the_layout_the_static_figure_solved(monkeypatch):
    """static() then show(), as in every notebook: the first live frame solves no layout of its own."""
    from attn_helpers import widgets

    monkeypatch.setattr(widgets, "display", lambda fig: fig.canvas.draw())  # a notebook's display draws it
    explorer = temperature_explorer()
    explorer.static(query="one")
    fresh = []
    original = explorer.figure
    monkeypatch.setattr(explorer, "figure", lambda **values: fresh.append(values) or original(**values))
    png, _ = explorer.render()
    assert png.startswith(b"\x89PNG") and fresh == []  # no throw-away figure drawn for the layout


# ---------------------------------------------------------------------------------------------
# Predict, then run: where does 'one' put its weight as τ -> 0?  And: spot the slip in the notes.

def test_cold_choice_right_prediction_passes():
    from attn_helpers.examples import journey_embeddings

    X = journey_embeddings(np.float64)
    one = JOURNEY_TOKENS.index("one")
    winner = JOURNEY_TOKENS[int(np.argmax([X[one] @ x for x in X]))]  # as τ -> 0 the largest score takes everything
    assert winner == "starts"
    assert check_cold_choice(winner).passed


def test_cold_choice_itself_gets_the_order_hint():
    verdict = check_cold_choice("one")
    assert not verdict.passed and "never reorders" in verdict.hint


def _softmax_loop(scores):
    exps = [np.exp(s - max(scores)) for s in scores]
    return np.array([e / sum(exps) for e in exps])


def test_spot_the_slip_right_answers_pass():
    from attn_helpers.checks.nb03 import NOTES_SCORES, NOTES_WEIGHTS

    assert sum(NOTES_WEIGHTS) == pytest.approx(1.83)
    correct = _softmax_loop(NOTES_SCORES)
    np.testing.assert_allclose(correct, [0.629, 0.123, 0.246, 0.002], atol=5e-4)  # the corrected numbers
    assert check_spot_the_slip(sum(NOTES_WEIGHTS), correct).passed
    assert check_spot_the_slip(1.83, correct.round(3)).passed
    assert "not filled in" in check_spot_the_slip(1.83).message  # the total found, the weights still to come


def test_spot_the_slip_solution_passes():
    from attn_helpers.checks.nb03 import NOTES_SCORES, NOTES_WEIGHTS, spot_the_slip

    assert check_spot_the_slip(*spot_the_slip(np.array(NOTES_SCORES), np.array(NOTES_WEIGHTS))).passed


@pytest.mark.parametrize("total, weights, hint", [
    (1.0, None, "SHOULD sum to"),
    (1.83, np.array([0.02, 0.92, 0.89, 0.0]), "notes' own"),
    (1.83, np.exp([0.7, -0.93, -0.24, -5.0]), "stopped after exp"),
    (1.83, np.array([0.02, 0.92, 0.89, 0.0]) / 1.83, "rescaling"),
])
def test_spot_the_slip_typical_mistakes_get_their_hint(total, weights, hint):
    verdict = check_spot_the_slip(total, weights)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("garbage", [..., None, "1.83", [1, 2], float("inf")])
def test_spot_the_slip_and_cold_choice_never_raise(garbage):
    assert not check_spot_the_slip(garbage, garbage).passed
    assert not check_spot_the_slip(1.83, garbage).passed
    assert not check_cold_choice(garbage).passed


def test_exercises_are_numbered_in_the_order_they_come():
    # 03.2 used to precede 03.1; and the temperature prediction now has its own cell, apart from "Which axis?"
    import json
    import re
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "03_softmax.ipynb").read_text())
    markdown = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown"]
    numbers = re.findall(r"\*\*Exercise (03\.\d)", "\n".join(markdown))
    assert numbers == sorted(numbers) and len(numbers) == len(set(numbers)) >= 2
    assert not any("Predict before you run" in cell and "## Which axis?" in cell for cell in markdown)


def _max_over_the_last_axis(x, axis=-1):
    exps = np.exp(x - x.max(axis=-1, keepdims=True))  # the max always along -1, the sum along axis
    return exps / exps.sum(axis=axis, keepdims=True)


def test_a_max_along_another_axis_than_the_sum_is_named():
    verdict = check_softmax_any_axis(_max_over_the_last_axis)
    assert not verdict.passed and "max along one axis and summed along another" in verdict.hint, verdict


def test_the_scores_summed_instead_of_the_weights_is_named():
    verdict = check_spot_the_slip(float(np.sum(NOTES_SCORES)))
    assert not verdict.passed and "sum of the SCORES" in verdict.hint


def test_a_softmax_over_another_axis_is_told_which_one():
    """Always axis=-1, always axis=0, or the other axis than asked: on the first failing case two of them agree,
    so the checker asks the function for both axes before it names one."""
    swapped = check_softmax_any_axis(lambda x, axis=-1: softmax(x, axis=0 if axis in (-1, 1) else -1))
    always_0 = check_softmax_any_axis(lambda x, axis=-1: softmax(x, axis=0))
    always_last = check_softmax_any_axis(lambda x, axis=-1: softmax(x, axis=-1))
    assert "always uses" not in swapped.hint and "another axis" in swapped.hint
    assert "always uses axis=0" in always_0.hint and "always uses axis=-1" in always_last.hint
@pytest.mark.parametrize("query", JOURNEY_TOKENS)
def test_temperature_explorer_marks_never_cover_a_label(query):
    """At τ = 20 every bar is near 1/6 and the τ = 1 marks sat on the bars' numbers: no mark crosses a label."""
    explorer = temperature_explorer()
    for temperature in TEMPERATURES:
        fig = explorer.figure(query=query, temperature=temperature)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        parts = fig.handles
        to_pixels = parts["left"].transData.transform
        for label, segment in zip(parts["labels"], parts["reference"].get_segments(), strict=True):
            box = label.get_window_extent(renderer)
            (x0, y), (x1, _) = to_pixels(segment)
            crosses = box.y0 - 1 < y < box.y1 + 1 and min(x1, box.x1) > max(x0, box.x0)
            assert not crosses, f"{query!r} at τ = {temperature:g}: the τ = 1 mark crosses the label {label.get_text()}"
