"""The tiny GPT: each backward piece against central differences (float64), the training step, sampling,
the KV cache, and the shipped model's validation loss against the n-gram baselines."""

import dataclasses
import threading

import numpy as np
import pytest
from raising import replace_everywhere

from attn_helpers.backprop import (
    attention_layer_backward,
    attention_layer_forward,
    block_backward,
    cross_entropy,
    feed_forward_backward,
    gelu_backward,
    layer_norm_backward,
    numerical_gradient,
    relative_error,
    training_block,
)
from attn_helpers.block import feed_forward, gelu, init_block_params, layer_norm, transformer_block
from attn_helpers.bpe import train_bpe
from attn_helpers.core import causal_mask
from attn_helpers.gpt import (
    WEIGHTS_PATH,
    corpus_split,
    decoder_arrays,
    decoder_forward,
    filter_logits,
    generate,
    generate_ids,
    gpt_loss_and_grads,
    init_tiny_gpt,
    load_tiny_gpt,
    mean_loss,
    next_token_probs,
    ngram_losses,
    sample_next,
    train_gpt,
)
from attn_helpers.multihead import multi_head_attention
from tests.test_block import _validation_entries

RNG = np.random.default_rng(14)
TOL = 1e-6  # relative error of every analytic gradient against central differences, in float64


def _perturbed_decoder(vocab_size=20, d_model=8, num_heads=2, num_layers=2, seed=3):
    """A float64 tiny GPT whose biases and layer-norm parameters are not 0 and 1 (so every path is exercised)."""
    decoder = init_tiny_gpt(vocab_size, d_model, num_heads, num_layers, dtype=np.float64)
    rng = np.random.default_rng(seed)
    for array in decoder_arrays(decoder).values():  # the decoder's own arrays, changed in place
        array += 0.2 * rng.standard_normal(array.shape)
    return decoder


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
    # eps is used: with a large eps the layer norm is another function, and so is its gradient
    big = layer_norm_backward(weights, x, gamma, eps=2.0)[0]
    _check(big, numerical_gradient(lambda v: (layer_norm(v, gamma, beta, eps=2.0) * weights).sum(), x))
    assert relative_error(big, grad_x) > 0.01
    with pytest.raises(ValueError, match="eps must be a finite number > 0"):
        layer_norm_backward(weights, x, gamma, eps=-1)


def test_gelu_backward_names_a_shape_mismatch():
    with pytest.raises(ValueError, match=r"grad_out has shape \(2, 1\) and x has shape \(3,\); expected the same"):
        gelu_backward(np.ones((2, 1)), np.ones(3))


def test_gelu_backward_is_the_derivative_of_the_tanh_form():
    x = np.linspace(-6, 6, 41)
    numeric = numerical_gradient(lambda v: gelu(v, approximate=True).sum(), x)
    _check(gelu_backward(np.ones_like(x), x), numeric)
    exact = numerical_gradient(lambda v: gelu(v).sum(), x)
    _check(gelu_backward(np.ones_like(x), x, approximate=False), exact)


def test_feed_forward_backward_matches_finite_differences():
    a = {"W_1": RNG.standard_normal((4, 16)), "b_1": RNG.standard_normal(16), "W_2": RNG.standard_normal((16, 4)),
         "b_2": RNG.standard_normal(4)}
    x, weights = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))

    def loss(x=x, **changed):
        p = {**a, **changed}
        return (feed_forward(x, p["W_1"], p["W_2"], p["b_1"], p["b_2"], activation="gelu_tanh") * weights).sum()

    record = {}
    feed_forward(x, a["W_1"], a["W_2"], a["b_1"], a["b_2"], activation="gelu_tanh", record=record)
    grad_x, grads = feed_forward_backward(weights, record, a["W_1"], a["W_2"])
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
        out, _ = multi_head_attention(x, p["W_q"], p["W_k"], p["W_v"], p["W_o"], h, mask,
                                      biases=(p["b_q"], p["b_k"], p["b_v"], p["b_o"]))
        return (out * weights).sum()

    params = dataclasses.replace(init_block_params(d, h, dtype=np.float64, bias=True), **a)
    record = {}
    attention_layer_forward(x, a["W_q"], a["W_k"], a["W_v"], a["W_o"], h, mask,
                            (a["b_q"], a["b_k"], a["b_v"], a["b_o"]), record=record)
    grad_x, grads = attention_layer_backward(weights, record, params)
    _check(grad_x, numerical_gradient(lambda v: loss(x=v), x))
    for name in a:
        _check(grads[name], numerical_gradient(lambda v, name=name: loss(**{name: v}), a[name]))
    assert np.abs(grads["b_k"]).max() < 1e-12  # a bias on every key shifts a query's scores equally: no effect


