"""The KV cache (attn_helpers.kv_cache: transformer_block with cached_attention) and grouped-query attention.

What is exact and what is not. Generated tokens, the cached keys and values once written,
and the rows of a causal model before a changed token are compared with ``==`` /
``np.array_equal``. The cached scores are compared with the recomputed ones to a few units
in the last place: OpenBLAS picks its matrix-product kernel by the number of rows (a
single row goes through a matrix-vector kernel, a taller matrix through tiles of a fixed
height plus edge kernels), and those kernels add the same products in different orders.
So ``(X @ W)[i]`` and ``X[i:i+1] @ W`` may differ in the last bit on this machine, and a
cached step multiplies 1 row where a recomputation multiplies T. Measured: at most 4 units
in the last place of the largest score (float32 and float64); the tests allow 16.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from attn_helpers import causal_mask, init_block_params, multi_head_attention, positional_encoding, transformer_block
from attn_helpers.examples import creature_block_example
from attn_helpers.gpt import Decoder, decoder_forward, generate, random_decoder
from attn_helpers.kv_cache import (
    PUBLISHED_CONFIGS,
    GroupedQueryParams,
    KVCache,
    attention_weights_bytes,
    cache_table,
    cached_attention,
    grouped_query_attention,
    init_grouped_query_params,
    kv_cache_bytes,
    repeat_kv_heads,
)
from tests.reference import multi_head_ref

ULPS = 16  # allowed difference, in units in the last place of the largest score (4 measured; see the docstring)


def assert_equal_to_rounding(got, expected):
    scale = np.abs(expected).max()
    np.testing.assert_allclose(got, expected, rtol=0, atol=ULPS * np.spacing(scale.astype(expected.dtype)))


def decoder_block(x, params, mask=None, kv_cache=None):
    """Notebook 10's block, its attention reading ``kv_cache`` (as the decoder stacks it)."""
    return transformer_block(x, params, mask, attention=cached_attention(params, kv_cache or KVCache()))


def cached_step_by_step(decoder, ids, prompt_length):
    """The logits of every position: the prompt at once, then one token at a time through a cache."""
    cache = decoder.empty_cache()
    rows = [decoder_forward(decoder, ids[:prompt_length], cache)]
    rows += [decoder_forward(decoder, ids[t : t + 1], cache) for t in range(prompt_length, len(ids))]
    return np.concatenate(rows), cache


# --- grouped-query attention (kv_cache.grouped_query_attention) ------------------------------------------
@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2), (1, 1)])
@pytest.mark.parametrize("masked", [False, True])
def test_grouped_query_attention_equals_the_loop_reference(num_heads, num_kv_heads, masked):
    rng = np.random.default_rng(num_heads * 10 + num_kv_heads)
    T, d_model, head_dim = 5, 12, 2
    x = rng.standard_normal((T, d_model))
    W_q = rng.standard_normal((d_model, num_heads * head_dim))
    W_k, W_v = (rng.standard_normal((d_model, num_kv_heads * head_dim)) for _ in range(2))
    W_o = rng.standard_normal((num_heads * head_dim, d_model))
    mask = causal_mask(T) if masked else None
    out, weights = grouped_query_attention(x, W_q, W_k, W_v, W_o, num_heads, mask=mask, num_kv_heads=num_kv_heads)
    expected_out, expected_weights = multi_head_ref(x, W_q, W_k, W_v, W_o, num_heads, mask, num_kv_heads)
    np.testing.assert_allclose(out, expected_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-12)


def test_grouped_query_attention_with_every_kv_head_is_multi_head_attention():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 8), dtype=np.float32)
    W_q, W_k, W_v, W_o = rng.standard_normal((4, 8, 8), dtype=np.float32)
    plain = multi_head_attention(x, W_q, W_k, W_v, W_o, 4)
    grouped = grouped_query_attention(x, W_q, W_k, W_v, W_o, 4, num_kv_heads=4)
    np.testing.assert_array_equal(plain[0], grouped[0])
    assert grouped[0].dtype == np.float32


