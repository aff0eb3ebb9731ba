"""Notebook 17's helpers against independent references: windows and sinks, latent attention, linear attention
and the delta rule, sparse attention; and the shipped StreamingLLM run shows the shape the lesson states."""

import numpy as np
import pytest

from attn_helpers.core import scaled_dot_product_attention, softmax
from attn_helpers.latent import absorbed_latent_attention, gqa_as_latent, init_latent_params, latent_attention
from attn_helpers.linear_attention import (
    RECALL_METHODS,
    delta_rule,
    linear_attention,
    linear_attention_chunked,
    linear_attention_recurrent,
    recall_accuracy,
)
from attn_helpers.published import ATTENTION_VARIANTS
from attn_helpers.sparse import top_k_mask
from attn_helpers.windows import (
    STREAMING_FULL,
    attention_with_sink,
    band_mask,
    load_streaming_runs,
    rolling_attention,
    window_cache_bytes,
)

RTOL = 1e-5


def rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("T, window, sinks", [(7, 3, 0), (9, 2, 1), (12, 4, 4), (5, 8, 2)])
def test_band_mask_against_a_loop(T, window, sinks):
    loop = np.array([[j <= i and (i - j < window or j < sinks) for j in range(T)] for i in range(T)])
    np.testing.assert_array_equal(band_mask(T, window, sinks), loop)


@pytest.mark.parametrize("window, sinks", [(1, 0), (4, 0), (3, 2), (6, 1), (50, 0)])
def test_rolling_buffer_equals_the_band_mask_token_by_token(window, sinks):
    rng = np.random.default_rng(window * 10 + sinks)
    q, k, v = rng.standard_normal((3, 2, 30, 5))  # 2 heads, 30 tokens
    banded = scaled_dot_product_attention(q, k, v, band_mask(30, window, sinks))[0]
    assert rel(rolling_attention(q, k, v, window, sinks), banded) < RTOL


def test_the_rolling_buffer_never_holds_more_than_its_slots():
    from attn_helpers.checks.nb17 import rolling_slot

    for window, sinks in ((4, 0), (3, 2)):
        slots = [rolling_slot(t, window, sinks) for t in range(40)]
        assert set(slots) == set(range(window + sinks))
        for t in range(sinks + window, 40):  # the slot overwritten holds the oldest token of the window
            assert slots[t] == slots[t - window] and slots[t] >= sinks


def test_sink_logit_equals_one_extra_key_with_a_zero_value():
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((3, 3, 5, 4))
    b = np.array([-1.0, 0.5, 4.0])
    mask = np.tri(5, dtype=bool)
    context, weights = attention_with_sink(q, k, v, b, mask)
    scores = np.where(mask, q @ k.swapaxes(-1, -2) / 2.0, -np.inf)
    extra = np.concatenate([scores, np.broadcast_to(b[:, None, None], (3, 5, 1))], axis=-1)
    expected = softmax(extra) @ np.concatenate([v, np.zeros((3, 1, 4))], axis=-2)
    assert rel(context, expected) < RTOL
    assert (weights.sum(-1) < 1).all() and np.allclose(weights.sum(-1), 1 - softmax(extra)[..., -1])


def tiny_smollm2(seed, num_layers=2, vocab=40):
    """A SmolLM2 of the same kind (RoPE, RMSNorm, SwiGLU, 4 query heads sharing 2 key/value heads), tiny and in
    float64, so that two forms of the same sums agree to round-off far below any budget."""
    import dataclasses
    from types import SimpleNamespace

    from attn_helpers.kv_cache import init_grouped_query_params
    from attn_helpers.llm import LlamaBlockParams, SmolLM2

    rng = np.random.default_rng(seed)
    blocks = []
    for _ in range(num_layers):
        p = init_grouped_query_params(d_model=16, num_heads=4, num_kv_heads=2, rng=rng, dtype=np.float64)
        fields = {f.name: getattr(p, f.name) for f in dataclasses.fields(p)}
        blocks.append(LlamaBlockParams(**fields, W_up=rng.standard_normal(p.W_1.shape) / 4, rope_base=100.0))
    return SmolLM2(rng.standard_normal((vocab, 16)), blocks, np.ones(16), SimpleNamespace(vocabulary={"<|im_end|>": 0}),
                   {})


