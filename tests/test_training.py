"""The tiny model of notebook 11: its gradients, its tasks, Adam, determinism, and the shipped runs."""

import math

import numpy as np
import pytest

from attn_helpers.backprop import cross_entropy, numerical_gradient, relative_error
from attn_helpers.training import (
    HISTORY_ONLY,
    SHIPPED_PATH,
    SHIPPED_RUNS,
    TASKS,
    ModelConfig,
    accuracy,
    adam_step,
    forward,
    held_out_batch,
    init_params,
    load_runs,
    loss_and_grads,
    sgd_step,
    shipped_run,
    token_labels,
    train,
)
from tests.tool_loader import load_tool

# ---------------------------------------------------------------- the whole model's gradient


@pytest.mark.parametrize("task, changes", [
    ("copy previous", {}),
    ("reverse", {"num_heads": 2}),
    ("reverse", {"use_positions": False, "scaled": False}),
    ("induction", {"num_heads": 2}),
])
def test_model_gradients_match_finite_differences(task, changes):
    t = TASKS[task]
    config = ModelConfig.for_task(t, d_model=4, **changes)
    rng = np.random.default_rng(0)
    params = init_params(config, rng)
    tokens, targets = t.batch(rng, 2)
    _, grads, _ = loss_and_grads(params, tokens, targets, config, t.mask())
    assert set(grads) == set(params)
    for name, value in params.items():
        def loss(v, name=name):
            return cross_entropy(forward({**params, name: v}, tokens, config, t.mask())[0], targets)

        assert relative_error(grads[name], numerical_gradient(loss, value)) < 1e-6, name
    if not config.use_positions:
        assert (grads["position_embedding"] == 0).all()


# ---------------------------------------------------------------- tasks


def test_copy_previous_and_reverse_targets():
    rng = np.random.default_rng(1)
    tokens, targets = TASKS["copy previous"].batch(rng, 5)
    assert (targets[:, 0] == -1).all() and (targets[:, 1:] == tokens[:, :-1]).all()
    tokens, targets = TASKS["reverse"].batch(rng, 5)
    assert (targets == tokens[:, ::-1]).all()


def test_induction_sequences_repeat_a_segment_of_distinct_tokens():
    tokens, targets = TASKS["induction"].batch(np.random.default_rng(2), 200)
    T = tokens.shape[1]
    lengths = set()
    for row, target in zip(tokens, targets):
        scored = np.flatnonzero(target >= 0)
        n = T - scored[0]  # the repeat starts at the first scored position
        lengths.add(n)
        segment = row[T - n:]
        assert len(set(segment)) == n  # distinct tokens
        assert (row[T - 2 * n:T - n] == segment).all()  # the earlier copy
        assert not set(row[:T - 2 * n]) & set(segment)  # the noise avoids the segment
        assert (target[scored] == row[scored + 1]).all() and scored[-1] == T - 2
    assert lengths == set(range(3, T // 2 + 1))  # the distance to the copy varies


def test_expected_patterns_solve_their_tasks():
    """Attending exactly as the expected pattern says and copying the value gives the targets."""
    for name in ("copy previous", "reverse"):
        task = TASKS[name]
        tokens, targets = task.batch(np.random.default_rng(3), 4)
        fetched = tokens @ task.expected_pattern(task.seq_len).T  # (B, T) @ (T, T): token at the attended key
        scored = targets >= 0
        assert (fetched[scored] == targets[scored]).all()


def test_token_labels():
    assert token_labels("reverse", [0, 9]) == ["0", "9"]
    assert token_labels("induction", np.array([[0, 15]])) == ["A", "P"]


# ---------------------------------------------------------------- optimizers


def test_adam_matches_the_formula_written_elementwise():
    params, state = {"w": np.array([1.0, -2.0])}, {}
    grads = [np.array([0.5, 0.1]), np.array([-0.2, 0.3])]
    m = v = np.zeros(2)
    w = np.array([1.0, -2.0])
    for t, g in enumerate(grads, start=1):
        adam_step(params, {"w": g}, state, learning_rate=0.1, beta1=0.9, beta2=0.98, eps=1e-8)
        m = 0.9 * m + 0.1 * g
        v = 0.98 * v + 0.02 * g**2
        w = w - 0.1 * (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.98**t)) + 1e-8)
    np.testing.assert_allclose(params["w"], w, rtol=1e-12)
    assert state["t"] == 2


