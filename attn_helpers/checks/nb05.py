"""Checkers for notebook 05 (Q, K and V projections)."""

from __future__ import annotations

import numpy as np

from ..core import softmax
from ..examples import (
    CREATURE_FEATURES,
    CREATURE_TOKENS,
    I_LOVE_AI_TOKENS,
    SEED,
    creature_example,
    i_love_ai,
    journey_embeddings,
    qkv_attention_steps,
)
from ._grader import (
    Case,
    Verdict,
    Wrong,
    edited_in_place,
    grade_function,
    never_raises,
    read_filled,
    register_solution,
    shows_verdict,
    whole_number,
)
from ._predict import grade_token_set

__all__ = ["check_self_attention_qkv", "check_asymmetric_keys", "check_changed_rows", "check_score_slip",
           "check_roamed_keys"]


@register_solution("self_attention_qkv")
def self_attention_qkv(X, W_q, W_k, W_v):
    """Self-attention with trainable projections: the output, shape (T, d_v)."""
    Q = X @ W_q  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    K = X @ W_k  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    V = X @ W_v  # (T, d_in) @ (d_in, d_v) -> (T, d_v)
    d_k = K.shape[-1]
    scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
    weights = softmax(scores / np.sqrt(d_k), axis=-1)  # each row (one query) sums to 1
    return weights @ V  # (T, T) @ (T, d_v) -> (T, d_v)


def _cases():
    """First 'journey', whose sizes tell every wrong divisor apart; a case with no size 2 comes before d_v = 2,
    so that a ``np.sqrt(2)`` left over from the worked example is named as such."""
    ex = i_love_ai()
    rng = np.random.default_rng(SEED + 5)
    X6 = journey_embeddings()
    return [
        Case((X6, rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 5))),
             label="the 'journey' sentence, T = 6, d_in = 3, d_k = 2, d_v = 5"),
        Case((ex["X"], ex["W_q"], ex["W_k"], ex["W_v"]), label="'I love AI' with the worked-example matrices"),
        Case(tuple(rng.standard_normal((2, 2)) for _ in range(4)),
             label="a square case: T = d_in = d_k = d_v = 2"),
        Case((rng.standard_normal((5, 4)), rng.standard_normal((4, 3)), rng.standard_normal((4, 3)),
              rng.standard_normal((4, 6))), label="T = 5, d_in = 4, d_k = 3, d_v = 6 (no size is 2)"),
        Case((rng.standard_normal((4, 3)), rng.standard_normal((3, 5)), rng.standard_normal((3, 5)),
              rng.standard_normal((3, 2))), label="T = 4, d_in = 3, d_k = 5, d_v = 2"),
    ]


def _attend(Q, K, V, scale=None, axis=-1):
    scale = 1 / np.sqrt(K.shape[-1]) if scale is None else scale
    return softmax(Q @ K.T * scale, axis=axis) @ V