def test_repeat_kv_heads_names_a_wrong_rank_or_group():
    with pytest.raises(ValueError, match=r"x has shape \(4, 2, 4\): its 4 key/value heads.*must divide num_heads=2"):
        repeat_kv_heads(np.ones((4, 2, 4)), 2)
    with pytest.raises(ValueError, match=r"x must have shape"):
        repeat_kv_heads(np.ones((2, 4)), 2)


def test_repeat_kv_heads_gives_each_group_its_head():
    kv = np.arange(3.0).reshape(3, 1, 1)  # h_kv = 3
    np.testing.assert_array_equal(repeat_kv_heads(kv, 6).ravel(), [0, 0, 1, 1, 2, 2])


@pytest.mark.parametrize(("kwargs", "words"), [
    (dict(num_kv_heads=3), "num_kv_heads=3 must divide num_heads=4"),
    (dict(num_kv_heads=0), "num_kv_heads must be >= 1"),
])
def test_grouped_query_attention_bad_head_counts(kwargs, words):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((3, 8)), rng.standard_normal((8, 8))
    with pytest.raises(ValueError, match=words):
        grouped_query_attention(x, w, w[:, :4], w[:, :4], w, 4, **kwargs)


def test_grouped_query_attention_names_a_key_projection_of_the_wrong_width():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 8)), rng.standard_normal((8, 8))
    with pytest.raises(ValueError, match=r"W_k has shape \(8, 8\); expected \(8, num_kv_heads \* d_h\) = \(8, 4\)"):
        grouped_query_attention(x, w, w, w[:, :4], w, 4, num_kv_heads=2)