def streaming_reference(model, ids, window, sinks):
    """StreamingLLM written out: token by token, each layer keeps a cache of the sinks and the last ``window``
    tokens (what its attention reads: the normalized inputs, from which it makes keys and values), and runs the
    model's own attention on that cache numbered 0 .. n - 1, n <= sinks + window; the newest row is the query."""
    from attn_helpers.block import transformer_block
    from attn_helpers.llama import rms_norm

    caches = [[] for _ in model.blocks]  # per layer: (token, its normalized input), the tokens the cache still holds
    logits = []
    for t, token in enumerate(ids):
        x = model.embeddings[[token]]  # (1, d_model): the newest token alone
        for block, cache in zip(model.blocks, caches):
            def attention(normed, mask=None, block=block, cache=cache, t=t):
                cache.append((t, normed[0]))
                cache[:] = [(n, row) for n, row in cache if n < sinks or n > t - window]  # evict what left the window
                rows = np.stack([row for _, row in cache])  # (n, d_model): positions 0 .. n - 1 in the cache
                assert len(rows) <= sinks + window
                out, weights = block.attention(rows, np.tri(len(rows), dtype=bool))  # the model's attention
                return out[-1:], weights
            x, _ = transformer_block(x, block, None, True, attention)
        logits.append((rms_norm(x, model.final_norm_gamma, model.blocks[0].eps) @ model.embeddings.T)[0])
    return np.array(logits)  # (T, vocab)


@pytest.mark.parametrize("T, window, sinks", [(24, 5, 1), (20, 4, 2), (12, 3, 0), (8, 10, 1)])
def test_moved_sinks_equal_a_cache_numbered_from_zero(T, window, sinks):
    from attn_helpers.windows import masked_logits, moved_sink_attention

    model = tiny_smollm2(T + window + sinks)
    ids = np.random.default_rng(T).integers(0, model.vocab_size, T)
    reference = streaming_reference(model, ids, window, sinks)
    mask = band_mask(T, window, sinks)
    moved = masked_logits(model, ids, mask, attention=lambda block: moved_sink_attention(block, window, sinks))
    assert rel(moved, reference) < RTOL
    kept_in_place = masked_logits(model, ids, mask)  # the band mask alone: the sinks keep their positions
    full_until = sinks + window  # until then the cache holds every token at its own position: nothing moves
    assert rel(kept_in_place[:full_until], reference[:full_until]) < RTOL
    if sinks and T > full_until:  # then the reference sees the sinks moved, and the band mask does not
        assert rel(kept_in_place[full_until:], reference[full_until:]) > 1e-3


def test_sink_positions_sit_just_before_the_window():
    from attn_helpers.windows import sink_positions

    positions = sink_positions(40, window=8, sinks=3)
    for t in range(40):
        first = max(3, t - 8 + 1)  # the window's first key
        expected = [i for i in range(3)] if t < 3 + 8 else [first - 3 + i for i in range(3)]
        assert positions[t].tolist() == expected


def test_shipped_streaming_run_shows_streamingllm_shape():
    runs = load_streaming_runs()
    assert runs["losses"].shape == (5, STREAMING_FULL["T"] - 1)
    names = [str(n) for n in runs["names"]]
    late = dict(zip(names, runs["losses"][:, STREAMING_FULL["from_position"]:].mean(axis=1)))
    early = dict(zip(names, runs["losses"][:, 1:STREAMING_FULL["window"]].mean(axis=1)))
    assert np.allclose(list(early.values()), early["full attention"], atol=1e-3)  # nothing has left the window yet
    assert late["window"] > late["full attention"] + 0.5  # clearly above once the first token has left
    for with_sink in ("window + 1 sink", "window + 4 sinks", "window + 1 sink, moved"):
        assert abs(late[with_sink] - late["full attention"]) < 0.25
    moved = runs["losses"][names.index("window + 1 sink, moved")]
    in_place = runs["losses"][names.index("window + 1 sink")]
    start = 1 + STREAMING_FULL["window"]  # from query sinks + window on the sink sits at 1, 2, ... (losses[t]: query t)
    np.testing.assert_allclose(moved[:start], in_place[:start], atol=1e-4)  # before, the cache is the text itself
    assert np.abs(moved[start:] - in_place[start:]).max() > 1e-3  # after, the move changes the losses


def test_a_fresh_moved_sink_run_equals_the_shipped_one_where_it_overlaps():
    from attn_helpers.llm import load_smollm2
    from attn_helpers.windows import masked_losses, moved_sink_attention, validation_ids

    runs = load_streaming_runs()
    names = [str(n) for n in runs["names"]]
    model, T, window = load_smollm2(), 160, int(runs["window"])
    ids = validation_ids(model, T)
    np.testing.assert_array_equal(ids, runs["ids"][:T])
    fresh = masked_losses(model, ids, [band_mask(T, window, 1)], lambda b: moved_sink_attention(b, window, 1))[0]
    np.testing.assert_allclose(fresh, runs["losses"][names.index("window + 1 sink, moved")][:T - 1], atol=1e-3)