def test_block_backward_matches_finite_differences():
    decoder = _perturbed_decoder()
    block = decoder.blocks[0]
    x, weights, mask = RNG.standard_normal((4, 8)), RNG.standard_normal((4, 8)), causal_mask(4)
    record = {}
    training_block(x, block, mask, record=record)  # the one forward, keeping what backward reads
    grad_x, grads = block_backward(weights, record, block)
    numeric = numerical_gradient(lambda v: (transformer_block(v, block, mask)[0] * weights).sum(), x)
    _check(grad_x, numeric)
    assert set(grads) == {name.split(".")[-1] for name in decoder_arrays(decoder) if name.startswith("blocks.0.")}


def test_one_training_step_gives_every_parameter_its_gradient():
    decoder = _perturbed_decoder(vocab_size=12, d_model=4, num_heads=2)
    ids, targets = RNG.integers(0, 12, (2, 5)), RNG.integers(0, 12, (2, 5))
    loss, grads = gpt_loss_and_grads(decoder, ids, targets)

    def loss_of(array, value):
        kept = array.copy()
        array[...] = value
        try:
            return np.mean([cross_entropy(decoder_forward(decoder, row), t) for row, t in zip(ids, targets)])
        finally:
            array[...] = kept

    arrays = decoder_arrays(decoder)
    assert loss == pytest.approx(loss_of(arrays["embeddings"], arrays["embeddings"]), rel=1e-12)
    assert set(grads) == set(arrays)
    for name, array in arrays.items():
        _check(grads[name], numerical_gradient(lambda v, array=array: loss_of(array, v), array.copy()))


def test_a_training_step_validates_its_inputs_once():
    decoder = init_tiny_gpt(30, d_model=16, num_heads=2, num_layers=2)
    ids = RNG.integers(0, 30, (4, 9))
    count = _validation_entries(lambda: gpt_loss_and_grads(decoder, ids[:, :-1], ids[:, 1:]))
    assert 1 <= count <= 10, count


def _paths():
    """The paths that must all run through notebook 08's attention and notebook 10's block."""
    decoder = init_tiny_gpt(30, d_model=16, num_heads=2, num_layers=2)
    ids = RNG.integers(0, 30, 10)
    from attn_helpers.kv_cache import grouped_query_attention

    x, w = np.ones((3, 8)), np.eye(8)
    return {
        "tiny GPT logits": lambda: decoder_forward(decoder, ids),
        "one training step": lambda: gpt_loss_and_grads(decoder, ids[:-1], ids[1:]),
        "cached generation": lambda: generate_ids(decoder, [1, 2], 3, use_cache=True),
        "greedy cached generation": lambda: generate(decoder, [1, 2], 3, use_cache=True),
        "grouped-query attention": lambda: grouped_query_attention(x, w, w[:, :4], w[:, :4], w, 4, num_kv_heads=2),
    }


@pytest.mark.parametrize(("module", "name"), [("multihead", "merge_heads"), ("block", "transformer_block"),
                                               ("backprop", "training_block"),
                                               ("core", "scaled_dot_product_attention")])
def test_every_path_runs_through_the_one_attention_and_the_one_block(monkeypatch, module, name):
    import importlib

    paths = _paths()
    for call in paths.values():
        call()  # they all run

    def broken(*args, **kwargs):
        raise RuntimeError(f"{name} was called")

    broken.unchecked = broken
    replace_everywhere(monkeypatch, getattr(importlib.import_module(f"attn_helpers.{module}"), name), broken)
    # Inference runs notebook 10's block; training its training forward (the same steps, with dropout and a
    # record for the backward pass); grouped-query attention alone has no block.
    skip = {"transformer_block": {"grouped-query attention", "one training step"},
            "training_block": {"tiny GPT logits", "cached generation", "greedy cached generation",
                               "grouped-query attention"}}.get(name, set())
    for what, call in paths.items():
        if what in skip:
            continue
        with pytest.raises(RuntimeError, match=f"{name} was called"):
            call()


