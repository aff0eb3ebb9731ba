"""Unit tests of the numpy core with hand-computed expectations and an independent reference."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest
from reference import attention_ref, multi_head_ref, softmax_ref

import attn_helpers as A


# --- softmax ---------------------------------------------------------------------------------
def test_softmax_hand_computed():
    # softmax([0, ln 3]) = [1, 3] / 4
    np.testing.assert_allclose(A.softmax([0.0, math.log(3.0)]), [0.25, 0.75])
    np.testing.assert_allclose(A.softmax([[1.0, 1.0, 1.0]]), [[1 / 3] * 3])


def test_softmax_extreme_logits_are_stable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(A.softmax([1000.0, 1000.0]), [0.5, 0.5])
        out = A.softmax([-1e4, 0.0, 1e4])
    np.testing.assert_array_equal(out, [0.0, 0.0, 1.0])


@pytest.mark.parametrize(
    "logits, temperature, expected",
    [
        ([1.0, 2.0], 1e-30, [0.0, 1.0]),  # a tiny temperature: the largest score takes everything
        ([1000.0, 1000.0, 0.0], 1.0, [0.5, 0.5, 0.0]),  # e^1000 would overflow: the max is subtracted first
    ],
)
def test_softmax_float32_extremes_without_warnings(logits, temperature, expected):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = A.softmax(np.array(logits, dtype=np.float32), temperature=temperature)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("dtype, temperature", [(np.float32, 1e-50), (np.float32, 1e-40), (np.float64, 1e-320),
                                                 (np.float64, 1e-300)])
def test_softmax_below_the_float_range_gives_the_cold_limit(dtype, temperature):
    # tau -> 0 (notebook 03): all weight on the largest score, shared equally by ties; never NaN, no warning.
    scores = np.random.default_rng(0).normal(size=(6, 5)).astype(dtype)
    scores[1, [0, 3]] = scores[1].max() + 1  # a tie
    scores[2] = -np.inf  # fully masked
    scores[3, :2] = -np.inf
    expected = np.zeros_like(scores)
    for i, row in enumerate(scores):
        winners = [j for j, value in enumerate(row) if value == max(row) and value > -np.inf]
        expected[i, winners] = 1 / len(winners) if winners else 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = A.softmax(scores, temperature=temperature)
        np.testing.assert_array_equal(A.softmax(scores.T, axis=0, temperature=temperature), out.T)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, expected)


def test_softmax_axis_and_temperature():
    x = np.array([[1.0, 2.0], [3.0, 5.0]])
    np.testing.assert_allclose(A.softmax(x, axis=0).sum(axis=0), [1.0, 1.0])
    np.testing.assert_allclose(A.softmax(x, axis=0), A.softmax(x.T, axis=-1).T)
    # temperature 2 == halving the logits
    np.testing.assert_allclose(A.softmax(x, temperature=2.0), A.softmax(x / 2.0))


def test_softmax_does_not_modify_input_and_keeps_float32():
    x = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    before = x.copy()
    out = A.softmax(x)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(x, before)


def test_softmax_all_masked_row_is_zero():
    out = A.softmax([[-np.inf, -np.inf], [0.0, -np.inf]])
    np.testing.assert_array_equal(out, [[0.0, 0.0], [1.0, 0.0]])


def test_softmax_matches_reference():
    rng = np.random.default_rng(1)
    x = rng.normal(scale=5, size=(4, 7))
    expected = np.array([softmax_ref(row) for row in x.tolist()])
    np.testing.assert_allclose(A.softmax(x), expected, rtol=1e-12)


# --- scores, attention -----------------------------------------------------------------------
def test_attention_scores_hand_computed():
    q = [[1.0, 2.0]]
    k = [[3.0, 4.0], [-1.0, 0.5]]
    np.testing.assert_allclose(A.attention_scores(q, k), [[11.0, 0.0]])


def test_sdpa_hand_computed():
    # q = k = [[1, 0], [0, 1]], scale 1/sqrt(2): scores [[s, 0], [0, s]], s = 1/sqrt(2)
    x = np.eye(2)
    context, weights = A.scaled_dot_product_attention(x, x, [[10.0], [20.0]])
    e = math.exp(1 / math.sqrt(2))
    p = e / (e + 1)
    np.testing.assert_allclose(weights, [[p, 1 - p], [1 - p, p]])
    np.testing.assert_allclose(context, [[10 * p + 20 * (1 - p)], [10 * (1 - p) + 20 * p]])


@pytest.mark.parametrize("t_q,t_k,d_k,d_v", [(1, 1, 1, 1), (3, 5, 4, 2), (7, 7, 8, 8), (40, 33, 16, 3)])
def test_sdpa_matches_reference(t_q, t_k, d_k, d_v):
    rng = np.random.default_rng(t_q * 100 + t_k)
    q, k, v = rng.normal(size=(t_q, d_k)), rng.normal(size=(t_k, d_k)), rng.normal(size=(t_k, d_v))
    mask = rng.random((t_q, t_k)) > 0.3
    for m in (None, mask):
        context, weights = A.scaled_dot_product_attention(q, k, v, mask=m)
        ref_context, ref_weights = attention_ref(q, k, v, mask=m)
        np.testing.assert_allclose(weights, ref_weights, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(context, ref_context, rtol=1e-10, atol=1e-12)


def test_sdpa_float32_in_float32_out_and_batches():
    rng = np.random.default_rng(2)
    q = rng.standard_normal((2, 3, 5, 4), dtype=np.float32)
    context, weights = A.scaled_dot_product_attention(q, q, q, mask=A.causal_mask(5))
    assert context.dtype == weights.dtype == np.float32
    assert context.shape == (2, 3, 5, 4) and weights.shape == (2, 3, 5, 5)
    for b in range(2):
        for h in range(3):
            ref_context, ref_weights = attention_ref(q[b, h], q[b, h], q[b, h], mask=A.causal_mask(5))
            np.testing.assert_allclose(weights[b, h], ref_weights, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(context[b, h], ref_context, rtol=1e-5, atol=1e-5)


def test_sdpa_large_sequence_spans_several_blocks():
    # long enough that the kernel works on several blocks of query rows
    rng = np.random.default_rng(3)
    q = rng.standard_normal((2, 300, 8), dtype=np.float32)
    k = rng.standard_normal((2, 2000, 8), dtype=np.float32)
    v = rng.standard_normal((2, 2000, 3), dtype=np.float32)
    context, weights = A.scaled_dot_product_attention(q, k, v)
    scores = np.einsum("bqd,bkd->bqk", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(8)
    expected = np.exp(scores - scores.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    np.testing.assert_allclose(weights, expected, rtol=1e-4, atol=1e-7)
    np.testing.assert_allclose(context, expected @ v, rtol=1e-4, atol=1e-5)


def test_fully_masked_row_gives_zero_weights_and_context_without_warning():
    rng = np.random.default_rng(4)
    q = rng.standard_normal((3, 4), dtype=np.float32)
    mask = np.array([[False, False, False], [True, False, True], [True, True, True]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context, weights = A.scaled_dot_product_attention(q, q, q, mask=mask)
    assert not np.isnan(weights).any() and not np.isnan(context).any()
    np.testing.assert_array_equal(weights[0], 0.0)
    np.testing.assert_array_equal(context[0], 0.0)
    assert weights[1, 1] == 0.0
    np.testing.assert_allclose(weights[1:].sum(-1), 1.0, rtol=1e-6)


def test_mask_broadcasts_over_batch_and_padding_mask():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 4, 3))
    mask = A.padding_mask([4, 2], 4)  # (2, 1, 4)
    context, weights = A.scaled_dot_product_attention(x, x, x, mask=mask)
    assert weights.shape == (2, 4, 4)
    np.testing.assert_array_equal(weights[1, :, 2:], 0.0)
    ref_context, ref_weights = attention_ref(x[1], x[1], x[1], mask=np.broadcast_to(mask[1], (4, 4)))
    np.testing.assert_allclose(weights[1], ref_weights, atol=1e-12)


def test_scale_one_is_unscaled_attention():
    from attn_helpers.examples import journey_embeddings

    x = journey_embeddings(np.float64)
    _, weights = A.scaled_dot_product_attention(x, x, x, scale=1.0)
    np.testing.assert_allclose(weights, A.softmax(x @ x.T), rtol=1e-12)


# --- masks, encodings, similarity ------------------------------------------------------------
def test_sdpa_with_no_features_names_d_k():
    with pytest.raises(ValueError, match=r"queries of shape \(2, 0\).*d_k = 0"):
        A.scaled_dot_product_attention(np.zeros((2, 0)), np.zeros((3, 0)), np.ones((3, 4)))


def test_causal_mask():
    np.testing.assert_array_equal(A.causal_mask(3), [[1, 0, 0], [1, 1, 0], [1, 1, 1]])
    assert A.causal_mask(4).dtype == bool
    assert A.causal_mask(0).shape == (0, 0)


def test_positional_encoding_matches_paper_formula():
    T, d_model = 10, 6
    pe = A.positional_encoding(T, d_model)
    assert pe.shape == (T, d_model) and pe.dtype == np.float32
    for pos in range(T):
        for i in range(d_model // 2):
            angle = pos / 10000 ** (2 * i / d_model)
            assert pe[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    assert A.positional_encoding(3, 5).shape == (3, 5)  # odd d_model: the last feature is a sin


def test_cosine_similarity():
    np.testing.assert_allclose(A.cosine_similarity([1.0, 1.0], [[2.0, 2.0], [1.0, -1.0], [0.0, 0.0]]), [1.0, 0.0, 0.0])
    assert A.cosine_similarity([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)


def test_entropy():
    assert A.entropy([0.25] * 4) == pytest.approx(math.log(4))
    assert A.entropy([1.0, 0.0, 0.0]) == 0.0


# --- multi-head ------------------------------------------------------------------------------
def test_split_merge_heads_layout():
    x = np.arange(12.0).reshape(2, 6)  # T=2, d_model=6
    heads = A.split_heads(x, 3)
    assert heads.shape == (3, 2, 2)
    np.testing.assert_array_equal(heads[1], x[:, 2:4])  # head 1 takes features [2:4]
    np.testing.assert_array_equal(A.merge_heads(heads), x)


@pytest.mark.parametrize("num_heads", [1, 2, 4])
def test_multi_head_attention_matches_reference(num_heads):
    rng = np.random.default_rng(num_heads)
    T, d_model = 6, 8
    x = rng.normal(size=(T, d_model))
    W_q, W_k, W_v = rng.normal(size=(3, d_model, d_model)) / 3
    W_o = rng.normal(size=(d_model, 5))
    for mask in (None, A.causal_mask(T)):
        out, weights = A.multi_head_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=mask)
        ref_out, ref_weights = multi_head_ref(x, W_q, W_k, W_v, W_o, num_heads, mask=mask)
        assert out.shape == (T, 5) and weights.shape == (num_heads, T, T)
        np.testing.assert_allclose(weights, ref_weights, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-10)


def test_multi_head_attention_batched_float32():
    rng = np.random.default_rng(7)
    x = rng.standard_normal((3, 5, 8), dtype=np.float32)
    ws = rng.standard_normal((4, 8, 8), dtype=np.float32) / 3
    out, weights = A.multi_head_attention(x, *ws, num_heads=2, mask=A.causal_mask(5))
    assert out.dtype == weights.dtype == np.float32
    assert out.shape == (3, 5, 8) and weights.shape == (3, 2, 5, 5)
    for b in range(3):
        single, single_w = A.multi_head_attention(x[b], *ws, num_heads=2, mask=A.causal_mask(5))
        np.testing.assert_allclose(out[b], single, rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(weights[b], single_w, rtol=1e-5, atol=1e-6)


def test_importing_the_core_does_not_import_plotting_or_widgets():
    code = ("import sys, attn_helpers, attn_helpers.checks, attn_helpers.glove; "
            "print('matplotlib' in sys.modules, 'ipywidgets' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_multi_head_attention_with_biases_matches_the_loop_reference():
    """Biases (as in PyTorch's nn.MultiheadAttention, GPT-2, BERT) = the same heads on shifted projections."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 8))
    W_q, W_k, W_v, W_o = rng.standard_normal((4, 8, 8))
    b_q, b_k, b_v, b_o = rng.standard_normal((4, 8))
    out, weights = A.multi_head_attention(x, W_q, W_k, W_v, W_o, 2, biases=(b_q, b_k, b_v, b_o))
    # A bias on a projection is a weight on a constant feature 1: append it to x.
    x1 = np.concatenate([x, np.ones((6, 1))], axis=1)
    stack = [np.vstack([w, b]) for w, b in ((W_q, b_q), (W_k, b_k), (W_v, b_v))]
    ref_out, ref_weights = multi_head_ref(x1, *stack, W_o, 2)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-10)
    np.testing.assert_allclose(out, ref_out + b_o, rtol=1e-10)


@pytest.mark.parametrize("name", ["b_q", "b_k", "b_v", "b_o"])
def test_multi_head_attention_bias_of_the_wrong_shape_is_named(name):
    x = np.ones((3, 4))
    w = np.ones((4, 4))
    with pytest.raises(ValueError, match=rf"{name} has shape \(3,\); expected \(4,\)"):
        biases = tuple(np.ones(3) if b == name else None for b in ("b_q", "b_k", "b_v", "b_o"))
        A.multi_head_attention(x, w, w, w, w, 2, biases=biases)


def test_multi_head_attention_names_the_mask_shape_it_was_given():
    x = np.ones((3, 4))
    w = np.ones((4, 4))
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast"):
        A.multi_head_attention(x, w, w, w, w, 2, mask=np.ones((4, 4), bool))
