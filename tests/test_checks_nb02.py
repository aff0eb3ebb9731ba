"""Notebook 02: the checkers (right answers pass, typical mistakes get their hint) and the widget helpers."""

from __future__ import annotations

import numpy as np
import pytest

from attn_helpers.checks import Verdict, check_best_key, check_dot_score, check_score_matrix
from attn_helpers.checks.nb02 import dot_score, score_matrix
from attn_helpers.examples import JOURNEY_TOKENS, journey_embeddings
from attn_helpers.measures import angles_degrees
from attn_helpers.widgets.nb02 import EXPLORERS, METRICS, score_explorer


def _stub(*args):
    raise NotImplementedError


# ---- check_dot_score -------------------------------------------------------------------------


@pytest.mark.parametrize("answer", [dot_score, lambda q, k: float(np.sum(q * k)), lambda q, k: (q * k).sum(),
                                    lambda q, k: sum(a * b for a, b in zip(q, k, strict=True))])
def test_dot_score_right_answers_pass(answer):
    assert check_dot_score(answer).passed


@pytest.mark.parametrize("answer, name", [
    (lambda q, k: q @ k, "@"), (lambda q, k: np.dot(q, k), "np.dot"), (lambda q, k: q.dot(k), ".dot"),
    (lambda q, k: np.matmul(q, k), "@ (np.matmul)"), (lambda q, k: np.inner(q, k), "np.inner"),
    (lambda q, k: np.einsum("i,i->", q, k), "np.einsum"),
])
def test_dot_score_with_the_forbidden_product_gets_told_why(answer, name):
    # 02.1 asks to re-create the dot product: right numbers made with @ or np.dot do not pass
    verdict = check_dot_score(answer)
    assert not verdict.passed
    assert f"uses {name}" in verdict.message and "the product this exercise asks you to re-create" in verdict.message
    assert "query * key" in verdict.hint


def test_dot_score_solution_matches_numpy():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(7), rng.standard_normal(7)
    assert dot_score(a, b) == pytest.approx(float(a @ b))


@pytest.mark.parametrize("wrong, hint", [
    (lambda q, k: q * k, "elementwise product"),
    (lambda q, k: (q @ k) / (np.linalg.norm(q) * np.linalg.norm(k)), "cosine similarity"),
    (lambda q, k: np.linalg.norm(q) * np.linalg.norm(k), "cos(angle)"),
    (lambda q, k: q.sum() * k.sum(), "multiplied the two sums"),
    (lambda q, k: (q + k).sum(), "added the vectors"),
])
def test_dot_score_typical_mistakes_get_their_hint(wrong, hint):
    verdict = check_dot_score(wrong)
    assert not verdict.passed
    assert hint in verdict.hint


def test_dot_score_other_failures():
    assert "not implemented yet" in check_dot_score(_stub).message
    assert "returned None" in check_dot_score(lambda q, k: None).message
    assert "values differ" in check_dot_score(lambda q, k: q @ k + 1).message
    assert "raised ValueError" in check_dot_score(lambda q, k: np.dot(q[:2], k)).message
    assert "without calling it" in check_dot_score(1.0).hint


# ---- check_score_matrix ----------------------------------------------------------------------


@pytest.mark.parametrize("answer", [score_matrix, lambda X: X @ X.T, lambda X: np.dot(X, X.T),
                                    lambda X: np.einsum("id,jd->ij", X, X)])
def test_score_matrix_right_answers_pass(answer):
    assert check_score_matrix(answer).passed


def test_score_matrix_solution_matches_double_loop():
    X = journey_embeddings(np.float64)
    T = len(X)
    loop = np.array([[sum(a * b for a, b in zip(X[i], X[j], strict=True)) for j in range(T)] for i in range(T)])
    np.testing.assert_allclose(score_matrix(X), loop, rtol=1e-12)