def test_adamw_matches_the_decoupled_update_written_with_floats():
    # PyTorch's AdamW: w <- w - lr * (m_hat / (sqrt(v_hat) + eps) + weight_decay * w), one float at a time.
    from attn_helpers.training import adamw_step

    start, grads = [1.0, -2.0, 0.0], [[0.5, 0.1, 0.0], [-0.2, 0.3, 0.0], [0.0, 0.0, 0.0]]
    params, state = {"w": np.array(start)}, {}
    expected = []
    for i, w in enumerate(start):
        m = v = 0.0
        for t, g in enumerate((step[i] for step in grads), start=1):
            m, v = 0.9 * m + 0.1 * g, 0.98 * v + 0.02 * g * g
            w -= 0.1 * ((m / (1 - 0.9**t)) / ((v / (1 - 0.98**t)) ** 0.5 + 1e-8) + 0.3 * w)
        expected.append(w)
    for g in grads:
        adamw_step(params, {"w": np.array(g)}, state, learning_rate=0.1, weight_decay=0.3)
    np.testing.assert_allclose(params["w"], expected, rtol=1e-12)
    assert params["w"][2] == 0.0 and state["t"] == 3
    plain, decayed = {"w": np.array(start)}, {"w": np.array(start)}
    adam_step(plain, {"w": np.ones(3)}, {}, learning_rate=0.1)
    adamw_step(decayed, {"w": np.ones(3)}, {}, learning_rate=0.1, weight_decay=0.0)
    np.testing.assert_array_equal(plain["w"], decayed["w"])  # no decay: Adam


def test_sgd_step_and_unknown_optimizer():
    params = {"w": np.array([1.0])}
    sgd_step(params, {"w": np.array([2.0])}, {}, learning_rate=0.25)
    assert params["w"][0] == 0.5
    with pytest.raises(ValueError, match="optimizer must be one of"):
        train("reverse", steps=1, optimizer="rmsprop")


# ---------------------------------------------------------------- training


def test_training_is_deterministic_and_reports_progress():
    seen = []
    first = train("copy previous", steps=12, progress=lambda step, loss: seen.append((step, round(loss, 6))),
                  progress_every=5)
    second = train("copy previous", steps=12)
    np.testing.assert_array_equal(first.losses, second.losses)
    for name in first.params:
        np.testing.assert_array_equal(first.params[name], second.params[name])
    assert [step for step, _ in seen] == [5, 10, 12]
    assert sorted(first.snapshots) == [0, 5, 10, 12]
    assert first.snapshots[0].shape == (1, 1, 8, 8)
    np.testing.assert_allclose(first.snapshots[0].sum(axis=-1), 1.0)


def test_a_different_seed_gives_a_different_run():
    assert not np.array_equal(train("reverse", steps=3).losses, train("reverse", steps=3, seed=1).losses)


def test_held_out_data_differ_from_training_data():
    task = TASKS["reverse"]
    training_tokens = task.batch(np.random.default_rng(2017), 64)[0]  # the first training batch of seed 2017
    held = held_out_batch(task, 1000)[0]
    assert not {row.tobytes() for row in training_tokens} & {row.tobytes() for row in held}


@pytest.mark.slow
@pytest.mark.parametrize("name, floor", [("copy previous", 0.99), ("reverse", 0.99), ("induction", 0.99)])
def test_each_task_reaches_its_accuracy_from_scratch(name, floor):
    run = train(name)
    assert accuracy(run) >= floor
    pattern = TASKS[name].expected_pattern
    if pattern is not None:  # the trained weights on the probe are the expected pattern
        weights = run.snapshots[run.steps][0, 0]
        assert (weights.argmax(axis=-1) == pattern(run.config.seq_len).argmax(axis=-1)).all()
        assert weights.max(axis=-1).min() > 0.9


# ---------------------------------------------------------------- the shipped runs


def test_shipped_runs_load_with_their_accuracy():
    runs = load_runs()
    assert list(runs) == sorted(SHIPPED_RUNS)
    assert runs["copy previous"].held_out_accuracy >= 0.99 and runs["reverse"].held_out_accuracy >= 0.99
    assert accuracy(runs["reverse"]) == runs["reverse"].held_out_accuracy  # recomputed from the parameters
    assert runs["reverse, no positions"].held_out_accuracy < 0.5
    assert runs["induction"].held_out_accuracy >= 0.99 > runs["induction, 1 layer, 2 heads"].held_out_accuracy
    for name in HISTORY_ONLY:
        assert runs[name].params == {} and accuracy(runs[name]) == runs[name].held_out_accuracy


