import numpy as np
import pytest

from attn_helpers import cosine_similarity
from attn_helpers.checks import check_cosine_scores, check_one_hot, check_shared_neighbours, solution
from attn_helpers.checks.nb01 import cosine_scores, one_hot


def stub(*args):
    raise NotImplementedError


GARBAGE = [None, [1, 2, 3], "one_hot", np.zeros(3), 42, stub, lambda *a: 1 / 0, lambda *a: None,
           lambda *a: "text", lambda *a: (1, 2), lambda *a: np.full((2, 2), np.nan), lambda *a: [[1, 2], [3]],
           lambda: 0, lambda *a: object()]


# --- Exercise 01.1: one_hot ---------------------------------------------------------------------------


def test_one_hot_solution_passes():
    assert check_one_hot(one_hot).passed
    assert check_one_hot(lambda ids, V: np.eye(V)[ids]).passed
    assert check_one_hot(lambda ids, V: (np.arange(V) == np.asarray(ids)[:, None]).astype(int)).passed


def test_one_hot_reference_is_a_row_lookup():
    table = np.arange(12.0).reshape(4, 3)
    ids = np.array([2, 0, 3])
    np.testing.assert_array_equal(one_hot(ids, 4) @ table, table[ids])


def test_one_hot_transposed_gets_transpose_hint():
    verdict = check_one_hot(lambda ids, V: np.eye(V)[ids].T)
    assert not verdict.passed and "transposed" in verdict.hint
    # the exercise has no matrix product: the hint speaks of rows and columns of the one-hot matrix
    assert "matrix product" not in verdict.hint and "queries" not in verdict.hint
    assert "one row per token" in verdict.hint and "(T, vocab_size)" in verdict.hint


def test_one_hot_ignoring_ids_gets_column_hint():
    verdict = check_one_hot(lambda ids, V: np.eye(V)[: len(ids)])
    assert not verdict.passed and "column token_ids[i]" in verdict.hint


def test_one_hot_off_by_one_and_bag_of_words():
    assert "one column off" in check_one_hot(lambda ids, V: np.eye(V)[np.asarray(ids) - 1]).hint
    assert "bag-of-words" in check_one_hot(lambda ids, V: np.eye(V)[ids].sum(axis=0)).hint


def test_one_hot_too_few_columns_gets_shape_hint():
    verdict = check_one_hot(lambda ids, V: np.eye(max(ids) + 1)[ids])
    assert not verdict.passed and "(T, vocab_size)" in verdict.hint and "up to the largest id" in verdict.hint


def test_one_hot_not_implemented():
    verdict = check_one_hot(stub)
    assert not verdict.passed and "not implemented yet" in verdict.message


# --- Exercise 01.2: cosine_scores ---------------------------------------------------------------------


def test_cosine_solution_passes_and_agrees_with_helper():
    assert check_cosine_scores(cosine_scores).passed
    assert check_cosine_scores(lambda q, V: cosine_similarity(V, q)).passed
    rng = np.random.default_rng(0)
    q, V = rng.standard_normal(5), rng.standard_normal((8, 5))
    np.testing.assert_allclose(cosine_scores(q, V), cosine_similarity(V, q))


def test_cosine_with_epsilon_passes():
    def with_epsilon(q, V):
        return V @ q / (np.linalg.norm(V, axis=1) * np.linalg.norm(q) + 1e-9)

    assert check_cosine_scores(with_epsilon).passed


def test_cosine_loop_version_passes():
    def loop(q, V):
        out = []
        for row in V:
            length = np.sqrt(np.sum(row**2)) * np.sqrt(np.sum(q**2))
            out.append(0.0 if length == 0 else float(row @ q) / length)
        return np.array(out)

    assert check_cosine_scores(loop).passed


@pytest.mark.parametrize(
    "wrong, hint",
    [
        (lambda q, V: V @ q, "that is the dot product"),
        (lambda q, V: V @ q / np.linalg.norm(V, axis=1), "not by the length of the query"),
        (lambda q, V: V @ q / np.linalg.norm(q), "not by the length of each row"),
        (lambda q, V: V @ q / (np.linalg.norm(V, axis=0) * np.linalg.norm(q)), "axis=1"),
        (lambda q, V: V @ q / (np.linalg.norm(V) * np.linalg.norm(q)), "one number, the length of the whole table"),
        (lambda q, V: V @ q / (np.sum(V**2, axis=1) * np.sum(q**2)), "squared lengths"),
        (lambda q, V: 1 - V @ q / (np.linalg.norm(V, axis=1) * np.linalg.norm(q)), "cosine *distance*"),
    ],
)
def test_cosine_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_cosine_scores(wrong)
    assert not verdict.passed
    assert hint in verdict.hint, verdict


