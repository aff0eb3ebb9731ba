"""The tiny GPT: each backward piece against central differences (float64), the training step, sampling,
the KV cache, and the shipped model's validation loss against the n-gram baselines."""

import numpy as np
import pytest

from attn_helpers.backprop import cross_entropy, numerical_gradient, relative_error
from attn_helpers.block import feed_forward, gelu, layer_norm, transformer_block
from attn_helpers.bpe import train_bpe
from attn_helpers.core import causal_mask
from attn_helpers.gpt import (
    WEIGHTS_PATH,
    _forward,
    attention_layer_backward,
    block_arrays,
    block_backward,
    block_forward,
    corpus_split,
    decoder_from_params,
    decoder_params,
    feed_forward_backward,
    filter_logits,
    gelu_backward,
    generate_ids,
    init_tiny_gpt,
    layer_norm_backward,
    load_tiny_gpt,
    loss_and_grads,
    mean_loss,
    next_token_probs,
    ngram_losses,
    sample_next,
    train,
)
from attn_helpers.kv_cache import decoder_forward
from attn_helpers.multihead import multi_head_attention

RNG = np.random.default_rng(14)
TOL = 1e-6  # relative error of every analytic gradient against central differences, in float64


def _perturbed_decoder(vocab_size=20, d_model=8, num_heads=2, num_layers=2, seed=3):
    """A float64 tiny GPT whose biases and layer-norm parameters are not 0 and 1 (so every path is exercised)."""
    params = decoder_params(init_tiny_gpt(vocab_size, d_model, num_heads, num_layers, dtype=np.float64))
    rng = np.random.default_rng(seed)
    return {name: value + 0.2 * rng.standard_normal(value.shape) for name, value in params.items()}


def _check(analytic, numeric):
    """Relative error <= TOL, or both essentially zero (a gradient that vanishes exactly, like the key bias's)."""
    if np.abs(numeric).max() < 1e-8:
        assert np.abs(analytic).max() < 1e-8
    else:
        assert relative_error(analytic, numeric) < TOL


def test_layer_norm_backward_matches_finite_differences():
    x, gamma, beta = RNG.standard_normal((2, 3, 6)), RNG.standard_normal(6), RNG.standard_normal(6)
    weights = RNG.standard_normal((2, 3, 6))
    grad_x, grad_gamma, grad_beta = layer_norm_backward(weights, x, gamma)
    _check(grad_x, numerical_gradient(lambda v: (layer_norm(v, gamma, beta) * weights).sum(), x))
    _check(grad_gamma, numerical_gradient(lambda g: (layer_norm(x, g, beta) * weights).sum(), gamma))
    _check(grad_beta, numerical_gradient(lambda b: (layer_norm(x, gamma, b) * weights).sum(), beta))
    assert np.allclose(grad_x.sum(axis=-1), 0)  # a layer norm ignores a shift of its whole row


def test_gelu_backward_is_the_derivative_of_the_tanh_form():
    x = np.linspace(-6, 6, 41)
    numeric = numerical_gradient(lambda v: gelu(v, approximate=True).sum(), x)
    _check(gelu_backward(np.ones_like(x), x), numeric)


def test_feed_forward_backward_matches_finite_differences():
    a = {"W_1": RNG.standard_normal((4, 16)), "b_1": RNG.standard_normal(16), "W_2": RNG.standard_normal((16, 4)),
         "b_2": RNG.standard_normal(4)}
    x, weights = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))

    def loss(x=x, **changed):
        p = {**a, **changed}
        return (feed_forward(x, p["W_1"], p["W_2"], p["b_1"], p["b_2"], activation="gelu_tanh") * weights).sum()

    grad_x, grads = feed_forward_backward(weights, x, a["W_1"], a["W_2"], a["b_1"])
    _check(grad_x, numerical_gradient(lambda v: loss(x=v), x))
    for name in a:
        _check(grads[name], numerical_gradient(lambda v, name=name: loss(**{name: v}), a[name]))


def test_attention_layer_backward_matches_finite_differences_for_every_head():
    d, h, T = 8, 2, 5
    a = {name: RNG.standard_normal((d, d)) / 3 for name in ("W_q", "W_k", "W_v", "W_o")}
    a.update({name: RNG.standard_normal(d) for name in ("b_q", "b_k", "b_v", "b_o")})
    x, weights, mask = RNG.standard_normal((2, T, d)), RNG.standard_normal((2, T, d)), causal_mask(T)

    def loss(x=x, **changed):
        p = {**a, **changed}
        out, _ = multi_head_attention(x, p["W_q"], p["W_k"], p["W_v"], p["W_o"], h, mask, b_q=p["b_q"],
                                      b_k=p["b_k"], b_v=p["b_v"], b_o=p["b_o"])
        return (out * weights).sum()

    grad_x, grads = attention_layer_backward(weights, x, a, h, mask)
    _check(grad_x, numerical_gradient(lambda v: loss(x=v), x))
    for name in a:
        _check(grads[name], numerical_gradient(lambda v, name=name: loss(**{name: v}), a[name]))
    assert np.abs(grads["b_k"]).max() < 1e-12  # a bias on every key shifts a query's scores equally: no effect


