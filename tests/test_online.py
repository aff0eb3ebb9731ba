"""The readable online softmax and tiled attention of attn_helpers.online, against the core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from attn_helpers import causal_mask, scaled_dot_product_attention, softmax
from attn_helpers.online import online_softmax, online_softmax_steps, tiled_attention_steps

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("ci")

scores = st.one_of(st.floats(-1e3, 1e3, width=32), st.just(-np.inf))


@given(arrays(np.float64, st.tuples(st.integers(1, 3), st.integers(1, 12)), elements=scores), st.integers(1, 13))
def test_online_softmax_equals_softmax(x, block_size):
    np.testing.assert_allclose(online_softmax(x, block_size), softmax(x), rtol=1e-12, atol=1e-300)


def test_running_max_and_sum_are_those_of_the_prefix():
    x = np.array([0.5, -1.0, 4.0, 2.0, 7.0, -np.inf, 1.0])
    maxima, sums = online_softmax_steps(x, block_size=2)
    for step, stop in enumerate([2, 4, 6, 7]):
        assert maxima[step] == x[:stop].max()
        assert sums[step] == pytest.approx(np.exp(x[:stop] - x[:stop].max()).sum(), rel=1e-14)


def test_float32_stays_float32_and_a_masked_row_is_zero():
    x = np.array([[-np.inf, -np.inf], [1.0, 2.0]], dtype=np.float32)
    weights = online_softmax(x)
    assert weights.dtype == np.float32
    np.testing.assert_array_equal(weights[0], 0)


@pytest.mark.parametrize("block_size", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("masked", [False, True])
def test_tiled_attention_steps_end_at_the_cores_context(block_size, masked):
    rng = np.random.default_rng(block_size)
    q, k, v = rng.standard_normal((7, 3)), rng.standard_normal((7, 3)), rng.standard_normal((7, 2))
    mask = causal_mask(7) if masked else None
    context, steps = tiled_attention_steps(q, k, v, mask=mask, block_size=block_size)
    expected, weights = scaled_dot_product_attention(q, k, v, mask=mask)
    np.testing.assert_allclose(context, expected, rtol=1e-12)
    np.testing.assert_allclose(steps[-1].context, expected, rtol=1e-12)
    tiles = -(-7 // block_size)
    assert len(steps) == tiles**2
    assert sum(step.skipped for step in steps) == (tiles * (tiles - 1) // 2 if masked else 0)


def test_running_state_after_a_row_of_tiles_is_that_rows_softmax_statistics():
    rng = np.random.default_rng(9)
    q, k, v = rng.standard_normal((4, 3)), rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    _, steps = tiled_attention_steps(q, k, v, block_size=2)
    scores = q @ k.T / np.sqrt(3)
    first_block_done = steps[2]  # rows 0-1 after all 3 key tiles
    np.testing.assert_allclose(first_block_done.running_max[:2], scores[:2].max(axis=1))
    np.testing.assert_allclose(first_block_done.running_sum[:2],
                               np.exp(scores[:2] - scores[:2].max(axis=1, keepdims=True)).sum(axis=1))
    np.testing.assert_array_equal(first_block_done.running_max[2:], -np.inf)  # rows 2-3 not started


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="block_size must be >= 1"):
        online_softmax([1.0, 2.0], block_size=0)
    with pytest.raises(ValueError, match="at least one entry"):
        online_softmax(np.zeros((2, 0)))
    with pytest.raises(ValueError, match="one sequence"):
        tiled_attention_steps(np.ones((2, 3, 2)), np.ones((2, 3, 2)), np.ones((2, 3, 2)))
