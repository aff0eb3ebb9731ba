"""Notebook 11: the softmax_backward and prediction checkers, their hints, and the widget module."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import softmax  # noqa: E402
from attn_helpers.backprop import numerical_gradient, relative_error  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_attention_prediction,
    check_induction_prediction,
    check_softmax_backward,
    check_training_prediction,
    solution,
)
from attn_helpers.checks.nb11 import (  # noqa: E402
    TRAINING_QUESTIONS,
    induction_queries,
    read_choice,
    softmax_backward_solution,
)
from attn_helpers.training import load_runs  # noqa: E402
from attn_helpers.widgets import nb11  # noqa: E402


def softmax_backward_loop(p, g):
    """An independent reference: build each row's Jacobian entry by entry and apply its transpose."""
    p, g = np.asarray(p, dtype=float), np.asarray(g, dtype=float)
    out = np.zeros_like(p)
    for index in np.ndindex(p.shape[:-1]):
        row, grad = p[index], g[index]
        n = len(row)
        J = np.array([[row[i] * ((i == j) - row[j]) for j in range(n)] for i in range(n)])
        out[index] = J.T @ grad
    return out


# ---------------------------------------------------------------- check_softmax_backward


def test_solution_and_loop_pass_and_agree_with_finite_differences():
    assert check_softmax_backward(softmax_backward_solution)
    assert check_softmax_backward(softmax_backward_loop)
    verdict = check_softmax_backward(softmax_backward_solution)
    assert "gradient check passes" in verdict.message
    rng = np.random.default_rng(0)
    s, g = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    numeric = numerical_gradient(lambda x: (softmax(x) * g).sum(), s)
    assert relative_error(softmax_backward_solution(softmax(s), g), numeric) < 1e-6
    sol = solution("softmax_backward")
    assert "hidden" in repr(sol) and "keepdims=True" in sol.source


def _dot(p, g, axis=-1):
    return (g * p).sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("fn, hint", [
    (lambda p, g: p * g, "dropped the - (g · p) term"),
    (lambda p, g: p * (g - p * g), "element by element"),
    (lambda p, g: p * (g - _dot(p, g, axis=0)), "wrong axis"),
    (lambda p, g: p * (g - (g * p).sum()), "whole array"),
    (lambda p, g: g - _dot(p, g), "factor p in front"),
    (lambda p, g: p * (_dot(p, g) - g), "sign is flipped"),
    (lambda p, g: np.swapaxes(p * (g - _dot(p, g)), -1, -2) if p.ndim > 1 else p * (g - _dot(p, g)), "transposed"),
    (lambda p, g: p * (g - (g * p).sum(axis=-1)), "keepdims=True"),  # no keepdims: (3, 5) - (3,) fails
    (lambda p, g: (p * (g - _dot(p, g)), 0), "return one array"),
    (lambda p, g: None, "return"),
])
def test_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_softmax_backward(fn)
    assert not verdict
    assert hint in verdict.message + verdict.hint, repr(verdict)


@pytest.mark.parametrize("one_row_code", [
    lambda p, g: p * (g - g @ p),        # section 1's one-row dot product, copied: (3, 5) @ (3, 5) fails
    lambda p, g: p * (g - np.dot(g, p)),
    lambda p, g: p * (g - g @ p.T),      # "fixed" with .T: (3, 3), which then fails to broadcast
])
def test_the_one_row_dot_product_copied_into_the_batch_gets_the_idea_not_the_code(one_row_code):
    verdict = check_softmax_backward(one_row_code)
    assert not verdict
    assert "only for ONE row" in verdict.hint and "a sum over the key axis, kept as a column" in verdict.hint
    assert "keepdims" not in verdict.hint and "(g * p)" not in verdict.hint  # the idea, not the answer


def test_a_sum_without_keepdims_is_told_to_keep_the_column():
    verdict = check_softmax_backward(lambda p, g: p * (g - (g * p).sum(axis=-1)))
    assert not verdict and "keepdims=True" in verdict.hint and "ONE row" not in verdict.hint