def _wrongs():
    def qkv(X, W_q, W_k, W_v):
        return X @ W_q, X @ W_k, X @ W_v

    def weights_of(X, W_q, W_k, W_v):
        Q, K, _ = qkv(X, W_q, W_k, W_v)
        return softmax(Q @ K.T / np.sqrt(K.shape[-1]))

    return [
        Wrong(weights_of, "you returned the weights, shape (T, T). Multiply them with the values: weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1.0),
              "you forgot to scale: divide the scores Q @ K.T by np.sqrt(d_k) before the softmax"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / W_k.shape[-1]),
              "you divided the scores by d_k; divide by its square root, np.sqrt(d_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / np.sqrt(X.shape[-1])),
              "you scaled by the square root of d_in = X.shape[-1]. d_k is the dimension of the queries and keys: "
              "K.shape[-1] (the number of columns of W_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / np.sqrt(2)),
              "you divided by np.sqrt(2) whatever the sizes: a d_k = 2 left over from the worked example (or typed "
              "in)? Here d_k is not 2. Compute d_k from K inside the function: d_k = K.shape[-1]"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / np.sqrt(W_v.shape[-1])),
              "you scaled by the square root of d_v, the dimension of the values. d_k is the dimension of the "
              "queries and keys: K.shape[-1]"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), scale=1 / np.sqrt(X.shape[0])),
              "you scaled by the square root of T = X.shape[0], the number of tokens. d_k is the number of "
              "columns: K.shape[-1]"),
        Wrong(lambda X, W_q, W_k, W_v: softmax((X @ W_q) @ (X @ W_k).T) / np.sqrt(W_k.shape[-1]) @ (X @ W_v),
              "you divided the WEIGHTS by sqrt(d_k), after the softmax, so the rows no longer sum to 1. Scale the "
              "scores before the softmax: softmax(Q @ K.T / np.sqrt(d_k), axis=-1)"),
        Wrong(lambda X, W_q, W_k, W_v: weights_of(X, W_q, W_k, W_v).T @ (X @ W_v),
              "you used the weights transposed (weights.T @ V). Row i of the weights is query i, so the output is "
              "weights @ V: (T, T) @ (T, d_v) -> (T, d_v)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(*qkv(X, W_q, W_k, W_v), axis=0),
              "your softmax ran down the columns (axis=0). Each query is a row and its weights must sum to 1: "
              "use axis=-1"),
        Wrong(lambda X, W_q, W_k, W_v: (X @ W_q) @ (X @ W_k).T / np.sqrt(W_k.shape[-1]) @ (X @ W_v),
              "you forgot the softmax: scaled scores are not weights. Apply softmax(..., axis=-1) so each row "
              "sums to 1"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_k, X @ W_q, X @ W_v),
              "you swapped the roles of queries and keys (K @ Q.T). Row i of the scores is query i against every "
              "key: scores = Q @ K.T"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q, X @ W_k, X),
              "you multiplied the weights with X. The output mixes the values: V = X @ W_v, then weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q, X @ W_k, X @ W_k),
              "you multiplied the weights with K. The output mixes the values: V = X @ W_v, then weights @ V"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(W_q @ X, W_k @ X, W_v @ X),
              "you wrote W @ X. X holds one token per row, so the projection is X @ W_q: "
              "(T, d_in) @ (d_in, d_k) -> (T, d_k)"),
        Wrong(lambda X, W_q, W_k, W_v: _attend(X @ W_q.T, X @ W_k.T, X @ W_v.T),
              "you used transposed matrices (X @ W_q.T). Here W_q has shape (d_in, d_k) and Q = X @ W_q"),
        Wrong(lambda X, W_q, W_k, W_v: _attend((X @ W_q).T, (X @ W_k).T, (X @ W_v).T),
              "you transposed Q, K and V: they have one row per token, shape (T, d_k)"),
    ]


_MATMUL_HINT = ("a matrix product's inner sizes must agree. Q = X @ W_q is (T, d_in) @ (d_in, d_k); scores = Q @ K.T "
                "is (T, d_k) @ (d_k, T); output = weights @ V is (T, T) @ (T, d_v). Look for W @ X, a missing .T, or a "
                "transposed W (X @ W_q.T)")


@shows_verdict
def check_self_attention_qkv(fn):
    """Grade ``fn(X, W_q, W_k, W_v) -> output`` of shape ``(T, d_v)``: softmax(Q K^T / sqrt(d_k)) V."""
    return grade_function(
        fn, self_attention_qkv, _cases(), what="self_attention_qkv", wrongs=_wrongs(),
        shape_hint="the output has one row per token and d_v columns: shape (T, d_v), the shape of V",
        success="Q, K and V projected, scores scaled by √d_k, a softmax per row, and the values mixed.",
        hints={"matmul": _MATMUL_HINT,
               "tuple": "return only the output (one array of shape (T, d_v)), not (output, weights)"},
    )


