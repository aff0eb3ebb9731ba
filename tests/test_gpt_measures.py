"""Notebook 14's measures: known words, the bigram baseline's probabilities, head habits, against loops."""

import numpy as np
import pytest

from attn_helpers import causal_mask, positional_encoding, transformer_block
from attn_helpers.gpt import WEIGHTS_PATH, corpus_split, load_tiny_gpt, ngram_losses
from attn_helpers.gpt_measures import bigram_log_probs, head_habits, known_word_share, sample_word_shares

needs_model = pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")


def test_known_word_share_counts_words_of_letters():
    assert known_word_share(["Mr. Darcy's ball", "xyzzy"], "Mr Darcy s ball") == 4 / 5
    assert known_word_share(["the the qq"], "the") == 2 / 3


def test_bigram_log_probs_are_the_baseline_of_ngram_losses():
    rng = np.random.default_rng(0)
    train_ids, val_ids = rng.integers(0, 7, 500), rng.integers(0, 7, 129)
    log_p = bigram_log_probs(train_ids, 7)
    np.testing.assert_allclose(np.exp(log_p).sum(axis=1), 1.0)
    # ngram_losses scores windows of 64 tokens: inputs val_ids[:128], targets val_ids[1:129]
    loss = -np.mean([log_p[a, b] for a, b in zip(val_ids[:128], val_ids[1:129])])
    assert loss == pytest.approx(ngram_losses(train_ids, val_ids, 7)["bigram"], rel=1e-12)


@needs_model
def test_head_habits_match_a_loop_over_windows():
    model = load_tiny_gpt()
    ids = np.array(model.tokenizer.encode(corpus_split("val")[:20_000]))
    starts_word = np.array([b[:1] == b" " for b in model.tokenizer.token_bytes])
    habits = head_habits(model.decoder, ids, windows=3, length=16, starts_word=starts_word)
    for w, start in enumerate(np.linspace(0, len(ids) - 16, 3).astype(int)):
        window = ids[start:start + 16]
        x = model.decoder.embeddings[window] + positional_encoding(16, model.decoder.d_model)
        for n, block in enumerate(model.decoder.blocks):
            x, weights = transformer_block(x, block, causal_mask(16))  # (h, T, T)
            for h in range(weights.shape[0]):
                previous = [weights[h, i, i - 1] for i in range(1, 16)]
                begins = [i for i in range(1, 16) if starts_word[window[i]]]
                assert habits["previous"][w, n, h] == pytest.approx(np.mean(previous), rel=1e-4)
                assert habits["first"][w, n, h] == pytest.approx(np.mean(weights[h, 1:, 0]), rel=1e-4)
                assert habits["previous, word start"][w, n, h] == pytest.approx(
                    np.mean([weights[h, i, i - 1] for i in begins]), rel=1e-4)
    assert habits["chance"] == pytest.approx(np.mean([1 / (i + 1) for i in range(1, 16)]))


@needs_model
def test_sample_word_shares_greedy_is_the_greedy_text():
    model = load_tiny_gpt()
    train_text = corpus_split("train")
    train_ids = np.array(model.tokenizer.encode(train_text[:50_000]))
    shares = sample_word_shares(model, train_ids, train_text, "Elizabeth", samples=2, length=20, temperature=0)
    greedy = model.generate("Elizabeth", 20, temperature=0).split(" ", 1)[1]  # the prompt's word left out
    assert shares["tiny GPT"] == pytest.approx(known_word_share([greedy], train_text))
    assert 0 <= shares["bigram"] <= 1
    assert sample_word_shares(model, train_ids, train_text, "Elizabeth", samples=2, length=20, temperature=0,
                              baseline=False) == {"tiny GPT": shares["tiny GPT"]}