def test_a_jacobian_built_from_the_columns_is_called_a_wrong_axis():
    def columns(p, g):
        return p * (g - _dot(p, g, axis=-2)) if p.ndim > 1 else p * (g - _dot(p, g))

    verdict = check_softmax_backward(columns)
    assert not verdict and "wrong axis" in verdict.hint


@pytest.mark.parametrize("garbage", [None, [1, 2], 0, "f", np.eye(2), lambda: 1, lambda p: p,
                                     lambda p, g: 1 / 0, lambda p, g: "text", lambda p, g: np.full_like(p, np.nan),
                                     lambda p, g: {"x": 1}])
def test_softmax_backward_checker_never_raises(garbage):
    verdict = check_softmax_backward(garbage)
    assert not verdict
    assert isinstance(repr(verdict), str) and isinstance(verdict._repr_html_(), str)


# ---------------------------------------------------------------- check_attention_prediction


def test_prediction_checker_accepts_the_known_patterns():
    assert check_attention_prediction([7, 6, 5, 4, 3, 2, 1, 0])  # reverse, the default
    assert check_attention_prediction(np.array([0, 0, 1, 2, 3, 4, 5, 6]), task="copy previous")


def test_the_trained_shipped_models_agree_with_the_checker():
    runs = load_runs()
    for task in ("copy previous", "reverse"):
        trained_keys = runs[task].snapshots[runs[task].steps][0, 0].argmax(axis=-1)
        assert check_attention_prediction(trained_keys, task=task)


@pytest.mark.parametrize("task, value, hint", [
    ("reverse", ..., "replace the ..."),
    ("reverse", None, "replace the ..."),
    ("reverse", list(range(8)), "diagonal"),
    ("copy previous", [1, 0, 1, 2, 3, 4, 5, 6], "query 0 may see only key 0"),
    ("reverse", [7, 6, 5, 4, 3, 2, 0, 1], "first query 6"),
    ("reverse", [7, 6, 5], "expected 8 integers"),
    ("reverse", [7.5, 6, 5, 4, 3, 2, 1, 0], "expected 8 integers"),
    ("induction", [0] * 12, "not a task with a pattern known in advance"),
    ("sorting", [0] * 8, "not a task"),
    ("reverse", object(), "expected 8 integers"),
    ("reverse", [[1, 2], [3]], "give a list of integers"),
    ({}, [0] * 8, "not a task"),
])
def test_prediction_checker_hints_and_never_raises(task, value, hint):
    verdict = check_attention_prediction(value, task=task)
    assert not verdict
    assert hint in verdict.message + verdict.hint, repr(verdict)


# ---------------------------------------------------------------- check_induction_prediction


def test_the_induction_answer_is_what_the_shipped_model_does():
    induction = load_runs()["induction"]
    weights = induction.snapshots[induction.steps]  # (layers, h, T, T)
    queries_0, keys_0, queries_1, keys_1 = induction_queries(induction.probe)
    assert queries_0.tolist() == list(range(9)) and queries_1.tolist() == [8, 9, 10]
    # An independent reading of the probe: P J N A repeated from position 8.
    probe = induction.probe.tolist()
    assert keys_1.tolist() == [probe.index(probe[i]) + 1 for i in (8, 9, 10)]
    np.testing.assert_array_equal(weights[0, 0, queries_0].argmax(axis=-1), keys_0)
    np.testing.assert_array_equal(weights[1, 0, queries_1].argmax(axis=-1), keys_1)
    assert check_induction_prediction(weights[0, 0, queries_0].argmax(axis=-1), list(keys_1))
    assert check_induction_prediction([0, 0, 1, 2, 3, 4, 5, 6, 7], (5, 6, 7))


RIGHT_0, RIGHT_1 = [0, 0, 1, 2, 3, 4, 5, 6, 7], [5, 6, 7]