@pytest.mark.parametrize("wrong, hint", [
    (lambda X: X.T @ X, "X.T @ X"),
    (lambda X: X * X, "elementwise"),
    (lambda X: (X * X).sum(axis=1), "only the diagonal"),
    (lambda X: (X * X).sum(axis=0), "summed over the tokens"),
    (lambda X: np.sum(X * X), "one number"),
    (lambda X: np.dot(X, X), "missing .T"),
])
def test_score_matrix_typical_mistakes_get_their_hint(wrong, hint):
    verdict = check_score_matrix(wrong)
    assert not verdict.passed
    assert hint in verdict.hint, verdict


def test_score_matrix_square_input_catches_the_wrong_order():
    """On a square X both orders have shape (T, T): the wrong order must still be caught, by value."""
    calls = []

    def only_wrong_on_square(X):
        calls.append(X.shape)
        return X.T @ X if X.shape[0] == X.shape[1] else X @ X.T

    verdict = check_score_matrix(only_wrong_on_square)
    assert not verdict.passed and "X.T @ X" in verdict.hint


def test_score_matrix_other_failures():
    assert "not implemented yet" in check_score_matrix(_stub).message
    assert "shape (3, 3)" in check_score_matrix(lambda X: np.zeros((3, 3))).message
    assert "NaN" in check_score_matrix(lambda X: np.full((X.shape[0],) * 2, np.nan)).message


@pytest.mark.parametrize("checker", [check_dot_score, check_score_matrix])
@pytest.mark.parametrize("garbage", [None, 3, "text", [1, 2], np.zeros(3), Ellipsis, lambda *a: "x",
                                     lambda *a: [[1, 2], [3]], lambda *a: (1, 2), lambda *a: 1 / 0,
                                     lambda *a: {"a": 1}, lambda *a: np.inf])
def test_checkers_never_raise_on_garbage(checker, garbage):
    verdict = checker(garbage)
    assert isinstance(verdict, Verdict) and not verdict.passed and verdict.message


# ---- widget helpers --------------------------------------------------------------------------


def test_angles_degrees_against_independent_formula():
    rng = np.random.default_rng(1)
    query, keys = rng.standard_normal(4), rng.standard_normal((5, 4))
    expected = [np.degrees(np.arccos(np.dot(query, k) / np.sqrt(np.dot(query, query) * np.dot(k, k)))) for k in keys]
    np.testing.assert_allclose(angles_degrees(query, keys), expected, rtol=1e-9)


def test_angles_degrees_edge_cases():
    X = journey_embeddings()
    assert angles_degrees(X[1], X[1:2])[0] == pytest.approx(0.0, abs=0.1)  # rounding: cos may exceed 1 in float32
    np.testing.assert_allclose(angles_degrees([1.0, 0.0], [[0.0, 0.0], [-2.0, 0.0]]), [90.0, 180.0])


def test_registry():
    assert set(EXPLORERS) == {"score_explorer"}


SHARED_EXPLORER = score_explorer  # the conftest's shared_explorer fixture renders one for the module


@pytest.mark.parametrize("query", JOURNEY_TOKENS)
@pytest.mark.parametrize("metric", METRICS)
def test_score_explorer_draws_every_combination(shared_explorer, query, metric):
    png, note = shared_explorer.render(query=query, metric=metric)
    assert png.startswith(b"\x89PNG")
    assert repr(query) in note
    assert shared_explorer.figure(query=query, metric=metric).note == note  # the full drawing's code path too


def test_score_explorer_note_ranks_the_row(shared_explorer):
    _, note = shared_explorer.render(query="journey", metric="dot product")
    assert "highest score with 'journey' (1.4950)" in note and "lowest with 'one' (0.7070)" in note


def test_score_explorer_tolerates_unknown_query_and_other_data():
    png, _ = score_explorer().render(query="no-such-token")
    assert png.startswith(b"\x89PNG")
    rng = np.random.default_rng(2)
    explorer = score_explorer(X=rng.standard_normal((4, 5)), tokens=("a", "b", "c", "d"))
    for metric in METRICS:
        assert explorer.render_png(query="c", metric=metric).startswith(b"\x89PNG")


