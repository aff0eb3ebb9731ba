"""attn_helpers.positions: word order, absolute positions (sinusoidal, learned), RoPE, ALiBi.

Unit tests against independent loop references (math.sin, explicit 2x2 rotation matrices), and
hypothesis properties: attention without positions is permutation equivariant, positions break
that; RoPE scores depend only on the offset; rotations keep norms; PE[p] . PE[p + k] depends only on k.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attn_helpers as A
from attn_helpers.examples import dog_bites_man

PROPERTIES = settings(max_examples=60, deadline=None, derandomize=True)
values = st.floats(-3, 3, allow_nan=False, width=32)


def matrices(rows, cols, elements=values, dtype=np.float32):
    return arrays(dtype, (rows, cols), elements=elements)


# --- independent references: plain loops ------------------------------------------------------------


def pe_reference(T, d_model, base=10000.0):
    pe = [[0.0] * d_model for _ in range(T)]
    for pos in range(T):
        for i in range(0, d_model, 2):
            angle = pos / base ** (i / d_model)  # i is 2 * (pair index)
            pe[pos][i] = math.sin(angle)
            if i + 1 < d_model:
                pe[pos][i + 1] = math.cos(angle)
    return np.array(pe).reshape(T, d_model)


def rope_reference(x, positions, base=10000.0):
    """Rotate each adjacent pair (2i, 2i+1) of each row with an explicit 2 x 2 rotation matrix."""
    x = np.asarray(x, dtype=np.float64)
    out = np.empty_like(x)
    d = x.shape[-1]
    for t, p in enumerate(positions):
        for i in range(d // 2):
            theta = p * base ** (-2 * i / d)
            rotation = np.array([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])
            out[t, 2 * i : 2 * i + 2] = rotation @ x[t, 2 * i : 2 * i + 2]
    return out


def rope_half_split_reference(x, positions, base=10000.0):
    """The GPT-NeoX / Hugging Face layout: feature i is paired with feature i + d/2 (``rotate_half``)."""
    x = np.asarray(x, dtype=np.float64)
    d = x.shape[-1]
    omega = base ** (-np.arange(0, d, 2) / d)  # (d/2,)
    angle = np.asarray(positions, dtype=np.float64)[:, None] * omega  # (T, d/2)
    cos, sin = np.cos(np.concatenate([angle, angle], -1)), np.sin(np.concatenate([angle, angle], -1))
    rotate_half = np.concatenate([-x[:, d // 2 :], x[:, : d // 2]], -1)
    return x * cos + rotate_half * sin


def self_attention(example, with_positions):
    def attend(X):
        if with_positions:
            X = X + A.positional_encoding(len(X), X.shape[-1])
        context, _ = A.scaled_dot_product_attention(X @ example["W_q"], X @ example["W_k"], X @ example["W_v"])
        return context

    return attend


# --- sinusoidal encoding ----------------------------------------------------------------------------------


@pytest.mark.parametrize("T, d_model", [(1, 2), (10, 6), (7, 5), (50, 64), (0, 4)])
def test_positional_encoding_matches_loop_reference(T, d_model):
    pe = A.positional_encoding(T, d_model)
    assert pe.shape == (T, d_model) and pe.dtype == np.float32
    np.testing.assert_allclose(pe, pe_reference(T, d_model), atol=2e-7)
    np.testing.assert_allclose(A.positional_encoding(T, d_model, dtype=np.float64, base=100.0),
                               pe_reference(T, d_model, base=100.0), atol=1e-12)


def test_positional_encoding_is_bounded_and_row_norm_is_fixed():
    pe = A.positional_encoding(200, 32, dtype=np.float64)
    assert np.abs(pe).max() <= 1.0
    np.testing.assert_allclose(np.linalg.norm(pe, axis=1), np.sqrt(32 / 2))  # 16 points on unit circles


@pytest.mark.parametrize("dtype", [str, int, bool, "int8", np.complex64, object])
def test_positional_encoding_rejects_non_float_dtype(dtype):
    with pytest.raises(TypeError, match="dtype"):
        A.positional_encoding(3, 4, dtype=dtype)


def test_positional_encoding_bad_sizes_name_the_argument():
    with pytest.raises(TypeError, match="T"):
        A.positional_encoding(2.5, 4)
    with pytest.raises(ValueError, match="d_model"):
        A.positional_encoding(3, 0)
    with pytest.raises(ValueError, match="base"):
        A.positional_encoding(3, 4, base=0)
    with pytest.raises(TypeError, match="base"):
        A.positional_encoding(3, 4, base="10000")


def test_frequencies_are_the_paper_exponents():
    omega = A.frequencies(8)
    np.testing.assert_allclose(omega, [1.0, 10000 ** -0.25, 10000 ** -0.5, 10000 ** -0.75])
    assert A.frequencies(5).shape == (3,)


@PROPERTIES
@given(st.integers(2, 64), st.integers(0, 40), st.integers(0, 40), st.integers(0, 40))
def test_pe_dot_product_depends_only_on_the_offset(d_half, p, q, k):
    d_model = 2 * d_half
    pe = A.positional_encoding(max(p, q) + k + 1, d_model, dtype=np.float64)
    assert pe[p] @ pe[p + k] == pytest.approx(pe[q] @ pe[q + k], abs=1e-9)
    assert pe[p] @ pe[p + k] == pytest.approx(np.cos(k * A.frequencies(d_model)).sum(), abs=1e-9)


# --- learned positions ------------------------------------------------------------------------------------


def test_learned_positions_is_a_row_lookup_and_stops_at_max_len():
    table = np.arange(12.0, dtype=np.float32).reshape(4, 3)
    rows = A.learned_positions(table, 3)
    np.testing.assert_array_equal(rows, table[:3])
    np.testing.assert_array_equal(np.eye(4)[:3] @ table, rows)  # one-hot positions @ table
    assert rows.dtype == np.float32
    assert A.learned_positions(table, 0).shape == (0, 3)
    with pytest.raises(ValueError, match=r"max_len = 4.*positions 4 to 5"):
        A.learned_positions(table, 6)
    with pytest.raises(ValueError, match="table"):
        A.learned_positions(np.zeros((2, 3, 4)), 1)
    with pytest.raises(TypeError, match="T"):
        A.learned_positions(table, 2.0)


# --- RoPE -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("T, d, base", [(1, 2, 10000.0), (5, 8, 10000.0), (9, 6, 100.0)])
def test_rope_matches_rotation_matrix_reference(T, d, base):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, d))
    positions = rng.uniform(-20, 20, T)
    np.testing.assert_allclose(A.rope(x, positions, base=base), rope_reference(x, positions, base), atol=1e-12)
    np.testing.assert_allclose(A.rope(x, base=base), rope_reference(x, range(T), base), atol=1e-12)


def test_rope_half_split_layout_is_the_same_rotation_on_permuted_features():
    """The docstring's claim: interleaved and half-split pairing differ by a fixed feature permutation."""
    rng = np.random.default_rng(1)
    T, d = 6, 8
    x = rng.standard_normal((T, d))
    positions = np.arange(T)
    to_interleaved = np.ravel(np.column_stack([np.arange(d // 2), np.arange(d // 2) + d // 2]))  # 0, 4, 1, 5, ...
    half = rope_half_split_reference(x, positions)
    np.testing.assert_allclose(A.rope(x[:, to_interleaved], positions), half[:, to_interleaved], atol=1e-12)
    assert not np.allclose(A.rope(x, positions), half)  # but not interchangeable on the same features


def test_rope_dtype_batches_and_errors():
    x32 = np.ones((2, 3, 4, 6), dtype=np.float32)  # (B, h, T, d_h)
    out = A.rope(x32)
    assert out.shape == x32.shape and out.dtype == np.float32
    np.testing.assert_allclose(out[1, 2], A.rope(x32[0, 0]), atol=1e-6)  # same positions for every head
    per_sequence = A.rope(x32[:, 0], positions=np.array([[0, 1, 2, 3], [5, 6, 7, 8]]))  # (B, T) positions
    np.testing.assert_allclose(per_sequence[1], A.rope(x32[1, 0], positions=[5, 6, 7, 8]), atol=1e-6)
    np.testing.assert_array_equal(A.rope(x32[0, 0], positions=np.zeros(4)), x32[0, 0])  # position 0: no rotation
    with pytest.raises(ValueError, match=r"even number of features.*\(3, 5\)"):
        A.rope(np.ones((3, 5)))
    with pytest.raises(ValueError, match="positions"):
        A.rope(np.ones((3, 4)), positions=[0, 1])
    with pytest.raises(ValueError, match="x must have shape"):
        A.rope(np.ones(4))
    with pytest.raises(TypeError, match="x"):
        A.rope("abc")
    with pytest.raises(ValueError, match="positions"):
        A.rope(np.ones((3, 4)), positions=[0, 1, np.nan])


@PROPERTIES
@given(st.data(), st.integers(1, 4), st.integers(1, 6))
def test_rope_score_depends_only_on_the_offset(data, T, d_half):
    d = 2 * d_half
    q = data.draw(matrices(T, d, dtype=np.float64))
    k = data.draw(matrices(T, d, dtype=np.float64))
    m, n, shift = (data.draw(st.integers(-50, 50)) for _ in range(3))
    scores = A.rope(q, np.full(T, m)) @ A.rope(k, np.full(T, n)).T  # every query at m, every key at n
    shifted = A.rope(q, np.full(T, m + shift)) @ A.rope(k, np.full(T, n + shift)).T
    np.testing.assert_allclose(shifted, scores, atol=1e-9)
    np.testing.assert_allclose(scores, q @ A.rope(k, np.full(T, n - m)).T, atol=1e-9)  # R_m q . R_n k = q . R_{n-m} k


@PROPERTIES
@given(st.data(), st.integers(1, 5), st.integers(1, 8))
def test_rope_preserves_norms(data, T, d_half):
    x = data.draw(matrices(T, 2 * d_half))
    positions = data.draw(arrays(np.float64, T, elements=st.floats(-1e3, 1e3)))
    rotated = A.rope(x, positions)
    assert rotated.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-5, atol=1e-5)


# --- ALiBi ------------------------------------------------------------------------------------------------


def test_alibi_slopes_follow_the_paper():
    np.testing.assert_allclose(A.alibi_slopes(8), [2.0 ** -k for k in range(1, 9)])
    np.testing.assert_allclose(A.alibi_slopes(2), [2.0 ** -4, 2.0 ** -8])
    # 12 heads (not a power of two): the 8-head slopes, then every other slope of the 16-head sequence
    np.testing.assert_allclose(A.alibi_slopes(12), [2.0 ** -k for k in range(1, 9)] + [2.0 ** -k for k in
                                                                                         (0.5, 1.5, 2.5, 3.5)])
    with pytest.raises(ValueError, match="num_heads"):
        A.alibi_slopes(0)


def test_alibi_bias_is_minus_slope_times_distance():
    bias = A.alibi_bias(5, 4)
    assert bias.shape == (4, 5, 5) and bias.dtype == np.float32
    slopes = A.alibi_slopes(4)
    for h in range(4):
        for i in range(5):
            for j in range(5):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * abs(i - j))
    assert not np.signbit(np.diagonal(bias, axis1=1, axis2=2)).any()  # 0, not -0


# --- permutations -----------------------------------------------------------------------------------------


def test_permutation_matrix_and_inverse():
    order = [2, 0, 3, 1]
    P = A.permutation_matrix(order)
    X = np.arange(8.0).reshape(4, 2)
    np.testing.assert_array_equal(P @ X, X[order])
    np.testing.assert_array_equal(P.T @ (P @ X), X)
    np.testing.assert_array_equal(X[order][A.inverse_permutation(order)], X)
    with pytest.raises(ValueError, match="exactly once"):
        A.permutation_matrix([0, 0, 1])
    with pytest.raises(TypeError, match="order"):
        A.inverse_permutation([0.0, 1.0])
    with pytest.raises(ValueError, match="one entry per token"):
        A.order_sensitivity(lambda X: X, X, [0, 1])


@PROPERTIES
@given(st.data(), st.integers(2, 6), st.integers(1, 6))
def test_attention_without_positions_is_permutation_equivariant(data, T, d):
    X = data.draw(matrices(T, d, dtype=np.float64))
    W_q, W_k, W_v = (data.draw(matrices(d, d, dtype=np.float64)) for _ in range(3))
    order = np.array(data.draw(st.permutations(range(T))))
    P = A.permutation_matrix(order)
    attend = self_attention({"W_q": W_q, "W_k": W_k, "W_v": W_v}, with_positions=False)
    np.testing.assert_allclose(attend(P @ X), P @ attend(X), atol=1e-9)  # attention(P X) = P attention(X)
    np.testing.assert_allclose(A.order_sensitivity(attend, X, order), 0.0, atol=1e-9)


@PROPERTIES
@given(st.data(), st.integers(2, 6))
def test_positions_break_permutation_equivariance(data, T):
    """With sinusoidal positions added, any reordering changes some token's output (distinct random tokens)."""
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    d = 16
    X = rng.standard_normal((T, d))
    example = {name: rng.standard_normal((d, d)) / np.sqrt(d) for name in ("W_q", "W_k", "W_v")}
    order = np.array(data.draw(st.permutations(range(T)).filter(lambda o: list(o) != sorted(o))))
    change = A.order_sensitivity(self_attention(example, with_positions=True), X, order)
    assert change.max() > 1e-3
    np.testing.assert_allclose(A.order_sensitivity(self_attention(example, with_positions=False), X, order), 0.0,
                               atol=1e-9)


def test_dog_bites_man_every_reordering():
    """The notebook's claim on the real example: without positions nothing moves; with them every word does."""
    example = dog_bites_man()
    X = example["X"]
    for order in ([0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]):
        assert A.order_sensitivity(self_attention(example, False), X, order).max() < 1e-5
        assert A.order_sensitivity(self_attention(example, True), X, order).min() > 0.05


def test_order_sensitivity_reads_the_context_of_an_attend_that_returns_context_and_weights():
    X = np.random.default_rng(3).standard_normal((4, 3))
    with_weights = A.order_sensitivity(lambda X: A.scaled_dot_product_attention(X, X, X), X, [3, 1, 0, 2])
    context_only = A.order_sensitivity(lambda X: A.scaled_dot_product_attention(X, X, X)[0], X, [3, 1, 0, 2])
    np.testing.assert_array_equal(with_weights, context_only)
    assert with_weights.max() < 1e-12  # attention without positions: no order
    with pytest.raises(ValueError, match=r"attend\(X\) must give one output row per token"):
        A.order_sensitivity(lambda X: X.sum(axis=0, keepdims=True), X, [3, 1, 0, 2])