@pytest.mark.parametrize("layer_0, layer_1, words", [
    (..., RIGHT_1, "layer 0 prediction is not filled in"),
    (RIGHT_0, None, "layer 1 prediction is not filled in"),
    (RIGHT_0, [5, 6], "queries 8, 9, 10"),
    (RIGHT_0[:8], RIGHT_1, "expected 9 integers"),
    (RIGHT_0, [5.5, 6.0, 7.0], "expected 3 integers"),
    (list(range(9)), RIGHT_1, "layer 0: you predicted the diagonal"),
    (RIGHT_0, [8, 9, 10], "layer 1: you predicted the diagonal"),
    ([1] + RIGHT_0[1:], RIGHT_1, "query 0 sees only key 0"),
    ([-1] + RIGHT_0[1:], RIGHT_1, "layer 0: all right except query 0"),
    (RIGHT_0[:8] + [5], RIGHT_1, "that is the second step"),
    (RIGHT_0[:8] + [4], RIGHT_1, "the earlier copy of its own token"),
    (RIGHT_0, [4, 5, 6], "outputs the current token again"),
    (RIGHT_0, [7, 8, 9], "the previous-token pattern"),
    (RIGHT_0, [6, 7, 8], "one too far right"),
    (RIGHT_0, [5, 6, 11], "query 10 cannot attend to key 11"),
    (RIGHT_0, [5, 6, 3], "1 of 3 queries differ, first query 10"),
    (list(range(9)), [4, 5, 6], "layer 0: you predicted the diagonal, each query on itself; layer 1: each query on"),
    ("b", RIGHT_1, "expected 9 integers"),
    (object(), RIGHT_1, "expected 9 integers"),
])
def test_induction_prediction_names_each_slip(layer_0, layer_1, words):
    verdict = check_induction_prediction(layer_0, layer_1)
    assert not verdict and words in verdict.message + verdict.hint, repr(verdict)


# ---------------------------------------------------------------- check_training_prediction


def test_training_predictions_are_graded_on_the_shipped_runs():
    runs = load_runs()
    induction = runs["induction"]
    weights, probe = induction.snapshots[induction.steps], induction.probe
    rows = np.arange(1, len(probe) - 4)
    assert (weights[0, 0, rows].argmax(axis=-1) == rows - 1).all()  # layer 0: the previous token
    for i in range(len(probe) - 4, len(probe) - 1):  # layer 1: one after the earlier copy
        assert weights[1, 0, i].argmax() == np.flatnonzero(probe[:i] == probe[i])[0] + 1
    assert runs["induction, 1 layer, 2 heads"].held_out_accuracy < 0.9
    scaled, unscaled = (int(np.argmax(runs[f"reverse, d_model 128, {k}"].losses < 0.1)) + 1
                        for k in ("scaled", "unscaled"))
    assert unscaled >= 2 * scaled
    for question, right in (("one layer", "c"), ("unscaled", "b")):
        assert check_training_prediction(right, question)
        assert check_training_prediction(f" ({right.upper()}). ", question)
        assert check_training_prediction(TRAINING_QUESTIONS[question]["choices"][right], question)
        for wrong in set(TRAINING_QUESTIONS[question]["choices"]) - {right}:
            verdict = check_training_prediction(wrong, question)
            assert not verdict and verdict.hint.startswith(TRAINING_QUESTIONS[question]["hints"][wrong])


@pytest.mark.parametrize("answer, question, words", [
    (..., "unscaled", "not filled in"),
    (None, "one layer", "not filled in"),
    ("d", "one layer", "not one of the choices"),
    (2, "one layer", "not a string"),
    ("b", None, "not one of this notebook's questions"),
    ("b", "two layers", "not one of this notebook's questions"),
    ("a", "unscaled", "about the learning rate"),
    ("c", "unscaled", "one-hot"),
])
def test_training_prediction_hints_and_never_raises(answer, question, words):
    verdict = check_training_prediction(answer, question)
    assert not verdict and words in verdict.message + verdict.hint, repr(verdict)


def test_read_choice_accepts_the_ways_a_letter_is_written():
    choices = {"a": "about half", "b": "under a third"}
    for said in ("b", "B", "(b)", "b.", "b)", " 'b' ", "under a third", "Under a third.", "(b) under a third"):
        assert read_choice(said, choices) == "b", said
    for said in ("c", "", "half", None, 1, "ab"):
        assert read_choice(said, choices) is None, said


