"""The backward passes of attn_helpers.backprop against central finite differences in float64.

Every analytic gradient is compared with ``numerical_gradient`` of the matching forward
pass (relative error < 1e-6), on fixed cases and on hypothesis-drawn shapes and masks;
masked and fully masked rows are checked to give zero (never NaN) gradients.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_helpers import scaled_dot_product_attention, softmax
from attn_helpers.backprop import (
    attention_backward,
    cross_entropy,
    cross_entropy_backward,
    embedding_backward,
    linear_backward,
    numerical_gradient,
    relative_error,
    softmax_backward,
)

TOLERANCE = 1e-6


def softmax_loop(s):
    """An independent softmax of one row: explicit exponentials, in float64."""
    e = [np.exp(v - max(s)) for v in s]
    return np.array([v / sum(e) for v in e])


def jacobian_loop(p):
    """J[i, j] = p_i (delta_ij - p_j), entry by entry."""
    n = len(p)
    return np.array([[p[i] * ((i == j) - p[j]) for j in range(n)] for i in range(n)])


# ---------------------------------------------------------------- softmax_backward


@given(rows=st.integers(1, 4), width=st.integers(1, 7), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_softmax_backward_matches_finite_differences(rows, width, seed):
    rng = np.random.default_rng(seed)
    scores = rng.standard_normal((rows, width)) * 2
    grad_weights = rng.standard_normal((rows, width))
    analytic = softmax_backward(softmax(scores), grad_weights)
    numeric = numerical_gradient(lambda s: (softmax(s) * grad_weights).sum(), scores)
    assert relative_error(analytic, numeric) < TOLERANCE


def test_softmax_backward_is_the_jacobian_transposed_times_g():
    rng = np.random.default_rng(1)
    s = rng.standard_normal(6)
    p = softmax_loop(s)
    g = rng.standard_normal(6)
    np.testing.assert_allclose(softmax_backward(p, g), jacobian_loop(p).T @ g, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(softmax_backward(p, g).sum(), 0.0, atol=1e-14)  # a shift of all scores: no change


def test_softmax_backward_of_masked_and_fully_masked_rows_is_zero():
    weights = softmax(np.array([[0.0, -np.inf, 1.0], [-np.inf, -np.inf, -np.inf]]))
    grad = softmax_backward(weights, np.ones((2, 3)) * 5)
    assert np.isfinite(grad).all()
    assert grad[0, 1] == 0 and (grad[1] == 0).all()


def test_softmax_backward_keeps_float32_and_rejects_bad_shapes():
    p = softmax(np.zeros((2, 3), dtype=np.float32))
    assert softmax_backward(p, np.ones((2, 3), dtype=np.float32)).dtype == np.float32
    with pytest.raises(ValueError, match=r"grad_weights has shape \(3, 2\)"):
        softmax_backward(p, np.ones((3, 2)))
    with pytest.raises(TypeError, match="weights must be numeric"):
        softmax_backward("p", np.ones(3))


# ---------------------------------------------------------------- attention_backward


def _attention_loss(grad_context, mask=None, scale=None):
    def loss(q, k, v):
        context, _ = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)
        return float((context * grad_context).sum())  # dL/dcontext = grad_context

    return loss


def _check_attention(q, k, v, grad_context, mask=None, scale=None):
    grads = attention_backward(q, k, v, grad_context, mask=mask, scale=scale)
    loss = _attention_loss(grad_context, mask, scale)
    numeric = (numerical_gradient(lambda x: loss(x, k, v), q), numerical_gradient(lambda x: loss(q, x, v), k),
               numerical_gradient(lambda x: loss(q, k, x), v))
    for name, analytic, num in zip(("queries", "keys", "values"), grads, numeric):
        assert analytic.shape == num.shape, name
        assert np.isfinite(analytic).all(), name
        assert relative_error(analytic, num) < TOLERANCE, name
    return grads


masks = st.one_of(st.none(), st.just("causal"), st.just("random"))


@given(batch=st.sampled_from([(), (2,), (2, 3)]), t_q=st.integers(1, 5), t_k=st.integers(1, 5),
       d_k=st.integers(1, 4), d_v=st.integers(1, 4), mask_kind=masks, scaled=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=40, deadline=None)
def test_attention_backward_matches_finite_differences(batch, t_q, t_k, d_k, d_v, mask_kind, scaled, seed):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((*batch, t_q, d_k))
    k = rng.standard_normal((*batch, t_k, d_k))
    v = rng.standard_normal((*batch, t_k, d_v))
    grad_context = rng.standard_normal((*batch, t_q, d_v))
    mask = None
    if mask_kind == "causal":
        mask = np.tri(t_q, t_k, dtype=bool)
    elif mask_kind == "random":
        mask = rng.random((*batch, t_q, t_k)) < 0.6  # may fully mask a row
    _check_attention(q, k, v, grad_context, mask, None if scaled else 1.0)


def test_masked_entries_and_fully_masked_rows_get_zero_gradient():
    rng = np.random.default_rng(2)
    q, k, v = rng.standard_normal((4, 3)), rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    grad_context = rng.standard_normal((4, 2))
    mask = np.ones((4, 5), dtype=bool)
    mask[1] = False  # query 1 may attend to nothing
    mask[:, 4] = False  # key 4 is padding
    grad_q, grad_k, grad_v = _check_attention(q, k, v, grad_context, mask)
    assert (grad_q[1] == 0).all()  # a fully masked query does not move
    assert (grad_k[4] == 0).all() and (grad_v[4] == 0).all()  # nor does a key nobody may see


def test_attention_backward_with_a_mask_shared_over_heads_and_batch():
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((2, 2, 4, 3)) for _ in range(3))
    grad_context = rng.standard_normal((2, 2, 4, 3))
    _check_attention(q, k, v, grad_context, np.tri(4, dtype=bool))


def test_attention_backward_broadcast_keys_sum_their_gradients():
    """Keys shared by every batch entry (shape (T_k, d_k)) get the sum of the per-entry gradients."""
    rng = np.random.default_rng(4)
    q = rng.standard_normal((3, 2, 2))
    k, v = rng.standard_normal((4, 2)), rng.standard_normal((4, 2))
    grad_context = rng.standard_normal((3, 2, 2))
    grads = _check_attention(q, k, v, grad_context)
    assert grads[1].shape == (4, 2) and grads[2].shape == (4, 2)


def test_attention_backward_float32_and_errors():
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((3, 2)).astype(np.float32) for _ in range(3))
    grads = attention_backward(q, k, v, np.ones((3, 2), dtype=np.float32))
    assert all(g.dtype == np.float32 for g in grads)
    with pytest.raises(ValueError, match=r"grad_context has shape \(2, 3\)"):
        attention_backward(q, k, v, np.ones((2, 3)))
    with pytest.raises(ValueError, match="same d_k"):
        attention_backward(q, k[:, :1], v, np.ones((3, 2)))
    with pytest.raises(TypeError, match="mask must be boolean"):
        attention_backward(q, k, v, np.ones((3, 2)), mask=np.ones((3, 3)))


# ---------------------------------------------------------------- linear, embedding, cross-entropy


@given(lead=st.sampled_from([(1,), (3,), (2, 3)]), d_in=st.integers(1, 4), d_out=st.integers(1, 4),
       seed=st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_linear_backward_matches_finite_differences(lead, d_in, d_out, seed):
    rng = np.random.default_rng(seed)
    x, w = rng.standard_normal((*lead, d_in)), rng.standard_normal((d_in, d_out))
    grad_out = rng.standard_normal((*lead, d_out))
    grad_x, grad_w = linear_backward(x, w, grad_out)
    assert relative_error(grad_x, numerical_gradient(lambda a: ((a @ w) * grad_out).sum(), x)) < TOLERANCE
    assert relative_error(grad_w, numerical_gradient(lambda a: ((x @ a) * grad_out).sum(), w)) < TOLERANCE


def test_linear_backward_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"x has shape \(2, 3\), weight \(4, 2\)"):
        linear_backward(np.ones((2, 3)), np.ones((4, 2)), np.ones((2, 2)))


@given(shape=st.sampled_from([(5,), (2, 3), (2, 2, 2)]), vocab=st.integers(1, 4), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_embedding_backward_matches_finite_differences(shape, vocab, seed):
    rng = np.random.default_rng(seed)
    table = rng.standard_normal((vocab, 3))
    ids = rng.integers(vocab, size=shape)  # repeated ids: their gradients must add up
    grad_embedded = rng.standard_normal((*shape, 3))
    analytic = embedding_backward(ids, grad_embedded, vocab)
    numeric = numerical_gradient(lambda t: (t[ids] * grad_embedded).sum(), table)
    assert relative_error(analytic, numeric) < TOLERANCE


def test_embedding_backward_errors():
    with pytest.raises(ValueError, match=r"token_ids must be token ids in 0 \.\. 2; got ids from 0 to 3"):
        embedding_backward([0, 3], np.ones((2, 2)), 3)
    with pytest.raises(TypeError, match="token_ids must be integer token ids"):
        embedding_backward([0.5], np.ones((1, 2)), 3)
    with pytest.raises(ValueError, match="expected token_ids' shape"):
        embedding_backward([0, 1], np.ones((3, 2)), 3)


def cross_entropy_loop(logits, targets):
    """An independent reference: -log p of each scored target, averaged, row by row."""
    losses = [-np.log(softmax_loop(row)[t]) for row, t in zip(logits.reshape(-1, logits.shape[-1]),
                                                                 targets.reshape(-1)) if t >= 0]
    return sum(losses) / max(len(losses), 1)


@given(lead=st.sampled_from([(1,), (4,), (2, 3)]), classes=st.integers(1, 5), seed=st.integers(0, 2**32 - 1))
@settings(max_examples=25, deadline=None)
def test_cross_entropy_and_its_gradient(lead, classes, seed):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((*lead, classes)) * 3
    targets = rng.integers(-1, classes, size=lead)  # -1: ignored
    np.testing.assert_allclose(cross_entropy(logits, targets), cross_entropy_loop(logits, targets), rtol=1e-12,
                               atol=1e-14)
    analytic = cross_entropy_backward(logits, targets)
    numeric = numerical_gradient(lambda z: cross_entropy(z, targets), logits)
    assert relative_error(analytic, numeric) < TOLERANCE or np.abs(analytic - numeric).max() < 1e-9
    assert (analytic[targets < 0] == 0).all()


def test_cross_entropy_is_stable_and_checks_targets():
    assert cross_entropy(np.array([[1000.0, 0.0]]), np.array([0])) == 0.0
    assert np.isclose(cross_entropy(np.array([[0.0, 1000.0]]), np.array([0])), 1000.0)
    assert cross_entropy(np.zeros((2, 3)), np.array([-1, -1])) == 0.0  # nothing scored: 0, not NaN
    with pytest.raises(ValueError, match="targets must be < the number of classes 3"):
        cross_entropy(np.zeros((1, 3)), np.array([3]))
    with pytest.raises(TypeError, match="targets must be integer"):
        cross_entropy(np.zeros((1, 3)), np.array([0.0]))


# ---------------------------------------------------------------- the checking tools themselves


def test_a_wrong_gradient_is_caught():
    """The check is not vacuous: the softmax gradient without its - (g . p) term fails it."""
    rng = np.random.default_rng(6)
    s, g = rng.standard_normal(5), rng.standard_normal(5)
    numeric = numerical_gradient(lambda x: (softmax(x) * g).sum(), s)
    p = softmax(s)
    assert relative_error(p * g, numeric) > 1e-2
    assert relative_error(softmax_backward(p, g), numeric) < TOLERANCE


def test_numerical_gradient_leaves_its_input_alone():
    x = np.array([1.0, 2.0])
    numerical_gradient(lambda v: float(v.sum()), x)
    np.testing.assert_array_equal(x, [1.0, 2.0])
