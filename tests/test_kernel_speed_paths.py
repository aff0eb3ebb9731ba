"""The speed paths of ``attn_helpers._kernel`` agree with a plain float64 softmax.

The kernel picks between code paths by size and by the scores' range: several heads
per block or several blocks per head, one thread or two, and the softmax without
the max shift when every score is provably small. Each test forces one combination
and compares with a float64 computation written the textbook way.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from attn_helpers import efficient as _kernel
from attn_helpers import multi_head_attention


def attention_float64(queries, keys, values, mask=None, scale=None):
    """Textbook attention in float64: scores, mask with -inf, max-shifted softmax, weighted sum."""
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (queries, keys, values))
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None else scale
    scores = q @ np.swapaxes(k, -1, -2) * scale  # (..., T_q, d_k) @ (..., d_k, T_k) -> (..., T_q, T_k)
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = scores.max(axis=-1, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    exps = np.exp(scores - top)
    total = exps.sum(axis=-1, keepdims=True)
    weights = exps / np.where(total > 0, total, 1.0)
    return weights @ v, weights  # (..., T_q, T_k) @ (..., T_k, d_v) -> (..., T_q, d_v)


@pytest.fixture(params=["one thread", "two threads"])
def threads(request, monkeypatch):
    monkeypatch.setattr(_kernel, "_THREADS", 1 if request.param == "one thread" else 2)
    monkeypatch.setattr(_kernel, "_PARALLEL_MIN_SCORES", 0)  # use the pool even for small shapes


@pytest.fixture(params=["heads grouped", "rows split"])
def block_bytes(request, monkeypatch):
    # Tiny blocks force several blocks per head; huge ones put every head in one block.
    monkeypatch.setattr(_kernel, "_BLOCK_BYTES", 1 << 30 if request.param == "heads grouped" else 256)


@pytest.fixture(params=["exp2", "exp"])
def bounded_exp(request, monkeypatch):
    # The no-shift path takes exp2 or exp by the CPU (_FAST_EXP2): test both on every machine.
    monkeypatch.setattr(_kernel, "_FAST_EXP2", request.param == "exp2")


@pytest.mark.parametrize("magnitude", [0.3, 30.0], ids=["small scores (no max shift)", "large scores (max shift)"])
@pytest.mark.parametrize("mask_kind", [None, "causal", "padding", "random with empty rows"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_kernel_paths_match_float64(threads, block_bytes, bounded_exp, magnitude, mask_kind, dtype):
    rng = np.random.default_rng(7)
    batch, t_q, t_k, d_k, d_v = (2, 3), 37, 41, 8, 5
    queries = (rng.standard_normal(batch + (t_q, d_k)) * magnitude).astype(dtype)
    keys = (rng.standard_normal(batch + (t_k, d_k)) * magnitude).astype(dtype)
    values = rng.standard_normal(batch + (t_k, d_v)).astype(dtype)
    mask = {
        None: None,
        "causal": np.tri(t_q, t_k, dtype=bool),
        "padding": (np.arange(t_k) < rng.integers(0, t_k + 1, size=(2, 1, 1, 1)))[..., 0, :][:, :, None, :],
        "random with empty rows": rng.random((t_q, t_k)) < 0.1,
    }[mask_kind]
    if mask_kind == "random with empty rows":
        mask[[0, 5]] = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        context, weights = _kernel.blocked_attention(queries, keys, values, mask=mask)
    expected_context, expected_weights = attention_float64(queries, keys, values, mask=mask)
    assert context.dtype == weights.dtype == dtype
    assert np.isfinite(context).all() and np.isfinite(weights).all()
    tol = dict(rtol=2e-5, atol=2e-6) if dtype == np.float32 else dict(rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(weights, expected_weights, **tol)
    np.testing.assert_allclose(context, expected_context, **tol)
    if mask is not None:
        full_mask = np.broadcast_to(mask, weights.shape)
        assert (weights[~full_mask] == 0).all()  # masked keys get exactly 0, not a tiny number
        empty_rows = ~full_mask.any(axis=-1)
        assert (weights[empty_rows] == 0).all() and (context[empty_rows] == 0).all()


def test_no_max_shift_path_is_taken_only_when_scores_are_bounded(monkeypatch):
    """A block takes the unshifted exp only if |score| <= _SAFE_EXPONENT is guaranteed."""
    rng = np.random.default_rng(3)
    keys = rng.standard_normal((1, 16, 4)).astype(np.float32)
    calls = []
    original = _kernel._score_bounds
    monkeypatch.setattr(_kernel, "_score_bounds", lambda q, k, scale: calls.append(original(q, k, scale)) or calls[-1])
    for magnitude in (1.0, 1e3, 1e30):  # 1e30: the squares overflow float32, not the float64 bound
        queries = (rng.standard_normal((1, 16, 4)) * magnitude).astype(np.float32)
        scores = (queries.astype(np.float64) @ keys[0].T.astype(np.float64)) / 2.0  # scale 1 / sqrt(d_k = 4)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            _, weights = _kernel.blocked_attention(queries, keys, keys)
        assert np.isfinite(weights).all()
        np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-5)
        bound = calls[-1]
        assert (np.abs(scores) <= bound[..., None] * (1 + 1e-6)).all()  # bound (1, T_q) covers every key
    assert calls[0].max() <= _kernel._SAFE_EXPONENT < calls[1].max()


@pytest.mark.parametrize("x, scale", [(1e60, 1.0), (1.0, 1e300)], ids=["huge float64 input", "huge scale"])
def test_huge_numbers_take_the_max_shift_without_warnings(x, scale):
    queries = np.array([[[x, 0.0], [0.0, x]]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.isinf(_kernel._score_bounds(queries, queries, scale)).all()
        _, weights = _kernel.blocked_attention(queries, queries, queries, scale=scale)
    np.testing.assert_array_equal(weights[0], np.eye(2))


@pytest.mark.parametrize("t", [1, 2, 65, 300])
def test_multi_head_attention_speed_path_matches_float64(t):
    rng = np.random.default_rng(t)
    d_model, num_heads = 32, 4
    x = rng.standard_normal((2, t, d_model)).astype(np.float32)
    w_q, w_k, w_v, w_o = (
        (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(np.float32) for _ in range(4)
    )
    mask = np.tri(t, dtype=bool)
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads=num_heads, mask=mask)
    x64 = x.astype(np.float64)

    def heads(w):  # (B, T, d_model) @ (d_model, d_model) -> (B, T, d_model) -> (B, h, T, d_h)
        return (x64 @ w.astype(np.float64)).reshape(2, t, num_heads, -1).transpose(0, 2, 1, 3)

    context, expected_weights = attention_float64(heads(w_q), heads(w_k), heads(w_v), mask=mask)
    expected_out = context.transpose(0, 2, 1, 3).reshape(2, t, d_model) @ w_o.astype(np.float64)
    assert out.dtype == weights.dtype == np.float32
    assert out.shape == (2, t, d_model) and weights.shape == (2, num_heads, t, t)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(out, expected_out, rtol=1e-4, atol=1e-5)
