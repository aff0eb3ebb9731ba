"""Notebook 10 checkers (layer norm, pre-norm block, changed rows, GPT-2 count) and the notebook's widget helpers."""

import re

import numpy as np
import pytest
from learner_inputs import crash, stub, wrong_answers
from reference_block import layer_norm_ref, transformer_block_ref

import attn_helpers as A
from attn_helpers.checks import (
    Verdict,
    check_decoder_changed_rows,
    check_gpt2_parameter_count,
    check_layer_norm,
    check_pre_norm_block,
    solution,
)
from attn_helpers.checks import nb10 as checks
from attn_helpers.examples import GPT2_FAMILY, creature_block_example, parameter_shares, stack_diagnostics
from attn_helpers.widgets import nb10

GARBAGE = wrong_answers(lambda *a: np.full((5, 4), np.nan), lambda *a: (np.zeros((5, 4)), np.zeros(3)), {"a": 1}, 2.5,
                        True, [1.5], [-1], [99], lambda *a: 1e300)


# --- layer norm ------------------------------------------------------------------------------


def test_layer_norm_solution_and_helper_pass():
    assert check_layer_norm(checks.my_layer_norm).passed
    assert check_layer_norm(lambda x, g, b, eps=1e-5: A.layer_norm(x, g, b, eps)).passed
    assert check_layer_norm(lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdims=True))
                            / np.sqrt(x.var(-1, keepdims=True) + eps) + b).passed


def test_layer_norm_solution_matches_the_loop_reference():
    x = np.random.default_rng(0).standard_normal((4, 6))
    gamma, beta = np.linspace(0.5, 2, 6), np.linspace(-1, 1, 6)
    np.testing.assert_allclose(checks.my_layer_norm(x, gamma, beta), layer_norm_ref(x, gamma, beta), rtol=1e-12)


def _norm(x, axis=-1, ddof=0, eps=1e-5):
    return (x - x.mean(axis, keepdims=True)) / np.sqrt(x.var(axis, ddof=ddof, keepdims=True) + eps)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, g, b, eps=1e-5: g * _norm(x, axis=0) + b, "batch-norm's direction"),
    (lambda x, g, b, eps=1e-5: g * _norm(x, axis=1) + b, "axis=1 is the feature axis"),
    (lambda x, g, b, eps=1e-5: g * _norm(x, ddof=1) + b, "unbiased variance"),
    (lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + eps) + b,
     "inside the square root"),
    (lambda x, g, b, eps=1e-5: _norm(x), "forgot the learned scale and shift"),
    (lambda x, g, b, eps=1e-5: b * _norm(x) + g, "swapped"),
    (lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdims=True)) / (x.var(-1, keepdims=True) + eps) + b,
     "divided by the variance"),
    (lambda x, g, b, eps=1e-5: g * x / np.sqrt(x.var(-1, keepdims=True) + eps) + b, "subtract each token's mean"),
    (lambda x, g, b, eps=1e-5: g * ((x - x.mean(-1)) / np.sqrt(x.var(-1) + eps)) + b, "keepdims"),
    (lambda x, g, b, eps=1e-5: g * (x - x.mean()) / np.sqrt(x.var() + eps) + b, "without axis"),
    (lambda x, g, b, eps=1e-5: g * (x - np.mean(x, keepdims=True)) / np.sqrt(np.var(x, keepdims=True) + eps) + b,
     "without axis"),
])
def test_layer_norm_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_layer_norm(wrong)
    assert not verdict.passed
    assert hint in verdict.hint, verdict


@pytest.mark.parametrize("slip", [
    lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdims=True)) / x.std(-1, keepdims=True) + b,  # no eps
    lambda x, g, b, eps=1e-12: g * (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) + b,
    lambda x, g, b, eps=1e-5: g * (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) + b,
], ids=["no eps", "default eps 1e-12", "BERT's 1e-12 typed in"])
def test_layer_norm_without_eps_names_eps_and_shows_the_gap(slip):
    verdict = check_layer_norm(slip)
    assert not verdict.passed and "eps is missing, or far smaller" in verdict.hint, verdict
    got, expected = re.search(r"got ([-\d.]+), expected ([-\d.]+)", verdict.message).groups()
    assert got != expected and "differ by" in verdict.message  # enough digits to see the gap


