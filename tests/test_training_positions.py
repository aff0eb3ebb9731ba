"""The position kinds of the training model (notebook 09's length experiment) and the shipped runs.

Gradients are checked against finite differences; the shipped runs are checked for what notebook 09
relies on (accuracy at the training length, untouched table rows), never for a trajectory bit for bit.
"""

from dataclasses import replace

import numpy as np
import pytest

from attn_helpers import positional_encoding, rope
from attn_helpers.backprop import cross_entropy, numerical_gradient, relative_error
from attn_helpers.position_runs import (
    KINDS,
    SEEDS,
    TABLE_ROWS,
    TRAIN_LENGTH,
    accuracy_at_length,
    accuracy_by_position,
    accuracy_by_position_table,
    load_position_runs,
    shipped_accuracy_by_position,
)
from attn_helpers.training import (
    POSITION_KINDS,
    TASKS,
    ModelConfig,
    forward,
    init_params,
    load_runs,
    loss_and_grads,
    train,
)
from tests.tool_loader import load_tool


@pytest.mark.parametrize("kind", POSITION_KINDS)
@pytest.mark.parametrize("task, heads", [("copy previous", 2), ("reverse", 1)])
def test_gradients_of_every_kind_match_finite_differences(kind, task, heads):
    """Two layers, so the gradient also flows back through a rotation (RoPE) or a bias (ALiBi) into layer 0."""
    mask = TASKS[task].mask()
    config = ModelConfig.for_task(TASKS[task], d_model=4, num_heads=heads, num_layers=2, positions=kind)
    rng = np.random.default_rng(3)
    params, (tokens, targets) = init_params(config, rng), TASKS[task].batch(rng, 2)
    grads = loss_and_grads(params, tokens, targets, config, mask)[1]

    def nudged_loss(name):  # the loss as a function of one parameter, the others fixed
        return lambda value: cross_entropy(forward({**params, name: value}, tokens, config, mask)[0], targets)

    errors = {name: relative_error(grads[name], numerical_gradient(nudged_loss(name), params[name])) for name in params}
    assert max(errors.values()) < 1e-6, errors
    assert (grads["position_embedding"] != 0).any() == (kind == "learned")  # only the learned table is trained


def test_turning_back_by_minus_the_position_is_the_transpose_of_the_rotation():
    """What the backward pass through ``rotate`` relies on (attention_layer_backward): R(p)^T = R(-p)."""
    rng = np.random.default_rng(0)
    x, g = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((2, 3, 5, 6))
    back = -np.arange(5)
    assert np.sum(rope(x) * g) == pytest.approx(np.sum(x * rope(g, back)))  # <R x, g> = <x, R^T g>
    np.testing.assert_allclose(rope(rope(x), back), x, atol=1e-12)


def test_each_kind_enters_the_model_where_it_should():
    t = TASKS["copy previous"]
    rng = np.random.default_rng(2)
    tokens, _ = t.batch(rng, 3)
    base = ModelConfig.for_task(t, num_heads=2)
    params = init_params(base, np.random.default_rng(0))
    logits = {kind: forward(params, tokens, replace(base, positions=kind), t.mask())[0] for kind in POSITION_KINDS}
    no_table = {**params, "position_embedding": np.zeros_like(params["position_embedding"])}
    np.testing.assert_array_equal(forward(params, tokens, replace(base, use_positions=False), t.mask())[0],
                                  logits["none"])  # use_positions=False is "none", whatever positions says
    np.testing.assert_array_equal(
        forward(params, tokens, replace(base, use_positions=False, positions="rope"), t.mask())[0], logits["none"])
    np.testing.assert_allclose(forward(no_table, tokens, base, t.mask())[0], logits["none"])  # learned adds the table
    for kind in ("sinusoidal", "rope", "alibi"):
        np.testing.assert_array_equal(forward(no_table, tokens, replace(base, positions=kind), t.mask())[0],
                                      logits[kind])  # the table is not used
        assert not np.allclose(logits[kind], logits["none"]), kind
    sinusoidal_as_table = {**params, "position_embedding": positional_encoding(base.seq_len, base.d_model, np.float64)}
    np.testing.assert_allclose(forward(sinusoidal_as_table, tokens, base, t.mask())[0], logits["sinusoidal"])


