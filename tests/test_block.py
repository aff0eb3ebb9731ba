"""Tests of the transformer block helpers against loop references, hand values and properties."""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from reference import multi_head_ref
from reference_block import (
    attention_layer_ref,
    feed_forward_ref,
    gelu_ref,
    layer_norm_ref,
    transformer_block_ref,
)

import attn_helpers as A
from attn_helpers.examples import GPT2_SMALL

settings.register_profile("ci", max_examples=60, deadline=None, derandomize=True)
settings.load_profile("ci")


def _random(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# --- layer norm ------------------------------------------------------------------------------
def test_layer_norm_hand_computed():
    # [1, 2, 3]: mean 2, variance 2/3 -> (x - 2) / sqrt(2/3) = [-1.2247, 0, 1.2247]
    out = A.layer_norm([[1.0, 2.0, 3.0]], eps=1e-300)
    np.testing.assert_allclose(out, [[-math.sqrt(1.5), 0.0, math.sqrt(1.5)]], rtol=1e-12)


@pytest.mark.parametrize("eps", [1e-5, 1e-12, 0.5])
@pytest.mark.parametrize("affine", [False, True])
def test_layer_norm_matches_the_loop_reference(eps, affine):
    x = _random((5, 7), seed=1) * 3 + 1
    gamma, beta = (_random(7, seed=2), _random(7, seed=3)) if affine else (None, None)
    np.testing.assert_allclose(A.layer_norm(x, gamma, beta, eps), layer_norm_ref(x, gamma, beta, eps), rtol=1e-12,
                               atol=1e-12)


def test_layer_norm_is_per_token_over_features_on_any_batch_shape():
    x = _random((2, 3, 4, 6), seed=4, dtype=np.float32)
    out = A.layer_norm(x)
    assert out.shape == x.shape and out.dtype == np.float32
    for index in np.ndindex(*x.shape[:-2]):
        np.testing.assert_allclose(out[index], layer_norm_ref(x[index]), rtol=1e-5, atol=1e-6)


def test_layer_norm_constant_token_gives_zeros_and_float32_extremes_stay_quiet():
    big = np.finfo(np.float32).max
    x = np.array([[5.0, 5.0, 5.0], [big, -big, 0.0], [1e-30, -1e-30, 0.0]], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = A.layer_norm(x, eps=1e-12)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    np.testing.assert_array_equal(out[0], [0.0, 0.0, 0.0])
    np.testing.assert_allclose(out[1], [math.sqrt(1.5), -math.sqrt(1.5), 0.0], rtol=1e-6)
    # variance 6.7e-61 is far below eps: the tiny token is not blown up to unit variance
    np.testing.assert_allclose(out[2], [0.0, 0.0, 0.0], atol=1e-20)


@given(st.data(), st.integers(1, 5), st.integers(2, 12))
def test_layer_norm_gives_each_token_mean_zero_and_variance_one(data, T, d):
    x = data.draw(arrays(np.float32, (T, d), elements=st.floats(-1e3, 1e3, width=32)))
    x = x + np.arange(d, dtype=np.float32)  # mostly non-constant tokens (a constant one gives 0 and 0: fine)
    out = A.layer_norm(x)
    variance = x.astype(np.float64).var(axis=-1)
    np.testing.assert_allclose(out.mean(axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(out.astype(np.float64).var(axis=-1), variance / (variance + 1e-5), rtol=1e-5)


@given(st.data(), st.integers(2, 5), st.integers(2, 8))
def test_layer_norm_of_a_token_ignores_the_other_tokens(data, T, d):
    x = data.draw(arrays(np.float64, (T, d), elements=st.floats(-100, 100)))
    changed = x.copy()
    changed[1:] = data.draw(arrays(np.float64, (T - 1, d), elements=st.floats(-100, 100)))
    np.testing.assert_array_equal(A.layer_norm(changed)[0], A.layer_norm(x)[0])


def test_layer_norm_per_feature_is_a_different_thing():
    # the classic mistake (axis=0): the tokens' statistics get mixed, and the result changes
    x = _random((4, 6), seed=5)
    wrong = (x - x.mean(axis=0)) / np.sqrt(x.var(axis=0) + 1e-5)
    assert not np.allclose(A.layer_norm(x), wrong)
    np.testing.assert_allclose(A.layer_norm(x.T).T, wrong, rtol=1e-12)


# --- GELU ------------------------------------------------------------------------------------
def test_gelu_exact_matches_math_erf_to_float32_precision():
    x = np.concatenate([np.linspace(-12, 12, 4001), [-40.0, -1e-8, 0.0, 1e-8, 40.0]])
    expected = np.array([gelu_ref(v) for v in x])
    out = A.gelu(x)
    assert out.dtype == np.float64
    np.testing.assert_allclose(out, expected, rtol=1.2e-7, atol=1e-300)


def test_gelu_tanh_matches_its_formula_and_is_close_to_exact():
    x = np.linspace(-8, 8, 1601)
    approx = A.gelu(x, approximate=True)
    np.testing.assert_allclose(approx, [gelu_ref(v, approximate=True) for v in x], rtol=1e-13, atol=1e-15)
    assert np.abs(approx - A.gelu(x)).max() < 1e-3


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_hand_values_and_symmetry(approximate):
    x = np.array([-3.0, -1.0, -0.5, 0.0, 0.5, 1.0, 3.0])
    out = A.gelu(x, approximate=approximate)
    # x Phi(x) - (-x) Phi(-x) = x (Phi(x) + 1 - Phi(x)) = x
    np.testing.assert_allclose(out - A.gelu(-x, approximate=approximate), x, atol=1e-7)
    assert out[3] == 0.0
    if not approximate:
        np.testing.assert_allclose(out[5], 0.8413447460685429, rtol=1e-7)  # Phi(1), from tables


@pytest.mark.parametrize("approximate", [False, True])
def test_gelu_float32_and_extremes(approximate):
    big = np.finfo(np.float32).max
    x = np.array([-big, -1e20, -50.0, 50.0, 1e20, big], dtype=np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = A.gelu(x, approximate=approximate)
    assert out.dtype == np.float32 and np.isfinite(out).all()
    np.testing.assert_array_equal(out, np.array([0.0, 0.0, 0.0, 50.0, 1e20, big], dtype=np.float32))
    assert A.gelu(np.float32(1.0)).dtype == np.float32


def test_gelu_bad_approximate():
    with pytest.raises(TypeError, match="approximate must be True"):
        A.gelu([1.0], approximate="tanh")


# --- feed-forward ----------------------------------------------------------------------------
@pytest.mark.parametrize("activation", ["gelu", "gelu_tanh", "relu"])
@pytest.mark.parametrize("bias", [False, True])
def test_feed_forward_matches_the_loop_reference(activation, bias):
    x, W_1, W_2 = _random((4, 6), 6), _random((6, 24), 7), _random((24, 6), 8)
    b_1, b_2 = (_random(24, 9), _random(6, 10)) if bias else (None, None)
    np.testing.assert_allclose(A.feed_forward(x, W_1, W_2, b_1, b_2, activation),
                               feed_forward_ref(x, W_1, W_2, b_1, b_2, activation), rtol=1e-6, atol=1e-9)


@given(st.data(), st.integers(2, 6))
def test_feed_forward_is_position_wise(data, T):
    x = data.draw(arrays(np.float32, (T, 4), elements=st.floats(-3, 3, width=32)))
    perm = np.array(data.draw(st.permutations(range(T))))
    W_1, W_2 = _random((4, 16), 11, np.float32), _random((16, 4), 12, np.float32)
    np.testing.assert_allclose(A.feed_forward(x[perm], W_1, W_2), A.feed_forward(x, W_1, W_2)[perm], rtol=1e-6)


def test_feed_forward_shapes_and_errors():
    x = _random((2, 3, 4), 13, np.float32)
    W_1, W_2 = _random((4, 16), 14, np.float32), _random((16, 5), 15, np.float32)
    out = A.feed_forward(x, W_1, W_2)
    assert out.shape == (2, 3, 5) and out.dtype == np.float32
    with pytest.raises(ValueError, match=r"W_1 has shape \(5, 16\); expected \(4, d_out\)"):
        A.feed_forward(x, _random((5, 16)), W_2)
    with pytest.raises(ValueError, match=r"W_2 has shape \(15, 5\); expected \(16, d_out\)"):
        A.feed_forward(x, W_1, _random((15, 5)))
    with pytest.raises(ValueError, match=r"b_1 has shape \(4,\); expected \(16,\)"):
        A.feed_forward(x, W_1, W_2, b_1=np.zeros(4))
    with pytest.raises(ValueError, match="activation must be one of"):
        A.feed_forward(x, W_1, W_2, activation="swish")


# --- block parameters ------------------------------------------------------------------------
def test_init_block_params_is_deterministic_and_shaped():
    a, b = A.init_block_params(8, 2), A.init_block_params(8, 2)
    np.testing.assert_array_equal(a.W_q, b.W_q)
    assert not np.array_equal(a.W_q, A.init_block_params(8, 2, rng=1).W_q)
    p = A.init_block_params(8, 4, d_ff=20, bias=True, dtype=np.float64)
    assert (p.d_model, p.d_ff, p.num_heads) == (8, 20, 4)
    assert p.W_2.shape == (20, 8) and p.b_1.shape == (20,) and p.W_o.dtype == np.float64
    assert p.b_q is not None and A.init_block_params(8, 2).b_q is None
    np.testing.assert_array_equal(p.norm_1_gamma, np.ones(8))


def test_block_params_are_checked_when_made():
    p = A.init_block_params(8, 2)
    with pytest.raises(ValueError, match=r"W_k has shape \(8, 6\); expected \(8, 8\)"):
        dataclasses.replace(p, W_k=np.zeros((8, 6)))
    with pytest.raises(ValueError, match=r"W_2 has shape \(32, 6\); expected \(32, 8\)"):
        dataclasses.replace(p, W_2=np.zeros((32, 6)))
    with pytest.raises(ValueError, match=r"norm_2_beta has shape \(7,\); expected \(8,\)"):
        dataclasses.replace(p, norm_2_beta=np.zeros(7))
    with pytest.raises(ValueError, match="divisible by num_heads=3"):
        dataclasses.replace(p, num_heads=3)
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        dataclasses.replace(p, eps=0.0)
    with pytest.raises(ValueError, match="activation must be one of"):
        dataclasses.replace(p, activation="tanh")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.num_heads = 4


# --- the block -------------------------------------------------------------------------------
@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_transformer_block_matches_the_loop_reference(norm_first, bias, causal):
    p = A.init_block_params(8, 2, d_ff=12, rng=3, bias=bias, dtype=np.float64)
    if bias:  # non-zero biases, gammas and betas, so that each of them is tested
        rng = np.random.default_rng(4)
        p = dataclasses.replace(p, **{name: rng.standard_normal(getattr(p, name).shape) for name in (
            "b_q", "b_k", "b_v", "b_o", "b_1", "b_2", "norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta")})
    x = _random((5, 8), 5)
    mask = A.causal_mask(5) if causal else None
    out, weights = A.transformer_block(x, p, mask=mask, norm_first=norm_first)
    expected, expected_weights = transformer_block_ref(x, p, mask=mask, norm_first=norm_first)
    np.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-12)


def test_transformer_block_keeps_the_shape_and_dtype_so_blocks_stack():
    p = A.init_block_params(12, 3)
    x = _random((2, 7, 12), 6, np.float32)
    out, weights = A.transformer_block(x, p)
    assert out.shape == x.shape and out.dtype == np.float32 and weights.shape == (2, 3, 7, 7)
    out2, _ = A.transformer_block(out, p)
    assert out2.shape == x.shape


def test_transformer_block_batch_equals_one_sequence_at_a_time():
    p = A.init_block_params(8, 2, bias=True)
    x = _random((3, 4, 8), 7, np.float32)
    out, weights = A.transformer_block(x, p, mask=A.causal_mask(4), norm_first=False)
    for b in range(3):
        one, one_weights = A.transformer_block(x[b], p, mask=A.causal_mask(4), norm_first=False)
        np.testing.assert_allclose(out[b], one, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(weights[b], one_weights, rtol=1e-5, atol=1e-6)


def test_causal_block_ignores_the_future():
    p = A.init_block_params(8, 2)
    x = _random((6, 8), 8, np.float32)
    changed = x.copy()
    changed[4:] += 10.0
    out, _ = A.transformer_block(x, p, mask=A.causal_mask(6))
    out_changed, _ = A.transformer_block(changed, p, mask=A.causal_mask(6))
    np.testing.assert_array_equal(out_changed[:4], out[:4])
    assert not np.allclose(out_changed[4:], out[4:])


@given(st.data(), st.integers(2, 6), st.booleans())
def test_block_without_mask_is_permutation_equivariant(data, T, norm_first):
    x = data.draw(arrays(np.float32, (T, 8), elements=st.floats(-3, 3, width=32)))
    perm = np.array(data.draw(st.permutations(range(T))))
    p = A.init_block_params(8, 2)
    out, weights = A.transformer_block(x, p, norm_first=norm_first)
    out_p, weights_p = A.transformer_block(x[perm], p, norm_first=norm_first)
    np.testing.assert_allclose(out_p, out[perm], rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(weights_p, weights[:, perm][:, :, perm], rtol=1e-4, atol=1e-5)


def test_residual_off_drops_the_skip_connections():
    p = A.init_block_params(8, 2, dtype=np.float64)
    x = _random((5, 8), 9)
    out = A.residual_stream(x, [p], residual=False)[-1]
    attended, _ = A.multi_head_attention(A.layer_norm(x), p.W_q, p.W_k, p.W_v, p.W_o, 2)
    np.testing.assert_allclose(out, A.feed_forward(A.layer_norm(attended), p.W_1, p.W_2), rtol=1e-12)
    post = A.residual_stream(x, [p], norm_first=False, residual=False)[-1]
    attended, _ = A.multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, 2)
    np.testing.assert_allclose(post, A.layer_norm(A.feed_forward(A.layer_norm(attended), p.W_1, p.W_2)), rtol=1e-12)


def test_residual_stream_runs_the_blocks_in_order():
    blocks = [A.init_block_params(8, 2, rng=seed) for seed in range(3)]
    x = _random((5, 8), 10, np.float32)
    states = A.residual_stream(x, blocks, mask=A.causal_mask(5), norm_first=False)
    assert states.shape == (4, 5, 8) and states.dtype == np.float32
    np.testing.assert_array_equal(states[0], x)
    h = x
    for n, params in enumerate(blocks, start=1):
        h, _ = A.transformer_block(h, params, mask=A.causal_mask(5), norm_first=False)
        np.testing.assert_array_equal(states[n], h)
    assert A.residual_stream(x, blocks[0]).shape == (2, 5, 8)


def test_transformer_block_errors():
    p = A.init_block_params(8, 2)
    with pytest.raises(TypeError, match="params must be a BlockParams"):
        A.transformer_block(np.zeros((3, 8)), {"W_q": 1})
    with pytest.raises(TypeError, match="norm_first must be True or False"):
        A.transformer_block(np.zeros((3, 8)), p, norm_first="pre")
    with pytest.raises(ValueError, match=r"x must have shape \(\.\.\., T, d\); got shape \(8,\)"):
        A.transformer_block(np.zeros(8), p)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\)"):
        A.transformer_block(np.zeros((3, 8)), p, mask=A.causal_mask(4))


# --- cross-attention -------------------------------------------------------------------------
@pytest.mark.parametrize("bias", [False, True])
def test_cross_attention_matches_the_loop_reference(bias):
    rng = np.random.default_rng(11)
    target, source = rng.standard_normal((3, 4)), rng.standard_normal((5, 6))
    W_q, W_k, W_v, W_o = rng.standard_normal((4, 4)), *rng.standard_normal((2, 6, 4)), rng.standard_normal((4, 4))
    biases = dict(zip(("b_q", "b_k", "b_v", "b_o"), rng.standard_normal((4, 4)))) if bias else {}
    mask = np.array([True, True, True, True, False])  # the source's last token is padding
    out, weights = A.cross_attention(target, source, W_q, W_k, W_v, W_o, 2, mask=mask, **biases)
    expected, expected_weights = attention_layer_ref(target, source, W_q, W_k, W_v, W_o, 2,
                                                     np.broadcast_to(mask, (3, 5)), **biases)
    assert weights.shape == (2, 3, 5)
    np.testing.assert_allclose(out, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(weights[..., -1], 0.0)


def test_cross_attention_on_itself_is_self_attention():
    x = _random((4, 6), 12, np.float32)
    W_q, W_k, W_v, W_o = _random((4, 6, 6), 13, np.float32)
    out, weights = A.cross_attention(x, x, W_q, W_k, W_v, W_o, 3, mask=A.causal_mask(4))
    expected, expected_weights = multi_head_ref(x, W_q, W_k, W_v, W_o, 3, mask=A.causal_mask(4))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-5, atol=1e-6)


def test_cross_attention_errors():
    target, source = np.zeros((3, 4)), np.zeros((5, 6))
    w = np.zeros((4, 4))
    with pytest.raises(ValueError, match=r"W_k has shape \(4, 4\); expected \(6, d_out\)"):
        A.cross_attention(target, source, w, w, w, w, 2)
    with pytest.raises(ValueError, match="mask of shape"):
        A.cross_attention(target, source, w, np.zeros((6, 4)), np.zeros((6, 4)), w, 2, mask=np.ones((3, 4), bool))


# --- parameter counts ------------------------------------------------------------------------
def test_gpt2_small_has_124_439_808_parameters():
    counts = A.parameter_count(GPT2_SMALL)
    assert counts["total"] == 124_439_808  # the number Hugging Face's GPT2Model.num_parameters() reports
    assert counts["total"] == sum(v for k, v in counts.items() if k != "total")
    assert counts["output_head"] == 0 and counts["token_embeddings"] == 50257 * 768


def test_block_count_equals_the_arrays_of_a_real_block():
    for d_model, num_heads, d_ff, bias in ((768, 12, 3072, True), (8, 2, 20, False), (6, 3, None, True)):
        params = A.init_block_params(d_model, num_heads, d_ff=d_ff, bias=bias)
        assert A.block_parameter_count(d_model, d_ff, bias)["total"] == params.num_parameters


def test_minilm_count_with_its_pooler_is_the_published_22_713_216():
    minilm = {"num_layers": 6, "d_model": 384, "num_heads": 12, "vocab_size": 30522, "context_length": 512,
              "d_ff": 1536, "token_types": 2, "embedding_norm": True, "final_norm": False}
    pooler = 384 * 384 + 384  # BERT's pooler: a dense layer on the first token, not part of the blocks
    assert A.parameter_count(minilm)["total"] + pooler == 22_713_216


def test_parameter_count_options_and_errors():
    base = dict(GPT2_SMALL)
    untied = A.parameter_count({**base, "tied_embeddings": False})
    assert untied["total"] - 124_439_808 == untied["output_head"] == 768 * 50257
    assert A.parameter_count({**base, "learned_positions": False})["position_embeddings"] == 0
    # heads split d_model; they add no parameters
    assert A.parameter_count({**base, "num_heads": 6})["total"] == 124_439_808
    with pytest.raises(ValueError, match=r"unknown keys \['n_embd'\], missing keys \['d_model'\]"):
        A.parameter_count({k: v for k, v in {**base, "n_embd": 768}.items() if k != "d_model"})
    with pytest.raises(ValueError, match="divisible by num_heads=5"):
        A.parameter_count({**base, "num_heads": 5})
    with pytest.raises(TypeError, match="config must be a mapping"):
        A.parameter_count([12, 768])
    with pytest.raises(TypeError, match="num_layers must be an integer"):
        A.parameter_count({**base, "num_layers": 12.0})


def _validation_entries(call):
    """How many times ``call()`` enters attn_helpers/_validate.py from another module."""
    import sys

    from attn_helpers import _validate

    entries = 0

    def profile(frame, event, arg):
        nonlocal entries
        wrappers = ("public", "_inputs")  # the decorator's own frames: a check is what they call
        if event == "call" and frame.f_code.co_filename == _validate.__file__ and frame.f_code.co_name not in wrappers:
            caller = frame.f_back
            if caller is None or caller.f_code.co_filename != _validate.__file__ or caller.f_code.co_name in wrappers:
                entries += 1

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entries


def test_one_transformer_block_call_validates_its_inputs_once():
    params = A.init_block_params(16, 4, bias=True)
    x = _random((6, 16), 11, np.float32)
    for norm_first in (True, False):
        count = _validation_entries(lambda nf=norm_first: A.transformer_block(x, params, A.causal_mask(6), nf))
        assert 1 <= count <= 8, count
        # the inner calls (layer norms, attention, softmax, feed-forward) go through no checks at all: the call
        # validates exactly what the block's own check validates
        from attn_helpers.block import _block_inputs

        assert count == _validation_entries(lambda nf=norm_first: _block_inputs(x, params, A.causal_mask(6), nf))


def test_a_bad_input_to_a_block_names_the_argument():
    params = A.init_block_params(8, 2)
    with pytest.raises(ValueError, match=r"x has shape \(5, 6\); expected \(\.\.\., T, 8\)"):
        A.transformer_block(np.ones((5, 6)), params)
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast"):
        A.transformer_block(np.ones((5, 8)), params, mask=A.causal_mask(4))
    with pytest.raises(TypeError, match="mask must be boolean"):
        A.transformer_block(np.ones((5, 8)), params, mask=np.tri(5))
    with pytest.raises(ValueError, match="x contains NaN"):
        A.transformer_block(np.full((5, 8), np.nan), params)


def rms_norm_loop(x, gamma, eps):
    """RMSNorm token by token, feature by feature: x_c / sqrt(mean of the squares + eps) * gamma_c."""
    out = np.empty_like(x)
    for t in range(x.shape[0]):
        mean_square = sum(float(v) * float(v) for v in x[t]) / x.shape[1]
        for c in range(x.shape[1]):
            out[t, c] = x[t, c] / math.sqrt(mean_square + eps) * gamma[c]
    return out


@pytest.mark.parametrize("eps", [1e-6, 0.5, 4.0])
@pytest.mark.parametrize("scale", [0.1, 1.0, 30.0])
def test_rms_norm_matches_a_loop_at_any_eps_and_size(eps, scale):
    """At a large eps (and at an RMS far from 1) eps inside the square root and eps outside it differ: x / (rms + eps)
    or x / sqrt(ms) + eps would pass a test at eps = 1e-6 and RMS about 1, not this one."""
    from attn_helpers.llama import rms_norm

    rng = np.random.default_rng(3)
    x, gamma = rng.standard_normal((4, 6)) * scale, rng.standard_normal(6)
    np.testing.assert_allclose(rms_norm(x, gamma, eps), rms_norm_loop(x, gamma, eps), rtol=1e-12, atol=1e-12)