def test_layer_norm_not_implemented_andcrash():
    assert "not implemented yet" in check_layer_norm(stub).message
    assert "raised RuntimeError" in check_layer_norm(crash).message


# --- pre-norm block --------------------------------------------------------------------------


def test_pre_norm_block_solution_and_helper_pass():
    assert check_pre_norm_block(checks.my_pre_norm_block).passed
    assert check_pre_norm_block(lambda x, p: A.transformer_block(x, p)[0]).passed


def test_pre_norm_block_solution_matches_the_loop_reference():
    p = checks._block_params(1)
    x = np.random.default_rng(1).standard_normal((5, 8))
    np.testing.assert_allclose(checks.my_pre_norm_block(x, p), transformer_block_ref(x, p)[0], rtol=1e-6, atol=1e-8)


def _ln(x, p, k):
    return A.layer_norm(x, getattr(p, f"norm_{k}_gamma"), getattr(p, f"norm_{k}_beta"), p.eps)


def _mha(x, p):
    return A.multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads)[0]


def _ffn(x, p):
    return A.feed_forward(x, p.W_1, p.W_2)


def _normalised_stream(x, p):
    x = _ln(x, p, 1)
    x = x + _mha(x, p)
    x = _ln(x, p, 2)
    return x + _ffn(x, p)


@pytest.mark.parametrize("wrong, hint", [
    (lambda x, p: A.transformer_block(x, p, norm_first=False)[0], "post-norm"),
    (lambda x, p: A.residual_stream(x, [p], residual=False)[-1], "no residual connections"),
    (lambda x, p: _ffn(_ln(x + _mha(_ln(x, p, 1), p), p, 2), p), "second residual is missing"),
    (lambda x, p: x + _mha(_ln(x, p, 1), p) + _ffn(_ln(x, p, 2), p), "AFTER attention"),
    (_normalised_stream, "overwrote the stream"),
    (lambda x, p: (lambda y: y + _ffn(_ln(y, p, 1), p))(x + _mha(_ln(x, p, 1), p)), "norm_2_gamma"),
    (lambda x, p: (lambda y: y + _mha(_ln(y, p, 2), p))(x + _ffn(_ln(x, p, 1), p)), "attention first"),
    (lambda x, p: A.transformer_block(x, p), "unpack it"),
    (lambda x, p: (lambda y: y + A.feed_forward(_ln(y, p, 2), p.W_1, p.W_2, activation="relu"))(
        x + _mha(_ln(x, p, 1), p)), "uses ReLU"),
    (lambda x, p: A.transformer_block(x, p, mask=A.causal_mask(x.shape[-2]))[0], "causal mask"),
    (lambda x, p: x + _ffn(_ln(x, p, 2), p), "no attention in your block"),
    (lambda x, p: _then_ffn(x + _mha_tuple(_ln(x, p, 1), p), p), "adds a tuple"),  # not unpacked
    (lambda x, p: _then_ffn(x + _mha_tuple(_ln(x, p, 1), p)[1], p), "you added the attention weights"),
])
def test_pre_norm_block_wrong_answers_get_specific_hints(wrong, hint):
    verdict = check_pre_norm_block(wrong)
    assert not verdict.passed
    assert hint in verdict.hint, verdict


def _mha_tuple(x, p):
    return A.multi_head_attention(x, p.W_q, p.W_k, p.W_v, p.W_o, p.num_heads)  # (out, weights)


def _then_ffn(x, p):
    return x + _ffn(_ln(x, p, 2), p)


def _zero_w_o_then_block(x, p):
    p.W_o[...] = 0  # the slip: writing into the parameters it was given
    return checks.my_pre_norm_block(x, p)


def _block_then_zero_w_o(x, p):
    out = checks.my_pre_norm_block(x, p)
    p.W_o[...] = 0
    return out


