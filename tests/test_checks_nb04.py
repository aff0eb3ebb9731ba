"""Notebook 04: the context-vector checker, its hints, and the helpers of the widget module."""

import itertools

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import scaled_dot_product_attention, softmax  # noqa: E402
from attn_helpers.checks import check_context_vectors, check_doubled_weights, solution  # noqa: E402
from attn_helpers.checks.nb04 import context_vectors  # noqa: E402
from attn_helpers.examples import JOURNEY_TOKENS, journey_embeddings  # noqa: E402
from attn_helpers.measures import convex_hull_2d  # noqa: E402
from attn_helpers.widgets import nb04  # noqa: E402


def context_loop(X):
    """An independent reference: one query and one key at a time, in float64."""
    X = np.asarray(X, dtype=np.float64)
    T = X.shape[0]
    out = np.zeros_like(X)
    for i in range(T):
        scores = np.array([sum(X[i, f] * X[j, f] for f in range(X.shape[1])) for j in range(T)])
        e = np.exp(scores - scores.max())
        for j in range(T):
            out[i] += e[j] / e.sum() * X[j]
    return out


# ---------------------------------------------------------------- check_context_vectors


def test_solution_passes_and_matches_loop():
    assert check_context_vectors(context_vectors)
    assert check_context_vectors(context_loop)
    for X in (journey_embeddings(), np.random.default_rng(1).standard_normal((4, 7))):
        np.testing.assert_allclose(context_vectors(X), context_loop(X), rtol=1e-5)


def test_solution_is_hidden_until_asked():
    sol = solution("context_vectors")
    assert "hidden" in repr(sol)
    assert "weights @ X" in sol.source and "register_solution" not in sol.source


@pytest.mark.parametrize("fn, hint", [
    (lambda X: (X @ X.T) @ X, "forgot the softmax"),
    (lambda X: softmax(X @ X.T, axis=0) @ X, "axis=0"),
    (lambda X: softmax(X @ X.T), "you returned the weights"),
    (lambda X: (X @ X.T / (X @ X.T).sum(axis=-1, keepdims=True)) @ X, "not softmax"),
    (lambda X: softmax(X @ X.T / np.sqrt(X.shape[-1])) @ X, "notebook 06"),
    (lambda X: X @ softmax(X @ X.T), "a missing .T or a swapped order"),  # raises on the (6, 3) case
    (lambda X: softmax(X @ X) @ X, "a missing .T"),
    (lambda X: (softmax(X @ X.T) @ X, None), "not (context, weights)"),
    (lambda X: None, "return"),
    (lambda X: X, "values differ"),
    (lambda X: (softmax(X @ X.T) @ X)[:, :1], "shape (T, d_model)"),
])
def test_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_context_vectors(fn)
    assert not verdict
    assert hint in verdict.message + verdict.hint


def test_naive_exp_overflow_is_diagnosed():
    def naive(X):
        e = np.exp(X @ X.T)
        return (e / e.sum(axis=-1, keepdims=True)) @ X

    verdict = check_context_vectors(naive)
    assert not verdict and "NaN or inf" in verdict.message and "subtract the maximum" in verdict.hint


def test_x_at_weights_in_square_case():
    # passes the (6, 3) case only when it cannot fit; on a square X the value is caught as a known mistake
    def sometimes(X):
        weights = softmax(X @ X.T)
        return X @ weights if X.shape[0] == X.shape[1] else weights @ X

    verdict = check_context_vectors(sometimes)
    assert not verdict and "mixes the features" in verdict.hint


@pytest.mark.parametrize("garbage", [None, [1, 2, 3], 3, "context", np.eye(3), lambda: 1, lambda X: "text",
                                     lambda X: 1 / 0, lambda X: np.full((6, 3), np.nan), lambda X, Y: X,
                                     lambda X: {"a": 1}, lambda X: [[1, 2, 3]] * 6, lambda X: (_ for _ in ())])
def test_checker_never_raises(garbage):
    verdict = check_context_vectors(garbage)
    assert not verdict
    assert isinstance(repr(verdict), str) and isinstance(verdict._repr_html_(), str)


def test_stub_says_not_implemented():
    def stub(X):
        raise NotImplementedError

    verdict = check_context_vectors(stub)
    assert not verdict and "not implemented" in verdict.message


# ---------------------------------------------------------------- widget helpers


def _inside_or_on(hull_points, point, tol=1e-9):
    """Is ``point`` inside the counter-clockwise polygon ``hull_points`` (or on its boundary)?"""
    n = len(hull_points)
    for k in range(n):
        a, b = hull_points[k], hull_points[(k + 1) % n]
        if (b[0] - a[0]) * (point[1] - a[1]) - (b[1] - a[1]) * (point[0] - a[0]) < -tol:
            return False
    return True


@pytest.mark.parametrize("seed", range(20))
def test_convex_hull_contains_all_points_and_corners_are_extreme(seed):
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((int(rng.integers(3, 30)), 2))
    corners = convex_hull_2d(points)
    polygon = points[corners]
    assert len(set(corners)) == len(corners) >= 3
    assert all(_inside_or_on(polygon, p) for p in points)
    # every corner is extreme: it is not inside the hull of the other points
    for k in corners:
        others = np.delete(points, k, axis=0)
        assert not _inside_or_on(others[convex_hull_2d(others)], points[k], tol=-1e-12)


def test_convex_hull_degenerate_inputs():
    assert convex_hull_2d([[1.0, 2.0]]) == [0]
    assert convex_hull_2d([[0, 0], [1, 1]]) == [0, 1]
    assert convex_hull_2d([[0, 0], [0, 0], [0, 0]]) == [0]
    assert sorted(convex_hull_2d([[0, 0], [1, 1], [2, 2]])) == [0, 2]  # collinear: the two ends
    assert convex_hull_2d(np.zeros((0, 2))) == []