def test_the_first_steps_make_the_loss_fall():
    text = corpus_split("train")[:30_000]
    tokenizer = train_bpe(text, 300)
    ids = tokenizer.encode(text)
    decoder = init_tiny_gpt(300, d_model=32, num_heads=2, num_layers=1)
    _, losses = train_gpt(decoder, ids, 40, batch_size=8, context_length=32, warmup=10)
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


def test_the_top_p_boundary_keeps_the_smallest_set_that_reaches_p():
    probs = np.array([0.5, 0.25, 0.125, 0.125])  # sums exact in binary: 0.5 + 0.25 = 0.75 exactly
    assert np.isfinite(filter_logits(np.log(probs), top_p=0.75)).sum() == 2  # reaching p exactly is enough
    assert np.isfinite(filter_logits(np.log(probs), top_p=0.7500001)).sum() == 3
    # ten tokens of 0.1: nine sum to 0.8999999999999999 in floating point, but they are 0.9
    assert (next_token_probs(np.zeros(10), top_p=0.9) > 0).sum() == 9


def test_sampling_accepts_what_filter_logits_returns():
    logits = RNG.standard_normal(20)
    assert (next_token_probs(filter_logits(logits, top_p=0.9)) > 0).sum() == np.isfinite(
        filter_logits(logits, top_p=0.9)).sum()
    assert np.isfinite(filter_logits(logits, top_k=5))[sample_next(filter_logits(logits, top_k=5), rng=0)]
    with pytest.raises(ValueError, match="logits are all -inf"):
        next_token_probs(np.full(3, -np.inf))


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    (dict(temperature=float("nan")), ValueError, "temperature must be a finite number >= 0; got nan"),
    (dict(temperature=0, top_p=5), ValueError, "top_p must be a number in"),
    (dict(temperature="0.5"), TypeError, "temperature must be"),
    (dict(top_k=0), ValueError, "top_k must be >= 1"),
])
def test_sampling_settings_are_checked_even_when_greedy(kwargs, error, words):
    with pytest.raises(error, match=words):
        next_token_probs(np.zeros(4), **kwargs)
    with pytest.raises(error, match=words):
        generate_ids(init_tiny_gpt(10, d_model=8, num_heads=2, num_layers=1), [1], 2, **kwargs)


def test_generation_never_feeds_more_than_context_length_tokens(monkeypatch):
    import attn_helpers.gpt as gpt

    decoder = init_tiny_gpt(30, d_model=16, num_heads=2, num_layers=1)
    seen = []
    forward = gpt._forward

    def spy(decoder, ids, cache=None, record=None):
        seen.append(ids.shape[-1] + (0 if cache is None else cache[0].length))  # what the model attends to
        return forward(decoder, ids, cache, record)

    monkeypatch.setattr(gpt, "_forward", spy)
    for context_length in (1, 2, 5, 8):
        for use_cache in (True, False):
            seen.clear()
            ids = generate_ids(decoder, [1, 2, 3], 20, context_length=context_length, use_cache=use_cache)
            assert len(ids) == 23 and max(seen) == context_length, (context_length, use_cache, seen)


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


@pytest.mark.parametrize("damage", ["missing", "folder", "binary", "truncated", "empty"])
def test_a_damaged_or_missing_corpus_says_so_in_one_sentence(monkeypatch, tmp_path, damage):
    import attn_helpers.gpt as gpt

    path = tmp_path / "pride_and_prejudice.txt"
    if damage == "folder":
        path.mkdir()
    elif damage != "missing":
        text = gpt.CORPUS_PATH.read_bytes()
        path.write_bytes({"binary": b"\xff\xfe" + text[2:], "truncated": text[:1000], "empty": b""}[damage])
    monkeypatch.setattr(gpt, "CORPUS_PATH", path)
    with pytest.raises(RuntimeError, match=r"The corpus pride_and_prejudice\.txt is missing or damaged"):
        corpus_split("train")


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
    from attn_helpers.llama import LLAMA2_7B, llama_parameter_count, rms_norm, silu, swiglu_ffn

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


