"""Notebooks 14 and 15 (the tiny GPT, parts 1 and 2): the merge-step, layer_norm_backward and top-p checkers, their
hints, and the widget modules."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from learner_inputs import wrong_answers  # noqa: E402

from attn_helpers.checks import check_layer_norm_backward, check_merge_pair, check_top_p, solution  # noqa: E402
from attn_helpers.checks.nb14 import (  # noqa: E402
    check_first_pair,
    layer_norm_backward_solution,
    merge_pair_solution,
)
from attn_helpers.checks.nb15 import (  # noqa: E402
    attention_sentence,
    check_previous_token_heads,
    previous_token_weights,
    top_p_keep_solution,
)
from attn_helpers.gpt import WEIGHTS_PATH, load_tiny_gpt  # noqa: E402

needs_weights = pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")


def merge_loop(ids, pair, new_id):
    """An independent merge: rebuild the list from a string with the pair replaced (ids < 256 here)."""
    text = "".join(chr(0xE000 + i) for i in ids).replace(chr(0xE000 + pair[0]) + chr(0xE000 + pair[1]),
                                                          chr(0xE000 + new_id))
    return [ord(c) - 0xE000 for c in text]


def layer_norm_backward_jacobian(grad_out, x, gamma, eps=1e-5):
    """An independent reference: the layer norm's Jacobian of each row built entry by entry, then applied."""
    grad_x = np.zeros_like(x)
    d = x.shape[-1]
    for index in np.ndindex(x.shape[:-1]):
        row = x[index]
        mean, sigma = row.mean(), np.sqrt(row.var() + eps)
        x_hat = (row - mean) / sigma
        jacobian = (np.eye(d) - 1 / d - np.outer(x_hat, x_hat) / d) / sigma  # d x_hat_i / d x_j
        grad_x[index] = jacobian.T @ (grad_out[index] * gamma)
    x_hat = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps)
    rows = tuple(range(x.ndim - 1))
    return grad_x, (grad_out * x_hat).sum(axis=rows), grad_out.sum(axis=rows)


def top_p_loop(probs, top_p):
    """An independent nucleus: add the most probable tokens one at a time until the sum reaches top_p."""
    keep, total = np.zeros(len(probs), dtype=bool), 0.0
    for i in sorted(range(len(probs)), key=lambda i: (-probs[i], i)):
        if total >= top_p:
            break
        keep[i], total = True, total + probs[i]
    return keep


@pytest.mark.parametrize("check, right", [
    (check_merge_pair, merge_pair_solution), (check_merge_pair, merge_loop),
    (check_layer_norm_backward, layer_norm_backward_solution),
    (check_layer_norm_backward, layer_norm_backward_jacobian),
    (check_top_p, top_p_keep_solution), (check_top_p, top_p_loop),
])
def test_solutions_and_independent_references_pass(check, right):
    assert check(right), repr(check(right))


def test_solutions_are_hidden_until_asked():
    for name, needle in (("merge_pair", "i += 2"), ("layer_norm_backward", "x_hat"), ("top_p_keep", "argsort")):
        sol = solution(name)
        assert "hidden" in repr(sol) and needle in sol.source


def _for_loop_without_skip(ids, pair, new_id):
    out = []
    for i in range(len(ids) - 1):
        if ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2  # does nothing in a for loop
        else:
            out.append(ids[i])
    return out


def _stops_before_the_last(ids, pair, new_id):
    out, skip = [], False
    for a, b in zip(ids, ids[1:]):  # pairs only: a last token left alone never comes up
        if skip:
            skip = False
        elif (a, b) == tuple(pair):
            out.append(new_id)
            skip = True
        else:
            out.append(a)
    return out


def _no_skip(ids, pair, new_id):
    return [new_id if (a, b) == tuple(pair) else a for a, b in zip(ids, [*ids[1:], None])]