def test_a_grouped_query_block_is_a_block_with_tied_key_and_value_heads():
    grouped = init_grouped_query_params(12, 6, 2, rng=3, dtype=np.float64)  # d_h = 2, groups of 3
    columns = np.concatenate([np.arange(g * 2, g * 2 + 2) for g in np.arange(6) // 3])  # head i gets head i // 3
    fields = {f.name: getattr(grouped, f.name) for f in dataclasses.fields(init_block_params(12, 6))}
    tied = type(init_block_params(12, 6))(**{**fields, "W_k": grouped.W_k[:, columns], "W_v": grouped.W_v[:, columns]})
    x = np.random.default_rng(4).standard_normal((7, 12))
    out, weights = transformer_block(x, grouped, causal_mask(7))  # a grouped block is notebook 10's block
    expected_out, expected_weights = transformer_block(x, tied, causal_mask(7))
    np.testing.assert_allclose(out, expected_out, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-12, atol=1e-12)
    assert grouped.num_parameters == tied.num_parameters - 2 * 12 * (12 - 4)


# --- the cache inside one block ---------------------------------------------------------------
@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
def test_a_block_with_a_cache_gives_the_rows_of_the_whole_sequence(num_kv_heads):
    params = (init_block_params(8, 4, rng=5, bias=True, dtype=np.float64) if num_kv_heads is None else
              init_grouped_query_params(8, 4, num_kv_heads, rng=5, bias=True, dtype=np.float64))
    params = dataclasses.replace(params, **{name: np.random.default_rng(6).normal(0, 0.5, getattr(params, name).shape)
                                            for name in ("b_q", "b_k", "b_v", "b_o", "b_1", "b_2")})
    x = np.random.default_rng(7).standard_normal((9, 8))
    full, full_weights = decoder_block(x, params, causal_mask(9))
    if num_kv_heads is None:  # an ordinary block: the same as notebook 10's transformer_block
        np.testing.assert_array_equal(full, transformer_block(x, params, causal_mask(9))[0])
    cache = KVCache()
    first, _ = decoder_block(x[:5], params, causal_mask(5), kv_cache=cache)  # 5 positions at once
    rows = [first]
    for t in range(5, 9):  # then one position at a time: it sees every cached key, nothing to mask
        out, weights = decoder_block(x[t : t + 1], params, None, kv_cache=cache)
        assert weights.shape == (4, 1, t + 1)
        assert_equal_to_rounding(weights[:, 0], full_weights[:, t, : t + 1])
        rows.append(out)
    assert_equal_to_rounding(np.concatenate(rows), full)
    assert cache.length == 9 and cache.keys.shape == (num_kv_heads or 4, 9, 2)


def test_an_empty_cache_changes_nothing_bit_for_bit():
    decoder = random_decoder(num_kv_heads=2)
    ids = [3, 1, 4, 1, 5, 2, 6]
    np.testing.assert_array_equal(decoder_forward(decoder, ids, decoder.empty_cache()), decoder_forward(decoder, ids))


# --- generation: cached == recomputed ---------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
def test_cached_decoding_equals_recomputing_everything(dtype, num_kv_heads):
    decoder = random_decoder(vocab_size=8, d_model=16, num_heads=4, num_layers=3, num_kv_heads=num_kv_heads,
                             dtype=dtype)
    ids = np.random.default_rng(8).integers(8, size=30)
    cached, cache = cached_step_by_step(decoder, ids, prompt_length=6)
    assert cached.dtype == dtype
    assert_equal_to_rounding(cached, decoder_forward(decoder, ids))  # one pass over all 30 positions
    recomputed = np.stack([decoder_forward(decoder, ids[: t + 1])[-1] for t in range(5, 30)])  # as generation does
    assert_equal_to_rounding(cached[5:], recomputed)
    assert all(layer.length == 30 for layer in cache)


@pytest.mark.parametrize("num_kv_heads", [None, 1])
def test_generation_with_and_without_the_cache_writes_the_same_tokens(num_kv_heads):
    decoder = random_decoder(num_kv_heads=num_kv_heads)
    ids, logits = generate(decoder, [0, 1, 2], 15)
    ids_again, logits_again = generate(decoder, [0, 1, 2], 15, use_cache=False)
    assert ids == ids_again and len(ids) == 18  # exact: the same token ids
    assert logits.shape == (15, 8) and logits.dtype == np.float32
    assert_equal_to_rounding(logits, logits_again)


def test_generate_with_zero_steps_returns_the_prompt():
    ids, logits = generate(random_decoder(), [4, 2], 0)
    assert ids == [4, 2] and logits.shape == (0, 8)


# --- earlier rows never change (notebook 07) --------------------------------------------------
def test_earlier_outputs_never_depend_on_later_tokens():
    decoder = random_decoder()
    ids = np.random.default_rng(9).integers(8, size=12)
    changed = ids.copy()
    changed[7:] = (ids[7:] + 1) % 8  # other tokens after position 6
    before, after = decoder_forward(decoder, ids), decoder_forward(decoder, changed)
    np.testing.assert_array_equal(after[:7], before[:7])
    assert not np.array_equal(after[7:], before[7:])


def test_the_cache_never_rewrites_what_it_holds():
    decoder = random_decoder(num_kv_heads=2)
    ids = np.random.default_rng(10).integers(8, size=20)
    cache = decoder.empty_cache()
    decoder_forward(decoder, ids[:4], cache)
    snapshot = [(layer.keys.copy(), layer.values.copy()) for layer in cache]
    for t in range(4, 20):
        decoder_forward(decoder, ids[t : t + 1], cache)
    for layer, (keys, values) in zip(cache, snapshot):
        np.testing.assert_array_equal(layer.keys[:, :4], keys)
        np.testing.assert_array_equal(layer.values[:, :4], values)


def test_crop_undoes_a_step():
    decoder = random_decoder()
    cache = decoder.empty_cache()
    decoder_forward(decoder, [1, 2, 3], cache)
    first = decoder_forward(decoder, [4], cache)
    for layer in cache:
        layer.crop(3)
    np.testing.assert_array_equal(decoder_forward(decoder, [4], cache), first)  # the same shapes: the same bits
    assert cache[0].length == 4


# --- what the cache costs ---------------------------------------------------------------------
@pytest.mark.parametrize("num_kv_heads", [8, 4, 2, 1])
def test_a_grouped_query_cache_is_smaller_by_h_over_h_kv(num_kv_heads):
    T = 37
    decoder = random_decoder(vocab_size=8, d_model=32, num_heads=8, num_layers=3, num_kv_heads=num_kv_heads)
    cache = decoder.empty_cache()
    decoder_forward(decoder, np.arange(T) % 8, cache)
    held = sum(layer.nbytes for layer in cache)
    assert held == kv_cache_bytes(num_layers=3, num_kv_heads=num_kv_heads, head_dim=4, T=T, bytes_per_number=4)
    assert held * (8 // num_kv_heads) == kv_cache_bytes(3, 8, 4, T, bytes_per_number=4)  # the saving is h / h_kv
    assert cache[0].keys.shape == (num_kv_heads, T, 4)


def test_cache_sizes_of_published_configurations():
    rows = {row["name"]: row for row in cache_table(T=4096, bytes_per_number=2)}
    assert rows["Llama 2 7B"]["cache_bytes"] == 2 * 2**30  # 32 layers x 2 x 32 heads x 128 x 4096 x 2 bytes
    assert rows["Llama 2 70B"]["saving"] == 8 and rows["Mistral 7B"]["saving"] == 4
    assert rows["Falcon 7B"]["saving"] == 71 and rows["PaLM 540B"]["num_kv_heads"] == 1
    assert rows["GPT-2 small"]["context_length"] == 1024
    assert all(config["source"] for config in PUBLISHED_CONFIGS.values())
    assert attention_weights_bytes(4096, 8) == 512 * 2**20


def test_published_head_widths_match_the_model_widths_they_are_quoted_with():
    widths = {"GPT-2 small": 768, "Llama 2 7B": 4096, "Llama 2 70B": 8192, "Mistral 7B": 4096, "Falcon 7B": 4544}
    for name, d_model in widths.items():
        config = PUBLISHED_CONFIGS[name]
        assert config["num_heads"] * config["head_dim"] == d_model, name
        assert str(d_model) in config["source"], name
    palm = PUBLISHED_CONFIGS["PaLM 540B"]  # PaLM's heads do not split d_model: 48 x 256 != 18432
    assert palm["head_dim"] == 256 and "head size always 256" in palm["source"]


# --- bad input --------------------------------------------------------------------------------
def test_bad_input_names_the_argument():
    decoder = random_decoder()
    with pytest.raises(TypeError, match="decoder must be a Decoder"):
        decoder_forward({"blocks": []}, [0])
    with pytest.raises(ValueError, match=r"ids must be token ids in 0 \.\. 7; got ids from 0 to 8"):
        decoder_forward(decoder, [0, 8])
    with pytest.raises(TypeError, match=r"ids must be integer token ids of shape \(T,\)"):
        decoder_forward(decoder, [0.5, 1.0])
    with pytest.raises(TypeError, match="ids must be token ids, not text: encode it first"):
        decoder_forward(decoder, "a fluffy")
    with pytest.raises(ValueError, match="prompt is empty"):
        generate(decoder, [], 3)
    with pytest.raises(ValueError, match="steps must be >= 0"):
        generate(decoder, [0], -1)
    with pytest.raises(TypeError, match="cache must be a list of 2 KVCache"):
        decoder_forward(decoder, [0], KVCache())
    with pytest.raises(TypeError, match="use_cache must be True or False"):
        generate(decoder, [0], 1, use_cache="yes")
    with pytest.raises(TypeError, match="num_layers must be an integer"):
        kv_cache_bytes(2.5, 8, 64, 100)
    with pytest.raises(ValueError, match="head_dim must be >= 1"):
        kv_cache_bytes(2, 8, 0, 100)


def test_a_cache_of_the_wrong_shape_or_kind_is_named():
    cache = KVCache()
    cache.append(np.zeros((2, 3, 4)), np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=r"new keys of shape \(4, 1, 4\) do not fit the cached keys"):
        cache.append(np.zeros((4, 1, 4)), np.zeros((4, 1, 4)))
    with pytest.raises(ValueError, match="keys and values need the same heads and positions"):
        cache.append(np.zeros((2, 1, 4)), np.zeros((2, 2, 4)))
    with pytest.raises(ValueError, match="length=5 is more than the 3 positions cached"):
        cache.crop(5)
    assert cache.length == 3  # nothing was added by the failed calls
    x, w = np.ones((1, 8)), np.eye(8)
    with pytest.raises(TypeError, match="kv_cache must be a KVCache"):
        grouped_query_attention(x, w, w, w, w, 2, kv_cache=[])
    with pytest.raises(ValueError, match=r"mask of shape \(1, 2\) does not broadcast to the scores' shape "
                                         r"\(\.\.\., T, T_past \+ T\) = \(\.\.\., 1, 4\)"):
        grouped_query_attention(x, w, w, w, w, 2, mask=np.ones((1, 2), bool), kv_cache=cache)  # 3 cached + 1 new


def test_block_params_check_their_key_value_heads():
    params = init_grouped_query_params(8, 4, 2)
    assert isinstance(params, GroupedQueryParams)
    assert params.W_k.shape == params.W_v.shape == (8, 4) and params.num_kv_heads == 2
    with pytest.raises(ValueError, match="num_kv_heads=3 must divide num_heads=4"):
        init_grouped_query_params(8, 4, 3)
    with pytest.raises(ValueError, match=r"W_k has shape \(8, 4\); expected \(8, 8\)"):
        dataclasses.replace(init_block_params(8, 4), W_k=params.W_k)  # notebook 10's block: keys d_model wide
    with pytest.raises(ValueError, match=r"W_k has shape \(8, 8\); expected \(8, 4\)"):
        dataclasses.replace(params, W_k=np.zeros((8, 8)))
    with pytest.raises(ValueError, match="num_kv_heads must be >= 1"):
        dataclasses.replace(params, num_kv_heads=0)


def test_decoder_checks_its_blocks():
    decoder = random_decoder()
    with pytest.raises(TypeError, match="blocks must be a non-empty sequence of BlockParams"):
        Decoder(decoder.embeddings, [])
    with pytest.raises(ValueError, match=r"every block needs d_model = 8"):
        Decoder(decoder.embeddings[:, :8], decoder.blocks)


def test_the_default_decoder_is_made_of_notebook_10s_example():
    decoder, example = random_decoder(), creature_block_example(num_blocks=2)
    np.testing.assert_array_equal(decoder.embeddings + positional_encoding(8, 16), example["X"])
    for block, expected in zip(decoder.blocks, example["blocks"]):
        for name in ("W_q", "W_k", "W_v", "W_o", "W_1", "W_2"):
            np.testing.assert_array_equal(getattr(block, name), getattr(expected, name))


def test_decoder_forward_is_a_stack_of_causal_transformer_blocks():
    # Built by hand from notebook 10's pieces: a mask off by one (a token seeing the next one, or
    # not itself) or a missing final norm changes these numbers.
    decoder = random_decoder(vocab_size=8, d_model=16, num_heads=4, num_layers=3, dtype=np.float64)
    ids = np.array([3, 1, 4, 1, 5, 2, 6, 0])
    T = len(ids)
    x = decoder.embeddings[ids] + positional_encoding(T, 16, dtype=np.float64)
    for block in decoder.blocks:
        x, _ = transformer_block(x, block, mask=causal_mask(T))
    from attn_helpers import layer_norm

    expected = layer_norm(x, decoder.final_norm_gamma, decoder.final_norm_beta) @ decoder.embeddings.T
    np.testing.assert_allclose(decoder_forward(decoder, ids), expected, rtol=1e-12, atol=1e-12)