@pytest.mark.parametrize(("change", "error", "words"), [
    ({"num_kv_head": 8}, ValueError, r"unknown keys \['num_kv_head'\]"),
    ({"num_layers": -1}, ValueError, r"config\['num_layers'\] must be >= 1"),
    ({"num_heads": 30}, ValueError, "num_heads=30 must divide d_model=4096"),
    ({"num_kv_heads": 5}, ValueError, "num_kv_heads=5 must divide num_heads"),
    ({"d_model": 4096.0}, TypeError, r"config\['d_model'\] must be an integer"),
])
def test_llama_parameter_count_names_a_bad_configuration(change, error, words):
    from attn_helpers.llama import LLAMA2_7B, llama_parameter_count

    with pytest.raises(error, match=words):
        llama_parameter_count({**LLAMA2_7B, **change})
    grouped = llama_parameter_count({**LLAMA2_7B, "num_kv_heads": 8})["attention"]
    assert grouped == 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024)  # the grouped-query setting is used


def test_rms_norm_names_a_gamma_of_the_wrong_shape():
    from attn_helpers.llama import rms_norm

    with pytest.raises(ValueError, match=r"gamma has shape \(2, 1\); expected \(3,\)"):
        rms_norm(np.ones((2, 3)), np.ones((2, 1)))


# ---------------------------------------------------------------------------------------------- what a learner passes

def test_the_training_and_evaluation_functions_name_what_they_got():
    decoder = init_tiny_gpt(30, d_model=8, num_heads=2, num_layers=1)
    ids = RNG.integers(0, 30, 200)
    from attn_helpers.gpt import TinyGPT

    tiny = TinyGPT(decoder, None)
    for call in (lambda: train_gpt(tiny, ids, 1), lambda: mean_loss(tiny, ids), lambda: generate_ids(tiny, [1], 1)):
        with pytest.raises(TypeError, match="got a TinyGPT: pass its decoder, model.decoder"):
            call()
    cases = [
        (lambda: train_gpt(decoder, ids, 1, batch_size=0), ValueError, "batch_size must be >= 1"),
        (lambda: train_gpt(decoder, ids, 1, context_length=0), ValueError, "context_length must be >= 1"),
        (lambda: train_gpt(decoder, ids[:10], 1, context_length=16), ValueError,
         "train_ids has 10 tokens; expected at least context_length \\+ 1 = 17"),
        (lambda: train_gpt(decoder, ids, 1, learning_rate="0.01"), TypeError, "learning_rate must be a positive"),
        (lambda: train_gpt(decoder, ids, 1, learning_rate=float("nan")), ValueError, "learning_rate must be a finite"),
        (lambda: train_gpt(decoder, "some text", 1), TypeError, "train_ids must be token ids, not text"),
        (lambda: mean_loss(decoder, ids[:10], 16), ValueError, "ids has 10 tokens; expected at least"),
        (lambda: ngram_losses(ids, ids[:10], 30, 16), ValueError, "ids has 10 tokens; expected at least"),
        (lambda: generate_ids(decoder, [1], 2, context_length=2.5), TypeError, "context_length must be an integer"),
        (lambda: generate_ids(decoder, [1.0, 2.0], 2), TypeError, "prompt_ids must be integer token ids"),
        (lambda: generate_ids(decoder, [1], 2, use_cache="no"), TypeError, "use_cache must be True or False"),
        (lambda: init_tiny_gpt(30, dtype=int), TypeError, "dtype"),
    ]
    for call, error, words in cases:
        with pytest.raises(error, match=words):
            call()
    assert init_tiny_gpt(30, d_model=8, num_heads=2, num_layers=1, seed=None).vocab_size == 30  # None: SEED
    assert len(generate_ids(decoder, [1, 2], 5, context_length=1)) == 7