@pytest.mark.parametrize("block", [_zero_w_o_then_block, _block_then_zero_w_o])
def test_pre_norm_block_that_changes_its_parameters_fails(block):
    verdict = check_pre_norm_block(block)
    assert not verdict.passed and "changed the parameters it was given (p.W_o) in place" in verdict.message
    assert check_pre_norm_block(checks.my_pre_norm_block).passed  # the checker's own parameters are untouched


# --- predict, then run -----------------------------------------------------------------------


def test_changed_rows_follow_the_mask():
    assert checks.changed_rows(2) == [2, 3, 4, 5, 6, 7]
    assert checks.changed_rows(7) == [7]
    assert checks.changed_rows(0) == list(range(8))
    assert checks.changed_rows(5, causal=False) == list(range(8))


def test_changed_rows_independently_with_the_loop_reference():
    example = creature_block_example(num_blocks=1)
    X, p = example["X"].astype(np.float64), example["blocks"][0]
    changed = X.copy()
    changed[2] = -X[2]
    before, _ = transformer_block_ref(X, p, mask=A.causal_mask(8))
    after, _ = transformer_block_ref(changed, p, mask=A.causal_mask(8))
    assert list(np.flatnonzero(np.abs(after - before).max(axis=-1) > 1e-6)) == checks.changed_rows(2)


@pytest.mark.parametrize("prediction", [[2, 3, 4, 5, 6, 7], (7, 6, 5, 4, 3, 2), np.arange(2, 8), range(2, 8),
                                        [2, 3, 3, 4, 5, 6, 7], [np.int64(2), 3, 4, 5, 6, 7]])
def test_changed_rows_right_predictions_pass(prediction):
    assert check_decoder_changed_rows(prediction).passed


@pytest.mark.parametrize("prediction, hint", [
    ([2], "each LATER token"),
    (2, "each LATER token"),
    ([0, 1, 2], "reversed"),
    ([0, 1], "reversed, and"),
    (list(range(8)), "encoder block"),
    ([], "own output row"),
    ([3, 4], "mask[i, j]"),
])
def test_changed_rows_wrong_predictions_get_hints(prediction, hint):
    verdict = check_decoder_changed_rows(prediction)
    assert not verdict.passed and hint in verdict.hint, verdict


@pytest.mark.parametrize("prediction", [..., None, "2, 3", [1.5], [True], [9], [-1], {"a": 1}, 2.5, [[1, 2]]])
def test_changed_rows_bad_predictions_explain_the_format(prediction):
    verdict = check_decoder_changed_rows(prediction)
    assert not verdict.passed and verdict.message and verdict.hint


# --- GPT-2's parameter count -----------------------------------------------------------------


def test_gpt2_count_solution_passes_and_is_independent_of_the_helper():
    assert check_gpt2_parameter_count(checks.my_gpt2_parameter_count).passed
    assert checks.my_gpt2_parameter_count(GPT2_FAMILY["small"]) == 124_439_808
    # the published sizes of the family (Hugging Face num_parameters(), tied embeddings)
    published = {"small": 124_439_808, "medium": 354_823_168, "large": 774_030_080, "xl": 1_557_611_200}
    for name, config in GPT2_FAMILY.items():
        assert checks.my_gpt2_parameter_count(config) == A.parameter_count(config)["total"] == published[name]


def test_gpt2_count_equals_the_arrays_of_real_blocks():
    d = 16
    config = {"num_layers": 3, "d_model": d, "num_heads": 4, "vocab_size": 50, "context_length": 10}
    blocks = [A.init_block_params(d, 4, bias=True, rng=n) for n in range(3)]
    arrays = sum(b.num_parameters for b in blocks) + 50 * d + 10 * d + 2 * d
    assert checks.my_gpt2_parameter_count(config) == arrays == A.parameter_count(config)["total"]


def _gpt2(c, **changes):
    sizes = {k: c[k] for k in ("num_layers", "d_model", "num_heads", "vocab_size", "context_length")}
    return A.parameter_count({**sizes, **changes})


