"""Property-based tests (hypothesis) of the attention helpers."""

from __future__ import annotations

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn_helpers as A

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("ci")

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, width=32)
dims = st.integers(min_value=1, max_value=6)


def matrices(rows, cols, elements=st.floats(-3, 3, width=32)):
    return arrays(np.float32, (rows, cols), elements=elements)


@given(st.data(), dims, dims)
def test_softmax_rows_sum_to_one_and_are_shift_invariant(data, rows, cols):
    x = data.draw(arrays(np.float64, (rows, cols), elements=finite))
    shift = data.draw(st.floats(-1e3, 1e3, allow_nan=False))
    weights = A.softmax(x)
    assert np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(A.softmax(x + shift), weights, atol=1e-9)


@given(st.data(), st.integers(2, 6), dims)
def test_self_attention_is_permutation_equivariant(data, T, d):
    x = data.draw(matrices(T, d))
    perm = np.array(data.draw(st.permutations(range(T))))
    context, weights = A.scaled_dot_product_attention(x, x, x)
    context_p, weights_p = A.scaled_dot_product_attention(x[perm], x[perm], x[perm])
    np.testing.assert_allclose(context_p, context[perm], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(weights_p, weights[perm][:, perm], rtol=1e-5, atol=1e-6)


@given(st.data(), st.integers(2, 7), dims)
def test_causal_output_ignores_the_future(data, T, d):
    x = data.draw(matrices(T, d))
    t = data.draw(st.integers(0, T - 2))
    changed = x.copy()
    changed[t + 1 :] = data.draw(matrices(T - t - 1, d))
    mask = A.causal_mask(T)
    context, _ = A.scaled_dot_product_attention(x, x, x, mask=mask)
    context_changed, _ = A.scaled_dot_product_attention(changed, changed, changed, mask=mask)
    np.testing.assert_array_equal(context_changed[: t + 1], context[: t + 1])


@given(st.data(), st.integers(1, 6), st.integers(1, 6), st.integers(1, 5))
def test_one_head_multi_head_equals_single_head_attention(data, T, d_model, d_out):
    x = data.draw(matrices(T, d_model))
    W_q, W_k, W_v = (data.draw(matrices(d_model, d_model)) for _ in range(3))
    W_o = data.draw(matrices(d_model, d_out))
    out, weights = A.multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads=1)
    context, single = A.scaled_dot_product_attention(x @ W_q, x @ W_k, x @ W_v)
    np.testing.assert_allclose(weights[0], single, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(out, context @ W_o, rtol=1e-3, atol=1e-3)


@given(st.data(), st.integers(1, 4), st.integers(1, 5), st.integers(1, 4), st.integers(1, 4))
def test_split_merge_round_trip(data, batch, T, num_heads, head_dim):
    x = data.draw(arrays(np.float32, (batch, T, num_heads * head_dim), elements=finite))
    heads = A.split_heads(x, num_heads)
    assert heads.shape == (batch, num_heads, T, head_dim)
    np.testing.assert_array_equal(A.merge_heads(heads), x)
    np.testing.assert_array_equal(heads[:, -1], x[..., (num_heads - 1) * head_dim :])


any_float32 = st.floats(-1e4, 1e4, width=32)  # scores and features of any size a lesson meets


@given(
    arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 6)), elements=any_float32),
    st.floats(min_value=1e-3, max_value=1e3),
)
def test_softmax_of_any_finite_float32_is_finite_without_warnings(x, temperature):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        weights = A.softmax(x, temperature=temperature)
    assert weights.dtype == np.float32 and np.isfinite(weights).all() and (weights >= 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)


@given(arrays(np.float32, (3, 2), elements=any_float32), st.floats(min_value=1e-3, max_value=1e3))
def test_attention_of_any_finite_float32_is_finite_without_warnings(x, scale):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context, weights = A.scaled_dot_product_attention(x, x, x, scale=scale)
    assert weights.dtype == context.dtype == np.float32
    assert np.isfinite(weights).all() and np.isfinite(context).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