@pytest.mark.parametrize("seed", range(5))
def test_context_vectors_lie_in_every_projected_hull(seed):
    X = np.random.default_rng(seed).standard_normal((7, 3))
    context, _ = scaled_dot_product_attention(X, X, X, scale=1.0)  # notebook 04's weight-free attention
    for dims in itertools.combinations(range(3), 2):
        P = X[:, dims]
        polygon = P[convex_hull_2d(P)]
        assert all(_inside_or_on(polygon, z, tol=1e-9) for z in context[:, dims])


def test_weight_free_attention_of_the_core_matches_an_independent_loop():
    """The explorer draws scaled_dot_product_attention(X, X, X, scale=1): the loop of notebook 04 gives the same."""
    X = journey_embeddings()
    context, _ = scaled_dot_product_attention(X, X, X, scale=1.0)
    np.testing.assert_allclose(context, context_loop(X), rtol=1e-6)


def test_explorer_registry_and_draw_never_raises():
    assert set(nb04.EXPLORERS) == {"context_explorer"}
    explorer = nb04.EXPLORERS["context_explorer"]()
    assert set(explorer.controls) == {"query", "token", "delta_0", "delta_1", "delta_2"}
    for query, token, delta in [("Your", "Your", -1.0), ("step", "journey", 1.0), ("with", "with", 0.0),
                                ("one", "one", -0.5)]:
        png = explorer.render_png(query=query, token=token, delta_0=delta, delta_1=-delta, delta_2=delta)
        assert png.startswith(b"\x89PNG")
    # a token pushed onto the origin (a zero vector) must not break the arrows
    X = journey_embeddings().astype(float)
    fig = explorer.figure(token="with", delta_0=-X[3, 0], delta_1=-X[3, 1], delta_2=-X[3, 2])
    assert "moved to" in fig.note


def test_note_reports_the_computed_weights():
    explorer = nb04.context_explorer()
    fig = explorer.figure(query="with")
    X = journey_embeddings()
    _, weights = scaled_dot_product_attention(X, X, X, scale=1.0)
    w = JOURNEY_TOKENS.index("with")
    top = int(np.argmax(weights[w]))
    assert f"attends most to {JOURNEY_TOKENS[top]!r} ({weights[w, top]:.3f})" in fig.note


# ---------------------------------------------------------------------------------------------
# Predict, then run: double every embedding; what happens to the largest weight of 'with'?

def test_doubled_weights_right_prediction_passes():
    X = journey_embeddings().astype(np.float64)
    w = JOURNEY_TOKENS.index("with")
    before = softmax(np.array([X[w] @ x for x in X])).max()
    after = softmax(np.array([(2 * X[w]) @ (2 * x) for x in X])).max()
    assert after > before
    assert check_doubled_weights("grow").passed


@pytest.mark.parametrize("wrong, hint", [("stay the same", "not scale-free"), ("shrink", "sharper, not flatter")])
def test_doubled_weights_wrong_predictions_get_their_hint(wrong, hint):
    verdict = check_doubled_weights(wrong)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("garbage", [..., None, 2, "bigger", ("grow",)])
def test_doubled_weights_never_raises(garbage):
    verdict = check_doubled_weights(garbage)
    assert not verdict.passed and verdict.hint


def _own_softmax(axis_of_max, keep_max, axis_of_sum, keep_sum, whole_sum=False):
    """A learner's context_vectors with a hand-written softmax: which axes, which keepdims (no max: None)."""

    def context_vectors(X):
        scores = X @ X.T
        if axis_of_max is not None:
            scores = scores - scores.max(axis=axis_of_max, keepdims=keep_max)
        exps = np.exp(scores)
        total = exps.sum() if whole_sum else exps.sum(axis=axis_of_sum, keepdims=keep_sum)
        return (exps / total) @ X

    return context_vectors


@pytest.mark.parametrize("fn, hint", [
    (_own_softmax(None, True, 1, False), "forgot keepdims=True? exps.sum(axis=-1) has shape (T,)"),
    (_own_softmax(None, True, -1, False), "forgot keepdims=True? exps.sum(axis=-1) has shape (T,)"),
    (_own_softmax(1, True, 1, False), "forgot keepdims=True? exps.sum(axis=-1) has shape (T,)"),
    (_own_softmax(None, True, 0, True), "ran over axis=0"),  # the same weights, another slip
    (lambda X: softmax(X @ X.T, axis=0) @ X, "ran over axis=0"),
    (_own_softmax(-1, True, -1, True, whole_sum=True), "sum of the WHOLE score matrix"),
    (_own_softmax(None, True, -1, True, whole_sum=True), "sum of the WHOLE score matrix"),
    (_own_softmax(-1, False, -1, True), "forgot keepdims=True on the max?"),
    (_own_softmax(-1, False, -1, False), "on the max and on the sum?"),
])
def test_context_vectors_normalisation_slips_are_named(fn, hint):
    verdict = check_context_vectors(fn)
    assert not verdict.passed and hint in verdict.hint, verdict


def test_the_keepdims_slip_and_the_axis0_slip_give_the_same_numbers_here():
    """Why the checker watches the sums: X @ X.T is symmetric, so values alone cannot tell these two apart."""
    X = journey_embeddings()
    np.testing.assert_allclose(_own_softmax(None, True, 1, False)(X), _own_softmax(None, True, 0, True)(X), rtol=1e-6)


def test_transposed_weights_are_named_with_the_axis0_slip():
    verdict = check_context_vectors(lambda X: softmax(X @ X.T, axis=-1).T @ X)
    assert not verdict.passed and "weights.T @ X" in verdict.hint, verdict
