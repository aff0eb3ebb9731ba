"""Notebook 07 (causal masking): its checkers, and the helpers behind its explorer."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from reference import attention_ref  # noqa: E402

from attn_helpers import scaled_dot_product_attention  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_causal_mask,
    check_masked_attention,
    check_masked_key_prediction,
    solution,
)
from attn_helpers.checks.nb07 import _cases, _fully_masked_case, build_causal_mask, masked_attention  # noqa: E402
from attn_helpers.examples import CREATURE_TOKENS, combined_mask, creature_example  # noqa: E402
from attn_helpers.widgets.nb07 import EXPLORERS, draw_masking  # noqa: E402


def stub(*args):
    raise NotImplementedError


GARBAGE = [None, [1, 2, 3], "mask", np.zeros(3), 42, stub, lambda *a: 1 / 0, lambda *a: None, lambda *a: "text",
           lambda *a: (1, 2), lambda *a: np.full((2, 2), np.nan), lambda *a: [[1, 2], [3]], lambda: 0,
           lambda *a: object(), Ellipsis, lambda *a: (None, None), lambda *a: (np.zeros(2), "x")]


@pytest.mark.parametrize("checker", [check_causal_mask, check_masked_attention])
def test_garbage_never_raises_and_never_passes(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert not verdict.passed, garbage
        assert verdict.message


# --- Exercise 07.1: build_causal_mask ---------------------------------------------------------------


def test_causal_mask_solution_passes():
    assert check_causal_mask(build_causal_mask).passed
    assert check_causal_mask(lambda T: np.arange(T)[None, :] <= np.arange(T)[:, None]).passed
    assert check_causal_mask(lambda T: np.tri(T, dtype=bool)).passed


def test_causal_mask_reference_against_a_loop():
    for T in (1, 3, 8):
        loop = np.array([[j <= i for j in range(T)] for i in range(T)])
        np.testing.assert_array_equal(build_causal_mask(T), loop)
        assert build_causal_mask(T).dtype == np.bool_


@pytest.mark.parametrize("wrong, expected_hint", [
    (lambda T: np.triu(np.ones((T, T), dtype=bool)), "upper triangle"),
    (lambda T: np.tril(np.ones((T, T), dtype=bool), k=-1), "diagonal is missing"),
    (lambda T: np.triu(np.ones((T, T), dtype=bool), k=1), "positions to BLOCK"),
    (lambda T: np.ones((T, T), dtype=bool), "no mask at all"),
    (lambda T: np.eye(T, dtype=bool), "only the diagonal"),
    (lambda T: np.tril(np.ones((T, T))), "dtype is float64"),
    (lambda T: np.tri(T, dtype=int), "dtype is int"),
    (lambda T: np.tril(np.ones((T + 1, T + 1), dtype=bool)), "shape (T, T)"),
])
def test_causal_mask_common_mistakes(wrong, expected_hint):
    verdict = check_causal_mask(wrong)
    assert not verdict.passed
    assert expected_hint in verdict.message + verdict.hint


# --- Exercise 07.2: masked_attention ----------------------------------------------------------------


def _naive_nan(q, k, v, m):
    """Right everywhere except on fully masked rows, where the stable softmax gives NaN."""
    scores = np.where(m, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
    exps = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = exps / exps.sum(axis=-1, keepdims=True)
    return weights @ v, weights


def _with_weights(weights_fn):
    def fn(q, k, v, m):
        weights = weights_fn(q, k, v, m)
        return weights @ v, weights

    return fn


def _softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _scores(q, k):
    return q @ np.swapaxes(k, -1, -2)


def test_masked_attention_solution_passes():
    assert check_masked_attention(masked_attention).passed
    assert check_masked_attention(scaled_dot_product_attention).passed
    assert check_masked_attention(lambda q, k, v, m: list(masked_attention(q, k, v, m))).passed


def test_masked_attention_reference_against_the_loop_reference():
    for case in [*_cases(), _fully_masked_case()]:
        q, k, v, m = case.args
        context, weights = masked_attention(q, k, v, m)
        mask = np.broadcast_to(m, weights.shape)
        if q.ndim == 2:  # one sequence: treat it as a batch of one
            q, k, v, mask, weights, context = (a[None] for a in (q, k, v, mask, weights, context))
        for b in range(q.shape[0]):
            ref_context, ref_weights = attention_ref(q[b], k[b], v[b], mask=mask[b])
            np.testing.assert_allclose(weights[b], ref_weights, atol=1e-12)
            np.testing.assert_allclose(context[b], ref_context, atol=1e-12)
    _, weights = masked_attention(*_fully_masked_case().args)
    assert not np.isnan(weights).any()
    np.testing.assert_array_equal(weights[1, 2:], 0.0)


def test_masked_attention_nan_on_fully_masked_rows_gets_specific_hint():
    verdict = check_masked_attention(_naive_nan)
    assert not verdict.passed
    assert "NaN exactly on the fully masked rows" in verdict.message
    assert "-inf - (-inf) = NaN" in verdict.hint


@pytest.mark.parametrize("wrong, expected_hint", [
    (_with_weights(lambda q, k, v, m: _softmax(_scores(q, k) / np.sqrt(q.shape[-1]))), "the mask is not applied"),
    (_with_weights(lambda q, k, v, m: np.where(m, _softmax(_scores(q, k) / np.sqrt(q.shape[-1])), 0.0)),
     "AFTER the softmax"),
    (lambda q, k, v, m: masked_attention(q, k, v, ~m), "inverted"),
    (lambda q, k, v, m: masked_attention(q * np.sqrt(q.shape[-1]), k, v, m), "forgot to scale"),
    (lambda q, k, v, m: masked_attention(q * q.shape[-1], k, v, m), "multiplied the scores by sqrt(d_k)"),
    (lambda q, k, v, m: masked_attention(q / np.sqrt(q.shape[-1]), k, v, m), "divided by d_k"),
    (_with_weights(lambda q, k, v, m: _softmax(np.where(m, _scores(q, k) / np.sqrt(q.shape[-1]), -1e9))), "-1e9"),
    (lambda q, k, v, m: masked_attention(q, k, v, m)[1], "return context, weights"),
    (lambda q, k, v, m: masked_attention(q, k, v, m)[::-1], "the other way round"),
    (lambda q, k, v, m: (np.swapaxes(masked_attention(q, k, v, m)[0], -1, -2), masked_attention(q, k, v, m)[1]),
     "transposed"),
])
def test_masked_attention_common_mistakes(wrong, expected_hint):
    verdict = check_masked_attention(wrong)
    assert not verdict.passed
    assert expected_hint in verdict.message + verdict.hint, verdict


def test_solutions_are_hidden_but_readable():
    for name in ("build_causal_mask", "masked_attention"):
        shown = solution(name)
        assert "hidden" in repr(shown) and "def " in shown.source
    assert "-1e9" not in solution("masked_attention").source


# --- The explorer and its helpers --------------------------------------------------------------------


def test_creature_example_means_something():
    """Issue 14 #9: creature attends to fluffy and blue, forest to verdant, the articles to nothing in particular."""
    example = creature_example()
    assert len(CREATURE_TOKENS) == example["X"].shape[0] == 8
    _, weights = scaled_dot_product_attention(*(example["X"] @ example[name] for name in ("W_q", "W_k", "W_v")))
    row = dict(zip(CREATURE_TOKENS, weights, strict=True))
    top = {token: [CREATURE_TOKENS[j] for j in np.argsort(-row[token], kind="stable")[:2]] for token in row}
    assert set(top["creature"]) == {"fluffy", "blue"} and row["creature"][[1, 2]].sum() > 0.85
    assert top["forest"][0] == "verdant" and row["forest"][6] > 0.8
    assert top["fluffy"][0] == top["blue"][0] == "creature" and top["verdant"][0] == "forest"
    for token in ("a", "the", "roamed"):  # a zero query (roamed: no key answers it yet): uniform weights
        np.testing.assert_allclose(row[token], 1 / 8, rtol=1e-6)


