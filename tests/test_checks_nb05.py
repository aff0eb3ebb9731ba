"""Notebook 05: the Q/K/V checkers, their hints, and the widget module."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import scaled_dot_product_attention, softmax  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_asymmetric_keys,
    check_changed_rows,
    check_roamed_keys,
    check_score_slip,
    check_self_attention_qkv,
    solution,
)
from attn_helpers.checks.nb05 import asymmetric_keys, roamed_keys, score_slip, self_attention_qkv  # noqa: E402
from attn_helpers.examples import (  # noqa: E402
    CREATURE_FEATURES,
    CREATURE_TOKENS,
    creature_example,
    i_love_ai,
    qkv_attention_steps,
)
from attn_helpers.widgets import nb05  # noqa: E402


def attention_loop(X, W_q, W_k, W_v):
    """An independent reference: explicit sums over features and keys, in float64."""
    X, W_q, W_k, W_v = (np.asarray(a, dtype=np.float64) for a in (X, W_q, W_k, W_v))
    T, d_in = X.shape
    d_k, d_v = W_q.shape[1], W_v.shape[1]
    Q = np.array([[sum(X[t, f] * W_q[f, c] for f in range(d_in)) for c in range(d_k)] for t in range(T)])
    K = np.array([[sum(X[t, f] * W_k[f, c] for f in range(d_in)) for c in range(d_k)] for t in range(T)])
    V = np.array([[sum(X[t, f] * W_v[f, c] for f in range(d_in)) for c in range(d_v)] for t in range(T)])
    out = np.zeros((T, d_v))
    for i in range(T):
        s = np.array([sum(Q[i, c] * K[j, c] for c in range(d_k)) / np.sqrt(d_k) for j in range(T)])
        e = np.exp(s - s.max())
        out[i] = sum(e[j] / e.sum() * V[j] for j in range(T))
    return out


def love():
    ex = i_love_ai()
    return ex["X"], ex["W_q"], ex["W_k"], ex["W_v"]


# ---------------------------------------------------------------- the worked example's numbers


def test_worked_example_numbers():
    X, W_q, W_k, W_v = love()
    np.testing.assert_allclose(X @ W_q, [[1, 0], [1, 1], [2, 1]])
    np.testing.assert_allclose(X @ W_k, [[0, 1], [1, 0], [1, 1]])
    np.testing.assert_allclose(X @ W_v, [[1, 2], [0, 1], [1, 3]])
    S = (X @ W_q) @ (X @ W_k).T
    np.testing.assert_allclose(S, [[0, 1, 1], [1, 1, 2], [1, 2, 3]])
    assert np.allclose(S, S.T)  # the coincidence the notebook explains: W_q W_k^T is symmetric
    np.testing.assert_allclose(attention_loop(X, W_q, W_k, W_v)[1], [0.7517, 2.2552], atol=1e-4)


# ---------------------------------------------------------------- check_self_attention_qkv


def test_solution_passes_and_matches_loop():
    assert check_self_attention_qkv(self_attention_qkv)
    assert check_self_attention_qkv(attention_loop)
    rng = np.random.default_rng(3)
    args = (rng.standard_normal((5, 3)), rng.standard_normal((3, 4)), rng.standard_normal((3, 4)),
            rng.standard_normal((3, 2)))
    np.testing.assert_allclose(self_attention_qkv(*args), attention_loop(*args), rtol=1e-6)
    sol = solution("self_attention_qkv")
    assert "hidden" in repr(sol) and "np.sqrt(d_k)" in sol.source


def _qkv(X, W_q, W_k, W_v):
    return X @ W_q, X @ W_k, X @ W_v


@pytest.mark.parametrize("fn, hint", [
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T) @ (X @ c), "forgot to scale"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T / b.shape[1]) @ (X @ c), "square root"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T / np.sqrt(X.shape[1])) @ (X @ c), "d_in"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T / np.sqrt(b.shape[1]), axis=0) @ (X @ c), "axis=0"),
    (lambda X, a, b, c: (X @ a) @ (X @ b).T / np.sqrt(b.shape[1]) @ (X @ c), "forgot the softmax"),
    (lambda X, a, b, c: softmax((X @ b) @ (X @ a).T / np.sqrt(b.shape[1])) @ (X @ c), "K @ Q.T"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T / np.sqrt(b.shape[1])) @ X, "with X"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b).T / np.sqrt(b.shape[1])), "returned the weights"),
    (lambda X, a, b, c: softmax((a @ X) @ (b @ X).T / np.sqrt(b.shape[1])) @ (c @ X), "W @ X"),
    (lambda X, a, b, c: softmax((X @ a.T) @ (X @ b.T).T / np.sqrt(b.shape[1])) @ (X @ c.T), "transposed W"),
    (lambda X, a, b, c: softmax((X @ a) @ (X @ b) / np.sqrt(b.shape[1])) @ (X @ c), "missing .T"),
    (lambda X, a, b, c: (self_attention_qkv(X, a, b, c), 0), "not (output, weights)"),
    (lambda X, a, b, c: None, "return"),
])
def test_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_self_attention_qkv(fn)
    assert not verdict
    assert hint in verdict.message + verdict.hint


@pytest.mark.parametrize("garbage", [None, [1, 2], 0, "f", np.eye(2), lambda: 1, lambda X: X,
                                     lambda X, a, b, c: 1 / 0, lambda X, a, b, c: "text",
                                     lambda X, a, b, c: np.full((3, 2), np.inf), lambda X, a, b, c: {"x": 1}])
def test_qkv_checker_never_raises(garbage):
    verdict = check_self_attention_qkv(garbage)
    assert not verdict
    assert isinstance(repr(verdict), str) and isinstance(verdict._repr_html_(), str)


# ---------------------------------------------------------------- check_asymmetric_keys


def _is_asymmetric(W_k):
    X, W_q, _, _ = love()
    S = (X @ W_q) @ (X @ np.asarray(W_k, dtype=float)).T
    return not np.allclose(S, S.T)


def test_asymmetric_solution_passes():
    W = asymmetric_keys()
    assert _is_asymmetric(W)
    verdict = check_asymmetric_keys(W)
    assert verdict and "score(" in verdict.message
    assert "W_k[0, 0] = 1.0" in solution("asymmetric_keys").source


@pytest.mark.parametrize("seed", range(10))
def test_asymmetric_checker_agrees_with_direct_computation(seed):
    W = np.random.default_rng(seed).integers(-2, 3, size=(2, 2)).astype(float)
    assert bool(check_asymmetric_keys(W)) == _is_asymmetric(W)


@pytest.mark.parametrize("value, hint", [
    (..., "replace the ..."),
    (None, "replace the ..."),
    (i_love_ai()["W_k"], "change one entry"),
    (np.array([[0.0, 2.0], [2.0, 0.0]]), "M[0, 1] differ from M[1, 0]"),
    (np.eye(3), "2 x 2"),
    ([[np.nan, 0], [0, 1]], "finite"),
    ("abc", "2 x 2 numpy array"),
    ({"a": 1}, "2 x 2 numpy array"),
    (object(), "2 x 2 numpy array"),
    ([[1, 2], [3]], "2 x 2 numpy array"),
])
def test_asymmetric_checker_hints_and_never_raises(value, hint):
    verdict = check_asymmetric_keys(value)
    assert not verdict
    assert hint in verdict.message + verdict.hint


# ---------------------------------------------------------------- the worked steps (examples.py) and the widget


def test_steps_match_helper_and_loop():
    X, W_q, W_k, W_v = love()
    steps = qkv_attention_steps(X, W_q, W_k, W_v)
    context, weights = scaled_dot_product_attention(steps["Q"], steps["K"], steps["V"])
    np.testing.assert_allclose(steps["context"], context, rtol=1e-6)
    np.testing.assert_allclose(steps["weights"], weights, rtol=1e-6)
    np.testing.assert_allclose(steps["context"], attention_loop(X, W_q, W_k, W_v), rtol=1e-5)
    np.testing.assert_allclose(steps["scaled"], steps["scores"] / np.sqrt(2))


def test_explorer_controls_defaults_and_extremes():
    explorer = nb05.EXPLORERS["qkv_explorer"]()
    assert len(explorer.controls) == 12
    ex = i_love_ai()
    for name in nb05.MATRIX_NAMES:
        for r in range(2):
            for c in range(2):
                assert explorer.controls[f"{name}_{r}{c}"].value == ex[name][r, c]
    assert "symmetric</b>" in explorer.figure().note
    assert "not symmetric" in explorer.figure(W_q_00=2.0).note
    for value in (-3.0, 0.0, 3.0):  # every entry at an extreme, including all zeros
        assert explorer.render_png(**{key: value for key in explorer.controls}).startswith(b"\x89PNG")


def test_note_reports_ties_and_changed_scores():
    explorer = nb05.qkv_explorer()
    note = explorer.figure().note
    assert "I → love / AI (tied)" in note
    zero_keys = explorer.figure(W_k_00=0.0, W_k_01=0.0, W_k_10=0.0, W_k_11=0.0).note
    assert "I → I / love / AI (tied)" in zero_keys
    assert "score(I → love) = 2.00, but score(love → I) = 1.00" in explorer.figure(W_q_00=2.0).note


def test_reset_restores_defaults_with_one_redraw():
    explorer = nb05.qkv_explorer()
    explorer.controls["W_v_11"].value = 2.5
    explorer.controls["W_q_00"].value = -1.0
    before = explorer.renders
    explorer.reset()
    assert explorer.renders == before + 1
    assert explorer.controls["W_v_11"].value == 1.0 and explorer.controls["W_q_00"].value == 1.0


def test_values_beyond_a_colorbar_widen_it_in_place_as_a_fresh_drawing_would():
    """Out-of-range values take the background-only redraw, and the frame equals a fresh one pixel for pixel."""
    import io

    from PIL import Image

    explorer = nb05.qkv_explorer()
    explorer.render()
    first_axes = explorer._live.axes
    for value in (2.5, 3.0):  # 2.5 takes the scaled scores past the initial limits of +-3
        png, note = explorer.render(W_q_00=value)
        assert explorer._live.axes == first_axes  # the same artists: not a full redraw
        fresh_png, fresh_note = nb05.qkv_explorer().render(W_q_00=value)
        assert note == fresh_note
        live, fresh = (np.asarray(Image.open(io.BytesIO(data))) for data in (png, fresh_png))
        np.testing.assert_array_equal(live, fresh)
    assert explorer._live.handles["panels"][0][0].images[0].get_clim() == (-4.0, 4.0)


# ---------------------------------------------------------------- every wrong divisor gets its own hint (issue 14 #6)


def _scaled_by(divisor):
    def attention(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return softmax(Q @ K.T / divisor(X, W_q, W_k, W_v), axis=-1) @ V

    return attention


@pytest.mark.parametrize("divisor, hint", [
    (lambda X, W_q, W_k, W_v: 1.0, "forgot to scale"),
    (lambda X, W_q, W_k, W_v: W_k.shape[1], "divided the scores by d_k"),
    (lambda X, W_q, W_k, W_v: np.sqrt(X.shape[1]), "square root of d_in"),
    (lambda X, W_q, W_k, W_v: np.sqrt(W_v.shape[1]), "square root of d_v"),
    (lambda X, W_q, W_k, W_v: np.sqrt(X.shape[0]), "square root of T"),
])
def test_every_wrong_divisor_is_named(divisor, hint):
    verdict = check_self_attention_qkv(_scaled_by(divisor))
    assert not verdict.passed and hint in verdict.hint, verdict


def test_a_leftover_sqrt_2_is_not_called_d_v():
    # d_k = 2 left over from the worked example: every size is 2 there, and the last case has d_v = 2
    verdict = check_self_attention_qkv(_scaled_by(lambda X, W_q, W_k, W_v: np.sqrt(2)))
    assert not verdict.passed
    assert "np.sqrt(2) whatever the sizes" in verdict.hint
    assert "Compute d_k from K inside the function" in verdict.hint
    assert "d_v" not in verdict.hint


def test_the_first_case_tells_every_divisor_apart():
    from attn_helpers.checks.nb05 import _cases

    X, W_q, W_k, W_v = _cases()[0].args
    T, d_in, d_k, d_v = X.shape[0], X.shape[1], W_k.shape[1], W_v.shape[1]
    divisors = [1.0, np.sqrt(d_k), d_k, np.sqrt(d_in), np.sqrt(d_v), np.sqrt(T)]
    assert len({round(float(d), 6) for d in divisors}) == len(divisors)


# ---------------------------------------------------------------- predict, then run: which rows of S change


def test_changed_rows_prediction():
    X, W_q, W_k, _ = love()
    changed = W_q.copy()
    changed[0, 0] = 2.0
    rows = np.flatnonzero(((X @ changed) @ (X @ W_k).T != (X @ W_q) @ (X @ W_k).T).any(axis=1))
    assert rows.tolist() == [0, 2]  # I and AI, independently of the checker
    for answer in ({"I", "AI"}, ["AI", "I"], (0, 2), [np.int64(0), 2]):
        assert check_changed_rows(answer).passed, answer


@pytest.mark.parametrize("answer, hint", [
    (["I"], "x(AI)"),
    ({"I", "love", "AI"}, "x(love) = [0, 1]"),
    (["love"], "x(love) = [0, 1]"),
    ([], "first feature is not 0"),
])
def test_changed_rows_wrong_predictions_get_hints(answer, hint):
    verdict = check_changed_rows(answer)
    assert not verdict.passed and hint in verdict.hint


def test_changed_rows_odd_answers():
    assert "not filled in" in check_changed_rows(...).message
    assert "not one of the tokens" in check_changed_rows(["you"]).message
    assert "not one of the tokens" in check_changed_rows([3]).message


# ---------------------------------------------------------------- spot the slip (issue 14 #10)


def test_score_slip_solution_and_the_independent_row():
    X, W_q, W_k, _ = love()
    row = ((X @ W_q) @ (X @ W_k).T / np.sqrt(2))[1]
    np.testing.assert_allclose(row, [0.7071, 0.7071, 1.4142], atol=1e-4)
    assert score_slip() == ("AI", 1.41)
    assert check_score_slip("AI", 1.41).passed
    assert check_score_slip(2, np.sqrt(2)).passed


@pytest.mark.parametrize("key, value, hint", [
    ("love", 1.41, "compare the whole row"),
    ("I", None, "compare the whole row"),
    ("AI", 0.71, "read the computed value"),
    ("AI", 2, "divide by sqrt(2)"),
    ("AI", 0.5035, "before the softmax"),
    ("AI", 1.5, "compute q(love)"),
    ("AI", None, "rounded to 2 decimals"),
    ("AI", "one", "give one number"),
    ("you", 1.41, "name the key"),
])
def test_score_slip_wrong_answers_get_hints(key, value, hint):
    verdict = check_score_slip(key, value)
    assert not verdict.passed and hint in verdict.hint


# ---------------------------------------------------------------- design: W_k so that roamed attends to creature


def _creature_keys(feature=None, value=2.0, column=3):
    W_k = creature_example()["W_k"].copy()
    if feature is not None:
        W_k[CREATURE_FEATURES.index(feature), column] = value
    return W_k


def test_roamed_keys_solution_passes_and_moves_only_roamed():
    assert check_roamed_keys(roamed_keys()).passed
    ex = creature_example()
    before = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])["weights"]
    after = qkv_attention_steps(ex["X"], ex["W_q"], roamed_keys(), ex["W_v"])["weights"]
    roamed, creature = CREATURE_TOKENS.index("roamed"), CREATURE_TOKENS.index("creature")
    assert after[roamed].argmax() == creature and after[roamed, creature] > 0.85
    np.testing.assert_array_equal(np.delete(after, roamed, axis=0), np.delete(before, roamed, axis=0))
    assert check_roamed_keys(_creature_keys("alive", 1.7)).passed  # any large enough entry will do


def test_roamed_keys_a_narrow_win_is_not_a_clear_winner():
    # the obvious first try, 1 on the "alive" row, gives creature 0.51: more than any other token, not a clear win
    from attn_helpers.checks.nb05 import CLEAR_WIN

    ex = creature_example(dtype=np.float64)
    W_k = _creature_keys("alive", 1.0)
    row = qkv_attention_steps(ex["X"], ex["W_q"], W_k, ex["W_v"])["weights"][CREATURE_TOKENS.index("roamed")]
    creature = row[CREATURE_TOKENS.index("creature")]
    assert 0.5 < creature < CLEAR_WIN
    verdict = check_roamed_keys(W_k)
    assert not verdict.passed
    assert f"only with weight {creature:.2f}" in verdict.message and "not yet a clear winner" in verdict.message
    assert "make that entry of W_k larger" in verdict.hint
    assert "times any other token" in check_roamed_keys(roamed_keys()).message


def _with_other_change(W_k):
    W_k = W_k.copy()
    W_k[CREATURE_FEATURES.index("adjective"), 0] = 0.2  # the nouns' search for adjectives weakens
    return W_k


@pytest.mark.parametrize("W_k, hint", [
    (_creature_keys(), "all zeros"),
    (_creature_keys("noun"), "share the feature noun"),
    (_creature_keys("about the creature"), "share the feature about the creature"),
    (_creature_keys("alive", 0.5), "make that entry of W_k larger"),
    (_creature_keys("alive", -2.0), "positive entry"),
    (_with_other_change(roamed_keys()), "change only column 3"),
    (np.zeros((8, 3)), "one row per embedding feature"),
    (np.full((8, 4), np.nan), "NaN"),
])
def test_roamed_keys_wrong_designs_get_hints(W_k, hint):
    verdict = check_roamed_keys(W_k)
    assert not verdict.passed and hint in verdict.hint + verdict.message, verdict


def test_complex_answers_are_refused_not_truncated():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning either
        assert "complex" in check_score_slip("AI", np.complex128(1.41 + 1j)).message
        assert "complex" in check_roamed_keys(roamed_keys() + 1j).message


def test_scaling_the_weights_after_the_softmax_is_named():
    def scaled_after(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        weights = softmax(Q @ K.T, axis=-1) / np.sqrt(K.shape[-1])
        return weights @ V

    verdict = check_self_attention_qkv(scaled_after)
    assert not verdict.passed and "after the softmax" in verdict.hint, verdict


def test_transposed_weights_are_named():
    def transposed(X, W_q, W_k, W_v):
        Q, K, V = X @ W_q, X @ W_k, X @ W_v
        return softmax(Q @ K.T / np.sqrt(K.shape[-1]), axis=-1).T @ V

    verdict = check_self_attention_qkv(transposed)
    assert not verdict.passed and "weights.T @ V" in verdict.hint, verdict


def test_asymmetric_keys_reports_every_pair_whose_scores_differ():
    """05.2: the solution makes all three pairs asymmetric; the verdict names all three, so a learner can judge
    a prediction of how many change."""
    verdict = check_asymmetric_keys(asymmetric_keys())
    assert verdict.passed and verdict.message.count("but score(") == 3 and "all 3 pairs" in verdict.message
def test_static_documents_the_names_of_its_entries(capsys):
    """`explorer.static(...)` is how a learner without a kernel tries an edit: its help names every entry."""
    explorer = nb05.qkv_explorer()
    doc = type(explorer).static.__doc__
    assert "W_q_00" in doc and "W_q[0, 0]" in doc and "W_v_11" in doc
    assert set(explorer.controls) == {f"{name}_{r}{c}" for name in nb05.MATRIX_NAMES for r in (0, 1) for c in (0, 1)}
    explorer.static(W_q_00=2)
    assert "Q = X W_q: I [2.00 0.00]" in capsys.readouterr().out


@pytest.mark.parametrize("check, name, key", [("check_asymmetric_keys", "W_k", None),
                                              ("check_roamed_keys", "creature", "W_k")])
def test_an_edit_of_the_notebooks_own_array_is_named(monkeypatch, check, name, key):
    """``my_W_k = W_k; my_W_k[0, 0] = 2`` changes W_k itself, and the cells that use it then fail: the checker
    says so and names the cell to run again, and after an earlier such try it asks for that cell first."""
    import types

    from attn_helpers.checks import _grader, nb05
    from attn_helpers.examples import creature_example, i_love_ai

    space = {"W_k": i_love_ai()["W_k"], "creature": creature_example()}
    monkeypatch.setattr(_grader, "_ipython", lambda: types.SimpleNamespace(user_ns=space, execution_count=1))
    original = space[name] if key is None else space[name][key]
    mine = original  # an alias, not a copy
    mine[0 if key is None else 2, 0 if key is None else 3] = 2.0
    verdict = getattr(nb05, check)(mine)
    assert not verdict.passed and "is not a copy" in verdict.message and "again" in verdict.hint
    right = (nb05.asymmetric_keys() if key is None else nb05.roamed_keys())
    verdict = getattr(nb05, check)(right)
    assert not verdict.passed and "no longer holds its own numbers" in verdict.message
    space.update({"W_k": i_love_ai()["W_k"], "creature": creature_example()})
    assert getattr(nb05, check)(right).passed
