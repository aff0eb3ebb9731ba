"""Notebook 16: the Q4_1, shared key/value heads and induction-score checkers, the predictions, the chat widget and
the measures behind them (attn_helpers.llm_measures)."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers.checks import (  # noqa: E402
    check_cache_size_prediction,
    check_induction_layers_prediction,
    check_induction_score,
    check_late_sink_prediction,
    check_q4_1_block,
    check_shared_kv_heads,
    solution,
)
from attn_helpers.checks.nb16 import (  # noqa: E402
    _q4_1_variant,
    _score_variant,
    my_induction_score,
    q4_1_block,
    q4_1_cases,
    share_kv_heads,
)
from attn_helpers.gguf_file import dequantize_q4_1  # noqa: E402
from attn_helpers.llm import load_smollm2  # noqa: E402
from attn_helpers.llm_measures import (  # noqa: E402
    first_token_parking,
    first_token_weight,
    induction_score,
    induction_study,
    next_token_losses,
    previous_token_score,
    repeated_random_tokens,
    right_padded,
    sink_study,
)


@pytest.fixture(scope="module")
def model():
    return load_smollm2()


def q4_1_loop(block):
    """An independent decoder: struct-free, one code at a time, from the bit layout."""
    d, m = (float(np.frombuffer(bytes(block[k:k + 2]), dtype="<f2")[0]) for k in (0, 2))
    return np.array([d * ((block[4 + j % 16] >> (4 * (j // 16))) & 15) + m for j in range(32)])


def repeat_loop(keys, num_heads):
    return np.stack([keys[i * keys.shape[0] // num_heads] for i in range(num_heads)])


@pytest.mark.parametrize("check, right", [
    (check_q4_1_block, q4_1_block), (check_q4_1_block, q4_1_loop), (check_shared_kv_heads, share_kv_heads),
    (check_shared_kv_heads, repeat_loop), (check_induction_score, my_induction_score),
])
def test_solutions_and_independent_references_pass(check, right):
    assert check(right).passed


def test_the_decoders_agree_on_the_checkers_blocks():
    for block in q4_1_cases():
        np.testing.assert_allclose(q4_1_loop(block), dequantize_q4_1(block), rtol=1e-6)


def test_solutions_are_hidden_until_asked():
    for name in ("q4_1_block", "share_kv_heads", "induction_score"):
        assert "hidden" in repr(solution(name)) and "def " in solution(name).source


@pytest.mark.parametrize("fn, hint", [
    (_q4_1_variant(order="interleaved"), "interleaved"),
    (_q4_1_variant(order="high_first"), "wrong way round"),
    (_q4_1_variant(plus_m=False), "minimum m is missing"),
    (_q4_1_variant(swap=True), "swapped"),
    (_q4_1_variant(offset=8, plus_m=False), "Q4_0"),
    (_q4_1_variant(as_int=True), "16-bit whole number"),
    (lambda block: q4_1_block(block)[:16], "shape (32,)"),
])
def test_q4_1_slips_get_their_hint(fn, hint):
    verdict = check_q4_1_block(fn)
    assert not verdict.passed and hint in verdict.hint + verdict.message


@pytest.mark.parametrize("fn, hint", [
    (lambda k, h: np.tile(k, (h // k.shape[0], 1, 1)), "np.tile"),
    (lambda k, h: np.repeat(k, h // k.shape[0], axis=1), "axis 1"),
    (lambda k, h: np.repeat(k, h, axis=0), "num_heads times"),
    (lambda k, h: k, "(num_heads, T, d_h)"),
])
def test_shared_head_slips_get_their_hint(fn, hint):
    verdict = check_shared_kv_heads(fn)
    assert not verdict.passed and hint in verdict.hint + verdict.message


@pytest.mark.parametrize("fn, hint", [
    (_score_variant(offset=0), "SAME token"),
    (_score_variant(offset=None), "previous token"),
    (_score_variant(offset=2), "one key too far"),
    (_score_variant(rows="all"), "every query"),
    (lambda w, p: np.sum([w[i, i - p + 1] for i in range(p, 2 * p)]), "sum over the queries"),
    # as a learner writes them: the transpose, and the range of queries off by one (issue 46's walk)
    (lambda w, p: np.mean([w[i - p + 1, i] for i in range(p, 2 * p)]), "the transpose"),
    (lambda w, p: np.mean([w[i, i - p + 1] for i in range(p + 1, 2 * p)]), "one too late"),
    (lambda w, p: np.mean([w[i, i - p + 1] for i in range(p - 1, 2 * p - 1)]), "one position early"),
])
def test_induction_score_slips_get_their_hint(fn, hint):
    verdict = check_induction_score(fn)
    assert not verdict.passed and hint in verdict.hint + verdict.message


def test_each_slip_is_told_apart_on_the_checkers_cases():
    """No two slips give the same numbers on every case (else one hint would stand for both)."""
    for variants, cases in (
        ([_q4_1_variant(order="interleaved"), _q4_1_variant(order="high_first"), _q4_1_variant(plus_m=False),
          _q4_1_variant(swap=True), _q4_1_variant(offset=8, plus_m=False), _q4_1_variant(as_int=True)],
         [(b,) for b in q4_1_cases()]),
        ([_score_variant(offset=0), _score_variant(offset=None), _score_variant(offset=2), _score_variant(rows="all"),
          _score_variant(transposed=True), _score_variant(rows="one more"), _score_variant(rows="one late"),
          _score_variant(rows="shifted early")],
         [(np.tril(np.random.default_rng(n).random((8, 8))), 4) for n in range(2)]),
    ):
        outputs = [np.concatenate([np.ravel(v(*case)) for case in cases]) for v in variants]
        for i in range(len(outputs)):
            for j in range(i + 1, len(outputs)):
                assert not np.allclose(outputs[i], outputs[j]), (i, j)


# --- predictions -------------------------------------------------------------------------------------

def test_cache_prediction_right_and_wrong():
    assert check_cache_size_prediction(43.945).passed
    assert "9 heads" in check_cache_size_prediction(43.945 * 3).hint
    assert "keys AND the values" in check_cache_size_prediction(43.945 / 2).hint
    assert "bytes" in check_cache_size_prediction(46_080_000).hint


def test_sink_prediction_passes_the_measurement_and_says_which_way(model):
    truth = float(sink_study(model)[:, 15:].mean())
    assert check_late_sink_prediction(truth + 0.1).passed
    assert "higher" in check_late_sink_prediction(0.1).hint
    assert not check_late_sink_prediction("0.7").passed


def test_induction_layers_prediction(model):
    layer = induction_study(model)["top"][0][0]
    right = "abc"[min(layer // 10, 2)]
    assert check_induction_layers_prediction(right).passed and check_induction_layers_prediction(f"({right})").passed
    assert "previous-token" in check_induction_layers_prediction("a").hint or right == "a"


# --- the measures, on hand-made patterns and on the model ----------------------------------------------

def test_measures_on_pure_patterns():
    T, L = 8, 4
    sink = np.zeros((T, T))
    sink[:, 0] = 1
    previous = np.eye(T, k=-1)
    previous[0, 0] = 1
    induction = np.zeros((T, T))
    induction[:L, 0] = 1
    for i in range(L, T):
        induction[i, i - L + 1] = 1
    stack = np.stack([sink, previous, induction])
    np.testing.assert_allclose(first_token_weight(stack), [1, 1 / 7, 3 / 7])  # induction: rows 1-3 on token 0
    np.testing.assert_allclose(previous_token_score(stack), [1 / 7, 1, 1 / 7])  # row 1: token 0 is its previous
    np.testing.assert_allclose(induction_score(stack, L), [0, 0, 1])
    with pytest.raises(ValueError, match="T >= 8"):
        induction_score(np.eye(6), 4)


def test_next_token_losses_is_cross_entropy():
    rng = np.random.default_rng(0)
    logits, ids = rng.standard_normal((5, 7)), rng.integers(0, 7, 5)
    expected = [-np.log(np.exp(logits[t, ids[t + 1]]) / np.exp(logits[t]).sum()) for t in range(4)]
    np.testing.assert_allclose(next_token_losses(logits, ids), expected)


def test_parking_share_is_weight_times_length():
    w = np.tril(np.full((3, 3), 1.0))
    w /= w.sum(1, keepdims=True)
    lengths = np.array([2.0, 1.0, 1.0])
    parked = first_token_parking(w[None], lengths[None])
    np.testing.assert_allclose(parked["share"], [np.mean([1.0 / (1.0 + 0.5), 2 / 3 / (2 / 3 + 1 / 3 + 1 / 3)])])
    np.testing.assert_allclose(parked["length_ratio"], [2.0])


def test_right_padding_changes_nothing_at_the_real_positions(model):
    a, b = model.encode("A short one."), model.encode("A somewhat longer sentence than the other one.")
    batch_logits, batch_weights = model.forward(right_padded([a, b]))
    alone_logits, alone_weights = model.forward(a)
    largest = np.abs(alone_logits).max()
    np.testing.assert_allclose(batch_logits[0, :len(a)], alone_logits, atol=1e-4 * largest, rtol=0)
    np.testing.assert_allclose(batch_weights[0, ..., :len(a), :len(a)], alone_weights, atol=1e-5)


def test_the_repeated_half_is_copied_and_the_top_heads_do_it(model):
    study = induction_study(model)
    assert study["loss_second"] < study["loss_first"] / 3  # the model copies the repeat
    assert study["ablated_second"] > study["loss_second"] + 3  # without the top heads much less so
    assert abs(study["control_second"] - study["loss_second"]) < 1  # other heads of the same layers: no effect
    assert study["scores"].shape == (30, 9) and study["scores"].max() > 0.5
    assert len(set(study["top"]) & set(study["control"])) == 0


def test_sinks_are_in_most_late_heads_over_every_prompt(model):
    sinks = sink_study(model)
    assert sinks.shape == (12, 30, 9)
    assert (sinks[:, 15:].mean(axis=(1, 2)) > 0.4).all()  # every prompt
    assert sinks[:, :2].mean() < 0.3


def test_repeated_random_tokens_repeat():
    ids = repeated_random_tokens(5, np.random.default_rng(1))
    assert len(ids) == 10 and (ids[:5] == ids[5:]).all() and ids.min() >= 1000


# --- the widget --------------------------------------------------------------------------------------

def test_the_chat_explorer_draws_and_never_raises(model):
    from attn_helpers.widgets.nb16 import COLUMNS, EXPLORERS, ROWS, chat_view

    explorer = EXPLORERS["chat_explorer"](model)
    for message, layer, head in (("Hi", 0, 0), ("", 29, 8), ("🙂 über 2+2?", 18, 6)):
        fig = explorer.figure(message=message, layer=layer, head=head)
        assert "Error" not in fig.note and "SmolLM2:" in fig.note
    view = chat_view(model, "What is the capital of France?", 18, 6)
    assert "Paris" in view["answer"]
    rows, columns = view["weights"].shape
    assert (rows, columns) == (len(view["queries"]), len(view["keys"])) and rows <= ROWS and columns <= COLUMNS
    assert view["keys"][view["answer_column"]:] == view["queries"]  # the rows are the answer's tokens, in order
    assert np.allclose(np.triu(view["weights"], view["answer_column"] + 1), 0)  # causal: nothing after a row's own
    assert view["seen"].shape == (rows, columns) and np.allclose(view["weights"][~view["seen"]], 0)  # the hatching
    assert view["weights"].sum(1).max() <= 1 + 1e-6  # a row's shown weights: its whole row but the unshown start


def test_the_chat_explorer_shows_a_row_when_the_answer_is_empty(model, monkeypatch):
    from attn_helpers.widgets import nb16

    monkeypatch.setattr(model, "generate", lambda ids, n: [model.end_id])
    nb16._chat.cache_clear()
    try:
        view = nb16.chat_view(model, "Say nothing.", 0, 0)
        assert view["answer"] == "" and view["weights"].shape[0] == 1 and view["queries"] == view["keys"][-1:]
        assert "SmolLM2:" in nb16.EXPLORERS["chat_explorer"](model).figure(message="Say nothing.", layer=0, head=0).note
    finally:
        nb16._chat.cache_clear()



@pytest.mark.parametrize("options, words", [
    ({"high": "masked"}, "masked but not shifted"), ({"low": "whole"}, "low halves are the whole byte")])
def test_q4_1_nibble_slips_are_named(options, words):
    from attn_helpers.checks import nb16

    verdict = nb16.check_q4_1_block(nb16._q4_1_variant(**options))
    assert not verdict.passed and words in verdict.hint, verdict


@pytest.mark.parametrize("options, words", [
    ({"transposed": True}, "the transpose"), ({"rows": "one more"}, "one query too many"),
    ({"rows": "one late"}, "start one too late")])
def test_induction_score_slips_are_named(options, words):
    from attn_helpers.checks import nb16

    verdict = nb16.check_induction_score(nb16._score_variant(**options))
    assert not verdict.passed and words in verdict.hint, verdict