@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("length", [0, 1, 5, 8, 12, None])
def test_combined_mask_against_a_loop(causal, length):
    T = 8
    real = T if length is None else min(length, T)
    loop = np.array([[(j <= i or not causal) and j < real for j in range(T)] for i in range(T)])
    mask = combined_mask(T, causal=causal, length=length)
    assert mask.dtype == np.bool_ and mask.flags.writeable
    np.testing.assert_array_equal(mask, loop)


def test_explorer_draws_odd_combinations_without_raising():
    assert set(EXPLORERS) == {"mask_explorer"}
    for causal, query, length in ((True, "a", 1), (False, "forest", 8), (True, "forest", 3), (True, "nope", 8)):
        fig = plt.figure()
        note = draw_masking(fig, causal=causal, query=query, length=length)
        plt.close(fig)
        assert "may attend" in note
    explorer = EXPLORERS["mask_explorer"]()
    png, note = explorer.render(causal=False, query="creature", length=8)
    assert png[:4] == b"\x89PNG" and "copy the word" in note


def _pixels(png):
    import io

    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


def test_live_updates_match_a_fresh_drawing():
    """The fast path (update + blit) gives the same pixels as a figure drawn from scratch for those values."""
    explorer = EXPLORERS["mask_explorer"]()
    explorer.render_png()
    background = explorer._background
    for causal, query, length in ((False, "forest", 8), (True, "a", 1), (False, "roamed", 3), (True, "nope", 5)):
        live = _pixels(explorer.render_png(causal=causal, query=query, length=length))
        fresh = _pixels(EXPLORERS["mask_explorer"]().render_png(causal=causal, query=query, length=length))
        np.testing.assert_array_equal(live, fresh)
    assert explorer._background is background  # no full redraw on the way