def test_score_explorer_fast_path_matches_a_fresh_drawing():
    """The blitted update (second render on) says and shows the same as a figure drawn from scratch."""
    explorer = score_explorer()
    explorer.render_png(query="journey")
    for query in ("one", "step", "Your"):
        _, note = explorer.render(query=query)
        fresh = explorer.figure(query=query)
        assert note == fresh.note
        assert fresh.handles["ax"].get_title() == explorer._live.handles["ax"].get_title()
    _, note = explorer.render(query="with", metric="cosine similarity")  # a new metric: a full redraw
    assert "highest cosine" in note and explorer._live.handles["metric"] == "cosine similarity"


# ---------------------------------------------------------------------------------------------
# Predict, then run: with which key does 'with' score highest?

def test_best_key_right_prediction_passes_and_is_not_the_query_itself():
    X = journey_embeddings(np.float64)
    w = JOURNEY_TOKENS.index("with")
    best = JOURNEY_TOKENS[int(np.argmax([X[w] @ x for x in X]))]  # independent: one dot product per key
    assert best == "journey"
    assert check_best_key(best).passed
    assert check_best_key(" Journey ").passed  # spaces and capitals are forgiven


def test_best_key_itself_gets_the_length_hint():
    verdict = check_best_key("with")
    assert not verdict.passed and "squared length" in verdict.hint


@pytest.mark.parametrize("garbage", [..., None, 1, "banana", ["journey"]])
def test_best_key_never_raises(garbage):
    verdict = check_best_key(garbage)
    assert not verdict.passed and verdict.hint


def test_best_key_hints_point_to_the_row_printed_above_the_check():
    import json
    from pathlib import Path

    row = JOURNEY_TOKENS.index("with")
    for pick in ("with", "starts", "step"):
        verdict = check_best_key(pick)
        assert not verdict.passed and f"row {row} of the score matrix printed above" in verdict.hint
        assert "table" not in verdict.hint
    X = journey_embeddings()
    assert f"{X[row] @ X[JOURNEY_TOKENS.index('starts')]:.4f}" in check_best_key("starts").hint  # its score, computed
    cells = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "02_dot_product_scores.ipynb").read_text())
    sources = ["".join(cell["source"]) for cell in cells["cells"]]
    check = next(i for i, source in enumerate(sources) if "check_best_key(my_prediction)" in source)
    assert any("print(scores)" in source for source in sources[:check])  # the matrix is printed before the check


def _return_inside_the_loop(query, key):
    total = 0.0
    for q, k in zip(query, key):
        total += q * k
        return total


def _replaced_not_added(query, key):
    total = 0.0
    for q, k in zip(query, key):
        total = q * k
    return total


def _stops_early(query, key):
    total = 0.0
    for m in range(len(query) - 1):
        total += query[m] * key[m]
    return total


def _starts_at_one(query, key):
    total = 0.0
    for m in range(1, len(query)):
        total += query[m] * key[m]
    return total


@pytest.mark.parametrize("fn, hint", [
    (_return_inside_the_loop, "the `return` is inside the loop"),
    (_replaced_not_added, "total += q * k"),
    (_stops_early, "stops one feature early"),
    (_starts_at_one, "skips the first feature"),
])
def test_dot_score_loop_slips_are_named(fn, hint):
    verdict = check_dot_score(fn)
    assert not verdict.passed and hint in verdict.hint, verdict


def test_score_matrix_scaled_too_early_is_named():
    verdict = check_score_matrix(lambda X: X @ X.T / np.sqrt(X.shape[1]))
    assert not verdict.passed and "notebook 06" in verdict.hint


def test_score_matrix_of_cosines_is_named():
    def cosine_matrix(X):
        lengths = np.sqrt((X**2).sum(axis=1, keepdims=True))
        return (X / lengths) @ (X / lengths).T

    verdict = check_score_matrix(cosine_matrix)
    assert not verdict.passed and "cosine similarities" in verdict.hint, verdict