@pytest.mark.parametrize("wrong, hint", [
    (lambda c: _gpt2(c, bias=False)["total"], "biases are missing"),
    (lambda c: _gpt2(c)["total"] - _gpt2(c)["final_norm"], "one more layer norm"),
    (lambda c: _gpt2(c)["total"] - _gpt2(c)["final_norm"] - _gpt2(c)["layer_norms"], "layer norms are missing"),
    (lambda c: _gpt2(c)["total"] - _gpt2(c)["layer_norms"], "inside each block"),
    (lambda c: _gpt2(c, tied_embeddings=False)["total"], "ties its embeddings"),
    (lambda c: _gpt2(c, learned_positions=False)["total"], "position embeddings"),
    (lambda c: _gpt2(c, d_ff=c["d_model"])["total"], "4 * d_model"),
    (lambda c: _gpt2(c)["total"] + (c["num_heads"] - 1) * _gpt2(c)["attention"], "do not multiply by num_heads"),
    (lambda c: _gpt2(c, num_layers=1)["total"], "one block"),
    (lambda c: _gpt2(c)["total"] - c["num_layers"] * 2 * c["d_model"] - c["d_model"], "TWO vectors"),
    (lambda c: _gpt2(c, d_ff=3 * c["d_model"])["total"], "not 3 * d_model"),
    (lambda c: _gpt2(c)["total"] - c["num_layers"] * (c["d_model"] * c["d_model"] + c["d_model"]), "W_o is missing"),
])
def test_gpt2_count_wrong_answers_get_hints(wrong, hint):
    verdict = check_gpt2_parameter_count(wrong)
    assert not verdict.passed and hint in verdict.hint, verdict


def test_gpt2_count_typed_number_is_not_a_function():
    verdict = check_gpt2_parameter_count(124_439_808)
    assert not verdict.passed and "pass the function itself" in verdict.hint


# --- garbage never raises --------------------------------------------------------------------


@pytest.mark.parametrize("checker", [check_layer_norm, check_pre_norm_block, check_decoder_changed_rows,
                                     check_gpt2_parameter_count])
