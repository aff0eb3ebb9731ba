"""One decoder runner, one generation loop, one sampler and one home for a head's rows (issue 48).

* the window ``generate_ids`` keeps at a jump is the one a list that is cut by hand keeps (an independent reference:
  the list, not start indices; the scores from ``decoder_forward`` on the whole window);
* each shared piece, made to raise, breaks every path of both GPTs (and of MiniLM's ablation) that should use it:
  neither model keeps a second copy;
* the runner's mask is the causal mask shifted by the cached positions (a loop reference).
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest
from raising import replace_everywhere

import attn_helpers.gpt as gpt
from attn_helpers.decoder import decoder_mask, generate_tokens
from attn_helpers.gpt import (
    TinyGPT,
    attention_weights,
    decoder_forward,
    generate,
    generate_ids,
    gpt_loss_and_grads,
    init_tiny_gpt,
    mean_loss,
    random_decoder,
    sample_next,
)
from attn_helpers.heads import W_o_by_head, ablate_heads, head_rows


def kept_windows(prompt, max_new_tokens, context_length, next_token):
    """What the model reads at each new token, kept as a list that is cut: the list holds the last ``context_length``
    ids of the prompt; before a token is predicted, a list of ``context_length + 1`` ids is cut to its last half
    (``context_length // 2`` ids, at least one). Returns all the ids and the windows read."""
    ids, window, read = list(prompt), list(prompt)[-context_length:], []
    for _ in range(max_new_tokens):
        if len(window) == context_length + 1:
            del window[:len(window) - max(1, context_length // 2)]
        read.append(tuple(window))
        token = next_token(window)
        window.append(token)
        ids.append(token)
    return ids, read


def spy_on_the_forward(monkeypatch):
    """Every window the tiny GPT reads through ``gpt._forward``: with a cache, what the cache holds and the new ids."""
    read, held, forward = [], {}, gpt._forward

    def spy(decoder, ids, cache=None, *rest):
        tokens = held.setdefault(id(cache), []) if cache is not None else []
        tokens.extend(int(i) for i in ids)
        read.append(tuple(tokens) if cache is not None else tuple(int(i) for i in ids))
        return forward(decoder, ids, cache, *rest)

    monkeypatch.setattr(gpt, "_forward", spy)
    return read


@pytest.mark.parametrize("context_length", [1, 2, 3, 5, 8])
@pytest.mark.parametrize("prompt", [[4], [1, 2, 3], list(range(11))])
@pytest.mark.parametrize("use_cache", [True, False])
def test_the_window_kept_at_a_jump_is_the_last_half(monkeypatch, context_length, prompt, use_cache):
    decoder = init_tiny_gpt(30, d_model=16, num_heads=2, num_layers=2, dtype=np.float64)
    expected_ids, expected_read = kept_windows(
        prompt, 20, context_length, lambda window: int(np.argmax(decoder_forward(decoder, window)[-1])))
    read = spy_on_the_forward(monkeypatch)
    ids = generate_ids(decoder, prompt, 20, context_length=context_length, temperature=0, use_cache=use_cache)
    assert read == expected_read
    assert ids == expected_ids
    assert any(b[:-1] != a for a, b in zip(read, read[1:])), "no jump happened: the test tests nothing"


def test_the_mask_is_the_causal_mask_shifted_by_the_cached_positions():
    for T, T_past in ((1, 0), (3, 0), (1, 5), (4, 2)):
        loop = np.array([[j <= T_past + i for j in range(T_past + T)] for i in range(T)])
        np.testing.assert_array_equal(decoder_mask(T, T_past), loop)


def test_the_loop_stops_after_the_stop_token_and_at_a_full_window():
    def scores(ids, cache):
        return np.eye(6)[(np.asarray(ids) + 1) % 6]  # the next token is (token + 1) mod 6

    def greedy(logits):
        return int(np.argmax(logits))

    assert [t for _, t in generate_tokens(scores, [0], 10, greedy, use_cache=False, stop_id=3)] == [1, 2, 3]
    assert [t for _, t in generate_tokens(scores, [0], 10, greedy, use_cache=False, context_length=4,
                                          at_full="stop")] == [1, 2, 3, 4]


# ------------------------------------------------------------------- one implementation: made to raise, all break

@pytest.fixture(scope="module")
def smollm2():
    from attn_helpers.llm import load_smollm2

    return load_smollm2()


@pytest.fixture(scope="module")
def minilm():
    from attn_helpers.pretrained import load_minilm

    return load_minilm()


def _paths(smollm2, minilm):
    from attn_helpers import ablation, llm_measures, pretrained
    from attn_helpers.bpe import BPETokenizer

    tiny = random_decoder(vocab_size=10, d_model=8, num_heads=2, num_layers=2)
    ids, text = [1, 2, 3], "The cat sat."
    tiny_model = TinyGPT(random_decoder(vocab_size=256, d_model=8, num_heads=2, num_layers=1), BPETokenizer([]), 4)
    normed = smollm2.blocks[0].norm_1(smollm2.embeddings[ids])
    return {
        "tiny GPT, decoder_forward": lambda: decoder_forward(tiny, ids),
        "tiny GPT, decoder_forward with a cache": lambda: decoder_forward(tiny, ids, tiny.empty_cache()),
        "tiny GPT, attention_weights": lambda: attention_weights(tiny, ids),
        "tiny GPT, training step": lambda: gpt_loss_and_grads(tiny, ids, ids),
        "tiny GPT, mean_loss": lambda: mean_loss(tiny, ids * 3, context_length=4),
        "tiny GPT, greedy generate": lambda: generate(tiny, ids, 2),
        "tiny GPT, generate_ids": lambda: generate_ids(tiny, ids, 3, context_length=4),
        "tiny GPT, TinyGPT.generate": lambda: tiny_model.generate("ab", 2),
        "sample_next": lambda: sample_next(np.array([1.0, 2.0]), rng=1),
        "SmolLM2, logits": lambda: smollm2.logits(ids),
        "SmolLM2, forward": lambda: smollm2.forward(ids),
        "SmolLM2, forward with ablated heads": lambda: smollm2.forward(ids, ablate=[(0, 1)]),
        "SmolLM2, step": lambda: smollm2.step(ids, smollm2.empty_cache()),
        "SmolLM2, generate": lambda: smollm2.generate(ids, 2, temperature=1.0),
        "SmolLM2, chat": lambda: smollm2.chat("Hi", max_new_tokens=2),
        "SmolLM2, head value lengths": lambda: llm_measures.head_value_lengths(smollm2.blocks[0], normed),
        "MiniLM, ablate_head": lambda: ablation.ablate_head(minilm, 0, 2),
        "MiniLM, mean ablation": lambda: ablation.ablate_head(minilm, 0, 2, np.zeros(32)),
        "MiniLM, head contexts": lambda: ablation.head_contexts(minilm, minilm.run(text), 0, 2),
        "MiniLM, weighted value norms": lambda: pretrained.weighted_value_norms(minilm, minilm.run(text), 0),
    }


RUNS = [path for path in ("tiny GPT, decoder_forward", "tiny GPT, decoder_forward with a cache",
                          "tiny GPT, attention_weights", "tiny GPT, training step", "tiny GPT, mean_loss")]
GENERATES = ["tiny GPT, greedy generate", "tiny GPT, generate_ids", "tiny GPT, TinyGPT.generate", "SmolLM2, generate",
             "SmolLM2, chat"]
SMOLLM2_RUNS = ["SmolLM2, logits", "SmolLM2, forward", "SmolLM2, forward with ablated heads", "SmolLM2, step"]
ONE_HOME = {
    ("decoder", "run_blocks"): RUNS + GENERATES + SMOLLM2_RUNS,
    ("decoder", "decoder_mask"): RUNS + GENERATES + SMOLLM2_RUNS,
    ("decoder", "generate_tokens"): GENERATES,
    ("gpt", "token_sampler"): ["tiny GPT, generate_ids", "tiny GPT, TinyGPT.generate", "sample_next",
                               "SmolLM2, generate", "SmolLM2, chat"],
    ("heads", "ablate_heads"): ["SmolLM2, forward with ablated heads", "MiniLM, ablate_head", "MiniLM, mean ablation"],
    ("heads", "head_rows"): ["SmolLM2, forward with ablated heads", "MiniLM, ablate_head", "MiniLM, mean ablation"],
    ("heads", "head_values"): ["SmolLM2, head value lengths", "MiniLM, head contexts", "MiniLM, weighted value norms"],
    ("heads", "W_o_by_head"): ["SmolLM2, head value lengths", "MiniLM, weighted value norms"],
}


@pytest.mark.parametrize(("module", "name"), sorted(ONE_HOME))
def test_making_a_shared_piece_raise_breaks_both_models(monkeypatch, smollm2, minilm, module, name):
    paths = _paths(smollm2, minilm)
    for what in ONE_HOME[module, name]:
        paths[what]()  # they all run
    original = getattr(importlib.import_module(f"attn_helpers.{module}"), name)

    def broken(*args, **kwargs):
        raise RuntimeError(f"{name} was called")

    replace_everywhere(monkeypatch, original, broken)
    for what in ONE_HOME[module, name]:
        with pytest.raises(RuntimeError, match=f"{name} was called"):
            paths[what]()


# --------------------------------------------------------------------------------------- a head's rows, one home

def test_a_heads_rows_are_what_it_writes_into_the_stream():
    """Head h's context vectors meet only its rows of W_o: zeroing those removes exactly that head (a loop)."""
    rng = np.random.default_rng(48)
    block = random_decoder(d_model=8, num_heads=4, num_layers=1, dtype=np.float64).blocks[0]
    contexts = rng.standard_normal((4, 5, 2))  # (h, T, d_h): each head's context vectors
    merged = contexts.transpose(1, 0, 2).reshape(5, 8)  # (T, h d_h)
    for head in range(4):
        rows = head_rows(block, head)
        alone = contexts[head] @ block.W_o[rows]  # (T, d_h) @ (d_h, d_model)
        np.testing.assert_allclose(alone, contexts[head] @ W_o_by_head(block)[head])
        others = sum(contexts[h] @ block.W_o[head_rows(block, h)] for h in range(4) if h != head)
        np.testing.assert_allclose(merged @ ablate_heads(block, [head]).W_o, others, atol=1e-12)
    with pytest.raises(ValueError, match=r"head must be in 0..3; got 4"):
        head_rows(block, 4)
