"""Notebook 08 checkers (split/merge heads, parameter count) and the notebook's widget helpers."""

import numpy as np
import pytest
from learner_inputs import crash, stub, wrong_answers

from attn_helpers import merge_heads, multi_head_attention, split_heads
from attn_helpers.checks import (
    Verdict,
    check_merge_heads,
    check_parameter_count,
    check_parameter_count_with_biases,
    check_split_heads,
    check_weights_shape,
)
from attn_helpers.checks.nb08 import my_merge_heads, my_split_heads, parameter_count, parameter_count_with_biases
from attn_helpers.examples import creature_example, creature_heads_example
from attn_helpers.widgets import nb08

GARBAGE = wrong_answers(lambda *a: np.full((2, 3, 2), np.nan))


# --- split heads -----------------------------------------------------------------------------


def test_split_solution_and_helper_pass():
    assert check_split_heads(my_split_heads).passed
    assert check_split_heads(split_heads).passed
    assert "refused" in check_split_heads(my_split_heads).message


def _refusing(split):
    def fn(x, h):
        if x.shape[1] % h:
            raise ValueError("d_model must be divisible by num_heads")
        return split(x, h)
    return fn


def test_split_alternative_correct_answers_pass():
    assert check_split_heads(_refusing(lambda x, h: np.stack(np.split(x, h, axis=1)))).passed
    assert check_split_heads(_refusing(lambda x, h: np.swapaxes(x.reshape(x.shape[0], h, -1), 0, 1))).passed


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, h: x.reshape(h, x.shape[0], x.shape[1] // h), "whole tokens"),
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1] // h), "move the head axis to the front"),
    (lambda x, h: x.reshape(x.shape[0], x.shape[1] // h, h).transpose(2, 0, 1), "strided"),
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1] // h).transpose(1, 2, 0), "transposed"),
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1] / h), "integer division"),
])
def test_split_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_split_heads(wrong)
    assert not verdict.passed
    assert hint in verdict.hint


def test_split_that_does_not_refuse_non_divisible_d_model():
    def forgiving(x, h):
        if x.shape[1] % h:
            return np.zeros((h, x.shape[0], 1))
        return my_split_heads(x, h)

    verdict = check_split_heads(forgiving)
    assert not verdict.passed and "d_model % num_heads" in verdict.hint

    def ragged(x, h):
        return np.array_split(x, h, axis=1) if x.shape[1] % h else my_split_heads(x, h)

    verdict = check_split_heads(ragged)
    assert not verdict.passed and "instead of refusing" in verdict.message


