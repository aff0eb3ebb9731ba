"""train, Task, TrainingRun and accuracy at their edges: custom tasks, bad arguments, divergence."""

import dataclasses
import re

import numpy as np
import pytest

from attn_helpers import training
from attn_helpers.training import TASKS, Task, TrainingRun, accuracy, held_out_batch, token_labels, train


def _copy_first(rng, batch_size, seq_len, vocab_size):
    tokens = rng.integers(vocab_size, size=(batch_size, seq_len))
    return tokens, np.repeat(tokens[:, :1], seq_len, axis=1)  # every position answers the first token


COPY_FIRST = Task("copy first", "output the first token", _copy_first, causal=True, seq_len=6, vocab_size=5,
                  steps=60, d_model=16)


def test_a_custom_task_trains_and_scores_itself():
    run = train(COPY_FIRST, seed=3)
    assert run.task == "copy first" and run.the_task() is COPY_FIRST
    assert run.losses[-10:].mean() < 0.5 * run.losses[:10].mean()
    assert accuracy(run) > 0.9
    assert run.weights().shape == (1, 1, 6, 6)
    assert token_labels(COPY_FIRST, [0, 4]) == ["0", "4"]


def test_a_replaced_task_trains_and_scores_the_replaced_one():
    shorter = dataclasses.replace(TASKS["reverse"], seq_len=5, steps=3)
    run = train(shorter, batch_size=4)
    assert run.config.seq_len == 5 and run.probe.shape == (5,) and run.weights().shape == (1, 1, 5, 5)
    assert run.the_task() is shorter
    tokens, targets = held_out_batch(shorter, 2)
    assert tokens.shape == (2, 5)
    accuracy(run, size=10)  # scores on sequences of 5 tokens, not on the built-in task's 8


def test_built_in_tasks_are_found_by_name():
    run = train("copy previous", steps=2, batch_size=4)
    assert run.the_task() is TASKS["copy previous"] and run.task_object is None


@pytest.mark.parametrize("kwargs, error, message", [
    ({"task": "revers"}, ValueError, r"task must be one of \['copy previous', 'induction', 'reverse'\] or a Task"),
    ({"task": 3}, TypeError, "task must be a task name or a Task"),
    ({"steps": 0}, ValueError, "steps must be >= 1; got 0"),
    ({"steps": 2.5}, TypeError, "steps must be an integer"),
    ({"seed": 1.5}, TypeError, "seed must be an integer; got float 1.5"),
    ({"seed": None}, TypeError, "seed must be an integer; got NoneType"),
    ({"batch_size": 0}, ValueError, "batch_size must be >= 1; got 0"),
    ({"learning_rate": -0.01}, ValueError, "learning_rate must be > 0"),
    ({"learning_rate": 0}, ValueError, "learning_rate must be > 0"),
    ({"learning_rate": float("nan")}, ValueError, "learning_rate must be finite"),
    ({"learning_rate": "0.1"}, TypeError, "learning_rate must be a number"),
    ({"num_heads": 0}, ValueError, "num_heads must be >= 1; got 0"),
    ({"num_layers": 0}, ValueError, "num_layers must be >= 1; got 0"),
    ({"d_model": 0}, ValueError, "d_model must be >= 1; got 0"),
    ({"seq_len": 4}, ValueError, r"seq_len come\(s\) from the task: change the task instead"),
])
def test_bad_arguments_are_named(kwargs, error, message):
    kwargs = {"task": "reverse", "steps": 2, **kwargs}
    with pytest.raises(error, match=message):
        train(kwargs.pop("task"), **kwargs)


@pytest.mark.parametrize("optimizer, learning_rate", [("adam", 1e6), ("adam", 1.0), ("sgd", 1e3), ("sgd", 10.0)])
def test_divergence_is_reported_as_divergence(optimizer, learning_rate):
    rate = re.escape(f"{learning_rate:g}")
    with pytest.raises(FloatingPointError, match=rf"training diverged at step \d+: the loss went from [\d.]+ to "
                                                 rf".* with {optimizer} at learning_rate={rate}; try a smaller "
                                                 "learning rate"):
        train("reverse", steps=50, optimizer=optimizer, learning_rate=learning_rate)