@register_solution("asymmetric_keys")
def asymmetric_keys():
    """Change one entry of W_k: W_q @ W_k.T is no longer symmetric, and neither is Q @ K.T."""
    W_k = i_love_ai()["W_k"].copy()
    W_k[0, 0] = 1.0  # was 0
    return W_k


@never_raises("could not use this value", "give a 2 x 2 numpy array, for example W_k.copy() with one entry changed")
def check_asymmetric_keys(W_k):
    """Grade a ``W_k`` (2 x 2) that makes the scores Q K^T of "I love AI" asymmetric."""
    W, problem = read_filled(W_k, "my_W_k", example="a 2 x 2 array", shape=(2, 2),
                             hint="W_k maps the d_in = 2 input features to d_k = 2 key features: a 2 x 2 numpy array, "
                                  "for example W_k.copy() with one entry changed")
    if problem is not None:
        return problem
    ex = i_love_ai(dtype=np.float64)
    aliased = edited_in_place(W_k, "my_W_k", {"W_k": i_love_ai()["W_k"]}, "the cell of step 1 (X, W_q, W_k, W_v = ...)")
    if aliased is not None:
        return aliased
    X, W_q = ex["X"], ex["W_q"]
    M = W_q @ W.T  # (d_in, d_k) @ (d_k, d_in) -> (d_in, d_in)
    S = (X @ W_q) @ (X @ W).T  # (T, d_k) @ (d_k, T) -> (T, T)
    if np.allclose(S, S.T, atol=1e-9):
        if np.allclose(W, ex["W_k"]):
            return Verdict(False, "that is the original W_k, whose scores are symmetric",
                           "change one entry, for example my_W_k = W_k.copy(); my_W_k[0, 0] = 1")
        shown = np.array2string(M, precision=2, separator=", ").replace("\n", "")
        return Verdict(False, "Q @ K.T is still symmetric",
                       f"the scores are X (W_q W_kᵀ) Xᵀ, symmetric exactly when M = W_q @ my_W_k.T is. Yours is "
                       f"{shown}: make M[0, 1] differ from M[1, 0]")
    tokens = I_LOVE_AI_TOKENS
    pairs = [(i, j) for i in range(len(tokens)) for j in range(i + 1, len(tokens))
             if not np.isclose(S[i, j], S[j, i], atol=1e-9)]  # every pair whose two scores differ
    said = "; ".join(f"score({tokens[i]} → {tokens[j]}) = {S[i, j]:.2f} but score({tokens[j]} → {tokens[i]}) = "
                     f"{S[j, i]:.2f}" for i, j in pairs)
    total = len(tokens) * (len(tokens) - 1) // 2
    which = "the only pair" if len(pairs) == 1 else f"all {total} pairs" if len(pairs) == total else \
        f"{len(pairs)} of the {total} pairs"
    return Verdict(True, f"{said} ({which} whose two scores differ): now a token can attend to another without "
                         "being attended back.")


# Predict, then run: which rows of the scores change when one entry of W_q changes?
def _changed_rows():
    ex = i_love_ai(dtype=np.float64)
    W_q_changed = ex["W_q"].copy()
    W_q_changed[0, 0] = 2.0
    K = ex["X"] @ ex["W_k"]  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    before = (ex["X"] @ ex["W_q"]) @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
    after = (ex["X"] @ W_q_changed) @ K.T
    return {int(i) for i in np.flatnonzero(~np.isclose(before, after).all(axis=1))}


@shows_verdict
def check_changed_rows(prediction):
    """Grade a prediction: which rows (queries) of S = Q K^T change when W_q[0, 0] goes from 1 to 2?"""
    return grade_token_set(
        prediction, _changed_rows(), I_LOVE_AI_TOKENS, "your prediction",
        why="their first feature x[0] is 1, so row 0 of W_q changes their queries, and each query is one row of S. "
            "The keys did not change, so no other row did.",
        extra="x(love) = [0, 1]: its first feature is 0, so row 0 of W_q, where the change is, is multiplied by 0 in "
              "q(love) = x(love) W_q. Its query, and so its row of scores, stays the same",  # love: the unchanged row
        missed="look at x({missed}): its first feature is not 0, so row 0 of W_q feeds its query too. A change in "
               "W_q changes the query, which is one whole ROW of scores")


