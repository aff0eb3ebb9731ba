"""tiled_attention (attn_helpers.efficient) against the readable core and the loop reference."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import threadpoolctl
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn_helpers.efficient as efficient
from attn_helpers import causal_mask, scaled_dot_product_attention
from attn_helpers.efficient import tiled_attention
from tests.reference import attention_ref

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("ci")


def core_context(q, k, v, mask=None, scale=None, causal=False):
    if causal:
        t_q, t_k = q.shape[-2], k.shape[-2]
        tri = np.tri(t_q, t_k, k=t_k - t_q, dtype=bool)
        mask = tri if mask is None else np.asarray(mask) & tri
    return scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)[0]


@st.composite
def problems(draw):
    batch = tuple(draw(st.lists(st.integers(1, 3), min_size=0, max_size=2)))
    t_q, t_k = draw(st.integers(1, 13)), draw(st.integers(1, 13))
    d_k, d_v = draw(st.integers(1, 6)), draw(st.integers(1, 5))
    elements = st.floats(-3, 3, width=32)
    q = draw(arrays(np.float32, batch + (t_q, d_k), elements=elements))
    k = draw(arrays(np.float32, batch + (t_k, d_k), elements=elements))
    v = draw(arrays(np.float32, batch + (t_k, d_v), elements=elements))
    mask = draw(st.one_of(st.none(), arrays(np.bool_, (t_q, t_k)), arrays(np.bool_, batch + (t_q, t_k)),
                          arrays(np.bool_, (1, t_k))))
    return q, k, v, mask


@given(problems(), st.one_of(st.none(), st.integers(1, 9)), st.booleans(), st.sampled_from([None, 0.5, 40.0]))
def test_equals_the_core_for_any_shape_mask_and_block_size(problem, block_size, causal, scale):
    q, k, v, mask = problem
    context = tiled_attention(q, k, v, mask=mask, scale=scale, block_size=block_size, causal=causal)
    expected = core_context(q, k, v, mask, scale, causal)
    assert context.dtype == np.float32 and context.shape == expected.shape
    np.testing.assert_allclose(context, expected, rtol=1e-5, atol=2e-5)


@pytest.mark.parametrize("path", ["no shift (bounded)", "running max (online)"])
@pytest.mark.parametrize("block_size", [1, 3, 4, 7, 16])
def test_both_softmax_paths_equal_the_loop_reference(monkeypatch, path, block_size):
    monkeypatch.setattr(efficient, "_TILE_SAFE_EXPONENT", np.inf if path.startswith("no") else -1.0)
    rng = np.random.default_rng(13)
    q, k, v = rng.standard_normal((3, 11, 4)), rng.standard_normal((3, 11, 4)), rng.standard_normal((3, 11, 2))
    mask = rng.random((11, 11)) < 0.6
    mask[4] = False  # a fully masked row
    context = tiled_attention(q, k, v, mask=mask, block_size=block_size)
    expected = np.stack([attention_ref(q[i], k[i], v[i], mask=mask)[0] for i in range(3)])
    np.testing.assert_allclose(context, expected, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(context[:, 4], 0)


def test_fully_masked_rows_give_zero_rows_without_warnings():
    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 9, 3), dtype=np.float32) for _ in range(3))
    mask = np.ones((2, 9, 9), dtype=bool)
    mask[0, 2] = False
    mask[1, :] = False  # every row of the second sequence
    for scale in (None, 1e3):  # the bounded path and the running-max path
        context = tiled_attention(q, k, v, mask=mask, block_size=4, scale=scale)
        assert not np.isnan(context).any()
        np.testing.assert_array_equal(context[0, 2], 0)
        np.testing.assert_array_equal(context[1], 0)
        np.testing.assert_allclose(context, core_context(q, k, v, mask, scale), rtol=1e-5, atol=1e-6)


def test_large_scores_take_the_running_max_and_stay_exact():
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((16, 8), dtype=np.float32) * 30 for _ in range(3))  # scores in the thousands
    context = tiled_attention(q, k, v, block_size=5)
    np.testing.assert_allclose(context, core_context(q, k, v), rtol=1e-5, atol=1e-4)


def test_causal_flag_is_the_bottom_right_causal_mask():
    rng = np.random.default_rng(2)
    keys, values = rng.standard_normal((10, 4)), rng.standard_normal((10, 3))
    square = tiled_attention(keys, keys, values, causal=True, block_size=3)
    np.testing.assert_allclose(square, core_context(keys, keys, values, mask=causal_mask(10)), rtol=1e-12)
    last_three = tiled_attention(keys[-3:], keys, values, causal=True, block_size=3)  # the last 3 positions
    np.testing.assert_allclose(last_three, square[-3:], rtol=1e-12)
    one_new = tiled_attention(keys[-1:], keys, values, causal=True)  # one new query sees every key
    np.testing.assert_allclose(one_new, core_context(keys[-1:], keys, values), rtol=1e-12)


@pytest.mark.parametrize(("t_q", "t_k", "rows", "keys"), [(10, 10, 3, 3), (7, 12, 2, 5), (12, 7, 5, 2), (4096, 4096,
                                                                                                        512, 256)])
def test_causal_tile_classes_match_those_read_from_the_mask(t_q, t_k, rows, keys):
    row_starts, key_starts = np.arange(0, t_q, rows), np.arange(0, t_k, keys)
    from_mask = efficient._mask_tiles(np.tri(t_q, t_k, k=t_k - t_q, dtype=bool), row_starts, key_starts)
    np.testing.assert_array_equal(efficient._causal_tiles(t_q, t_k, row_starts, key_starts, rows, keys), from_mask)


def test_causal_skips_the_tiles_above_the_diagonal():
    tiles = efficient._causal_tiles(4096, 4096, np.arange(0, 4096, 512), np.arange(0, 4096, 256), 512, 256)
    computed = np.count_nonzero(tiles != efficient._TILE_EMPTY) / tiles.size
    assert computed == 72 / 128  # 56%: the diagonal tiles and everything below them


def test_batches_broadcast_like_the_core():
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 3, 6, 4), dtype=np.float32)  # (B, h, T, d_k)
    k = rng.standard_normal((1, 3, 6, 4), dtype=np.float32)  # shared by the batch
    v = rng.standard_normal((6, 5), dtype=np.float32)  # shared by everything
    mask = np.arange(6) < np.array([6, 3])[:, None, None, None]  # (B, 1, 1, T): key padding
    context = tiled_attention(q, k, v, mask=mask, block_size=4)
    np.testing.assert_allclose(context, core_context(q, k, v, mask), rtol=1e-5, atol=1e-6)


def test_float64_in_float64_out_and_empty_inputs():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((5, 3))
    assert tiled_attention(q, q, q).dtype == np.float64
    assert tiled_attention(np.zeros((0, 3)), q, q).shape == (0, 3)
    np.testing.assert_array_equal(tiled_attention(q, np.zeros((0, 3)), np.zeros((0, 2))), np.zeros((5, 2)))


def test_many_threads_give_the_same_result_and_leave_the_blas_alone():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((2, 1100, 16), dtype=np.float32) for _ in range(3))  # above the parallel size
    before = [lib["num_threads"] for lib in threadpoolctl.threadpool_info()]
    context = tiled_attention(q, k, v, causal=True)
    assert [lib["num_threads"] for lib in threadpoolctl.threadpool_info()] == before
    with threadpoolctl.threadpool_limits(1):
        with efficient.one_blas_thread() as allowed:
            assert allowed == 1
        one_thread = tiled_attention(q, k, v, causal=True)
    np.testing.assert_array_equal(context, one_thread)  # each row is computed the same way on any worker
    np.testing.assert_allclose(context, core_context(q, k, v, causal=True), rtol=1e-5, atol=1e-6)


def test_memory_stays_linear_in_T():
    rng = np.random.default_rng(6)
    q, k, v = (rng.standard_normal((2, 2048, 32), dtype=np.float32) for _ in range(3))
    tiled_attention(q, k, v)  # warm up (the thread pool, lazy imports)
    tracemalloc.start()
    try:
        context = tiled_attention(q, k, v)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    weights_bytes = 2 * 2048 * 2048 * 4  # 32 MiB: what the core builds
    assert peak < context.nbytes + 4 * 2**20 < weights_bytes / 4


def test_overflowing_values_are_accumulated_in_float64():
    v = np.full((300, 2), 3e36, dtype=np.float32)
    v[::2] *= -1
    rng = np.random.default_rng(7)
    q = rng.standard_normal((4, 3), dtype=np.float32)
    context = tiled_attention(q, q[:1].repeat(300, axis=0), v)  # equal scores: the mean of the values
    assert context.dtype == np.float32 and np.isfinite(context).all()
    np.testing.assert_allclose(context, core_context(q, q[:1].repeat(300, axis=0), v), rtol=1e-5, atol=1e31)


def test_float64_overflow_raises_the_cores_error():
    big = np.full((3, 2), 1e160)
    with pytest.raises(ValueError, match="overflow float64"):
        scaled_dot_product_attention(big, big, big)
    with pytest.raises(ValueError, match="overflow float64"):
        tiled_attention(big, big, big)


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    (dict(block_size=0), ValueError, "block_size must be >= 1"),
    (dict(block_size=2.5), TypeError, "block_size must be an integer"),
    (dict(causal="yes"), TypeError, "causal must be True or False"),
    (dict(mask=np.ones((3, 4), dtype=bool)), ValueError, "mask of shape"),
    (dict(mask=np.ones((4, 4))), TypeError, "mask must be boolean"),
])
def test_bad_arguments_are_named(kwargs, error, words):
    x = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(error, match=words):
        tiled_attention(x, x, x, **kwargs)