def test_checkers_never_raise_on_garbage(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert isinstance(verdict, Verdict)
        assert not verdict.passed and verdict.message


@pytest.mark.parametrize("name", ["my_layer_norm", "my_pre_norm_block", "my_gpt2_parameter_count"])
def test_solutions_are_registered(name):
    assert "def " in solution(name).source


# --- widget helpers --------------------------------------------------------------------------


def test_parameter_shares_add_up_and_match_the_counts():
    shares = parameter_shares()
    for name, parts in shares.items():
        assert abs(sum(parts.values()) - 1) < 1e-12
        counts = A.parameter_count(GPT2_FAMILY[name])
        assert parts["feed_forward"] == counts["feed_forward"] / counts["total"]
    assert shares["small"]["feed_forward"] < shares["xl"]["feed_forward"]  # wider models: the FFN dominates


def test_all_diagnostics_match_stack_diagnostics_and_the_blocks():
    example = creature_block_example()
    diagnostics = nb10.all_diagnostics(example)
    assert set(diagnostics) == {(True, True), (True, False), (False, True), (False, False)}
    d = diagnostics[(False, True)]
    direct = stack_diagnostics(example["X"], example["blocks"], norm_first=False, residual=True)
    np.testing.assert_array_equal(d["states"], direct["states"])
    # post-norm ends with a layer norm (gamma 1, beta 0): every token has length sqrt(d_model) = 4
    np.testing.assert_allclose(d["norm"][1:], 4.0, rtol=1e-4)
    # independently: the states are the blocks applied one after another
    h = example["X"]
    for n, params in enumerate(example["blocks"][:3], start=1):
        h, _ = A.transformer_block(h, params, norm_first=False)
        np.testing.assert_allclose(d["states"][n], h, rtol=1e-6)
    own = [np.mean([h_t @ x_t / np.linalg.norm(h_t) / np.linalg.norm(x_t) for h_t, x_t in zip(s, example["X"])])
           for s in d["states"]]
    np.testing.assert_allclose(d["own_input"], own, rtol=1e-5, atol=1e-6)


def test_residuals_keep_tokens_distinct_in_the_example():
    diagnostics = nb10.all_diagnostics()
    with_residuals, without = diagnostics[(True, True)], diagnostics[(True, False)]
    assert with_residuals["own_input"][1] > 0.5 > abs(without["own_input"][1])
    assert without["between_tokens"][3] > 0.99 > with_residuals["between_tokens"][3]


@pytest.mark.filterwarnings("ignore:The set_bad function:PendingDeprecationWarning")
def test_stream_explorer_draws_every_control_combination():
    explorer = nb10.stream_explorer()
    for placement in nb10.PLACEMENTS:
        for residual in (True, False):
            for num_blocks in (0, 1, 6, 12):
                png, note = explorer.render(placement=placement, residual=residual, num_blocks=num_blocks)
                assert png[:4] == b"\x89PNG" and f"After {num_blocks} block" in note


@pytest.mark.filterwarnings("ignore:The set_bad function:PendingDeprecationWarning")
def test_static_figures_draw():
    from matplotlib.figure import Figure

    for draw in (nb10.draw_block_diagram, nb10.draw_parameter_breakdown):
        fig = Figure()
        draw(fig)
        assert fig.axes


def test_a_count_without_the_attention_biases_names_them_as_well_as_the_layer_norms():
    """Leaving out the four attention biases (4 d per block) gives the total of leaving out the two layer norms
    (2 x 2d per block): no case can tell them apart, so the hint names both."""
    from attn_helpers.block import parameter_count

    def without_attention_biases(config):
        counts = parameter_count(config)
        return counts["total"] - config["num_layers"] * 4 * config["d_model"]

    verdict = check_gpt2_parameter_count(without_attention_biases)
    assert not verdict.passed and "four biases of attention" in verdict.hint and "layer norms" in verdict.hint
# --- predict, then run: the mean of ones after dropout (section 9) -------------------------------------


def test_dropout_mean_against_an_independent_draw():
    from attn_helpers.checks.nb10 import DROPOUT_ONES, DROPOUT_P, dropout_mean
    from attn_helpers.examples import SEED

    draw = np.random.default_rng(SEED).random(DROPOUT_ONES)
    dropped = np.where(draw < DROPOUT_P, 0.0, 1 / (1 - DROPOUT_P))  # a loop-free independent inverted dropout
    assert dropout_mean() == pytest.approx(dropped.mean(), abs=1e-12)
    assert abs(dropout_mean() - 1) < 0.01


@pytest.mark.parametrize(("answer", "hint"), [(0.5, "survive"), (2, "counts them too"), (0, "not all of them"),
                                               (0.25, "not multiplied"), (1.5, "average the two")])
def test_dropout_mean_slips_get_their_hint(answer, hint):
    from attn_helpers.checks import check_dropout_mean

    verdict = check_dropout_mean(answer)
    assert not verdict.passed and hint in verdict.hint


@pytest.mark.parametrize("answer", [1, 1.0, np.float32(1.004)])
def test_dropout_mean_right_answers_pass(answer):
    from attn_helpers.checks import check_dropout_mean

    assert check_dropout_mean(answer).passed


def test_two_layer_norm_slips_at_once_are_both_named():
    """10.3 with ddof=1 and eps outside the root used to get the generic hint, though each alone is named: every
    two slips that can come together are named together."""
    from itertools import combinations

    from attn_helpers.checks import nb10

    for (name_a, (a, hint_a)), (name_b, (b, hint_b)) in combinations(nb10._LN_SLIPS.items(), 2):
        if set(a) & set(b):
            continue

        options = {**a, **b}

        def learner(x, gamma, beta, eps=1e-5, options=options):
            return nb10._layer_norm_with(x, gamma, beta, eps, **options)

        verdict = nb10.check_layer_norm(learner)
        assert not verdict.passed, (name_a, name_b)
        assert hint_a in verdict.hint and hint_b in verdict.hint, (name_a, name_b, verdict)