def test_save_and_load_round_trip(tmp_path):
    run = train("reverse", steps=4, snapshot_steps=(0, 2))
    accuracy(run, size=1000)
    load_tool("save_models").save_runs({"tiny": run}, tmp_path / "runs.npz")
    loaded = load_runs(tmp_path / "runs.npz")["tiny"]
    assert loaded.config == run.config and loaded.task == "reverse" and loaded.steps == 4
    assert loaded.held_out_accuracy == run.held_out_accuracy
    np.testing.assert_array_equal(loaded.losses, run.losses)
    assert sorted(loaded.snapshots) == [0, 2, 4]


def _steps_to_loss(run, threshold=0.1, width=10):
    """The first step at which the running mean of the loss is below ``threshold`` (inf: not within the run)."""
    steps, curve = run.smoothed_losses(width)
    below = np.flatnonzero(curve < threshold)
    return int(steps[below[0]]) if below.size else math.inf


@pytest.mark.slow
@pytest.mark.parametrize("name", list(SHIPPED_RUNS))
def test_a_fresh_run_reproduces_what_the_shipped_run_teaches(name):
    """Training again gives what notebook 11 shows from tools/build_training_runs.py's file.

    Not the same trajectory to the last bit: numpy's SIMD code paths differ between CPUs (AVX2,
    AVX-512, ARM) in the last bits, and 600 Adam steps amplify them (up to 0.3 in one step's loss
    on an AVX-512 CPU for a file built on an AVX2 one). What the lesson relies on holds on any CPU:
    the same configuration and probe, the same first steps (before training amplifies anything),
    the same held-out accuracy, and the same keys attended by the trained model.
    """
    stored = load_runs(SHIPPED_PATH)[name]
    fresh = shipped_run(name)
    assert stored.config == fresh.config and stored.steps == fresh.steps
    np.testing.assert_array_equal(stored.probe, fresh.probe)  # integers: drawn from the seeded generator
    assert sorted(stored.snapshots) == sorted(fresh.snapshots)
    np.testing.assert_allclose(stored.losses[:10], fresh.losses[:10], rtol=1e-6)
    if "d_model 128" in name:
        # The two wide runs amplify the last bits most: without numpy's SIMD code paths (CI's second pass) the
        # unscaled run reaches 0.961 held-out accuracy in its 600 steps (d834c49's code as today's), and since
        # notebook 11's model runs through multi_head_attention (three gradients added in another order) the
        # scaled one 0.955, where AVX2 and AVX-512 reach 0.99 or more. What notebook 11 takes from the pair on
        # any CPU (the unscaled one takes at least twice the steps, both learn) is tested below.
        return
    assert abs(stored.held_out_accuracy - fresh.held_out_accuracy) <= 0.01
    assert (stored.held_out_accuracy >= 0.99) == (fresh.held_out_accuracy >= 0.99)  # learnt, or not learnt
    attended = [run.snapshots[run.steps].argmax(axis=-1) for run in (stored, fresh)]  # (layers, h, T) each
    assert (attended[0] == attended[1]).mean() >= 0.85


def test_unscaled_scores_learn_more_slowly_in_the_shipped_runs_and_afresh():
    """Notebook 11 on 1/sqrt(d_k): without it the loss takes at least twice the steps to fall below 0.1."""
    runs = load_runs(SHIPPED_PATH)
    scaled, unscaled = (runs[f"reverse, d_model 128, {k}"] for k in ("scaled", "unscaled"))
    assert _steps_to_loss(unscaled) >= 2 * _steps_to_loss(scaled)
    fresh_scaled, fresh_unscaled = (shipped_run(f"reverse, d_model 128, {kind}") for kind in ("scaled", "unscaled"))
    assert _steps_to_loss(fresh_unscaled) >= 2 * _steps_to_loss(fresh_scaled)
    # Slower, not stalled: both learn on every CPU. (Their accuracies after 600 steps are not ordered on every
    # CPU: without SIMD the scaled run ends at 0.955, the unscaled one at 0.984.)
    assert min(fresh_scaled.held_out_accuracy, fresh_unscaled.held_out_accuracy) >= 0.9
