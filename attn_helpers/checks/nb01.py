"""Checkers for notebook 01 (embeddings): one-hot lookup and cosine similarity."""

from __future__ import annotations

import numpy as np

from ._grader import Case, Verdict, Wrong, call_quietly, grade_function, grade_value, register_solution, shows_verdict

__all__ = ["check_shared_neighbours", "check_one_hot", "check_cosine_scores"]


# Exercise 01.1: one-hot vectors (a row lookup written as a matrix product)
@register_solution("one_hot")
def one_hot(token_ids, vocab_size):
    """One row per token, one column per vocabulary word: a single 1 at column token_ids[i]."""
    token_ids = np.asarray(token_ids)
    onehot = np.zeros((len(token_ids), vocab_size))  # (T, V)
    onehot[np.arange(len(token_ids)), token_ids] = 1.0  # row i gets its 1 in column token_ids[i]
    return onehot


def _one_hot_cases():
    return [
        Case((np.array([2, 0, 1, 2]), 5), label="token_ids = [2, 0, 1, 2], vocab_size = 5"),
        Case((np.array([5, 1]), 6), label="token_ids = [5, 1], vocab_size = 6"),
        Case((np.array([3, 3, 0, 7, 1]), 9), label="token_ids = [3, 3, 0, 7, 1], vocab_size = 9"),
    ]


def _filled(token_ids, vocab_size, rows):
    """The slips onehot[token_ids] = 1 (whole rows) and onehot[:, token_ids] = 1 (whole columns)."""
    onehot = np.zeros((len(token_ids), vocab_size))
    if rows:
        onehot[np.asarray(token_ids)] = 1.0
    else:
        onehot[:, np.asarray(token_ids)] = 1.0
    return onehot


@shows_verdict
def check_one_hot(fn):
    """Grade ``fn(token_ids, vocab_size) -> onehot`` of shape ``(T, vocab_size)``."""
    return grade_function(
        fn, one_hot, _one_hot_cases(), what="one_hot",
        wrongs=[
            Wrong(lambda ids, V: np.eye(V)[: len(ids)],
                  "every row has a single 1, but not in the right column: row i needs its 1 in column "
                  "token_ids[i], so use the ids (np.eye(vocab_size)[token_ids] is one way)"),
            Wrong(lambda ids, V: np.eye(V)[np.asarray(ids) - 1],
                  "the 1s are one column off: ids count from 0, so token id 0 is column 0"),
            Wrong(lambda ids, V: one_hot(ids, V).T,
                  "your result is transposed: shape (vocab_size, T). One-hot vectors are rows, like every token in "
                  "this series: one row per token, one column per word of the vocabulary, shape (T, vocab_size)"),
            Wrong(lambda ids, V: np.eye(V)[np.asarray(ids)].sum(axis=0),
                  "you added the rows up into one bag-of-words vector; keep one row per token"),
            Wrong(lambda ids, V: _filled(ids, V, rows=False),
                  "onehot[:, token_ids] = 1 puts a 1 in EVERY listed column of every row. Pair row i with column "
                  "token_ids[i]: onehot[np.arange(len(token_ids)), token_ids] = 1"),
            Wrong(lambda ids, V: _filled(ids, V, rows=True),
                  "onehot[token_ids] = 1 fills whole ROWS (the rows numbered by the ids) with 1s. Pair row i with "
                  "column token_ids[i]: onehot[np.arange(len(token_ids)), token_ids] = 1"),
            Wrong(lambda ids, V: np.eye(int(np.max(ids)) + 1)[np.asarray(ids)],
                  "you made one column per id up to the largest id, max(token_ids) + 1. There is one column per word "
                  "of the vocabulary, whether it occurs or not: shape (T, vocab_size)"),
        ],
        shape_hint="the result must have shape (T, vocab_size): one row per token, one column per word of the "
                   "vocabulary (even for words that do not occur)",
        success="onehot @ table picks out the rows table[token_ids]: an embedding lookup is this product.",
    )


# Exercise 01.2: cosine similarity of one query with every row of a table
ZERO_ROW_LABEL = "a table whose last row is the zero vector"
SHORT_LABEL = "query [0.3, 0.4] and short rows [[0.6, 0.8], [0.1, 0], [-0.3, 0.4]] (every length below 1)"


@register_solution("cosine_scores")
def cosine_scores(query, vectors):
    """Cosine of the angle between ``query`` (d,) and each row of ``vectors`` (N, d); 0 for a zero row."""
    dots = vectors @ query  # (N, d) @ (d,) -> (N,)
    lengths = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)  # one length per row: axis=1 -> (N,)
    return np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 0)  # 0 where a length is 0