@pytest.mark.parametrize("fn, hint", [
    (lambda ids, pair, new_id: [new_id] + list(ids[2:]) if list(ids[:2]) == list(pair) else
     merge_pair_solution(ids[:3], pair, new_id) + list(ids[3:]), "first occurrence"),
    (_no_skip, "skip both tokens"),
    (lambda ids, pair, new_id: merge_pair_solution(ids[::-1], pair[::-1], new_id)[::-1], "go to the left"),
    (lambda ids, pair, new_id: None, "return"),
    (_for_loop_without_skip, "two slips"),
    (_stops_before_the_last, "the last token is lost"),
    (lambda ids, pair, new_id: list(ids), "every occurrence of the pair becomes new_id"),
    (lambda ids, pair, new_id: "".join(map(str, ids)), "not a list of token ids"),
    (lambda ids, pair, new_id: [float(i) for i in ids], "not a token id"),
])
def test_merge_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_merge_pair(fn)
    assert not verdict and hint in verdict.message + verdict.hint, repr(verdict)
    assert "shape" not in verdict.message + verdict.hint  # a list has a length and an order, not a shape


def test_merge_accepts_a_tuple_or_an_array_of_ids():
    assert check_merge_pair(lambda ids, pair, new_id: tuple(merge_loop(ids, pair, new_id)))
    assert check_merge_pair(lambda ids, pair, new_id: np.array(merge_loop(ids, pair, new_id), dtype=np.int64))


def _with_grad_x(grad_x_fn):
    def fn(grad_out, x, gamma, eps=1e-5):
        _, grad_gamma, grad_beta = layer_norm_backward_solution(grad_out, x, gamma)
        return grad_x_fn(grad_out, x, gamma), grad_gamma, grad_beta
    return fn


def _sigma(x):
    return np.sqrt(x.var(axis=-1, keepdims=True) + 1e-5)


def _grad_x(grad_out, x, gamma, mean_g, mean_gx=lambda a: a.mean(axis=-1, keepdims=True)):
    """grad_x written out as a learner would, with the two means as given."""
    x_hat = (x - x.mean(axis=-1, keepdims=True)) / _sigma(x)
    g = grad_out * gamma
    return (g - mean_g(g) - x_hat * mean_gx(g * x_hat)) / _sigma(x)


def _axis_0_everywhere(grad_out, x, gamma):
    """14.2 with every statistic over axis 0, the tokens (the slip notebook 10 teaches), written as a learner would."""
    mean = x.mean(axis=0, keepdims=True)
    sigma = np.sqrt(x.var(axis=0, keepdims=True) + 1e-5)
    x_hat, g = (x - mean) / sigma, grad_out * gamma
    return (g - g.mean(axis=0, keepdims=True) - x_hat * (g * x_hat).mean(axis=0, keepdims=True)) / sigma


@pytest.mark.parametrize("fn, hint", [
    (_with_grad_x(lambda go, x, g: go * g / _sigma(x)), "divided by sigma only"),
    (_with_grad_x(lambda go, x, g: (go * g - (go * g).mean(-1, keepdims=True)) / _sigma(x)), "through the variance"),
    (_with_grad_x(lambda go, x, g: layer_norm_backward_solution(go, x, np.ones_like(g))[0]), "gamma is missing"),
    (lambda go, x, g, eps=1e-5: (layer_norm_backward_solution(go, x, g)[0],
                                 (go * x).reshape(-1, x.shape[-1]).sum(0), go.reshape(-1, x.shape[-1]).sum(0)),
     "NORMALISED x"),
    (lambda go, x, g, eps=1e-5: layer_norm_backward_solution(go, x, g)[0], "three gradients as one tuple"),
    (_with_grad_x(lambda go, x, g: _grad_x(go, x, g, lambda a: a.mean())), "g.mean() without an axis"),
    (_with_grad_x(lambda go, x, g: _grad_x(go, x, g, lambda a: a.mean(), lambda a: a.mean())), "both means"),
    (_with_grad_x(lambda go, x, g: _grad_x(go, x, g, lambda a: a.mean(axis=-1))), "keepdims=True"),
    (_with_grad_x(lambda go, x, g: _grad_x(go, x, g, *[lambda a: a.sum(-1, keepdims=True)] * 2)), "summed"),
    (lambda go, x, g, eps=1e-5: layer_norm_backward_solution(go, x, g)[:2], "three gradients as one tuple"),
    (_with_grad_x(lambda go, x, g: _grad_x(go, x, g, *[lambda a: a.mean(0, keepdims=True)] * 2)), "over axis 0"),
    (_with_grad_x(_axis_0_everywhere), "notebook 10's slip"),
])
def test_layer_norm_backward_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_layer_norm_backward(fn)
    assert not verdict and hint in verdict.message + verdict.hint, repr(verdict)


