"""The teaching guide's sections 05-08 and its two lesson plans say what the notebooks show.

Every number in those sections' predictions and discussion questions is recomputed here with plain numpy
(the examples' data from attn_helpers.examples, the arithmetic written out again), the core-path minutes are
the ones tools/core_path.py computes, and the lesson plans' clock times add up to those minutes.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from attn_helpers.examples import CREATURE_FEATURES, CREATURE_TOKENS, SEED, creature_example, creature_heads_example

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
TOKENS = list(CREATURE_TOKENS)
NOTEBOOKS = {"00": "00_start_here", "01": "01_embeddings", "02": "02_dot_product_scores", "03": "03_softmax",
             "04": "04_context_vectors", "05": "05_qkv_projections", "06": "06_scaling", "07": "07_causal_masking",
             "08": "08_multi_head_attention"}


def section(number: str) -> str:
    match = re.search(rf"^### {number} · .*?(?=^##)", GUIDE, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no section {number} in the teaching guide"
    return match.group(0)


def softmax_rows(scores):
    scores = np.asarray(scores, dtype=np.float64)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True, initial=-np.inf, where=np.isfinite(scores)))
    exps = np.where(np.isfinite(scores), exps, 0.0)
    total = exps.sum(axis=-1, keepdims=True)
    return exps / np.where(total > 0, total, 1.0)


def attention(X, W_q, W_k, W_v, mask=None):
    Q, K, V = (np.asarray(X, np.float64) @ np.asarray(W, np.float64) for W in (W_q, W_k, W_v))
    scores = Q @ K.T / np.sqrt(K.shape[-1])
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    weights = softmax_rows(scores)
    return weights @ V, weights


def core_path_tool():
    spec = importlib.util.spec_from_file_location("core_path", ROOT / "tools" / "core_path.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool


@pytest.mark.parametrize("number", ["05", "06", "07", "08"])
def test_core_path_minutes_are_the_ones_the_tool_computes(number):
    result = core_path_tool().core_path(ROOT / "notebooks" / f"{NOTEBOOKS[number]}.ipynb")
    assert (f"**Core path:** {result['self_paced_minutes']} min self-paced, {result['walkthrough_minutes']} min "
            "walk-through.") in section(number)


def test_every_notebook_05_to_08_has_a_predict_then_run_question_and_optional_tangents():
    for number in ("05", "06", "07", "08"):
        cells = json.loads((ROOT / "notebooks" / f"{NOTEBOOKS[number]}.ipynb").read_text(encoding="utf-8"))["cells"]
        sources = ["".join(cell["source"]) for cell in cells]
        assert any("**Predict, then run.**" in source for source in sources), number
        assert any("optional" in cell.get("metadata", {}).get("tags", []) for cell in cells), number
        assert "**Predict, then run:**" in section(number)


def test_guide_05_numbers():
    ex = creature_example(np.float64)
    context, weights = attention(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    row = {token: weights[i] for i, token in enumerate(TOKENS)}
    text = section("05")
    c, f, b, v = (TOKENS.index(t) for t in ("creature", "fluffy", "blue", "verdant"))
    assert f"*creature* puts {row['creature'][f]:.2f} on *fluffy* and {row['creature'][b]:.2f} on *blue*" in text
    assert f"*forest* {row['forest'][v]:.2f} on *verdant*" in text
    assert f"*fluffy* and *blue* put {row['fluffy'][c]:.2f} on *creature*" in text
    assert row["blue"][c] == pytest.approx(row["fluffy"][c])
    assert f"*verdant* {row['verdant'][TOKENS.index('forest')]:.2f} on *forest*" in text
    for token in ("a", "the", "roamed"):
        np.testing.assert_allclose(row[token], 1 / len(TOKENS))
    assert f"spread {1 / len(TOKENS):.3f} over every token" in text
    feature = {name: k for k, name in enumerate(CREATURE_FEATURES)}
    assert (f'"adjective {context[c, feature["adjective"]]:.2f}, about the creature '
            f'{context[c, feature["about the creature"]]:.2f}, colour {context[c, feature["colour"]]:.2f}"') in text
    W_k = ex["W_k"].copy()
    W_k[feature["alive"], 3] = 2
    _, designed = attention(ex["X"], ex["W_q"], W_k, ex["W_v"])
    assert f"*roamed* put {designed[TOKENS.index('roamed'), c]:.2f} on *creature*" in text
    # "I love AI": the slip and the rows that change
    X = np.array([[1, 0], [0, 1], [1, 1]], float)
    W_q, W_k2 = np.array([[1, 0], [1, 1]], float), np.array([[0, 1], [1, 0]], float)
    scaled_love = ((X @ W_q) @ (X @ W_k2).T / np.sqrt(2))[1]
    assert f"the third is {scaled_love[2]:.2f}" in text and np.allclose(scaled_love[:2], 0.71, atol=0.005)
    changed_W_q = W_q.copy()
    changed_W_q[0, 0] = 2
    changed = ~np.isclose((X @ W_q) @ (X @ W_k2).T, (X @ changed_W_q) @ (X @ W_k2).T).all(axis=1)
    assert changed.tolist() == [True, False, True] and "answer *I* and *AI*" in text


def test_guide_06_numbers():
    text = section("06")
    rng = np.random.default_rng(SEED)  # the notebook's sampling cell, recomputed
    q, k = rng.standard_normal((2, 5000, 256))
    assert f"5000 sampled pairs give {(q * k).sum(axis=1).std():.2f}" in text
    assert f"the scale is {1 / np.sqrt(64):.3f}, not {1 / np.sqrt(512):.4f}" in text

    def sample(d_k):  # the explorer's 400 queries x 8 keys, recomputed from its recipe
        rng = np.random.default_rng([SEED, d_k])
        queries, keys = rng.standard_normal((400, 1, d_k)), rng.standard_normal((400, 8, d_k))
        return (queries @ np.swapaxes(keys, -1, -2))[:, 0, :]

    def gradient_size(p):
        J = p[:, :, None] * np.eye(p.shape[-1]) - p[:, :, None] * p[:, None, :]
        return np.sqrt((J**2).sum(axis=(1, 2)))

    scores = sample(512)
    unscaled, scaled = softmax_rows(scores), softmax_rows(scores / np.sqrt(512))
    assert (f"largest weight {unscaled.max(axis=1).mean():.3f} without scaling and "
            f"{scaled.max(axis=1).mean():.3f} with it") in text
    assert (f"gradient size $\\lVert J \\rVert$ {gradient_size(unscaled).mean():.3f} and "
            f"{gradient_size(scaled).mean():.3f}") in text
    assert f"falls from {gradient_size(scaled).mean():.3f} to {gradient_size(unscaled).mean():.3f}" in text
    median = np.argsort(unscaled.max(axis=1), kind="stable")[200]
    assert (f"(largest {unscaled[median].max():.2f}), its scaled largest weight "
            f"{scaled[median].max():.2f}") in text


def test_guide_07_numbers():
    ex = creature_example(np.float64)
    T = len(TOKENS)
    _, full = attention(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    later = np.triu(full, k=1).sum(axis=1)
    text = section("07")
    f, v = TOKENS.index("fluffy"), TOKENS.index("verdant")
    assert f"*fluffy* puts {later[f]:.2f} of its weight on later tokens" in text
    next_token = np.diag(full, k=1)
    assert int(np.argmax(next_token)) == v and f"*verdant* {next_token[v]:.2f} on the very next token" in text
    causal = np.tril(np.ones((T, T), bool))
    hidden = causal.copy()
    hidden[:, TOKENS.index("creature")] = False
    _, before = attention(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"], causal)
    _, after = attention(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"], hidden)
    changed = [t for t, b, a in zip(TOKENS, before, after, strict=True) if not np.allclose(b, a)]
    assert "answer " + ", ".join(f"*{t}*" for t in changed) + ":" in text
    # the NaN rows of the notebook's batch: lengths 8, 4, 3, padded queries masked too
    lengths = np.array([8, 4, 3])
    real = np.arange(T) < lengths[:, None]
    empty = (~(real[:, :, None] & real[:, None, :] & causal)).all(axis=-1).sum(axis=1)
    assert empty.tolist() == [0, 4, 5] and "4 and 5 rows of sequences 1 and 2 are NaN" in text


def test_guide_08_numbers():
    ex = creature_heads_example()
    X = ex["X"].astype(np.float64)
    text = section("08")
    c = TOKENS.index("creature")
    favourites = []
    for head in range(2):
        cols = slice(4 * head, 4 * head + 4)
        _, weights = attention(X, ex["W_q"][:, cols], ex["W_k"][:, cols], ex["W_v"][:, cols])
        j = int(np.argmax(weights[c]))
        favourites.append(f"*{TOKENS[j]}*, {weights[c, j]:.2f}")
    assert f"(*creature* attends most to {favourites[0]})" in text
    assert f"(*creature* attends most to {favourites[1]})" in text
    d = 512
    assert f"{4 * d * d:,} weights at $d_{{model}} = 512$" in text and f"({4 * d * d + 4 * d:,})" in text
    assert "$(B, h, T, T) = (2, 4, 8, 8)$" in text