def _cosine_cases():
    rng = np.random.default_rng(1)
    square = rng.standard_normal((4, 4))  # N = d: a norm over the wrong axis still broadcasts, so it can be named
    with_zero = np.vstack([rng.standard_normal((3, 5)), np.zeros((1, 5))])
    return [
        Case((np.array([1.0, 2.0, 0.5, -1.0]), square), label="a query of length d = 4 and a (4, 4) table"),
        Case((np.array([3.0, 4.0]), np.array([[3.0, 4.0], [4.0, -3.0], [-6.0, -8.0], [1.0, 0.0]])),
             label="query [3, 4] and the table [[3, 4], [4, -3], [-6, -8], [1, 0]]"),
        Case((rng.standard_normal(6), 3.0 * rng.standard_normal((7, 6))), label="a random (7, 6) table"),
        Case((np.array([0.3, 0.4]), np.array([[0.6, 0.8], [0.1, 0.0], [-0.3, 0.4]])), label=SHORT_LABEL),
        Case((rng.standard_normal(5), with_zero), label=ZERO_ROW_LABEL),
    ]


def _safe(fn):
    def wrapped(query, vectors):
        with np.errstate(all="ignore"):
            return fn(np.asarray(query, dtype=float), np.asarray(vectors, dtype=float))
    return wrapped


_COSINE_WRONGS = [
    Wrong(_safe(lambda q, V: V @ q),
          "that is the dot product: cosine also divides by the two lengths, ||query|| * ||vectors[i]||"),
    Wrong(_safe(lambda q, V: (V @ q) / np.linalg.norm(V, axis=1)),
          "you divided by the length of each row but not by the length of the query"),
    Wrong(_safe(lambda q, V: (V @ q) / np.linalg.norm(q)),
          "you divided by the length of the query but not by the length of each row"),
    Wrong(_safe(lambda q, V: (V @ q) / (np.linalg.norm(V, axis=0) * np.linalg.norm(q))),
          "np.linalg.norm(vectors, axis=0) gives one length per feature (column); you need one length per row "
          "(word): axis=1"),
    Wrong(_safe(lambda q, V: (V @ q) / (np.linalg.norm(V) * np.linalg.norm(q))),
          "np.linalg.norm(vectors) is one number, the length of the whole table; you need one length per row: "
          "np.linalg.norm(vectors, axis=1)"),
    Wrong(_safe(lambda q, V: (V @ q) / (np.sum(V**2, axis=1) * np.sum(q**2))),
          "you divided by the squared lengths: take the square root (or use np.linalg.norm)"),
    Wrong(_safe(lambda q, V: 1.0 - (V @ q) / (np.linalg.norm(V, axis=1) * np.linalg.norm(q))),
          "that is the cosine *distance*, 1 - cosine; return the similarity itself"),
    Wrong(_safe(lambda q, V: (q @ V) / (np.linalg.norm(V, axis=1) * np.linalg.norm(q))),
          "query @ vectors multiplies the query with the COLUMNS of the table (one per feature), not with its rows "
          "(one per word): use vectors @ query, (N, d) @ (d,) -> (N,)"),
]


@shows_verdict
def check_cosine_scores(fn):
    """Grade ``fn(query, vectors) -> (N,)`` cosine similarities, with 0 (not NaN) for a zero row."""
    verdict = grade_function(
        fn, cosine_scores, _cosine_cases(), what="cosine_scores", wrongs=_COSINE_WRONGS,
        shape_hint="return one similarity per row of vectors: shape (N,). Reduce over the feature axis (axis=1)",
        success="cosine similarity, with a zero vector scoring 0 instead of NaN.",
    )
    if not verdict.passed and SHORT_LABEL in verdict.message and "values differ" in verdict.message:
        got, _ = call_quietly(fn, *next(c for c in _cosine_cases() if c.label == SHORT_LABEL).args)
        if got is not None and np.allclose(np.asarray(got, dtype=float), 0.0):  # every short row came out 0
            return Verdict(False, verdict.message,
                           "every row came out 0: the condition that protects the zero vector also caught lengths "
                           "that are merely short. Only a length of exactly 0 needs it: where=lengths > 0")
    if not verdict.passed and ZERO_ROW_LABEL in verdict.message and "NaN" in verdict.message:
        return Verdict(False, verdict.message,
                       "a zero vector has length 0, so dot / length is 0 / 0 = NaN. Return 0 for it, for example "
                       "np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 0)")
    return verdict


@shows_verdict
def check_shared_neighbours(value, word="frog", k=5):
    """Grade a prediction: how many of ``word``'s top-``k`` neighbours by dot product are also top-``k`` by cosine."""
    from ..glove import load_glove, most_similar, word_to_index  # the GloVe table loads only when asked

    _, vectors = load_glove()
    row = word_to_index()[word]
    by_dot, _ = most_similar(vectors[row], vectors, k=k, metric="dot", exclude=[row])
    by_cosine, _ = most_similar(vectors[row], vectors, k=k, metric="cosine", exclude=[row])
    shared = len(set(by_dot.tolist()) & set(by_cosine.tolist()))
    longer = ("the dot product is length x length x cosine: long vectors that point only roughly the right way "
              "(general words) climb up the dot ranking and push close but shorter ones out")
    verdict = grade_value(value, shared, name="prediction", wrongs=[(k, "not all of them: " + longer)],
                          success=f"{shared} of the {k} words {'is' if shared == 1 else 'are'} in both lists: "
                                  "ranking by dot product favours long vectors.")
    if verdict.passed or "not right yet" not in verdict.message:
        return verdict
    return Verdict(False, verdict.message, f"count the words that appear in both columns; {longer}")
