"""The KV cache (attn_helpers.kv_cache) and grouped-query attention (multi_head_attention(num_kv_heads=...))."""

from __future__ import annotations

import numpy as np
import pytest

from attn_helpers import causal_mask, multi_head_attention
from attn_helpers.kv_cache import (
    PUBLISHED_CONFIGS,
    KVCache,
    attention_weights_bytes,
    cache_table,
    decoder_forward,
    decoder_step,
    generate,
    kv_cache_bytes,
    random_decoder,
)
from attn_helpers.multihead import repeat_kv_heads
from tests.reference import multi_head_ref


@pytest.mark.parametrize(("num_heads", "num_kv_heads"), [(4, 4), (4, 2), (4, 1), (6, 3), (6, 2), (1, 1)])
@pytest.mark.parametrize("masked", [False, True])
def test_grouped_query_attention_equals_the_loop_reference(num_heads, num_kv_heads, masked):
    rng = np.random.default_rng(num_heads * 10 + num_kv_heads)
    T, d_model, head_dim = 5, 12, 2
    x = rng.standard_normal((T, d_model))
    w_q = rng.standard_normal((d_model, num_heads * head_dim))
    w_k, w_v = (rng.standard_normal((d_model, num_kv_heads * head_dim)) for _ in range(2))
    w_o = rng.standard_normal((num_heads * head_dim, d_model))
    mask = causal_mask(T) if masked else None
    out, weights = multi_head_attention(x, w_q, w_k, w_v, w_o, num_heads, mask=mask, num_kv_heads=num_kv_heads)
    expected_out, expected_weights = multi_head_ref(x, w_q, w_k, w_v, w_o, num_heads, mask, num_kv_heads)
    np.testing.assert_allclose(out, expected_out, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-10, atol=1e-12)


def test_grouped_query_attention_with_every_kv_head_is_multi_head_attention():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 6, 8), dtype=np.float32)
    w_q, w_k, w_v, w_o = rng.standard_normal((4, 8, 8), dtype=np.float32)
    plain = multi_head_attention(x, w_q, w_k, w_v, w_o, 4)
    grouped = multi_head_attention(x, w_q, w_k, w_v, w_o, 4, num_kv_heads=4)
    np.testing.assert_array_equal(plain[0], grouped[0])
    assert grouped[0].dtype == np.float32


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
        multi_head_attention(x, w, w[:, :4], w[:, :4], w, 4, **kwargs)


def test_grouped_query_attention_names_a_key_projection_of_the_wrong_width():
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((3, 8)), rng.standard_normal((8, 8))
    with pytest.raises(ValueError, match=r"w_q has shape \(8, 8\) and w_k has shape \(8, 8\).*num_kv_heads \* d_h"):
        multi_head_attention(x, w, w, w[:, :4], w, 4, num_kv_heads=2)


@pytest.mark.parametrize("num_kv_heads", [None, 2, 1])
def test_cached_decoding_equals_recomputing_everything(num_kv_heads):
    model = random_decoder(num_kv_heads=num_kv_heads)
    layers = model["layers"]
    x = np.random.default_rng(3).standard_normal((30, 16))
    full = decoder_forward(x, layers, 4, num_kv_heads)
    cache = KVCache()
    rows = [decoder_step(x[:6], layers, cache, 4, num_kv_heads)]  # a prompt of 6, then one token at a time
    rows += [decoder_step(x[t : t + 1], layers, cache, 4, num_kv_heads) for t in range(6, 30)]
    # Equal to float64 rounding: the BLAS adds a row's products in another order for 1 row than for 30.
    np.testing.assert_allclose(np.concatenate(rows), full, rtol=1e-12, atol=1e-12)
    assert cache.length == 30
    assert cache.nbytes == kv_cache_bytes(2, num_kv_heads or 4, 4, 30, bytes_per_number=8)


def test_earlier_outputs_never_depend_on_later_tokens():
    layers = random_decoder()["layers"]
    x = np.random.default_rng(4).standard_normal((12, 16))
    changed = x.copy()
    changed[7:] = np.random.default_rng(5).standard_normal((5, 16))  # other tokens after position 6
    np.testing.assert_array_equal(decoder_forward(changed, layers, 4)[:7], decoder_forward(x, layers, 4)[:7])


@pytest.mark.parametrize("num_kv_heads", [None, 1])
def test_generation_with_and_without_the_cache_writes_the_same_tokens(num_kv_heads):
    model = random_decoder(num_kv_heads=num_kv_heads)
    ids, logits = generate([0, 1, 2], model, 4, 15, num_kv_heads=num_kv_heads)
    ids_again, logits_again = generate([0, 1, 2], model, 4, 15, num_kv_heads=num_kv_heads, use_cache=False)
    assert ids == ids_again and len(ids) == 18
    np.testing.assert_allclose(logits, logits_again, rtol=1e-12, atol=1e-12)


def test_cache_sizes_of_published_configurations():
    rows = {row["name"]: row for row in cache_table(T=4096, bytes_per_number=2)}
    assert rows["Llama 2 7B"]["cache_bytes"] == 2 * 2**30  # 32 layers x 2 x 32 heads x 128 x 4096 x 2 bytes
    assert rows["Llama 2 70B"]["saving"] == 8 and rows["Mistral 7B"]["saving"] == 4
    assert rows["Falcon 7B"]["saving"] == 71 and rows["PaLM 540B"]["num_kv_heads"] == 1
    assert all(config["source"] for config in PUBLISHED_CONFIGS.values())
    assert attention_weights_bytes(4096, 8) == 512 * 2**20