def _in_sorted_order(probs, top_p):
    ranked = np.sort(probs)[::-1]
    return np.cumsum(ranked) - ranked < top_p


def _ascending(probs, top_p):
    keep, total = np.zeros(len(probs), dtype=bool), 0.0
    for i in np.argsort(probs):  # the least probable first
        keep[i], total = total < top_p, total + probs[i]
    return keep


def _cumulative_below(probs, top_p):
    order = np.argsort(-probs, kind="stable")
    keep = np.zeros(len(probs), dtype=bool)
    keep[order] = np.cumsum(probs[order]) <= top_p
    return keep


@pytest.mark.parametrize("fn, hint", [
    (_cumulative_below, "drops the token that crosses it"),
    (lambda probs, top_p: np.cumsum(probs) - probs < top_p, "sort first"),
    (lambda probs, top_p: probs >= top_p, "not a threshold"),
    (_in_sorted_order, "SORTED order"),
    (lambda probs, top_p: _in_sorted_order(probs, top_p)[np.argsort(-probs)], "the wrong way"),
    (_ascending, "LEAST probable"),
    (lambda probs, top_p: ~top_p_keep_solution(probs, top_p) | True, "not right"),
])
def test_top_p_wrong_answers_get_specific_hints(fn, hint):
    verdict = check_top_p(fn)
    assert not verdict
    if hint != "not right":
        assert hint in verdict.message + verdict.hint, repr(verdict)


@pytest.mark.parametrize("check", [check_merge_pair, check_layer_norm_backward, check_top_p])
@pytest.mark.parametrize("garbage", wrong_answers(lambda *a: (1, 2, 3), lambda *a: 1 / 0))
def test_checkers_never_raise(check, garbage):
    verdict = check(garbage)
    assert not verdict
    assert isinstance(repr(verdict), str) and isinstance(verdict._repr_html_(), str)


def test_each_top_p_slip_is_told_apart_from_the_others():
    """The slips that the [0.1, 0.6, 0.3], p = 0.65 case alone confuses get their own hints."""
    hints = {check_top_p(fn).hint for fn in (_in_sorted_order, _ascending, _cumulative_below,
                                             lambda probs, top_p: np.cumsum(probs) - probs < top_p)}
    assert len(hints) == 4


# ---------------------------------------------------------------- predictions

@needs_weights
def test_first_pair_is_the_shipped_tokenizers_first_merge():
    from attn_helpers.gpt import load_tiny_gpt

    first = bytes(load_tiny_gpt().tokenizer.merges[0]).decode()
    assert check_first_pair(first) and check_first_pair(tuple(first.encode()))
    assert sum(bool(check_first_pair(a + b)) for a in " eht" for b in " eht") == (first[0] in " eht" and
                                                                              first[1] in " eht")


@pytest.mark.parametrize("prediction, hint", [
    ("e ", "space BEFORE it"), ("he", "which letter begins the most words"), ("abc", "two characters"),
    (..., "my_first_pair"), (3, "two characters"),
])
def test_first_pair_wrong_predictions_get_hints(prediction, hint):
    verdict = check_first_pair(prediction)
    assert not verdict and hint in verdict.message + verdict.hint, repr(verdict)


def _previous_weights_by_loop(model, sentence):
    """Block 0 only, from multi_head_attention on the normalised input, and a loop over the queries."""
    from attn_helpers import causal_mask, layer_norm, multi_head_attention, positional_encoding

    ids = model.tokenizer.encode(sentence)[:24]
    x = model.decoder.embeddings[ids] + positional_encoding(len(ids), model.decoder.d_model)
    b = model.decoder.blocks[0]
    normed = layer_norm(x, b.norm_1_gamma, b.norm_1_beta)
    _, weights = multi_head_attention(normed, b.W_q, b.W_k, b.W_v, b.W_o, b.num_heads, causal_mask(len(ids)),
                                      b.biases)
    return np.array([np.mean([w[i, i - 1] for i in range(1, len(ids))]) for w in weights])


