"""attn_helpers.ablation: a head removed on a copy of the weights, checked against a direct computation."""

import math

import numpy as np
import pytest

from attn_helpers.ablation import (
    ALL_HEADS_PATH,
    MODES,
    SUMMARY,
    ablate_head,
    ablation_effects,
    head_contexts,
    head_rows,
    load_all_heads,
    mean_context,
    relative_change,
    sentence_embeddings,
    summarise,
)
from attn_helpers.pretrained import FINGERPRINT_SENTENCES, load_minilm

TEXT = "The cat sat on the mat because it was tired."


@pytest.fixture(scope="module")
def model():
    return load_minilm()


def _layer_norm(x, gamma, beta, eps):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def _block_with_head_replaced(x, p, num_heads, head, context):
    """One post-norm BERT block written out in float64, with head ``head``'s context vectors set to ``context``."""
    x = x.astype(np.float64)
    T, d = x.shape
    d_h = d // num_heads
    q, k, v = (x @ w.astype(np.float64) + b for w, b in ((p.W_q, p.b_q), (p.W_k, p.b_k), (p.W_v, p.b_v)))
    heads = []
    for h in range(num_heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        scores = q[:, cols] @ k[:, cols].T / math.sqrt(d_h)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        heads.append(np.broadcast_to(context, (T, d_h)) if h == head else weights @ v[:, cols])
    attended = np.concatenate(heads, axis=1) @ p.W_o.astype(np.float64) + p.b_o
    y = _layer_norm(x + attended, p.norm_1_gamma, p.norm_1_beta, p.eps)
    hidden = y @ p.W_1.astype(np.float64) + p.b_1
    gelu = hidden * 0.5 * (1 + np.vectorize(math.erf)(hidden / math.sqrt(2)))  # the exact GELU
    return _layer_norm(y + gelu @ p.W_2.astype(np.float64) + p.b_2, p.norm_2_gamma, p.norm_2_beta, p.eps)


@pytest.mark.parametrize("layer, head, mode", [(0, 2, "zero"), (4, 5, "mean"), (5, 11, "zero")])
def test_an_ablated_block_equals_the_block_written_out_with_that_head_replaced(model, layer, head, mode):
    intact = model.run(TEXT)
    d_h = model.d_model // model.num_heads
    mean = mean_context(model, [intact, model.run("A dog barked twice.")], layer, head) if mode == "mean" else None
    ablated = ablate_head(model, layer, head, mean).run(TEXT)
    expected = _block_with_head_replaced(intact.hidden_states[layer], model.blocks[layer], model.num_heads, head,
                                         np.zeros(d_h) if mean is None else mean)
    np.testing.assert_allclose(ablated.hidden_states[layer + 1], expected, atol=2e-4)
    np.testing.assert_array_equal(ablated.hidden_states[: layer + 1], intact.hidden_states[: layer + 1])
    assert not np.allclose(ablated.hidden_states[layer + 1], intact.hidden_states[layer + 1], atol=1e-3)


def test_the_model_is_not_changed_and_the_copy_shares_every_other_block(model):
    before = model.blocks[0].W_o.copy()
    ablated = ablate_head(model, 0, 2, mean=np.ones(model.d_model // model.num_heads))
    np.testing.assert_array_equal(model.blocks[0].W_o, before)
    rows = head_rows(model, 2)
    assert not ablated.blocks[0].W_o[rows].any() and model.blocks[0].W_o[rows].any()
    assert all(a is b for a, b in zip(ablated.blocks[1:], model.blocks[1:], strict=True))
    np.testing.assert_allclose(ablated.blocks[0].b_o, model.blocks[0].b_o + model.blocks[0].W_o[rows].sum(axis=0),
                               rtol=1e-5, atol=1e-6)


def test_head_contexts_match_a_loop_and_the_helpers_match_the_model(model):
    result = model.run(TEXT)
    p, d_h = model.blocks[3], model.d_model // model.num_heads
    values = (result.hidden_states[3] @ p.W_v + p.b_v)[:, 7 * d_h: 8 * d_h]
    loop = np.array([sum(w * values[j] for j, w in enumerate(row)) for row in result.attentions[3, 7]])
    np.testing.assert_allclose(head_contexts(model, result, 3, 7), loop, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sentence_embeddings([result])[0], model.embed(TEXT), atol=1e-6)
    assert relative_change([result], [result], 2).tolist() == [0.0] * len(result.tokens)
    with pytest.raises(ValueError, match="head must be in 0..11"):
        head_rows(model, 12)


def test_ablation_effects_report_what_the_notebook_prints(model):
    sentences = ["A dog barked twice.", "The stock market fell today.", "A puppy yelped."]
    effects = ablation_effects(model, sentences, {"previous": (0, 2)})
    intact = effects["intact similarities"]
    np.testing.assert_allclose(np.diag(intact), 1, atol=1e-5)
    for mode in ("zero", "mean"):
        effect = effects["previous", mode]
        assert effect["block"].shape == effect["last"].shape == (sum(len(model.run(s).tokens) for s in sentences),)
        assert effect["self cosine"].shape == (3,) and effect["similarity change"].shape == (3,)
        assert (effect["block"] > 0).all() and 0 <= effect["neighbours changed"] <= 3


def test_ablation_effects_run_the_whole_ablated_model(model):
    """The effects resume from the removed head's block: the same numbers as running the ablated copy from the start."""
    sentences = ["A dog barked twice.", "The stock market fell today."]
    effect = ablation_effects(model, sentences, {"h": (3, 7)})["h", "zero"]
    intact = [model.run(s) for s in sentences]
    whole = [ablate_head(model, 3, 7).run(s) for s in sentences]
    np.testing.assert_allclose(effect["block"], relative_change(whole, intact, 4), atol=1e-6)
    np.testing.assert_allclose(effect["last"], relative_change(whole, intact, -1), atol=1e-6)
    np.testing.assert_allclose(effect["self cosine"], (sentence_embeddings(whole) * sentence_embeddings(intact)).sum(1),
                               atol=1e-6)


def test_the_shipped_table_of_all_heads_is_what_ablation_effects_measures(model):
    table = load_all_heads()
    assert all(table[name].shape == (len(MODES), 6, 12) for name in SUMMARY)
    heads = {"(1, 3)": (1, 3), "(5, 11)": (5, 11)}
    effects = ablation_effects(model, FINGERPRINT_SENTENCES, heads)
    for name, (layer, head) in heads.items():
        for m, mode in enumerate(MODES):
            np.testing.assert_allclose([table[n][m, layer, head] for n in SUMMARY], summarise(effects[name, mode]),
                                       atol=1e-3)


def test_a_table_from_other_sentences_is_refused(tmp_path):
    with np.load(ALL_HEADS_PATH) as data:
        arrays = dict(data)
    arrays["sentences"] = arrays["sentences"][:-1]
    np.savez(tmp_path / "other.npz", **arrays)
    with pytest.raises(ValueError, match="other sentences"):
        load_all_heads(tmp_path / "other.npz")
