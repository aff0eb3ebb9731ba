"""The teaching guide's sections 00-04 say what the notebooks show: every number and claim in their discussion
questions and predictions is recomputed here (independently of the notebooks' own code), and the core-path
minutes are the ones tools/core_path.py computes from the notebooks."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

from attn_helpers.examples import JOURNEY_TOKENS, journey_embeddings

ROOT = Path(__file__).resolve().parents[1]
TOKENS = list(JOURNEY_TOKENS)


def section(number: str) -> str:
    """The text of the guide's section "### NN · ..." (up to the next heading of that level or higher)."""
    text = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    match = re.search(rf"^### {number} · .*?(?=^##)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, f"no section {number} in the teaching guide"
    return match.group(0)


def softmax_rows(scores, temperature=1.0):
    z = np.asarray(scores, dtype=np.float64) / temperature
    exps = np.exp(z - z.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def scores_float64():
    X = journey_embeddings(np.float64)
    return X, X @ X.T


@pytest.mark.parametrize("number, notebook", [
    ("00", "00_start_here"), ("01", "01_embeddings"), ("02", "02_dot_product_scores"), ("03", "03_softmax"),
    ("04", "04_context_vectors"),
])
def test_core_path_minutes_are_the_ones_the_tool_computes(number, notebook):
    spec = importlib.util.spec_from_file_location("core_path", ROOT / "tools" / "core_path.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    result = tool.core_path(ROOT / "notebooks" / f"{notebook}.ipynb")
    expected = (f"**Core path:** {result['self_paced_minutes']} min self-paced, "
                f"{result['walkthrough_minutes']} min walk-through.")
    assert expected in section(number)


def test_guide_00_summary_shares():
    shares = [1.0]  # a running summary s <- s/2 + x/2 that starts as the first token
    for _ in range(len(TOKENS) - 1):
        shares = [share / 2 for share in shares] + [0.5]
    text = section("00")
    assert f'"Your" keeps {100 * shares[0]:.3g} % and "step" {100 * shares[-1]:.3g} %' in text
    assert f"$(1/2)^5 = {shares[0]:.4f}$" in text


def test_guide_01_frog_apple_and_banana():
    from attn_helpers.glove import load_glove, word_to_index

    words, vectors = load_glove()
    vectors = vectors.astype(np.float64)
    index = word_to_index()
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    frog = index["frog"]
    dots, cosines = vectors @ vectors[frog], unit @ unit[frog]
    dots[frog] = cosines[frog] = -np.inf
    top_dot, top_cos = int(np.argmax(dots)), int(np.argmax(cosines))
    text = section("01")
    assert (f"By dot product the nearest word to *frog* is *{words[top_dot]}* ({dots[top_dot]:.1f}), by cosine "
            f"*{words[top_cos]}* ({cosines[top_cos]:.3f})") in text
    shared = set(np.argsort(-dots)[:5]) & set(np.argsort(-cosines)[:5])
    assert f"answer {len(shared)}, *{words[shared.pop()]}*" in text

    groups = {"fruit": ["banana", "orange", "cherry", "grape", "lemon", "peach", "strawberry", "plum", "coconut",
                        "berry"],
              "technology": ["microsoft", "google", "iphone", "software", "computer", "ibm", "intel", "laptop",
                             "internet", "nokia"]}

    def group_score(word, group):  # mean cosine with the members, the word itself left out
        return np.mean([unit[index[word]] @ unit[index[m]] for m in group if m != word])

    apple = [group_score("apple", groups[name]) for name in groups]
    banana = [group_score("banana", groups[name]) for name in groups]
    assert f"*Apple* scores {apple[0]:.2f} with the fruit words and {apple[1]:.2f} with the technology words" in text
    assert f"*banana* {banana[0]:.2f} and {banana[1]:.2f}" in text


def test_guide_02_best_key_of_with_and_the_smallest_scores():
    X, scores = scores_float64()
    w = TOKENS.index("with")
    best = int(np.argmax(scores[w]))
    text = section("02")
    assert f"answer *{TOKENS[best]}*, {scores[w, best]:.4f}, more than *with* itself, {scores[w, w]:.4f}" in text
    journey = TOKENS.index("journey")
    assert f'"journey" scores highest with itself ({scores[journey, journey]:.4f})' in text
    smallest = TOKENS[int(np.argmin(scores.sum(axis=1)))]
    shortest = TOKENS[int(np.argmin(np.linalg.norm(X, axis=1)))]
    assert smallest != shortest  # the point of the question
    assert f"(*{smallest}*: not the shortest vector, *{shortest}* is," in text


def test_guide_03_temperatures_and_the_slip():
    _, scores = scores_float64()
    one, journey, starts = TOKENS.index("one"), TOKENS.index("journey"), TOKENS.index("starts")
    cold = softmax_rows(scores[one], temperature=0.001)
    text = section("03")
    assert f"answer *{TOKENS[int(np.argmax(cold))]}*, {cold.max():.4f} at $\\tau = 0.001$" in text
    cool = softmax_rows(scores[journey], temperature=0.1)
    assert f'"journey" keeps {cool[journey]:.4f} of its weight and "starts" {cool[starts]:.4f}' in text
    assert f"sums to {sum([0.02, 0.92, 0.89, 0.0]):.2f}" in text


def test_guide_04_who_attends_most_to_whom_and_doubling():
    X, scores = scores_float64()
    weights = softmax_rows(scores)
    winners = {token: TOKENS[int(np.argmax(row))] for token, row in zip(TOKENS, weights, strict=True)}
    themselves = [t for t in TOKENS if winners[t] == t]
    to_journey = [t for t in TOKENS if winners[t] == "journey" and t != "journey"]
    rest = [t for t in TOKENS if t not in themselves and t not in to_journey]
    text = section("04")
    assert f"Only *{themselves[0]}* and *{themselves[1]}* attend most to themselves" in text and len(themselves) == 2
    assert ", ".join(f"*{t}*" for t in to_journey[:-1]) + f" and *{to_journey[-1]}* attend most to *journey*" in text
    assert rest == ["one"] and f"*one* to *{winners['one']}*" in text
    assert "Why does every token attend most to itself" not in text  # the old question, contradicted by the output
    w = TOKENS.index("with")
    doubled = softmax_rows((2 * X) @ (2 * X).T)
    assert f"it grows, {weights[w].max():.4f} to {doubled[w].max():.4f}" in text