@pytest.mark.parametrize("split, words", [
    (lambda x, h: x.reshape(x.shape[0], h, x.shape[1] // h).transpose(1, 0, 2), "numpy's own error"),
    (lambda x, h: np.stack(np.split(x, h, axis=1)), "numpy's own error"),
])
def test_split_that_lets_numpys_error_through_is_not_accepted(split, words):
    """The exercise asks for a ValueError that says what is wrong: numpy's reshape error does not."""
    verdict = check_split_heads(split)
    assert not verdict.passed and words in verdict.message and "raise ValueError" in verdict.hint


def test_split_that_refuses_with_an_assert_or_its_own_message():
    def asserting(x, h):
        assert x.shape[1] % h == 0, "not divisible"
        return my_split_heads(x, h)

    verdict = check_split_heads(asserting)
    assert not verdict.passed and "AssertionError" in verdict.message and "ValueError" in verdict.message
    verdict = check_split_heads(my_split_heads)
    assert verdict.passed and "d_model = 10 is not divisible by num_heads = 4" in verdict.message


def test_split_not_implemented_andcrash():
    assert "not implemented yet" in check_split_heads(stub).message
    assert "raised RuntimeError" in check_split_heads(crash).message


# --- merge heads -----------------------------------------------------------------------------


def test_merge_solution_and_helper_pass():
    assert check_merge_heads(my_merge_heads).passed
    assert check_merge_heads(merge_heads).passed
    assert check_merge_heads(lambda x: np.concatenate(list(x), axis=-1)).passed


@pytest.mark.parametrize("wrong, hint", [
    (lambda x: x.reshape(x.shape[1], -1), "Swap the first two axes back"),
    (lambda x: x.transpose(1, 0, 2), "not yet glued"),
    (lambda x: x.transpose(1, 2, 0).reshape(x.shape[1], -1), "interleaved"),
    (lambda x: np.concatenate(list(x), axis=0), "under each other"),
    (lambda x: x.sum(axis=0), "you added the heads"),
    (lambda x: x.mean(axis=0), "you averaged the heads"),
])
def test_merge_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_merge_heads(wrong)
    assert not verdict.passed
    assert hint in verdict.hint


# --- parameter count -------------------------------------------------------------------------


def test_parameter_count_solutions_and_independent_counts():
    """Issue 14 #1: both conventions are taught; the original Transformer's attention has no biases."""
    d_model = 512
    weights = [(d_model, d_model)] * 4  # W_q, W_k, W_v, W_o
    biases = [(d_model,)] * 4
    without = sum(int(np.prod(s)) for s in weights)
    with_biases = sum(int(np.prod(s)) for s in weights + biases)
    assert parameter_count() == without == 1_048_576
    assert parameter_count_with_biases() == with_biases == 1_050_624
    for value in (without, float(without), np.int64(without)):
        assert check_parameter_count(value).passed
    for value in (with_biases, float(with_biases), np.int64(with_biases)):
        assert check_parameter_count_with_biases(value).passed
    for num_heads in (1, 2, 4, 8, 16):  # no h in the answer
        assert parameter_count(d_model, num_heads) == without


@pytest.mark.parametrize("wrong, hint", [
    (4 * 512**2 + 4 * 512, "has none"),  # biases added to the original Transformer's count
    (4 * 512**2 + 3 * 512, "no biases at all"),
    (3 * 512**2, "left out the output projection"),
    (8 * 4 * 512**2, "multiplied by h"),
    (4 * 512 * 64, "one head"),
    (4 * 512**2 + 512, "no biases at all"),
    (4 * 8**2, "this notebook's example, d_model = 8"),  # the notebook's own d_model
])
def test_parameter_count_original_wrong_values_get_hints(wrong, hint):
    verdict = check_parameter_count(wrong)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("wrong, hint", [
    (4 * 512**2, "weights only"),
    (4 * 512**2 + 3 * 512, "W_o has a bias too"),
    (3 * 512**2 + 3 * 512, "left out the output projection"),
    (8 * (4 * 512**2 + 4 * 512), "multiplied by h"),
    (4 * 512 * 64 + 4 * 512, "one head"),
    (4 * 512**2 + 4 * 64, "one number per output feature"),
    (4 * 512**2 + 512, "one bias vector"),
    (4 * 8**2 + 4 * 8, "this notebook's example, d_model = 8"),
])
def test_parameter_count_with_biases_wrong_values_get_hints(wrong, hint):
    verdict = check_parameter_count_with_biases(wrong)
    assert not verdict.passed and hint in verdict.hint


def test_parameter_count_near_miss_is_not_accepted():
    assert not check_parameter_count(1_048_576 + 1).passed
    assert not check_parameter_count_with_biases(1_050_624 + 1).passed
    assert "not filled in" in check_parameter_count(...).message


# --- predict, then run: the shape of a batch's weights ------------------------------------------


def test_weights_shape_prediction_matches_the_helper():
    ex = creature_heads_example()
    X = np.stack([ex["X"], ex["X"][::-1]])  # (B, T, d_model) = (2, 8, 8)
    _, weights = multi_head_attention(X, ex["W_q"], ex["W_k"], ex["W_v"], ex["W_o"], 4)
    assert check_weights_shape(weights.shape).passed
    assert check_weights_shape(list(weights.shape)).passed


@pytest.mark.parametrize("wrong, hint", [
    ((4, 2, 8, 8), "batch axis stays first"),
    ((2, 8, 8), "own attention matrix"),
    ((4, 8, 8), "one sentence"),
    ((2, 4, 8, 2), "per-head queries"),
    ((2, 8, 4, 8), "head axis comes before"),
    ((1, 2, 3), "follow the shapes"),
    ("(2, 4, 8, 8)", "a tuple of whole numbers"),
    ((2.5, 4, 8, 8), "a tuple of whole numbers"),
])
def test_weights_shape_wrong_predictions_get_hints(wrong, hint):
    verdict = check_weights_shape(wrong)
    assert not verdict.passed and hint in verdict.hint


# --- garbage never raises --------------------------------------------------------------------


@pytest.mark.parametrize("checker", [check_split_heads, check_merge_heads, check_parameter_count,
                                     check_parameter_count_with_biases, check_weights_shape])
def test_checkers_never_raise_on_garbage(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert isinstance(verdict, Verdict)
        assert not verdict.passed and verdict.message


# --- widget helpers, against independent computations ----------------------------------------


def test_head_assignment_matches_split_heads():
    T, d_model = 8, 16
    index = np.arange(T * d_model, dtype=float).reshape(T, d_model)
    for num_heads in nb08.HEAD_CHOICES:
        owner = nb08.head_assignment(T, d_model, num_heads)
        heads = split_heads(index, num_heads)  # (h, T, d_h) of flat indices
        for i in range(num_heads):
            assert (owner.ravel()[heads[i].astype(int).ravel()] == i).all()
        head_dim = d_model // num_heads
        assert (owner == np.arange(d_model)[None, :] // head_dim).all()  # column blocks
        wrong = nb08.head_assignment(T, d_model, num_heads, "reshape")
        assert (wrong == np.arange(T)[:, None] // (T // num_heads)).all()  # whole token rows
        strided = nb08.head_assignment(T, d_model, num_heads, "strided")
        assert (strided == np.arange(d_model)[None, :] % num_heads).all()


def test_head_contributions_sum_to_the_output():
    ex = creature_heads_example()
    for num_heads in nb08.HEAD_CHOICES:
        out, weights = multi_head_attention(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"], ex["W_o"], num_heads)
        values = split_heads(ex["X"] @ ex["W_v"], num_heads)
        parts = nb08.head_contributions(weights @ values, ex["W_o"])
        np.testing.assert_allclose(parts.sum(axis=0), out, rtol=1e-4, atol=1e-5)
        # independently: head i's context times rows [i*d_h:(i+1)*d_h] of W_o
        head_dim = ex["X"].shape[1] // num_heads
        context = weights @ values
        for i in range(num_heads):
            expected = context[i] @ ex["W_o"][i * head_dim:(i + 1) * head_dim]
            np.testing.assert_allclose(parts[i], expected, rtol=1e-5, atol=1e-6)
        shares = nb08.head_shares(parts)
        assert shares.shape == (num_heads, len(ex["X"])) and (shares >= 0).all()
        np.testing.assert_allclose(shares.sum(axis=0), 1.0, rtol=1e-12)


def test_head_shares_of_zero_parts_are_zero_not_nan():
    assert (nb08.head_shares(np.zeros((2, 3, 4))) == 0).all()


def test_creature_heads_example_is_deterministic_and_head_0_is_the_designed_one():
    a, b = creature_heads_example(), creature_heads_example()
    designed = creature_example()
    np.testing.assert_array_equal(a["W_q"][:, :4], designed["W_q"])
    np.testing.assert_array_equal(a["W_k"][:, :4], designed["W_k"])
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])


# plotting.heatmap calls Colormap.set_bad, which matplotlib >= 3.11 flags as pending deprecation (shared file).
@pytest.mark.filterwarnings("ignore:The set_bad function:PendingDeprecationWarning")
@pytest.mark.parametrize("name", sorted(nb08.EXPLORERS))
def test_explorers_draw_every_control_combination(name):
    explorer = nb08.EXPLORERS[name]()
    if name == "head_explorer":
        combos = [dict(num_heads=h, head=k, causal=c) for h in nb08.HEAD_CHOICES for k in (0, 3, 7)
                  for c in (False, True)]
    else:
        combos = [dict(num_heads=h, split=s) for h in nb08.HEAD_CHOICES for s in nb08.SPLITS]
    for combo in combos:
        png, note = explorer.render(**combo)
        assert png[:4] == b"\x89PNG" and note


@pytest.mark.filterwarnings("ignore:The set_bad function:PendingDeprecationWarning")
def test_head_slider_follows_the_number_of_heads():
    explorer = nb08.head_explorer()
    explorer.controls["num_heads"].value = 8
    assert explorer.controls["head"].max == 7
    explorer.controls["head"].value = 6
    explorer.controls["num_heads"].value = 2
    assert explorer.controls["head"].max == 1 and explorer.controls["head"].value == 1
