"""The claims of notebook 10's "Bridge to PyTorch" table, checked against PyTorch where it is installed.

PyTorch is not a dependency of the series: without it, this file is skipped. With it, every row
of the table is tested: the same numbers from the helper and from its PyTorch counterpart, and
each "watch out" (mask polarity, batch_first, default biases, post-norm default, float causal mask).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import attn_helpers as A

torch = pytest.importorskip("torch")
F = torch.nn.functional
nn = torch.nn

T, D, H = 5, 8, 2


def _tensor(a):
    return torch.tensor(np.asarray(a), dtype=torch.float64)


def _numpy(t):
    return t.detach().numpy()


@pytest.fixture
def rng():
    return np.random.default_rng(10)


def test_sdpa_boolean_mask_true_means_may_attend(rng):
    q, k, v = rng.standard_normal((3, T, D))
    mask = A.causal_mask(T)
    context, _ = A.scaled_dot_product_attention(q, k, v, mask=mask)
    theirs = F.scaled_dot_product_attention(_tensor(q), _tensor(k), _tensor(v), attn_mask=torch.tensor(mask))
    np.testing.assert_allclose(_numpy(theirs), context, rtol=1e-10, atol=1e-12)


def _mha_module(params, batch_first=True):
    p = params
    mha = nn.MultiheadAttention(D, H, batch_first=batch_first, dtype=torch.float64)
    with torch.no_grad():
        # PyTorch stores (d_out, d_in) and computes x @ W.T: the transpose of our (d_in, d_out)
        mha.in_proj_weight.copy_(_tensor(np.concatenate([p.W_q.T, p.W_k.T, p.W_v.T])))
        mha.in_proj_bias.copy_(_tensor(np.concatenate([p.b_q, p.b_k, p.b_v])))
        mha.out_proj.weight.copy_(_tensor(p.W_o.T))
        mha.out_proj.bias.copy_(_tensor(p.b_o))
    return mha


def _random_params(rng, bias=True):
    p = A.init_block_params(D, H, d_ff=3 * D, rng=rng, bias=bias, dtype=np.float64)
    if bias:
        p = dataclasses.replace(p, **{name: rng.standard_normal(getattr(p, name).shape) for name in (
            "b_q", "b_k", "b_v", "b_o", "b_1", "b_2", "norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta")})
    return p


def test_multihead_attention_boolean_mask_true_means_not_allowed(rng):
    p = _random_params(rng)
    x = rng.standard_normal((T, D))
    mask = A.causal_mask(T)
    ours, weights = A.multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, H, mask,
                                           biases=(p.b_q, p.b_k, p.b_v, p.b_o))
    mha = _mha_module(p)
    xt = _tensor(x[None])
    out, avg_weights = mha(xt, xt, xt, attn_mask=torch.tensor(~mask))  # the flip: ~mask
    np.testing.assert_allclose(_numpy(out[0]), ours, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_numpy(avg_weights[0]), weights.mean(axis=0), rtol=1e-10, atol=1e-12)  # averaged
    _, per_head = mha(xt, xt, xt, attn_mask=torch.tensor(~mask), average_attn_weights=False)
    np.testing.assert_allclose(_numpy(per_head[0]), weights, rtol=1e-10, atol=1e-12)
    wrong, _ = mha(xt, xt, xt, attn_mask=torch.tensor(mask))  # our mask passed as is: the opposite pattern
    assert not np.allclose(_numpy(wrong[0]), ours)


def test_multihead_attention_defaults_batch_first_false_and_biases_on(rng):
    mha = nn.MultiheadAttention(D, H)
    assert mha.batch_first is False
    assert mha.in_proj_bias is not None and mha.out_proj.bias is not None
    p = _random_params(rng)
    x = rng.standard_normal((T, D))
    ours, _ = A.multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, H, biases=(p.b_q, p.b_k, p.b_v, p.b_o))
    xt = _tensor(x[:, None])  # (T, B, d): the sequence axis first
    out, _ = _mha_module(p, batch_first=False)(xt, xt, xt)
    np.testing.assert_allclose(_numpy(out[:, 0]), ours, rtol=1e-10, atol=1e-12)


def test_layer_norm_matches_nn_layer_norm_and_its_defaults(rng):
    x = rng.standard_normal((T, D)) * 3
    layer = nn.LayerNorm(D, dtype=torch.float64)
    assert layer.eps == 1e-5
    np.testing.assert_array_equal(_numpy(layer.weight), np.ones(D))
    np.testing.assert_array_equal(_numpy(layer.bias), np.zeros(D))
    gamma, beta = rng.standard_normal(D), rng.standard_normal(D)
    with torch.no_grad():
        layer.weight.copy_(_tensor(gamma))
        layer.bias.copy_(_tensor(beta))
    np.testing.assert_allclose(_numpy(layer(_tensor(x))), A.layer_norm(x, gamma, beta), rtol=1e-10, atol=1e-12)


def test_gelu_forms_match_f_gelu():
    x = np.linspace(-6, 6, 241)
    np.testing.assert_allclose(A.gelu(x), _numpy(F.gelu(_tensor(x))), rtol=2e-7, atol=1e-12)
    np.testing.assert_allclose(A.gelu(x, approximate=True), _numpy(F.gelu(_tensor(x), approximate="tanh")),
                               rtol=1e-12, atol=1e-14)


def test_linear_stores_the_transpose(rng):
    linear = nn.Linear(D, 3 * D)
    assert tuple(linear.weight.shape) == (3 * D, D) and linear.bias is not None


def _encoder_layer(p, norm_first):
    layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=p.d_ff, dropout=0.0, activation="gelu",
                                       batch_first=True, norm_first=norm_first, dtype=torch.float64)
    mha = _mha_module(p)
    with torch.no_grad():
        layer.self_attn.load_state_dict(mha.state_dict())
        layer.linear1.weight.copy_(_tensor(p.W_1.T))
        layer.linear1.bias.copy_(_tensor(p.b_1))
        layer.linear2.weight.copy_(_tensor(p.W_2.T))
        layer.linear2.bias.copy_(_tensor(p.b_2))
        for which, norm in ((1, layer.norm1), (2, layer.norm2)):
            norm.weight.copy_(_tensor(getattr(p, f"norm_{which}_gamma")))
            norm.bias.copy_(_tensor(getattr(p, f"norm_{which}_beta")))
    return layer.eval()


@pytest.mark.parametrize("norm_first", [True, False])
def test_transformer_block_matches_transformer_encoder_layer(rng, norm_first):
    p = _random_params(rng)
    x = rng.standard_normal((T, D))
    mask = A.causal_mask(T)
    ours, _ = A.transformer_block(x, p, mask=mask, norm_first=norm_first)
    layer = _encoder_layer(p, norm_first)
    with torch.no_grad():
        theirs = layer(_tensor(x[None]), src_mask=torch.tensor(~mask))  # src_mask: True = not allowed
    np.testing.assert_allclose(_numpy(theirs[0]), ours, rtol=1e-6, atol=1e-7)  # GELU: float32-precise erf here


def test_transformer_encoder_layer_defaults_are_post_norm_relu_2048_dropout():
    layer = nn.TransformerEncoderLayer(D, H)
    assert layer.norm_first is False
    assert layer.linear1.out_features == 2048
    assert layer.dropout.p == 0.1
    assert layer.self_attn.batch_first is False
    assert layer.activation is F.relu


def test_generate_square_subsequent_mask_is_an_additive_float_mask():
    theirs = _numpy(nn.Transformer.generate_square_subsequent_mask(T))
    np.testing.assert_array_equal(theirs, np.where(A.causal_mask(T), 0.0, -np.inf))