def test_overlapping_calls_in_threads_restore_the_callers_thread_limits(monkeypatch):
    # Thread a enters first and leaves first; thread b enters while a runs and leaves last. With a BLAS whose
    # thread count is process-wide (OpenBLAS on some machines; here a stand-in), a limit restored by each call in
    # turn leaves BLAS at b's "original": a's limit of 1 thread, for the rest of the process.
    import contextlib

    from attn_helpers import config

    blas = type("Blas", (), {"num_threads": 4, "user_api": "blas"})()

    @contextlib.contextmanager
    def limit(limits, user_api):
        saved, blas.num_threads = blas.num_threads, limits
        yield
        blas.num_threads = saved

    monkeypatch.setattr(config, "_blas_libraries", lambda: type("Controller", (), {"lib_controllers": [blas],
                                                                                   "limit": limit}))
    events = {name: threading.Event() for name in ("a_in", "b_in", "a_out")}
    during = []

    @config.one_core()
    def a():
        events["a_in"].set()
        events["b_in"].wait(5)
        during.append(blas.num_threads)

    @config.one_core()
    def b():
        events["b_in"].set()
        events["a_out"].wait(5)

    def run_a():
        a()
        events["a_out"].set()

    threads = [threading.Thread(target=run_a), threading.Thread(target=lambda: events["a_in"].wait(5) and b())]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(event.is_set() for event in events.values()) and during == [1]
    assert blas.num_threads == 4


# ---------------------------------------------------------------------------------------------- dropout (training only)

def test_dropout_off_changes_nothing_and_on_drops_the_right_share():
    block = _perturbed_decoder().blocks[0]
    x, mask = RNG.standard_normal((2, 6, 8)), causal_mask(6)
    np.testing.assert_array_equal(training_block(x, block, mask, dropout=0.0, rng=5)[0],
                                  transformer_block(x, block, mask)[0])
    record = {}
    out, weights = training_block(x, block, mask, record=record, dropout=0.25, rng=np.random.default_rng(1))
    assert not np.allclose(out, transformer_block(x, block, mask)[0])
    np.testing.assert_array_equal(weights, transformer_block(x, block, mask)[1])  # the softmax's, before dropout
    for keep in (record["drop_attention"], record["drop_feed_forward"], record["attention"]["keep"]):
        assert set(np.unique(keep)) == {0.0, 1 / 0.75}
        assert abs((keep == 0).mean() - 0.25) < 0.15  # about a quarter dropped (a few dozen draws each)
    with pytest.raises(ValueError, match=r"dropout must be a number in \[0, 1\)"):
        training_block(x, block, mask, dropout=1.0)


def test_dropout_in_the_attention_weights_scales_the_kept_ones():
    # One head, values = identity: the context is the weights themselves, after dropout.
    x, eye = np.eye(4), np.eye(4)
    record = {}
    out, weights = attention_layer_forward(x, eye, eye, eye, eye, 1, record=record, dropout=0.5, rng=3)
    np.testing.assert_allclose(out, weights[0] * record["keep"][0], rtol=1e-12)


def test_the_backward_pass_with_dropout_matches_finite_differences_with_the_same_masks():
    decoder = _perturbed_decoder(vocab_size=12, d_model=4, num_heads=2, num_layers=1)
    ids, targets = RNG.integers(0, 12, (2, 5)), RNG.integers(0, 12, (2, 5))
    loss, grads = gpt_loss_and_grads(decoder, ids, targets, dropout=0.3, rng=7)
    assert loss != pytest.approx(gpt_loss_and_grads(decoder, ids, targets)[0])

    def loss_of(array, value):  # the same seed: the same masks
        kept = array.copy()
        array[...] = value
        try:
            return gpt_loss_and_grads(decoder, ids, targets, dropout=0.3, rng=7)[0]
        finally:
            array[...] = kept

    for name, array in decoder_arrays(decoder).items():
        _check(grads[name], numerical_gradient(lambda v, array=array: loss_of(array, v), array.copy()))


def test_training_with_dropout_runs_and_is_seeded():
    decoder = init_tiny_gpt(30, d_model=8, num_heads=2, num_layers=1)
    ids = RNG.integers(0, 30, 300)
    _, losses = train_gpt(decoder, ids, 5, batch_size=2, context_length=8, dropout=0.1)
    np.testing.assert_array_equal(losses, train_gpt(decoder, ids, 5, batch_size=2, context_length=8, dropout=0.1)[1])
    assert not np.array_equal(losses, train_gpt(decoder, ids, 5, batch_size=2, context_length=8)[1])