def test_longer_inputs_than_the_table():
    t = TASKS["copy previous"]
    config = ModelConfig.for_task(t)  # a table of 8 rows
    params = init_params(config, np.random.default_rng(0))
    tokens = np.zeros((1, 12), dtype=int)
    with pytest.raises(ValueError, match="positions 8 to 11 have no learned vector"):
        forward(params, tokens, config)
    for kind in ("none", "sinusoidal", "rope", "alibi"):
        logits, _ = forward(params, tokens, replace(config, positions=kind))
        assert logits.shape == (1, 12, t.vocab_size)


def test_bad_position_options_are_refused():
    with pytest.raises(ValueError, match="positions must be one of"):
        ModelConfig(10, 8, positions="absolute")
    with pytest.raises(ValueError, match="head_dim"):
        ModelConfig(10, 8, d_model=6, num_heads=2, positions="rope")  # head_dim 3: no pairs


@pytest.mark.parametrize("kind", KINDS)
def test_a_fresh_short_run_learns(kind):
    run = train("copy previous", steps=60, snapshot_steps=(), positions=kind, num_heads=4)
    assert run.losses[-10:].mean() < 0.6 * run.losses[:10].mean(), kind


def test_position_kind_survives_save_and_load(tmp_path):
    run = train("copy previous", steps=2, snapshot_steps=(), positions="alibi", num_heads=2)
    load_tool("save_models").save_runs({"alibi run": run}, tmp_path / "runs.npz")
    loaded = load_runs(tmp_path / "runs.npz")["alibi run"]
    assert loaded.config == run.config and loaded.config.positions == "alibi"
    assert all(r.config.positions == "learned" for r in load_runs().values())  # notebook 11's file: the default


# ---------------------------------------------------------------- the shipped runs of notebook 09


@pytest.fixture(scope="module")
def shipped():
    return load_position_runs()


def test_shipped_runs_are_the_experiment(shipped):
    assert set(shipped) == {(kind, seed) for kind in KINDS for seed in SEEDS}
    for (kind, seed), run in shipped.items():
        assert run.config.positions == kind and run.seed == seed and run.task == "copy previous"
        assert run.config.seq_len == TABLE_ROWS and run.config.num_heads == 4


def test_shipped_runs_solve_the_task_at_the_training_length(shipped):
    for key, run in shipped.items():
        assert accuracy_at_length(accuracy_by_position(run, TRAIN_LENGTH, size=300), TRAIN_LENGTH) > 0.9, key
        assert run.losses[-10:].mean() < 0.3 * run.losses[:10].mean(), key


def test_learned_rows_past_the_training_length_were_never_trained(shipped):
    for seed in SEEDS:
        run = shipped["learned", seed]
        start = init_params(run.config, np.random.default_rng(seed))["position_embedding"]
        table = run.params["position_embedding"]
        np.testing.assert_array_equal(table[TRAIN_LENGTH:], start[TRAIN_LENGTH:])  # zero gradient: never moved
        assert not np.allclose(table[:TRAIN_LENGTH], start[:TRAIN_LENGTH])


def test_accuracy_by_position_and_at_length(shipped):
    run = shipped["learned", 0]
    by_position = accuracy_by_position(run, 16, size=200)
    assert by_position.shape == (16,) and np.isnan(by_position[0])
    assert (by_position[1:TRAIN_LENGTH] > 0.9).all()  # the trained rows still work in a longer input
    assert accuracy_at_length(by_position, 16) == pytest.approx(np.nanmean(by_position))
    assert accuracy_at_length(by_position, 12) == pytest.approx(by_position[1:12].mean())
    with pytest.raises(ValueError, match="longer than"):
        accuracy_at_length(by_position, 17)
    with pytest.raises(ValueError, match="no learned vector"):
        accuracy_by_position(run, TABLE_ROWS + 1)
    table = accuracy_by_position_table(shipped, T=9, size=50)
    assert table.shape == (len(KINDS), len(SEEDS), 9)
    assert shipped_accuracy_by_position() is shipped_accuracy_by_position()  # computed once


@pytest.mark.parametrize("kind", KINDS)
def test_a_prefix_of_a_longer_input_is_a_shorter_input(kind, shipped):
    """What accuracy_at_length relies on: the causal model's answer at t reads only tokens 0 .. t."""
    run = shipped[kind, 0]
    tokens = np.random.default_rng(5).integers(10, size=(20, 16))
    long_logits, _ = forward(run.params, tokens, run.config, np.tri(16, dtype=bool))
    short_logits, _ = forward(run.params, tokens[:, :12], run.config, np.tri(12, dtype=bool))
    np.testing.assert_allclose(long_logits[:, :12], short_logits, atol=1e-9)