def test_cosine_zero_vector_nan_gets_zero_length_hint():
    def nan_for_zero(q, V):
        return V @ q / (np.linalg.norm(V, axis=1) * np.linalg.norm(q))

    verdict = check_cosine_scores(nan_for_zero)
    assert not verdict.passed
    assert "zero vector" in verdict.message and "0 / 0 = NaN" in verdict.hint


def test_cosine_wrong_axis_shape():
    verdict = check_cosine_scores(lambda q, V: np.atleast_2d(cosine_scores(q, V)))
    assert not verdict.passed and "shape (N,)" in verdict.hint


# --- Never raise -----------------------------------------------------------------------------------


@pytest.mark.parametrize("garbage", GARBAGE)
@pytest.mark.parametrize("checker", [check_one_hot, check_cosine_scores])
def test_checkers_never_raise(checker, garbage):
    verdict = checker(garbage)
    assert not verdict.passed
    assert isinstance(repr(verdict), str) and verdict._repr_html_()


def test_solutions_are_registered_and_hidden():
    for name in ("one_hot", "cosine_scores"):
        shown = solution(name)
        assert "hidden" in repr(shown) and "<details>" in shown._repr_html_()
        assert "def " in shown.source and "@register_solution" not in shown.source


# ---------------------------------------------------------------------------------------------
# Predict, then run: how many of frog's top-5 by dot product are also top-5 by cosine?

def _shared_top5_independently(word="frog", k=5):
    """Rank every other word by dot product and by cosine with plain numpy sorting, count the overlap."""
    from attn_helpers.glove import load_glove, word_to_index

    _, vectors = load_glove()
    row = word_to_index()[word]
    vectors = vectors.astype(np.float64)
    dots = vectors @ vectors[row]
    cosines = dots / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(vectors[row]))
    dots[row] = cosines[row] = -np.inf
    return len(set(np.argsort(-dots)[:k]) & set(np.argsort(-cosines)[:k]))


def test_shared_neighbours_right_prediction_passes():
    shared = _shared_top5_independently()
    assert check_shared_neighbours(shared).passed
    assert shared < 5  # the lesson: the two rankings really differ


def test_shared_neighbours_all_five_gets_length_hint():
    verdict = check_shared_neighbours(5)
    assert not verdict.passed and "length x length x cosine" in verdict.hint


@pytest.mark.parametrize("garbage", [..., None, "one", -1, 2.5, [1]])
def test_shared_neighbours_other_answers_never_raise(garbage):
    verdict = check_shared_neighbours(garbage)
    assert not verdict.passed and verdict.message


def _zeros_then(index_rows, index_columns):
    def one_hot(token_ids, vocab_size):
        onehot = np.zeros((len(token_ids), vocab_size))
        if index_rows and index_columns:
            onehot[np.arange(len(token_ids)), token_ids] = 1
        elif index_rows:
            onehot[token_ids] = 1
        else:
            onehot[:, token_ids] = 1
        return onehot

    return one_hot


def _zeros_with_two_sizes(token_ids, vocab_size):
    onehot = np.zeros(len(token_ids), vocab_size)  # the shape as two arguments
    onehot[np.arange(len(token_ids)), token_ids] = 1
    return onehot


@pytest.mark.parametrize("fn, hint", [
    (_zeros_then(True, False), "fills whole ROWS"),
    (_zeros_then(False, True), "EVERY listed column of every row"),
    (_zeros_with_two_sizes, "give the shape as ONE tuple"),
])
def test_one_hot_slips_are_named(fn, hint):
    assert check_one_hot(_zeros_then(True, True)).passed
    verdict = check_one_hot(fn)
    assert not verdict.passed and hint in verdict.hint, verdict


def test_query_times_the_table_is_named():
    def cosine_slip(query, vectors):
        lengths = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
        return (query @ vectors) / lengths  # the columns of the table, not its rows

    verdict = check_cosine_scores(cosine_slip)
    assert not verdict.passed and "use vectors @ query" in verdict.hint, verdict


def test_a_zero_guard_that_also_catches_short_rows_is_named():
    """01.2: where=lengths > 1 protects the zero vector but zeroes every row shorter than 1 as well."""
    def guarded_too_much(query, vectors):
        dots = vectors @ query
        lengths = np.linalg.norm(vectors, axis=1) * np.linalg.norm(query)
        return np.divide(dots, lengths, out=np.zeros_like(dots), where=lengths > 1)

    verdict = check_cosine_scores(guarded_too_much)
    assert not verdict.passed and "where=lengths > 0" in verdict.hint