def test_window_cache_bytes_counts_full_and_windowed_layers():
    c = ATTENTION_VARIANTS["Gemma 3 27B"]
    per_token = 2 * c["num_kv_heads"] * c["head_dim"] * 2
    T = 32768
    full_layers = c["num_layers"] // 6
    expected = (full_layers * T + (c["num_layers"] - full_layers) * c["window"]) * per_token
    assert window_cache_bytes(c["num_layers"], c["num_kv_heads"], c["head_dim"], T, c["window"], 6) == expected
    assert window_cache_bytes(32, 8, 128, 100, window=4096) == window_cache_bytes(32, 8, 128, 100)
    assert all(len(row["source"]) > 40 for row in ATTENTION_VARIANTS.values())


@pytest.mark.parametrize("d_rope", [0, 2])
def test_absorbed_latent_attention_equals_the_expanded_form(d_rope):
    rng = np.random.default_rng(d_rope)
    p = init_latent_params(d_model=12, num_heads=3, d_c=5, d_rope=d_rope, rng=rng)
    x = rng.standard_normal((2, 6, 12))
    mask = np.tri(6, dtype=bool)
    expanded = latent_attention(x, **p, mask=mask)
    absorbed = absorbed_latent_attention(x, **p, mask=mask)
    assert rel(absorbed[0], expanded[0]) < RTOL and rel(absorbed[1], expanded[1]) < RTOL


def test_expanded_latent_attention_against_per_head_loops():
    rng = np.random.default_rng(3)
    p = init_latent_params(d_model=8, num_heads=2, d_c=3, rng=rng)
    x = rng.standard_normal((5, 8))
    c = x @ p["W_down"]
    heads = []
    for i in range(2):
        q = x @ p["W_q"][:, 4 * i:4 * i + 4]
        k, v = c @ p["W_uk"][i], c @ p["W_uv"][i]
        heads.append(scaled_dot_product_attention(q, k, v)[0])
    assert rel(latent_attention(x, **p)[0], np.concatenate(heads, axis=1) @ p["W_o"]) < RTOL


def test_absorbing_a_rotation_is_refused():
    p = init_latent_params(d_model=8, num_heads=2, d_c=3)
    with pytest.raises(ValueError, match="rotate cannot be absorbed"):
        absorbed_latent_attention(np.ones((3, 8)), **p, rotate=lambda h, pos: h)


def test_grouped_query_attention_is_latent_attention():
    from attn_helpers.kv_cache import grouped_query_attention, init_grouped_query_params

    block = init_grouped_query_params(d_model=12, num_heads=6, num_kv_heads=2)
    x = np.random.default_rng(4).standard_normal((5, 12))
    mask = np.tri(5, dtype=bool)
    gqa = grouped_query_attention(x, block.W_q, block.W_k, block.W_v, block.W_o, 6, mask, num_kv_heads=2)
    latent = gqa_as_latent(block)
    latent.pop("rotate")
    assert rel(latent_attention(x, mask=mask, **latent)[0], gqa[0]) < RTOL


def test_smollm2_as_latent_attention_gives_its_logits():
    from attn_helpers.latent import latent_block_attention
    from attn_helpers.llm import load_smollm2
    from attn_helpers.windows import masked_logits, validation_ids

    model = load_smollm2()
    ids = validation_ids(model, 12)
    ordinary = model.logits(ids)
    np.testing.assert_array_equal(masked_logits(model, ids, np.tri(12, dtype=bool)), ordinary)
    assert rel(masked_logits(model, ids, np.tri(12, dtype=bool), attention=latent_block_attention), ordinary) < RTOL


def linear_loop(q, k, v):
    return np.stack([sum((q[t] @ k[j]) * v[j] for j in range(t + 1)) for t in range(len(q))])


@pytest.mark.parametrize("chunk", [1, 3, 8, 40])
def test_three_forms_of_linear_attention_agree(chunk):
    rng = np.random.default_rng(chunk)
    q, k, v = rng.standard_normal((3, 17, 4))
    reference = linear_loop(q, k, v)
    for form in (linear_attention(q, k, v), linear_attention_recurrent(q, k, v),
                 linear_attention_chunked(q, k, v, chunk)):
        assert rel(form, reference) < RTOL


