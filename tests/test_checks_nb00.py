import numpy as np

from attn_helpers.checks import check_mean_embedding, check_num_tokens
from attn_helpers.checks.nb00 import mean_embedding


def test_mean_embedding_solution_passes():
    assert check_mean_embedding(mean_embedding).passed
    assert check_mean_embedding(lambda X: np.mean(X, axis=0)).passed


def test_mean_embedding_wrong_axis_gets_axis_hint():
    verdict = check_mean_embedding(lambda X: X.mean(axis=1))
    assert not verdict.passed and "axis=0" in verdict.hint


def test_mean_embedding_sum_and_scalar_hints():
    assert "divide by the number of tokens" in check_mean_embedding(lambda X: X.sum(axis=0)).hint
    assert "one number" in check_mean_embedding(lambda X: np.mean(X)).hint


def test_mean_embedding_not_implemented_and_crash():
    def stub(X):
        raise NotImplementedError

    assert "not implemented yet" in check_mean_embedding(stub).message
    assert "raised ZeroDivisionError" in check_mean_embedding(lambda X: 1 / 0).message
    assert "without calling it" in check_mean_embedding(np.zeros(3)).hint


def test_num_tokens():
    assert check_num_tokens(6).passed
    assert "d_model" in check_num_tokens(3).hint
    assert "every entry" in check_num_tokens(18).hint
    assert "not filled in" in check_num_tokens(...).message


def test_a_matrix_product_error_gets_the_inner_dimension_hint():
    verdict = check_mean_embedding(lambda X: X @ X)  # (6, 3) @ (6, 3): inner dimensions 3 and 6
    assert "raised ValueError" in verdict.message
    assert "inner dimensions must agree" in verdict.hint