def test_the_training_forward_pass_is_decoder_forward_and_transformer_block():
    params = _perturbed_decoder()
    decoder = decoder_from_params(params, num_heads=2)
    ids = RNG.integers(0, 20, (3, 7))
    logits, _ = _forward(params, ids, num_heads=2)
    for row in range(3):
        np.testing.assert_allclose(logits[row], decoder_forward(decoder, ids[row]), rtol=1e-12, atol=1e-12)
    x, mask = RNG.standard_normal((7, 8)), causal_mask(7)
    out, _ = block_forward(x, block_arrays(decoder.blocks[0]), 2, mask)
    np.testing.assert_allclose(out, transformer_block(x, decoder.blocks[0], mask)[0], rtol=1e-12, atol=1e-12)


def test_block_backward_matches_finite_differences():
    decoder = decoder_from_params(_perturbed_decoder(), num_heads=2)
    block, a = decoder.blocks[0], block_arrays(decoder.blocks[0])
    x, weights, mask = RNG.standard_normal((4, 8)), RNG.standard_normal((4, 8)), causal_mask(4)
    _, saved = block_forward(x, a, 2, mask)
    grad_x, grads = block_backward(weights, saved, a, 2, mask)
    numeric = numerical_gradient(lambda v: (transformer_block(v, block, mask)[0] * weights).sum(), x)
    _check(grad_x, numeric)
    assert set(grads) == set(a)


def test_one_training_step_gives_every_parameter_its_gradient():
    params = _perturbed_decoder(vocab_size=12, d_model=4, num_heads=2)
    ids, targets = RNG.integers(0, 12, (2, 5)), RNG.integers(0, 12, (2, 5))
    loss, grads = loss_and_grads(params, ids, targets, num_heads=2)

    def loss_of(name, value):
        changed = {**params, name: value}
        decoder = decoder_from_params(changed, 2)
        return np.mean([cross_entropy(decoder_forward(decoder, row), t) for row, t in zip(ids, targets)])

    assert loss == pytest.approx(loss_of("embeddings", params["embeddings"]), rel=1e-12)
    assert set(grads) == set(params)
    for name, value in params.items():
        _check(grads[name], numerical_gradient(lambda v, name=name: loss_of(name, v), value))


def test_the_first_steps_make_the_loss_fall():
    text = corpus_split("train")[:30_000]
    tokenizer = train_bpe(text, 300)
    ids = tokenizer.encode(text)
    decoder = init_tiny_gpt(300, d_model=32, num_heads=2, num_layers=1)
    _, losses = train(decoder, ids, 40, batch_size=8, context_length=32, warmup=10)
    assert losses[0] == pytest.approx(np.log(300), abs=1.0)
    assert losses[-10:].mean() < losses[0] - 1.0


# ---------------------------------------------------------------------------------------------- sampling

def test_filter_logits_top_k_keeps_exactly_k_and_top_p_the_smallest_nucleus():
    for _ in range(200):
        logits = RNG.standard_normal(12) * 2
        k = int(RNG.integers(1, 13))
        kept = np.isfinite(filter_logits(logits, top_k=k))
        assert kept.sum() == k and logits[kept].min() >= logits[~kept].max(initial=-np.inf)
        p = float(RNG.uniform(0.01, 1.0))
        kept = np.isfinite(filter_logits(logits, top_p=p))
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        ranked = np.sort(probs)[::-1]
        smallest = int(np.argmax(np.cumsum(ranked) >= p - 1e-12)) + 1  # the fewest top tokens that reach p
        assert kept.sum() == smallest and probs[kept].min() >= probs[~kept].max(initial=0)
    assert np.isfinite(filter_logits(np.array([5.0, 0.0, 0.0]), top_p=0.01)).sum() == 1  # at least one
    with pytest.raises(ValueError, match="top_p"):
        filter_logits(np.zeros(3), top_p=1.5)


def test_sample_next_is_greedy_at_temperature_zero_and_follows_the_probabilities():
    logits = np.log(np.array([0.1, 0.6, 0.3]))
    assert sample_next(logits, temperature=0) == 1
    rng = np.random.default_rng(0)
    draws = np.bincount([sample_next(logits, rng=rng) for _ in range(6000)], minlength=3) / 6000
    np.testing.assert_allclose(draws, [0.1, 0.6, 0.3], atol=0.03)
    sharp = next_token_probs(logits, temperature=0.5)
    np.testing.assert_allclose(sharp, np.array([0.01, 0.36, 0.09]) / 0.46)
    assert next_token_probs(logits, top_k=1).tolist() == [0.0, 1.0, 0.0]
    with pytest.raises(ValueError, match="temperature"):
        sample_next(logits, temperature=-1)