def test_delta_rule_against_its_formula_written_out():
    rng = np.random.default_rng(5)
    q, k, v = rng.standard_normal((3, 9, 3))
    beta, alpha = rng.uniform(0.1, 1.0, 9), rng.uniform(0.5, 1.0, 9)
    S, outs = np.zeros((3, 3)), []
    for t in range(9):
        S = alpha[t] * S + beta[t] * np.outer(k[t], v[t] - k[t] @ (alpha[t] * S))
        outs.append(q[t] @ S)
    out, state = delta_rule(q, k, v, beta, alpha)
    assert rel(out, np.array(outs)) < RTOL and rel(state, S) < RTOL
    unit = k / np.linalg.norm(k, axis=1, keepdims=True)
    assert np.allclose(unit[-1] @ delta_rule(q, unit, v, 1.0)[1], v[-1])


def test_recall_fails_once_pairs_outnumber_the_state_dimensions():
    d = 16
    assert recall_accuracy(d, d, "best fixed state") == 1.0
    assert recall_accuracy(2 * d, d, "best fixed state") < 0.2
    assert recall_accuracy(4 * d, d, "softmax cache") == 1.0
    assert all(recall_accuracy(2 * d, d, m) < 0.5 for m in RECALL_METHODS if m != "softmax cache")


def test_top_k_mask_against_sorting():
    rng = np.random.default_rng(6)
    scores = rng.standard_normal((2, 5, 7))
    mask = np.tri(5, 7, dtype=bool)
    keep = top_k_mask(scores, 3, mask)
    for b in range(2):
        for i in range(5):
            allowed = np.flatnonzero(mask[i])
            best = allowed[np.argsort(scores[b, i, allowed])[::-1][:3]]
            assert set(np.flatnonzero(keep[b, i])) == set(best.tolist())


@pytest.mark.parametrize("call, match", [
    (lambda: band_mask(4, 0), "window"),
    (lambda: rolling_attention(np.ones((3, 2)), np.ones((4, 2)), np.ones((3, 2)), 2), "queries"),
    (lambda: attention_with_sink(np.ones((2, 3, 4)), np.ones((2, 3, 4)), np.ones((2, 3, 4)), np.ones(5)), "sink_logit"),
    (lambda: latent_attention(np.ones((3, 8)), **{**init_latent_params(8, 2, 3), "W_uk": np.ones((2, 4, 4))}), "W_uk"),
    (lambda: linear_attention_chunked(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), 0), "chunk"),
    (lambda: delta_rule(np.ones((3, 2)), np.ones((3, 2)), np.ones((3, 2)), np.ones(4)), "beta"),
    (lambda: top_k_mask(np.ones((2, 3)), 0), "k"),
    (lambda: __import__("attn_helpers.windows", fromlist=["x"]).moved_sink_attention("block", 4), "block"),
    (lambda: __import__("attn_helpers.windows", fromlist=["x"]).moved_sink_attention(tiny_smollm2(0).blocks[0], 0),
     "window"),
])
def test_bad_inputs_name_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


def test_the_shipped_grid_equals_a_fresh_run_and_shows_the_same_shape():
    from attn_helpers.llm import load_smollm2
    from attn_helpers.windows import WINDOW_GRID, masked_losses, validation_ids

    runs = load_streaming_runs()
    grid, full = runs["grid_losses"], runs["grid_full"]
    assert grid.shape == (len(WINDOW_GRID["windows"]), len(WINDOW_GRID["sinks"]), WINDOW_GRID["T"] - 1)
    model = load_smollm2()
    ids = validation_ids(model, WINDOW_GRID["T"])
    w, s = WINDOW_GRID["windows"].index(32), WINDOW_GRID["sinks"].index(1)
    fresh = masked_losses(model, ids, [band_mask(WINDOW_GRID["T"], 32, 1)])[0]
    np.testing.assert_allclose(grid[w, s], fresh, atol=1e-3)
    late = grid[:, :, 128:].mean(axis=-1)  # (windows, sinks) for the windows 8 .. 128: every query has lost token 0
    assert (late[:, 0] > late[:, 1]).all()  # for every window, one sink helps
    assert late[:, 0].max() > full[128:].mean() + 0.5


def test_the_window_explorer_draws_every_setting_of_its_sliders():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    from attn_helpers.widgets.nb17 import draw_window, window_explorer, window_view

    assert window_view(12, 0)["window"] in (8, 16)
    for window in (8, 64, 128):
        for sinks in range(5):
            assert "nats" in draw_window(Figure(), window, sinks)
    assert window_explorer().values == {"window": 32, "sinks": 0}


@pytest.mark.parametrize("call, error, match", [
    (lambda: window_cache_bytes(32, 8, 128, 10, bytes_per_number=0), ValueError, "bytes_per_number"),
    (lambda: gqa_as_latent("block"), TypeError, "block"),
    (lambda: __import__("attn_helpers.latent", fromlist=["x"]).latent_cache_table({"num_heads": 8}), ValueError,
     "kv_lora_rank"),
])
def test_more_bad_inputs_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()