@needs_weights
def test_previous_token_heads_one_prediction_passes_the_measured_one():
    from attn_helpers.gpt import load_tiny_gpt

    model = load_tiny_gpt()
    previous = previous_token_weights(model, attention_sentence())
    np.testing.assert_allclose(previous[0], _previous_weights_by_loop(model, attention_sentence()), atol=1e-5)
    passed = [n for n in range(previous.size + 1) if check_previous_token_heads(n)]
    assert passed == [int((previous > 0.5).sum())]
    for prediction, hint in ((passed[0] + 1, "MORE than half"), (previous.size + 1, "from 0 to"),
                             ("2", "whole number"), (..., "not filled in")):
        verdict = check_previous_token_heads(prediction)
        assert not verdict and hint in verdict.message + verdict.hint, repr(verdict)


# ---------------------------------------------------------------- widget module

@pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")
def test_the_sampling_explorer_draws_every_combination_and_never_raises():
    from attn_helpers.gpt import load_tiny_gpt, next_token_probs
    from attn_helpers.widgets import nb15

    model = load_tiny_gpt()
    explorer = nb15.EXPLORERS["sampling_explorer"](model)
    assert list(explorer.controls) == ["prompt", "temperature", "top_k", "top_p"]
    for prompt in nb15.SAMPLE_PROMPTS + ("x" * 500,):
        for temperature, top_k, top_p in ((1.0, 0, 1.0), (0.0, 5, 0.5), (2.0, 50, 0.05)):
            assert explorer.render_png(prompt=prompt, temperature=temperature, top_k=top_k,
                                       top_p=top_p).startswith(b"\x89PNG")
    view = nb15.sampling_view(model, "Elizabeth", temperature=1.0, top_k=3)
    assert (view["shaped"] > 0).sum() == 3 == view["kept"]
    logits = model.logits(model.tokenizer.encode("Elizabeth"))[-1]
    np.testing.assert_allclose(view["raw"], np.sort(next_token_probs(logits))[::-1][:15])
    assert "seeded sample" in explorer.figure().note


@pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")
def test_a_slider_move_updates_the_bars_in_place_as_a_fresh_drawing_would():
    from attn_helpers.gpt import load_tiny_gpt
    from attn_helpers.widgets import nb15

    explorer = nb15.sampling_explorer(load_tiny_gpt())
    explorer.render()
    axes = list(explorer._live.axes)
    for settings in ({"temperature": 0.5}, {"top_k": 3}, {"top_p": 0.3}, {"temperature": 0.0}):
        _, note = explorer.render(**settings)
        assert explorer._live.axes == axes  # the fast path: no new axes
        fresh = explorer.figure(**settings)
        assert note == fresh.note
        assert [b.get_height() for b in explorer._live.handles["bars"]] == [b.get_height()
                                                                          for b in fresh.handles["bars"]]
    explorer.render(prompt="Mr. Darcy")
    assert explorer._live.axes != axes  # a new prompt has other favourite tokens: a full redraw


@needs_weights
def test_the_sampling_view_draws_removed_tokens_grey_names_punctuation_and_prints_its_sample_plainly():
    from matplotlib.colors import to_hex

    from attn_helpers.gpt import load_tiny_gpt
    from attn_helpers.plotting import FAINT_COLOUR
    from attn_helpers.widgets import nb15

    model = load_tiny_gpt()
    explorer = nb15.sampling_explorer(model, prompt="Mr. Darcy")
    fig = explorer.figure(temperature=0.8, top_k=0, top_p=0.5)
    view = nb15.sampling_view(model, "Mr. Darcy", temperature=0.8, top_p=0.5)
    removed = [bar for bar, p in zip(fig.handles["bars"], view["shaped"]) if p == 0]
    assert removed and all(to_hex(bar.get_facecolor()) == FAINT_COLOUR and bar.get_height() > 0 for bar in removed)
    labels = [label.get_text() for label in fig.handles["ax"].get_xticklabels()]
    assert ", (comma)" in labels and "' (apostrophe)" in labels  # the two are told apart
    assert "Mr. Darcy<b>" + view["sample"] in fig.note and "'" + view["sample"][:3] not in fig.note