# Spot the slip: the scaled scores of "love" as a set of hand-written notes printed them
@register_solution("score_slip")
def score_slip():
    """One line finds it: compare the notes' row with the computed one, entry by entry."""
    steps = qkv_attention_steps(*i_love_ai().values())
    row = steps["scaled"][1]  # the row of the query "love"
    differs = ~np.isclose(np.array([0.71, 0.71, 0.71]), row, atol=0.005)  # [False, False, True]
    slip_key = I_LOVE_AI_TOKENS[int(np.argmax(differs))]  # "AI"
    return slip_key, round(float(row[np.argmax(differs)]), 2)  # ("AI", 1.41)


@never_raises("could not use this answer", 'give the key as a string, e.g. "I", and the corrected value as a number')
def check_score_slip(slip_key, corrected=None):
    """Grade the slip in the notes' row [0.71, 0.71, 0.71]: which key (name or position), and its right value."""
    tokens = I_LOVE_AI_TOKENS
    key, value = score_slip()
    _, problem = read_filled(slip_key, "my_slip_key", example='a token, e.g. "I"', numbers=False)
    if problem is not None:
        return problem
    if whole_number(slip_key) is not None and 0 <= whole_number(slip_key) < len(tokens):
        slip_key = tokens[whole_number(slip_key)]
    if slip_key not in tokens:
        return Verdict(False, f"my_slip_key is {slip_key!r}, not one of the keys {list(tokens)}",
                       'name the key (the column) whose score the notes got wrong, e.g. "I"')
    if slip_key != key:
        return Verdict(False, f"the notes' score for the key {slip_key!r} is right",
                       "compare the whole row in one line: np.isclose(notes_row, scaled[1], atol=0.005) is False "
                       "exactly where the notes are wrong")
    got, problem = read_filled(corrected, f"the key is right ({key}); my_corrected", shape=(),
                               example="the right value of that score, rounded to 2 decimals",
                               hint="give one number, without quotes, e.g. 0.5")
    if problem is not None:
        return problem
    got = float(got)
    if abs(got - 0.71) < 0.006:
        return Verdict(False, "0.71 is what the notes printed",
                       f"read the computed value: scaled[1, {tokens.index(key)}]")
    if abs(got - 2.0) < 0.006:
        return Verdict(False, "2 is the score before scaling, s(love, AI) = q(love) · k(AI)",
                       "the row is of S / sqrt(d_k): divide by sqrt(2)")
    if abs(got - 0.5035) < 0.006 or abs(got - 0.50) < 0.006:
        return Verdict(False, "that is the WEIGHT of AI in the row of love, after the softmax",
                       "the notes' row holds scaled scores, before the softmax")
    if abs(got - value) > 0.006:
        return Verdict(False, f"the key is right ({key}), but {got:g} is not its scaled score",
                       f"print scaled[1, {tokens.index(key)}], or compute q(love) · k(AI) / sqrt(2) by hand")
    return Verdict(True, f"the notes copied 0.71 into the third column: s(love, AI) / √2 = 2 / 1.414 = {value:.2f}. "
                         "One line of code, np.isclose(notes_row, scaled[1], atol=0.005), finds it.")


# Design: choose W_k so that "roamed" attends to "creature"
@register_solution("roamed_keys")
def roamed_keys():
    """Only the creature has the feature "alive": let it answer the verb's question in key column 3."""
    W_k = creature_example()["W_k"].copy()
    alive = CREATURE_FEATURES.index("alive")
    W_k[alive, 3] = 2.0  # k(creature)[3] = 2; q(roamed)[3] = 4: score 8, scaled 8 / sqrt(4) = 4
    return W_k


