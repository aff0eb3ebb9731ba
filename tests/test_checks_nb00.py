import numpy as np
import pytest

from attn_helpers.checks import check_first_token_share, check_mean_embedding, check_num_tokens
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


# ---------------------------------------------------------------------------------------------
# Predict, then run: the share of the first token in a running summary (the RNN bottleneck)

def test_first_token_share_right_prediction_passes_and_matches_an_independent_formula():
    from attn_helpers.measures import summary_shares

    shares = summary_shares(6)
    assert shares.tolist() == [1 / 32, 1 / 32, 1 / 16, 1 / 8, 1 / 4, 1 / 2]  # (1/2)^(T-1) for the first token
    assert check_first_token_share(0.5 ** 5).passed
    assert check_first_token_share(0.03125).passed


@pytest.mark.parametrize("wrong, hint", [
    (1 / 6, "plain average"), (0.5, "LAST token"), (1 / 64, "one halving too many"), (1 / 16, "one halving too few"),
])
def test_first_token_share_typical_wrong_predictions_get_their_hint(wrong, hint):
    verdict = check_first_token_share(wrong)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("garbage", [..., None, "a lot", [1, 2], float("nan")])
def test_first_token_share_never_raises(garbage):
    assert not check_first_token_share(garbage).passed


@pytest.mark.parametrize("module", [f"nb0{n}" for n in range(9)])
def test_unfilled_answers_get_a_hint_without_a_doubled_your(module):
    # "replace the ... with your your share" (00 c7, 01 c28, 02 c13, 03 c26, c34): every checker of 00-08, given ...
    import importlib

    checks = importlib.import_module(f"attn_helpers.checks.{module}")
    for name in checks.__all__:
        checker = getattr(checks, name)
        if not name.startswith("check_") or not callable(checker):
            continue
        verdict = checker(...)
        assert not verdict.passed, name
        text = f"{verdict.message} {verdict.hint}".lower()
        assert "your your" not in text and "your the" not in text, (name, verdict)


def test_num_tokens_text_and_checker_agree():
    # the checker sees only the value, so notebook 00 does not claim to grade an expression; the verdict teaches it
    import json
    from pathlib import Path

    verdict = check_num_tokens(6)
    assert verdict.passed and "X.shape[0]" in verdict.message
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "00_start_here.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "not a typed number" not in text


def _loop_over(axis_size, divide_by):
    """A learner's loop: for i in range(X.shape[axis_size]): total += X[i]; return total / X.shape[divide_by]."""

    def mean_embedding(X):
        total = np.zeros(X.shape[1])
        for i in range(X.shape[axis_size]):
            total += X[i]
        return total / X.shape[divide_by]

    return mean_embedding


def _row_means(X):
    """out[j] = X[j].mean(): the mean of row j where column j was meant."""
    out = np.zeros(X.shape[1])
    for j in range(X.shape[1]):
        out[j] = X[j].mean()
    return out


def _column_loop_over_tokens(X):
    out = np.zeros(X.shape[1])
    for j in range(X.shape[0]):  # the loop over the tokens, indexing a column
        out[j] = X[:, j].mean()
    return out


@pytest.mark.parametrize("fn, hint", [
    (_loop_over(1, 0), "loop runs over range(X.shape[1])"),
    (_loop_over(1, 1), "loop runs over range(X.shape[1])"),
    (_loop_over(0, 1), "you divided by d_model"),
    (_row_means, "averages ROW j"),
    (lambda X: X.mean(axis=0, keepdims=True), "keepdims=True kept the token axis"),
    (_column_loop_over_tokens, "went past the end of an axis"),
    (lambda X: X.sum(axis=0) / 7, "compare each step with the formula"),  # no known slip: no "equation above"
])
def test_mean_embedding_slips_are_named(fn, hint):
    verdict = check_mean_embedding(fn)
    assert not verdict.passed and hint in verdict.hint, verdict


@pytest.mark.parametrize("value, hint", [((6, 3), "X.shape[0]"), (5, "index of the last row"),
                                         (3.125, "percent"), (0.2, "halve that share")])
def test_token_count_and_share_slips_are_named(value, hint):
    checker = check_num_tokens if value in ((6, 3), 5) else check_first_token_share
    verdict = checker(value)
    assert not verdict.passed and hint in verdict.hint, verdict