def test_labels_name_a_lone_punctuation_mark_and_draw_what_the_fonts_lack():
    from attn_helpers.plotting import NO_GLYPH, drawable_labels
    from attn_helpers.widgets.nb15 import token_label

    assert [token_label(t) for t in (",", "·\"", "·was", "⏎", "··")] == [", (comma)", "·\" (quotation mark)", "·was",
                                                                         "⏎", "··"]
    labels, _, missing = drawable_labels(["\U0001F642 über"])
    assert labels == [NO_GLYPH + " über"] and missing == {"\U0001F642"}


def test_a_merge_that_reads_past_the_end_of_the_list_is_told_so_about_the_list():
    """14.1: without the ``i + 1 < len(ids)`` check, ids[i + 1] raises IndexError; the input is a list, so the
    hint speaks of the list's end, not of an array's rows and columns."""
    def unchecked(ids, pair, new_id):
        out, i = [], 0
        while i < len(ids):
            if ids[i] == pair[0] and ids[i + 1] == pair[1]:
                out.append(new_id)
                i += 2
            else:
                out.append(ids[i])
                i += 1
        return out

    verdict = check_merge_pair(unchecked)
    assert "IndexError" in verdict.message and "i + 1 < len(ids)" in verdict.hint and "shape" not in verdict.hint


def test_the_nucleus_boundary_is_a_case_and_its_slip_is_named():
    """14.3: the tokens ranked above a token sum to exactly top_p (binary fractions, so exactly): keeping it too
    (before <= top_p) is a slip with its own hint, and a mask of numbers instead of True/False is named."""
    def up_to_and_including(probs, top_p):
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) - probs[order] <= top_p
        return keep

    verdict = check_top_p(up_to_and_including)
    assert not verdict.passed and "exactly top_p" in verdict.message and "before < top_p" in verdict.hint
    floats = check_top_p(lambda probs, top_p: top_p_keep_solution(probs, top_p).astype(float))
    assert not floats.passed and "dtype=bool" in floats.hint


@pytest.mark.parametrize("form", [np.float32, np.float64, np.int64, np.int8, float])
def test_the_right_count_of_previous_token_heads_in_any_numeric_form_passes(form):
    right = solution("previous_token_heads")
    count = int((previous_token_weights(load_tiny_gpt(), attention_sentence()) > 0.5).sum())
    assert right is not None and check_previous_token_heads(form(count)).passed
    assert not check_previous_token_heads(count + 0.5).passed


# ---------------------------------------------------------------- notebook 14's merges explorer

def test_the_merges_explorer_joins_tokens_as_the_tokenizer_does():
    from attn_helpers.bpe import train_bpe
    from attn_helpers.widgets import nb14

    text = "the cat sat on the mat; the cat ate the hat"
    tokenizer = train_bpe(text, vocab_size=262)
    counts = [len(nb14.merges_view(tokenizer, text, m)["tokens"]) for m in range(0, 7)]
    assert counts[0] == len(text.encode("utf-8")) and counts[-1] == len(tokenizer.encode(text))
    assert all(b <= a for a, b in zip(counts, counts[1:]))  # a merge never adds a token
    explorer = nb14.merges_explorer(tokenizer, text)
    assert list(explorer.controls) == ["merges"]
    for merges in (0, 3, 6, -3, 10_000):  # out-of-range values are clipped, never raise
        assert explorer.render_png(merges=max(0, min(merges, 6))).startswith(b"\x89PNG")
        assert nb14.merges_view(tokenizer, text, merges)["bytes"] == len(text.encode("utf-8"))
    assert "tokens for" in explorer.figure(merges=3).note