# --- predict, then run: mask key "creature" under the causal mask --------------------------------------


def test_masked_key_prediction_matches_an_independent_computation():
    ex = creature_example()
    T = len(CREATURE_TOKENS)
    key = CREATURE_TOKENS.index("creature")
    mask = np.tril(np.ones((T, T), dtype=bool))
    hidden = mask.copy()
    hidden[:, key] = False
    args = (ex["X"] @ ex["W_q"], ex["X"] @ ex["W_k"], ex["X"] @ ex["W_v"])
    before, after = attention_ref(*args, mask=mask)[1], attention_ref(*args, mask=hidden)[1]
    changed = np.flatnonzero(~np.isclose(before, after).all(axis=1)).tolist()
    assert changed == list(range(key, T))  # creature and every query after it
    for answer in (changed, [CREATURE_TOKENS[i] for i in changed], set(changed)):
        assert check_masked_key_prediction(answer).passed


@pytest.mark.parametrize("answer, hint", [
    (["creature"], "a column of the weights, not a row"),
    (list(range(8)), "already hid it"),
    (["a", "fluffy", "blue", "creature"], "already hid it"),
    (["roamed", "forest"], "every query from 'creature' on"),
])
def test_masked_key_prediction_wrong_answers_get_hints(answer, hint):
    verdict = check_masked_key_prediction(answer)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("divisor, hint", [
    (lambda q, k, v: np.sqrt(v.shape[-1]), "sqrt(d_v)"),
    (lambda q, k, v: np.sqrt(k.shape[-2]), "sqrt(T_k)"),
    (lambda q, k, v: q.shape[-1], "divided by d_k"),
])
def test_masked_attention_names_every_wrong_divisor(divisor, hint):
    def attention(q, k, v, mask):
        scores = np.where(mask, q @ np.swapaxes(k, -1, -2) / divisor(q, k, v), -np.inf)
        weights = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights /= weights.sum(axis=-1, keepdims=True)
        return weights @ v, weights

    verdict = check_masked_attention(attention)
    assert not verdict.passed and hint in verdict.hint


def _attention_with(transpose):
    """Masked attention, right but for how the keys are transposed (``transpose(keys)``)."""
    def attention(q, k, v, mask):
        scores = np.where(mask, q @ transpose(k) / np.sqrt(q.shape[-1]), -np.inf)
        row_max = scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores - np.where(np.isfinite(row_max), row_max, 0))
        total = weights.sum(axis=-1, keepdims=True)
        weights = weights / np.where(total == 0, 1, total)
        return weights @ v, weights

    return attention


@pytest.mark.parametrize("transpose", [lambda k: k.T, lambda k: k.transpose(), lambda k: np.transpose(k)])
def test_masked_attention_names_dot_T_on_a_batch(transpose):
    # queries @ keys.T: right for one sequence, but on a batch .T reverses every axis (not a missing .T)
    verdict = check_masked_attention(_attention_with(transpose))
    assert not verdict.passed
    assert "reverses EVERY axis: (2, 5, 4) -> (4, 5, 2)" in verdict.message
    assert "np.swapaxes(keys, -1, -2)" in verdict.hint
    assert "missing .T" not in verdict.hint


