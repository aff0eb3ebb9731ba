"""One contract for every block and one multi-head attention with hooks (issue 43).

A grouped-query block records, drops out, trains and reports its weights like notebook 10's block; the hooks
of multi-head attention (``rotate`` on queries and keys, ``bias`` on the scores, ``scale``) agree with a loop
written here, with and without a KV cache; bad ``record=``/``dropout=`` arguments get one sentence.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from attn_helpers import causal_mask, multi_head_attention, padding_mask, transformer_block
from attn_helpers.backprop import attention_layer_forward, numerical_gradient, relative_error, training_block
from attn_helpers.gpt import attention_weights, decoder_arrays, gpt_loss_and_grads, random_decoder
from attn_helpers.kv_cache import GroupedQueryParams, KVCache, cached_attention, init_grouped_query_params
from attn_helpers.positions import rope
from tests.reference import softmax_ref

RNG = np.random.default_rng(43)


def rotate_loop(x, positions, base=10000.0):
    """Each pair (2i, 2i + 1) of each row turned by ``position * base ** (-2i / d)``, one row at a time."""
    out = np.array(x, dtype=np.float64)
    d = out.shape[-1]
    for index in np.ndindex(out.shape[:-1]):
        p = positions[index[-1]]
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            a, b = out[index][2 * i], out[index][2 * i + 1]
            out[index + (2 * i,)] = a * math.cos(angle) - b * math.sin(angle)
            out[index + (2 * i + 1,)] = a * math.sin(angle) + b * math.cos(angle)
    return out


def hooked_attention_loop(x, W_q, W_k, W_v, W_o, num_heads, mask=None, rotate_base=None, bias=None, scale=None):
    """Multi-head attention of one sequence, head by head and score by score, with the hooks written out."""
    T, d_h = x.shape[0], W_q.shape[1] // num_heads
    heads, all_weights = [], []
    for h in range(num_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        q, k, v = x @ W_q[:, cols], x @ W_k[:, cols], x @ W_v[:, cols]
        if rotate_base is not None:
            q, k = rotate_loop(q, range(T), rotate_base), rotate_loop(k, range(T), rotate_base)
        weights = []
        for i in range(T):
            scores = [float(q[i] @ k[j]) * (1 / math.sqrt(d_h) if scale is None else scale)
                      + (0.0 if bias is None else float(bias[h, i, j])) for j in range(T)]
            weights.append(softmax_ref([s if mask is None or mask[i, j] else -math.inf for j, s in enumerate(scores)]))
        weights = np.array(weights)
        heads.append(weights @ v)
        all_weights.append(weights)
    return np.concatenate(heads, axis=-1) @ W_o, np.stack(all_weights)


def weights_of(d_model, num_heads):
    return [RNG.standard_normal((d_model, d_model)) / math.sqrt(d_model) for _ in range(4)]


@pytest.mark.parametrize("hooks", [{"rotate_base": 10000.0}, {"rotate_base": 100.0, "scale": 1.0},
                                   {"bias": "random"}, {"rotate_base": 10000.0, "bias": "random", "scale": 0.3}])
def test_the_hooks_of_multi_head_attention_match_a_loop(hooks):
    x, (W_q, W_k, W_v, W_o), mask = RNG.standard_normal((5, 8)), weights_of(8, 2), causal_mask(5)
    bias = RNG.standard_normal((2, 5, 5)) if hooks.get("bias") else None
    base = hooks.get("rotate_base")
    rotate = None if base is None else (lambda heads, positions: rope(heads, positions, base=base))
    out, weights = multi_head_attention(x, W_q, W_k, W_v, W_o, 2, mask, rotate=rotate, bias=bias,
                                        scale=hooks.get("scale"))
    ref_out, ref_weights = hooked_attention_loop(x, W_q, W_k, W_v, W_o, 2, mask, base, bias, hooks.get("scale"))
    np.testing.assert_allclose(weights, ref_weights, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, atol=1e-12)


@dataclasses.dataclass(frozen=True, eq=False)
class RotaryGroupedParams(GroupedQueryParams):
    """A grouped-query block whose attention turns queries and keys (a Llama-style block, notebook 16)."""

    def rotate(self, heads, positions):
        return rope(heads, positions, base=500.0)


def rotary_block(d_model=16, num_heads=4, num_kv_heads=2):
    base = init_grouped_query_params(d_model, num_heads, num_kv_heads, rng=7, dtype=np.float64)
    return RotaryGroupedParams(**{f.name: getattr(base, f.name) for f in dataclasses.fields(base)})


def test_a_rotary_grouped_query_block_through_a_kv_cache_is_the_block_without_one():
    params, x = rotary_block(), RNG.standard_normal((7, 16))
    full, full_weights = transformer_block(x, params, causal_mask(7))
    cache, rows = KVCache(), []
    for start, stop in ((0, 4), (4, 5), (5, 7)):  # a prompt, then one token, then two
        mask = causal_mask(stop)[start:]  # (T, T_past + T)
        out, weights = transformer_block(x[start:stop], params, mask, attention=cached_attention(params, cache))
        np.testing.assert_allclose(weights, full_weights[:, start:stop, :stop], atol=1e-12)
        rows.append(out)
    np.testing.assert_allclose(np.concatenate(rows), full, atol=1e-12)
    assert cache.keys.shape == (2, 7, 4)  # only the key/value heads are stored, already turned


def test_the_rotation_changes_the_block_and_depends_on_relative_positions_only():
    params, x = rotary_block(), RNG.standard_normal((6, 16))
    plain = GroupedQueryParams(**{f.name: getattr(params, f.name) for f in dataclasses.fields(params)})
    assert not np.allclose(transformer_block(x, params)[1], transformer_block(x, plain)[1])
    # every position shifted by 3 (a cache of 3 rows the queries never see): the same weights
    cache = KVCache(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)))
    mask = np.tile(np.arange(9) >= 3, (6, 1))  # (T, T_past + T): the 3 cached rows are masked out
    _, shifted = transformer_block(x, params, mask, attention=cached_attention(params, cache))
    np.testing.assert_allclose(shifted[..., 3:], transformer_block(x, params)[1], atol=1e-12)


@pytest.mark.parametrize("block", ["grouped", "rotary"])
def test_a_grouped_query_block_trains_like_any_block(block):
    """Its gradients match finite differences, through the record its forward keeps (notebook 14's backward)."""
    params = rotary_block(8, 4, 2) if block == "rotary" else init_grouped_query_params(8, 4, 1, rng=3,
                                                                                          dtype=np.float64)
    x, g = RNG.standard_normal((2, 5, 8)), RNG.standard_normal((2, 5, 8))
    from attn_helpers.backprop import block_backward

    record = {}
    training_block(x, params, causal_mask(5), record=record)
    grad_x, grads = block_backward(g, record, params)

    def loss(**changes):
        return (transformer_block(x, dataclasses.replace(params, **changes), causal_mask(5))[0] * g).sum()

    assert relative_error(grad_x, numerical_gradient(lambda v: (transformer_block(v, params, causal_mask(5))[0]
                                                                * g).sum(), x)) < 1e-6
    for name in ("W_q", "W_k", "W_v", "W_o"):
        numeric = numerical_gradient(lambda w, name=name: loss(**{name: w}), getattr(params, name))
        assert relative_error(grads[name], numeric) < 1e-6, name


def test_a_grouped_query_decoder_reports_weights_trains_and_drops_out():
    decoder = random_decoder(vocab_size=10, d_model=8, num_heads=4, num_layers=2, num_kv_heads=2, dtype=np.float64)
    ids, targets = RNG.integers(0, 10, (2, 6)), RNG.integers(0, 10, (2, 6))
    assert attention_weights(decoder, ids[0]).shape == (2, 4, 6, 6)
    loss, grads = gpt_loss_and_grads(decoder, ids, targets)
    arrays = decoder_arrays(decoder)
    assert grads.keys() == arrays.keys() and grads["blocks.1.W_k"].shape == (8, 4)
    W = arrays["blocks.1.W_v"]

    def loss_of(w):
        saved = W.copy()
        W[...] = w
        try:
            return gpt_loss_and_grads(decoder, ids, targets)[0]
        finally:
            W[...] = saved

    assert relative_error(grads["blocks.1.W_v"], numerical_gradient(loss_of, W.copy())) < 1e-6
    dropped = gpt_loss_and_grads(decoder, ids, targets, dropout=0.3, rng=1)[0]
    assert dropped != loss and dropped == gpt_loss_and_grads(decoder, ids, targets, dropout=0.3, rng=1)[0]
    x = RNG.standard_normal((3, 8))
    out, _ = training_block(x, decoder.blocks[0], dropout=0.5, rng=0)
    assert not np.allclose(out, transformer_block(x, decoder.blocks[0])[0])


def test_a_per_sequence_padding_mask_through_multi_head_attention_is_each_sequence_alone():
    x, (W_q, W_k, W_v, W_o) = RNG.standard_normal((3, 6, 8)), weights_of(8, 2)
    lengths = np.array([6, 4, 1])
    out, weights = multi_head_attention(x, W_q, W_k, W_v, W_o, 2, padding_mask(lengths, 6))
    for b, n in enumerate(lengths):  # sequence b alone, without its padding: the same rows and weights
        alone_out, alone_weights = hooked_attention_loop(x[b, :n], W_q, W_k, W_v, W_o, 2)
        np.testing.assert_allclose(out[b, :n], alone_out, atol=1e-12)
        np.testing.assert_allclose(weights[b, :, :n, :n], alone_weights, atol=1e-12)
        assert not weights[b, :, :, n:].any()  # no query attends to a padding key


@pytest.mark.parametrize("record", ["weights", ["weights"], 0.5, np.zeros(3), ("a",)])
@pytest.mark.parametrize("where", ["attention_layer_forward", "training_block", "feed_forward"])
def test_a_record_that_is_not_a_dict_gets_one_sentence(record, where):
    x = np.ones((3, 8))
    params = init_grouped_query_params(8, 4, 2)
    calls = {"attention_layer_forward": lambda: attention_layer_forward(x, *weights_of(8, 2), 2, record=record),
             "training_block": lambda: training_block(x, params, record=record),
             "feed_forward": lambda: __import__("attn_helpers.block").block.feed_forward(x, params.W_1, params.W_2,
                                                                                         record=record)}
    with pytest.raises(TypeError, match=r"^record must be a dict \(it gets the forward's intermediate values"):
        calls[where]()


def test_dropout_none_is_no_dropout():
    x, params = np.ones((3, 8)), init_grouped_query_params(8, 4, 2)
    np.testing.assert_array_equal(training_block(x, params, dropout=None)[0], transformer_block(x, params)[0])
    W = weights_of(8, 2)
    np.testing.assert_array_equal(attention_layer_forward(x, *W, 2, dropout=None)[0], multi_head_attention(x, *W, 2)[0])


@pytest.mark.parametrize(("hook", "value", "error", "message"), [
    ("rotate", "rope", TypeError, r"rotate must be a function rotate\(x, positions\)"),
    ("bias", np.zeros((3, 5, 5)), ValueError, r"bias of shape \(3, 5, 5\) does not broadcast to the scores' shape"),
    ("bias", np.array([[np.nan]]), ValueError, r"bias contains NaN"),
    ("scale", "big", TypeError, r"scale must be a number")])
def test_a_wrong_hook_gets_one_sentence(hook, value, error, message):
    with pytest.raises(error, match=message):
        multi_head_attention(np.ones((5, 8)), *weights_of(8, 2), 2, **{hook: value})


def test_the_tiny_gpt_learning_rate_rises_then_falls_along_half_a_cosine_to_a_tenth(monkeypatch):
    """The rates ``train_gpt`` gives Adam, against the schedule written here: linear warm-up to the peak, then
    ``peak * (0.1 + 0.9 * (1 + cos(pi * progress)) / 2)``; and Adam's decay rates (0.9, 0.99)."""
    import attn_helpers.gpt as gpt

    seen = []
    monkeypatch.setattr(gpt, "adam_step", lambda params, grads, state, rate, beta1, beta2: seen.append(
        (rate, beta1, beta2)))
    decoder, ids = random_decoder(vocab_size=10, d_model=8, num_heads=2, num_layers=1), RNG.integers(0, 10, 40)
    steps, warmup, peak = 12, 4, 0.02
    gpt.train_gpt(decoder, ids, steps, batch_size=2, context_length=8, learning_rate=peak, warmup=warmup)
    expected = [peak * (s + 1) / warmup if s < warmup else
                peak * (0.1 + 0.9 * (1 + math.cos(math.pi * (s - warmup) / (steps - warmup))) / 2)
                for s in range(steps)]
    np.testing.assert_allclose([rate for rate, _, _ in seen], expected, rtol=1e-12)
    assert seen[warmup][0] == pytest.approx(peak) and seen[-1][0] > 0.1 * peak  # the peak, then towards a tenth
    assert {(beta1, beta2) for _, beta1, beta2 in seen} == {(0.9, 0.99)}
    seen.clear()
    gpt.train_gpt(decoder, ids, steps, batch_size=2, context_length=8, learning_rate=peak, warmup=warmup, decay=False)
    np.testing.assert_allclose([rate for rate, _, _ in seen], [peak * min(1, (s + 1) / warmup) for s in range(steps)])