def test_generation_with_and_without_the_cache_is_the_same_past_the_context_window():
    decoder = init_tiny_gpt(30, d_model=16, num_heads=2, num_layers=2)
    for temperature in (0, 1.0):
        runs = [generate_ids(decoder, [1, 2, 3], 40, context_length=16, temperature=temperature,
                             rng=np.random.default_rng(5), use_cache=use_cache) for use_cache in (True, False)]
        assert runs[0] == runs[1] and len(runs[0]) == 43


# ---------------------------------------------------------------------------------------------- the shipped model

shipped = pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")


@pytest.fixture(scope="module")
def model():
    return load_tiny_gpt()


@shipped
def test_the_shipped_model_beats_the_bigram_clearly_on_the_validation_text(model):
    val_ids = model.tokenizer.encode(corpus_split("val"))
    train_ids = model.tokenizer.encode(corpus_split("train"))
    loss = mean_loss(model.decoder, val_ids, model.context_length)
    baselines = ngram_losses(train_ids, val_ids, model.tokenizer.vocab_size, model.context_length)
    assert loss == pytest.approx(model.record["val_loss"], abs=0.01)  # the recorded value, to rounding
    assert loss < baselines["bigram"] - 0.3 < baselines["unigram"]


@shipped
def test_the_shipped_model_generates_the_same_text_with_and_without_the_cache(model):
    for kwargs in ({"temperature": 0}, {"temperature": 0.8, "top_k": 40, "seed": 3}, {"top_p": 0.9, "seed": 1}):
        with_cache = model.generate("Elizabeth", 80, use_cache=True, **kwargs)
        assert with_cache == model.generate("Elizabeth", 80, use_cache=False, **kwargs)
        assert with_cache.startswith("Elizabeth") and len(with_cache) >= len("Elizabeth") + 80
    ids = model.tokenizer.encode("It is a truth")
    assert model.logits(ids).shape == (len(ids), model.tokenizer.vocab_size)
    assert model.corpus_split("val") == corpus_split("val")


@shipped
def test_a_damaged_or_missing_weights_file_says_so_in_one_sentence(tmp_path):
    damaged = tmp_path / "tiny_gpt.npz"
    damaged.write_bytes(WEIGHTS_PATH.read_bytes()[:-10])
    for path in (damaged, tmp_path / "missing.npz"):
        with pytest.raises(RuntimeError, match="missing or damaged"):
            load_tiny_gpt(path, sha256=load_tiny_gpt.__globals__["WEIGHTS_SHA256"] or "0" * 64)


def test_the_corpus_splits_do_not_overlap_and_cover_the_novel():
    train_text, val_text = corpus_split("train"), corpus_split("val")
    assert train_text + val_text == (WEIGHTS_PATH.parent / "pride_and_prejudice.txt").read_text(encoding="utf-8")
    assert 0.08 < len(val_text) / len(train_text + val_text) < 0.12
    with pytest.raises(ValueError, match="split"):
        corpus_split("test")


# ---------------------------------------------------------------------------------------------- GPT-2 to Llama

def test_llama_pieces_and_parameter_counts():
    from attn_helpers.block import parameter_count
    from attn_helpers.examples import GPT2_SMALL
    from attn_helpers.gpt import LLAMA2_7B, llama_parameter_count, rms_norm, silu, swiglu_ffn

    assert llama_parameter_count(LLAMA2_7B)["total"] == 6_738_415_616
    assert parameter_count(GPT2_SMALL)["total"] == 124_439_808
    x = RNG.standard_normal((3, 8))
    out = rms_norm(x)
    np.testing.assert_allclose(np.sqrt((out**2).mean(axis=-1)), 1.0, rtol=1e-5)
    np.testing.assert_allclose(silu(x), x * (0.5 + 0.5 * np.tanh(x / 2)), rtol=1e-12)  # sigmoid via tanh
    W_gate, W_up, W_down = RNG.standard_normal((8, 12)), RNG.standard_normal((8, 12)), RNG.standard_normal((12, 8))
    loop = np.array([[sum(silu(row @ W_gate)[j] * (row @ W_up)[j] * W_down[j, c] for j in range(12))
                      for c in range(8)] for row in x])
    np.testing.assert_allclose(swiglu_ffn(x, W_gate, W_up, W_down), loop, rtol=1e-10)


def test_the_shipped_weights_are_pinned_by_their_sha256():
    import hashlib

    from attn_helpers.gpt import WEIGHTS_SHA256

    assert WEIGHTS_SHA256 is not None and len(WEIGHTS_SHA256) == 64
    assert hashlib.sha256(WEIGHTS_PATH.read_bytes()).hexdigest() == WEIGHTS_SHA256
    assert WEIGHTS_PATH.stat().st_size < 5 * 2**20