def test_masked_attention_dot_T_on_each_sequence_of_a_loop_passes():
    # .T on a 2-D slice is right: only .T on a batched array is the slip
    def per_sequence(q, k, v, mask):
        if np.ndim(q) == 2:
            return _attention_with(lambda k2: k2.T)(q, k, v, mask)
        mask = np.broadcast_to(mask, (*q.shape[:-1], k.shape[-2]))
        pairs = [_attention_with(lambda k2: k2.T)(q[b], k[b], v[b], mask[b]) for b in range(q.shape[0])]
        return np.stack([c for c, _ in pairs]), np.stack([w for _, w in pairs])

    assert check_masked_attention(per_sequence).passed
    assert check_masked_attention(_attention_with(lambda k: np.swapaxes(k, -1, -2))).passed


def test_the_notebook_says_what_dot_T_does_to_a_batch_before_exercise_07_2():
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "07_causal_masking.ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"]]
    exercise = next(i for i, s in enumerate(sources) if "**Exercise 07.2" in s)
    before = "\n".join(sources[:exercise])
    assert "reverses **every** axis" in before and "np.swapaxes(K_b, -1, -2)" in before


def test_causal_mask_with_the_shape_as_two_arguments_is_named():
    for slip in (lambda T: np.tril(np.ones(T, T)) > 0, lambda T: np.tril(np.ones(T, T, dtype=bool))):
        verdict = check_causal_mask(slip)  # np.ones(T, T): numpy reads the second T as a dtype
        assert not verdict.passed and "give the shape as ONE tuple" in verdict.hint, verdict


@pytest.mark.parametrize("shift", ["min", "plus max", "whole array"])
def test_a_softmax_shifted_the_wrong_way_meets_scores_near_1000(shift):
    """07.2: shifting by the row minimum or adding the maximum overflows on scores near 1000, and the maximum
    of the whole array underflows a row near 0 (notebook 03's lesson), each with a hint that names it."""
    def shifted(q, k, v, m):
        scores = np.where(m, q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), -np.inf)
        row = {"min": scores.min(axis=-1, keepdims=True), "plus max": -scores.max(axis=-1, keepdims=True),
               "whole array": scores.max(keepdims=True)}[shift]
        exps = np.exp(scores - np.where(np.isfinite(row), row, 0.0))
        total = exps.sum(axis=-1, keepdims=True)
        weights = exps / np.where(total > 0, total, 1.0)
        return weights @ v, weights

    verdict = check_masked_attention(shifted)
    assert not verdict.passed and "1000" in verdict.message
    assert ("WHOLE array" if shift == "whole array" else "overflows") in verdict.hint
def test_explorer_labels_padding_and_draws_masked_keys_at_zero():
    """Padding keys are labelled <pad> on every axis, and a masked key is a thin hatched strip at 0: a tall hatched
    bar read as a weight of 1."""
    from attn_helpers.widgets.nb07 import MASKED_STRIP, PAD

    explorer = EXPLORERS["mask_explorer"]()
    explorer.render_png()
    for length in (3, 8, 5):
        explorer.render(causal=True, query="roamed", length=length)
        fig = explorer._live
        fig.canvas.draw()
        left, right = fig.handles["left"], fig.handles["right"]
        expected = [token if k < length else PAD for k, token in enumerate(CREATURE_TOKENS)]
        for labels in (left.get_xticklabels(), left.get_yticklabels(), right.get_xticklabels()):
            assert [label.get_text() for label in labels] == expected
        top = fig.handles["row_hatch"].get_path().vertices[:, 1].max()
        assert top <= MASKED_STRIP < 0.1


def test_a_padded_query_has_one_name_in_both_panels():
    """Past the real tokens, the heatmap's axes say <pad>; the bar chart's title and the note say the same, not the
    word the padding replaced ("forest")."""
    from attn_helpers.widgets.nb07 import PAD

    fig = plt.figure()
    note = draw_masking(fig, causal=True, query="forest", length=3)
    left, right = fig.handles["left"], fig.handles["right"]
    fig.canvas.draw()
    labels = {t.get_text() for t in left.get_yticklabels()}
    plt.close(fig)
    assert PAD in labels and "forest" not in labels
    assert PAD in right.get_title() and "forest" not in right.get_title() and "forest" not in note