# ---------------------------------------------------------------- widget module


def test_explorer_draws_every_task_and_step():
    explorer = nb11.training_explorer()
    assert list(explorer.controls) == ["step", "task"]
    for task in explorer.controls["task"].options:
        for step in (0, 20, 600):
            assert explorer.render_png(task=task, step=step).startswith(b"\x89PNG")
    note = explorer.figure(task="reverse", step=600).note
    assert "step 150" in note  # clamped to the run's last step


def test_a_step_change_moves_the_figure_in_place_as_a_fresh_drawing_would():
    """The slider takes the fast path (same artists), which then show what a fresh drawing shows."""
    runs = load_runs()
    explorer = nb11.training_explorer(runs)
    explorer.render(task="induction", step=0)
    first_axes = list(explorer._live.axes)
    for step in (20, 600):
        _, note = explorer.render(task="induction", step=step)
        assert explorer._live.axes == first_axes  # not a full redraw
        fresh = explorer.figure(task="induction", step=step)
        assert note == fresh.note and f"step {step}," in note
        for live_image, fresh_image in zip(explorer._live.handles["images"], fresh.handles["images"], strict=True):
            np.testing.assert_array_equal(live_image.get_array(), fresh_image.get_array())
        assert list(explorer._live.handles["marker"].get_xdata()) == [step, step]
    explorer.render(task="reverse", step=20)  # another shape (one panel, other tokens): a full redraw
    assert explorer._live.axes != first_axes
    one_panel_axes = list(explorer._live.axes)
    for task in ("copy previous", "reverse, no positions"):  # the same shape: the axes are reused
        _, note = explorer.render(task=task, step=10)
        assert explorer._live.axes == one_panel_axes
        fresh = explorer.figure(task=task, step=10)
        assert note == fresh.note
        np.testing.assert_array_equal(explorer._live.handles["images"][0].get_array(),
                                      fresh.handles["images"][0].get_array())
        live_line, fresh_line = explorer._live.handles["curve"].lines[0], fresh.handles["curve"].lines[0]
        np.testing.assert_array_equal(live_line.get_ydata(), fresh_line.get_ydata())
        assert explorer._live.handles["images"][0].axes.get_title() == task
        assert explorer._live.handles["curve"].get_xlim() == fresh.handles["curve"].get_xlim()


def test_snapshot_figure_and_progress_bar():
    from matplotlib.figure import Figure

    run = load_runs()["reverse"]
    fig = Figure(figsize=(12, 3), layout="constrained")
    note = nb11.draw_snapshots(fig, run, steps=(0, 5, 10, 20, 150))
    assert note.startswith("step 0: loss") and len(fig.axes) == 6  # five panels and a colorbar
    bar = nb11.LossProgress(10)
    assert repr(bar) == "training: step 0 / 10"
    bar(5, 1.23456)
    assert bar.bar.value == 5 and "1.2346" in bar.label.value and "loss 1.2346" in repr(bar)


def test_the_unscaled_hints_say_what_the_runs_measure():
    """11.4(2): the hint quotes the steps the shipped runs take and claims nothing they do not measure (the
    notebook's own plain-gradient-descent run shows a SMALLER gap than Adam's)."""
    runs = load_runs()
    scaled, unscaled = (int(np.argmax(runs[f"reverse, d_model 128, {k}"].losses < 0.1)) + 1
                        for k in ("scaled", "unscaled"))
    for wrong in ("a", "c"):
        verdict = check_training_prediction(wrong, "unscaled")
        assert not verdict and f"step {unscaled} unscaled, at step {scaled} scaled" in verdict.hint
        assert "plain gradient descent" not in verdict.hint


def test_an_attention_prediction_names_its_task_and_does_not_ask_to_train_again():
    verdict = check_attention_prediction([0, 0, 1, 2, 3, 4, 5, 6], task="copy previous")
    assert verdict and verdict.message.startswith("copy previous:") and "Now train" not in verdict.message
