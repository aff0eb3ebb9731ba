"""Notebook 13 (efficient attention): its checkers, and the helpers behind its explorer."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attn_helpers import softmax  # noqa: E402
from attn_helpers.checks import (  # noqa: E402
    check_cache_prediction,
    check_online_attention,
    check_online_softmax,
    check_skipped_tiles,
    solution,
)
from attn_helpers.checks.nb13 import (  # noqa: E402
    _attention_variant,
    _no_rescale_sum,
    _rescale_upside_down,
    online_attention_row,
    online_softmax_row,
)
from attn_helpers.examples import CREATURE_TOKENS  # noqa: E402
from attn_helpers.widgets.nb13 import EXPLORERS, draw_tiles, tile_count, tiling_example  # noqa: E402


def stub(*args):
    raise NotImplementedError


GARBAGE = [None, [1, 2, 3], "scores", np.zeros(3), 42, stub, lambda *a: 1 / 0, lambda *a: None, lambda *a: "text",
           lambda *a: (1, 2), lambda *a: np.full(3, np.nan), lambda *a: [[1, 2], [3]], lambda: 0,
           lambda *a: object(), Ellipsis, lambda *a: (None, None)]


@pytest.mark.parametrize("checker", [check_online_softmax, check_online_attention, check_skipped_tiles,
                                     check_cache_prediction])
def test_garbage_never_raises_and_never_passes(checker):
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert not verdict.passed, garbage
        assert verdict.message


def test_online_softmax_solution_and_typical_mistakes():
    assert check_online_softmax(online_softmax_row).passed
    verdict = check_online_softmax(_no_rescale_sum)
    assert not verdict.passed and "not rescaled" in verdict.hint
    assert "upside down" in check_online_softmax(_rescale_upside_down).hint
    assert "sum to 1" in check_online_softmax(lambda s: np.exp(np.asarray(s) - np.max(s))).hint
    assert "overflows" in check_online_softmax(lambda s: np.exp(s) / np.exp(s).sum()).hint  # no max subtracted


def test_online_softmax_solution_is_one_pass_and_equals_softmax():
    row = np.array([0.3, -2.0, 5.0, 4.9, -np.inf])
    np.testing.assert_allclose(online_softmax_row(row), softmax(row), rtol=1e-14)


@pytest.mark.parametrize(("mistake", "words"), [
    (dict(rescale_acc=False), "accumulator is not rescaled"),
    (dict(rescale_sum=False), "running sum is not rescaled"),
    (dict(rescale_sum=False, rescale_acc=False), "neither the sum nor the accumulator"),
    (dict(divide=False), "divide it by the running sum"),
    (dict(scale=False), "sqrt(d_k)"),
])
def test_online_attention_typical_mistakes(mistake, words):
    verdict = check_online_attention(_attention_variant(**mistake))
    assert not verdict.passed and words in verdict.hint


def test_online_attention_solution_passes_and_shows():
    assert check_online_attention(online_attention_row).passed
    assert check_online_attention(_attention_variant()).passed
    assert "acc * correction" in solution("online_attention_row").source


def test_predictions():
    assert check_skipped_tiles(6).passed and not check_skipped_tiles(10).passed
    assert "COMPUTED" in check_skipped_tiles(10).hint or "diagonal too" in check_skipped_tiles(10).hint
    assert check_skipped_tiles(28, T=16, block_size=2).passed  # 8 tiles a side: 8 * 7 / 2 above the diagonal
    assert "ON the diagonal are computed" in check_skipped_tiles(8).hint  # half of the 4 x 4 tiles
    assert "one row of tiles" in check_skipped_tiles(3).hint
    assert "masked CELLS" in check_skipped_tiles(28).hint
    assert check_cache_prediction(2.0).passed
    assert "2 arrays per layer" in check_cache_prediction(1.0).hint
    assert "2 bytes" in check_cache_prediction(4.0).hint


@pytest.mark.parametrize("kwargs", [dict(step=1), dict(step=6), dict(step=16, query="forest"), dict(step=99),
                                    dict(step=64, block_size=1), dict(step=3, block_size=4, causal=False),
                                    dict(step=0, query="not a token")])
def test_draw_tiles_never_raises_and_says_what_happened(kwargs):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(11, 5.2))
    note = draw_tiles(fig, **kwargs)
    assert isinstance(note, str) and note
    assert len(fig.axes) == 4  # the tiles, their colorbar, the running max, the running sum


def test_a_skipped_tile_is_announced():
    from matplotlib.figure import Figure

    note = draw_tiles(Figure(), step=2, block_size=2, causal=True)  # tile (rows 0-1, keys 2-3): the future
    assert "never computed" in note


def test_explorer_renders_and_never_raises():
    explorer = EXPLORERS["tile_explorer"](tiling_example(), CREATURE_TOKENS)
    png, note = explorer.render(step=6)
    assert png[:4] == b"\x89PNG" and note
    explorer.controls["block_size"].value = 1
    explorer.controls["step"].value = 40
    assert "Could not draw" not in explorer.text.value


def _prescribed_without_skip(scores):
    """The algorithm as a learner writes it from the text, without skipping masked scores."""
    m, l = -np.inf, 0.0
    for s in scores:
        new_m = max(m, s)
        l = l * np.exp(m - new_m) + np.exp(s - new_m)
        m = new_m
    return np.exp(np.asarray(scores, dtype=float) - m) / l


def test_a_masked_first_score_is_checked_and_the_solution_handles_it():
    row = np.array([-np.inf, 2.0, 0.5])
    with np.errstate(all="raise"):
        np.testing.assert_allclose(online_softmax_row(row), softmax(row), rtol=1e-14)
    verdict = check_online_softmax(_prescribed_without_skip)  # right on every row but this one
    assert not verdict.passed and "FIRST score is masked" in verdict.message
    assert "if s == -np.inf: continue" in verdict.hint
    assert "if s == -np.inf" in solution("online_softmax_row").source


def test_the_online_softmax_helper_is_quiet_on_extreme_scores():
    import warnings

    from attn_helpers.online import online_softmax

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(online_softmax([1e308, -1e308]), [1.0, 0.0])
        np.testing.assert_array_equal(online_softmax([-np.inf, 1e308, -1e308], block_size=2), [0.0, 1.0, 0.0])


@pytest.mark.parametrize(("slip", "words"), [("d_k", "divided the scores by d_k"),
                                             ("sqrt(T)", "number of keys T")])
def test_online_attention_scaled_by_the_wrong_size(slip, words):
    verdict = check_online_attention(_attention_variant(scale=slip))
    assert not verdict.passed and words in verdict.hint


@pytest.mark.parametrize("call", [
    lambda: check_cache_prediction(2.0, model="GPT-5"),
    lambda: check_cache_prediction(2.0, T=-1),
    lambda: check_cache_prediction(2.0, bytes_per_number="2"),
    lambda: check_skipped_tiles(6, block_size=0),
    lambda: check_skipped_tiles(6, T="8"),
])
def test_bad_checker_arguments_give_a_verdict_not_a_traceback(call):
    """The checkers' own arguments are the notebook's question: not validated, but never a traceback."""
    verdict = call()
    assert not verdict.passed and "could not grade this prediction" in verdict.message



@pytest.mark.parametrize(("answer", "words"), [(2 * 2**30 / 1e9, "GB (10^9 bytes)"), (2 * 2**30, "number of bytes"),
                                               (2048, "MiB")])
def test_cache_answered_in_other_units(answer, words):
    verdict = check_cache_prediction(answer)
    assert not verdict.passed and words in verdict.hint


def test_the_tile_slider_runs_over_the_tiles_of_the_tile_size():
    explorer = EXPLORERS["tile_explorer"](tiling_example(), CREATURE_TOKENS)
    step, block_size = explorer.controls["step"], explorer.controls["block_size"]
    for size, tiles in ((2, 16), (4, 4), (1, 64), (2, 16)):
        block_size.value = size
        assert step.max == tiles == tile_count(len(CREATURE_TOKENS), size)
        assert 1 <= step.value <= tiles


# ---------------------------------------------------------------- exercises 13.1 and 13.2: merging partial results


@pytest.mark.parametrize("checker", ["check_merge_softmax_states", "check_attention_by_splits"])
def test_the_merge_checkers_never_raise_and_never_pass_garbage(checker):
    from attn_helpers import checks

    for garbage in GARBAGE:
        verdict = getattr(checks, checker)(garbage)
        assert not verdict.passed, garbage
        assert verdict.message


def test_each_slip_of_the_merge_gets_its_own_hint():
    from attn_helpers.checks import check_merge_softmax_states
    from attn_helpers.checks.nb13 import _MERGE_WRONGS, merge_softmax_states

    assert check_merge_softmax_states(merge_softmax_states).passed
    assert len({wrong.hint for wrong in _MERGE_WRONGS}) == len(_MERGE_WRONGS)
    for wrong in _MERGE_WRONGS:  # each slip as the learner writes it, returning the pair (m, l)
        verdict = check_merge_softmax_states(wrong.fn.__wrapped__)
        assert not verdict.passed and verdict.hint == wrong.hint, (wrong.hint, verdict)
    def dropped_first_term(m_a, l_a, m_b, l_b):
        m = max(m_a, m_b)
        return m, l_b * np.exp(m_b - m)

    dropped_first = check_merge_softmax_states(dropped_first_term)
    assert "dropped the first term" in dropped_first.hint


def test_the_merge_must_survive_two_fully_masked_halves():
    from attn_helpers.checks import check_merge_softmax_states

    def merge_without_guard(m_a, l_a, m_b, l_b):
        m = max(m_a, m_b)
        return m, l_a * np.exp(m_a - m) + l_b * np.exp(m_b - m)

    verdict = check_merge_softmax_states(merge_without_guard)
    assert not verdict.passed and "fully masked" in verdict.message and "(-inf, 0.0)" in verdict.hint


def test_the_merge_equals_the_softmax_of_the_whole_row_wherever_it_is_cut():
    from attn_helpers.checks.nb13 import _half_state, merge_softmax_states

    row = np.array([0.3, -2.0, 5.0, 4.9, -np.inf, 1.0])
    for cut in range(1, len(row)):
        m, l = merge_softmax_states(*_half_state(row[:cut]), *_half_state(row[cut:]))
        np.testing.assert_allclose(np.exp(row - m) / l, softmax(row), rtol=1e-13)


def test_each_slip_of_the_splits_gets_its_own_hint():
    from attn_helpers.checks import check_attention_by_splits
    from attn_helpers.checks.nb13 import _SPLIT_WRONGS, attention_by_splits

    assert check_attention_by_splits(attention_by_splits).passed
    assert len({wrong.hint for wrong in _SPLIT_WRONGS}) == len(_SPLIT_WRONGS)
    for wrong in _SPLIT_WRONGS:
        verdict = check_attention_by_splits(wrong.fn)
        assert not verdict.passed and verdict.hint == wrong.hint, (wrong.hint, verdict)


def test_the_splits_solution_equals_the_core_for_every_number_of_splits():
    from attn_helpers import scaled_dot_product_attention
    from attn_helpers.checks.nb13 import attention_by_splits

    rng = np.random.default_rng(0)
    query, keys, values = rng.standard_normal(4) * 3, rng.standard_normal((9, 4)), rng.standard_normal((9, 2))
    expected = scaled_dot_product_attention(query[None], keys, values)[0][0]
    for splits in range(1, 10):
        np.testing.assert_allclose(attention_by_splits(query, keys, values, splits), expected, rtol=1e-12)
def test_a_first_term_dropped_from_the_sum_is_named():
    """13.1: seeded with m = scores[0] and l = 0, looping from the second score, the first exp() = 1 is lost."""
    from attn_helpers.checks.nb13 import _first_term_dropped  # the slip as the checker's table writes it

    verdict = check_online_softmax(_first_term_dropped)
    assert not verdict.passed and "first score's term is missing" in verdict.hint


def test_the_two_slips_that_give_the_same_tile_count_share_one_hint():
    """The tiles above the diagonal with those on it, and the tiles computed: t(t-1)/2 + t = t*t - t(t-1)/2."""
    verdict = check_skipped_tiles(10)
    assert not verdict.passed and "ON the diagonal" in verdict.hint and "number of tiles computed" in verdict.hint