def test_a_good_learning_rate_is_not_called_divergence():
    run = train("reverse", steps=150, optimizer="sgd", learning_rate=0.5)
    assert np.isfinite(run.losses).all() and run.losses[-1] < run.losses[0]


@pytest.mark.parametrize("seq_len", [3, 5])
def test_induction_with_too_short_sequences_is_refused(seq_len):
    short = dataclasses.replace(TASKS["induction"], seq_len=seq_len)
    with pytest.raises(ValueError, match=f"the induction task needs seq_len >= 6 .* got seq_len={seq_len}"):
        train(short, steps=1)


def test_induction_at_its_shortest_works():
    tokens, targets = dataclasses.replace(TASKS["induction"], seq_len=6).batch(np.random.default_rng(0), 3)
    assert (tokens[:, :3] == tokens[:, 3:]).all() and (targets[:, 3:5] == tokens[:, 4:6]).all()


def test_token_labels_refuse_what_they_cannot_name():
    wide = dataclasses.replace(TASKS["induction"], vocab_size=30)
    with pytest.raises(ValueError, match="token_labels names at most 26 tokens .* vocab_size=30"):
        token_labels(wide, [0, 1])
    with pytest.raises(ValueError, match=r"token ids in 0 \.\. 15; got ids from 0 to 16"):
        token_labels("induction", [0, 16])
    with pytest.raises(ValueError, match=r"token ids in 0 \.\. 9; got ids from -1 to -1"):
        token_labels("reverse", [-1])
    assert token_labels("induction", np.array([[25 - 10, 0]])) == ["P", "A"]


@pytest.fixture(scope="module")
def small_run():
    return train("copy previous", steps=3, batch_size=4)


@pytest.mark.parametrize("tokens, message", [
    ([0, 1, -1], r"token ids in 0 \.\. 9; got ids from -1 to 1"),  # -1 must not read the last embedding row
    ([0, 10], r"token ids in 0 \.\. 9; got ids from 0 to 10"),
    ([0] * 9, r"one sequence of 1 to 8 token ids; got shape \(9,\)"),
    ([[0, 1]], r"one sequence of 1 to 8 token ids; got shape \(1, 2\)"),
    ([], r"one sequence of 1 to 8 token ids; got shape \(0,\)"),
])
def test_weights_refuse_tokens_outside_the_model(small_run, tokens, message):
    with pytest.raises(ValueError, match=message):
        small_run.weights(tokens)


def test_weights_of_a_shorter_sequence_use_a_mask_of_its_length(small_run):
    weights = small_run.weights([3, 1, 4])
    assert weights.shape == (1, 1, 3, 3)
    np.testing.assert_array_equal(weights[0, 0][np.triu_indices(3, 1)], 0)  # causal: no weight on later keys


@pytest.mark.parametrize("size, error", [(0, ValueError), (-5, ValueError), (2.5, TypeError)])
def test_accuracy_refuses_an_empty_or_odd_sample(small_run, size, error):
    with pytest.raises(error, match="size must be"):
        accuracy(small_run, size=size)


def test_accuracy_of_params_needs_the_task_and_config(small_run):
    with pytest.raises(TypeError, match=r"accuracy\(params, task, config\)"):
        accuracy(small_run.params)
    assert accuracy(small_run.params, "copy previous", small_run.config, size=20) == accuracy(small_run, size=20)


def test_a_run_without_parameters_says_so():
    run = TrainingRun("reverse", None, {}, 4, 0, np.zeros(4))
    with pytest.raises(ValueError, match="shipped without its parameters"):
        run.weights()


def test_the_docstring_claims_what_is_true():
    doc = training.__doc__
    assert "on any machine with the same numpy" not in doc
    assert "same machine with the same numpy" in doc and "not the same last digits" in doc