#: The weight on "creature" that makes it a clear winner for "roamed" (the other 7 tokens share the rest).
CLEAR_WIN = 0.8


@never_raises("could not use this value",
              'give an 8 x 4 numpy array, for example creature["W_k"].copy() with one entry changed')
def check_roamed_keys(W_k):
    """Grade a designed ``W_k`` (8 x 4): "roamed" puts at least ``CLEAR_WIN`` on "creature", other rows unchanged."""
    ex = creature_example(dtype=np.float64)
    W, problem = read_filled(W_k, "my_W_k_roamed", example="an 8 x 4 array", shape=ex["W_k"].shape,
                             hint='one row per embedding feature, one column per question: start from '
                                  'creature["W_k"].copy() and change an entry')
    if problem is not None:
        return problem
    aliased = edited_in_place(W_k, "my_W_k_roamed", {'creature["W_k"]': creature_example()["W_k"]},
                              "the cell creature = creature_example()")
    if aliased is not None:
        return aliased
    if np.abs(W).max() > 1e3:
        return Verdict(False, "my_W_k_roamed contains huge numbers", "use small ordinary numbers")
    tokens = CREATURE_TOKENS
    before = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])["weights"]
    weights = qkv_attention_steps(ex["X"], ex["W_q"], W, ex["W_v"])["weights"]
    roamed, creature = tokens.index("roamed"), tokens.index("creature")
    others = [t for t in range(len(tokens)) if t != roamed]
    changed = [tokens[t] for t in others if not np.allclose(weights[t], before[t], atol=0.01)]
    row = weights[roamed]
    top = int(np.argmax(row))
    if np.allclose(row, row[0]):
        return Verdict(False, "roamed still spreads its weight evenly over all 8 tokens",
                       "q(roamed) is 4 in column 3 ('looks for who acts') and 0 elsewhere, so only column 3 of W_k "
                       "matters for it, and it is all zeros. Put a positive number in column 3, in the row of a "
                       "feature that only the creature has")
    tied = [tokens[j] for j in np.flatnonzero(row >= row.max() - 1e-6)]
    if len(tied) > 1 and "creature" in tied:
        rows = ex["X"][[tokens.index(t) for t in tied]]  # the embeddings of the tied tokens
        shared = [CREATURE_FEATURES[f] for f in np.flatnonzero(rows.all(axis=0))]
        return Verdict(False, f"roamed attends equally to {', '.join(tied)}",
                       f"they share the feature {' and '.join(shared) or 'you used'}: pick a feature (a row of "
                       "W_k) that the creature has and the others do not")
    if top != creature:
        return Verdict(False, f"roamed attends most to {tokens[top]!r} ({row[top]:.2f}), not to the creature",
                       "the score of key j is q(roamed) · k(j) = 4 * k(j)[3], and k(j)[3] = x(j) · W_k[:, 3]: give "
                       "column 3 a positive entry in the row of a feature the creature has")
    if row[creature] < CLEAR_WIN:
        runner_up = np.sort(row)[-2]
        return Verdict(False, f"roamed attends most to the creature, but only with weight {row[creature]:.2f} "
                              f"({row[creature] / runner_up:.1f} times any other token): not yet a clear winner "
                              f"(at least {CLEAR_WIN} asked)",
                       "make that entry of W_k larger: the score is divided by sqrt(d_k) = 2 before the softmax, and "
                       "the 7 other tokens still share the rest")
    if changed:
        return Verdict(False, f"roamed now attends to the creature, but the rows of {', '.join(changed)} changed too",
                       "change only column 3 of W_k: no other query asks question 3, so no other row moves")
    lead = row[creature] / np.sort(row)[-2]
    return Verdict(True, f"roamed puts {row[creature]:.2f} of its weight on 'creature' ({lead:.0f} "
                         "times any other token), and every other row is as before: a verb's query found its "
                         "subject's key. Training finds such matrices by itself.")
