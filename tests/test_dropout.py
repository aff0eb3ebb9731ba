"""Dropout as notebooks 10 and 14 teach it: the block against a loop that draws the same masks, the mean kept in
expectation, and the shipped record of the tiny GPT trained with dropout (notebook 14's comparison)."""

import hashlib
import json
import math

import numpy as np
import pytest

from attn_helpers.backprop import attention_layer_forward, training_block
from attn_helpers.block import feed_forward, init_block_params, layer_norm, transformer_block
from attn_helpers.core import causal_mask
from attn_helpers.gpt import (
    CORPUS_SHA256,
    DROPOUT_RECORD_PATH,
    DROPOUT_RECORD_SHA256,
    WEIGHTS_PATH,
    load_dropout_record,
    load_tiny_gpt,
)
from attn_helpers.multihead import multi_head_attention


def _block_loop(x, p, mask, rate, rng):
    """A pre-norm block with inverted dropout, one head and one query at a time, drawing the masks in the
    order notebook 10 states: the attention weights, the attention branch, the feed-forward branch."""
    T, d_model = x.shape
    h, d_h = p.num_heads, d_model // p.num_heads
    normed = layer_norm(x, p.norm_1_gamma, p.norm_1_beta, p.eps)
    q, k, v = normed @ p.W_q, normed @ p.W_k, normed @ p.W_v  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
    keep = (rng.random((h, T, T)) >= rate) / (1 - rate)
    context = np.zeros((T, d_model))
    for head in range(h):
        cols = slice(head * d_h, (head + 1) * d_h)
        for i in range(T):
            scores = [q[i, cols] @ k[j, cols] / math.sqrt(d_h) if mask[i, j] else -np.inf for j in range(T)]
            weights = np.exp(np.array(scores) - max(scores))
            weights /= weights.sum()
            context[i, cols] = sum(weights[j] * keep[head, i, j] * v[j, cols] for j in range(T))
    attended = context @ p.W_o  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
    x = x + attended * (rng.random(attended.shape) >= rate) / (1 - rate)
    ffn = feed_forward(layer_norm(x, p.norm_2_gamma, p.norm_2_beta, p.eps), p.W_1, p.W_2)
    return x + ffn * (rng.random(ffn.shape) >= rate) / (1 - rate)


@pytest.mark.parametrize("rate", [0.1, 0.5])
def test_the_block_with_dropout_matches_a_loop_with_the_same_masks(rate):
    p = init_block_params(8, 2, rng=4, dtype=np.float64)
    x, mask = np.random.default_rng(5).standard_normal((6, 8)), causal_mask(6)
    out, _ = training_block(x, p, mask, dropout=rate, rng=np.random.default_rng(6))
    np.testing.assert_allclose(out, _block_loop(x, p, mask, rate, np.random.default_rng(6)), rtol=1e-10, atol=1e-12)
    assert not np.allclose(out, transformer_block(x, p, mask)[0])  # dropout did something


def test_dropout_on_the_attention_weights_keeps_the_output_in_expectation():
    # The output is linear in the dropped weights, so its mean over many masks tends to the output without dropout.
    rng = np.random.default_rng(7)
    x, (W_q, W_k, W_v, W_o) = rng.standard_normal((5, 8)), rng.standard_normal((4, 8, 8)) / np.sqrt(8)
    plain, _ = multi_head_attention(x, W_q, W_k, W_v, W_o, 2)
    draws = np.random.default_rng(8)
    mean = np.mean([attention_layer_forward(x, W_q, W_k, W_v, W_o, 2, dropout=0.5, rng=draws)[0]
                    for _ in range(4000)], axis=0)
    assert np.abs(mean - plain).max() < 0.05 * np.abs(plain).max()
    without_scaling = 0.5 * mean  # what dropping without dividing by 1 - p would average to
    assert np.abs(without_scaling - plain).max() > 0.3 * np.abs(plain).max()


def test_a_missing_or_damaged_dropout_record_says_so_in_one_sentence(tmp_path):
    damaged = tmp_path / "tiny_gpt_dropout_record.json"
    damaged.write_text(json.dumps({"val_loss": 1.0}))
    for path in (damaged, tmp_path / "missing.json"):
        with pytest.raises(RuntimeError, match=rf"{path.name} is missing or damaged") as err:
            load_dropout_record(path, sha256="0" * 64)
        assert str(err.value).count(". ") == 0  # one sentence
    assert load_dropout_record(damaged, sha256=hashlib.sha256(damaged.read_bytes()).hexdigest()) == {"val_loss": 1.0}


shipped = pytest.mark.skipif(not (DROPOUT_RECORD_PATH.exists() and WEIGHTS_PATH.exists()),
                             reason="the dropout run's record is not built")


@shipped
def test_the_dropout_record_is_the_shipped_recipe_with_dropout_and_measures_both_models_alike():
    assert DROPOUT_RECORD_SHA256 is not None  # the shipped file is checked
    record, model = load_dropout_record(), load_tiny_gpt()
    assert record["recipe"] == {**model.record["recipe"], "dropout": 0.1}  # only the dropout differs
    assert record["corpus_sha256"] == CORPUS_SHA256
    assert len(record["steps"]) == len(record["losses"]) == record["recipe"]["steps"] // 10
    # the shipped model's validation loss, measured again by the tool, agrees with the one in its own record
    assert record["shipped"]["val_loss"] == pytest.approx(model.record["val_loss"], abs=1e-3)
    for losses in (record, record["shipped"]):
        assert losses["train_loss"] < losses["val_loss"]  # both fit the training text better than held-out text
