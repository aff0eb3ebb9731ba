"""Checkers for notebook 15 (a tiny GPT of your own, part 2): the prediction of the previous-token heads, top-p."""

from __future__ import annotations

import numpy as np

from ..gpt import attention_weights, corpus_split, filter_logits, load_tiny_gpt
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    grade_function,
    register_solution,
    shows_verdict,
    whole_number,
)
from ._predict import filled_in, is_complex

__all__ = ["check_previous_token_heads", "check_top_p"]


# ------------------------------------------------------------------------------- predict, then run

def previous_token_weights(model, sentence, max_tokens=24):
    """``(layers, heads)``: each head's mean weight on the token just before the query, on ``sentence``'s first
    ``max_tokens`` tokens, as ``decoder_forward`` computes them."""
    ids = model.tokenizer.encode(sentence)[:max_tokens]
    return np.diagonal(attention_weights(model.decoder, ids), offset=-1, axis1=-2, axis2=-1).mean(axis=-1)


def attention_sentence():
    """Line 10 of the validation text, its first 100 characters: the sentence of the notebook's question."""
    return corpus_split("val").splitlines()[10][:100]


@register_solution("previous_token_heads")
def previous_token_heads():
    """The measured answer: how many heads put more than half of their weight on the previous token."""
    return int((previous_token_weights(load_tiny_gpt(), attention_sentence()) > 0.5).sum())


@shows_verdict
@filled_in("my_previous_token_heads", example="a whole number from 0 to 8")
def check_previous_token_heads(prediction):
    """Grade a prediction of how many of the tiny GPT's heads put more than half of their weight on the previous
    token, on :func:`attention_sentence`."""
    if whole_number(prediction) is None:
        kind = "complex" if is_complex(prediction) else type(prediction).__name__
        return Verdict(False, f"{prediction!r:.40} is {kind}, not a whole number",
                       "write a whole number from 0 to 8")
    prediction = whole_number(prediction)
    try:
        with np.errstate(all="ignore"):
            previous = previous_token_weights(load_tiny_gpt(), attention_sentence())
    except Exception as err:  # noqa: BLE001 - a missing model becomes a message, never a traceback
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    heads, count, strongest = previous.size, int((previous > 0.5).sum()), float(previous.max())
    if not 0 <= prediction <= heads:
        return Verdict(False, f"the model has {heads} heads; you predicted {prediction}",
                       f"write a whole number from 0 to {heads}")
    measured = (f"{count} of {heads} heads put more than half of their weight on the previous token; the strongest "
                f"puts {strongest:.2f} there")
    if prediction == count:
        return Verdict(True, f"measured: {measured}. The cells below show every head.")
    if prediction > count:
        return Verdict(False, f"you predicted {prediction}; measured: {measured}",
                       "a head counts only if MORE than half of its weight goes one step back; the rest of its "
                       "weight goes to the other tokens it may see (the heat maps below show where)")
    return Verdict(False, f"you predicted {prediction}; measured: {measured}",
                   "predicting the next token rewards looking one step back: a model learns it early")



# ------------------------------------------------------------------------------- top-p

@register_solution("top_p_keep")
def top_p_keep_solution(probs, top_p):
    """Sort by probability; keep a token while the tokens ranked above it sum to less than top_p."""
    order = np.argsort(-probs, kind="stable")  # the most probable first
    before = np.cumsum(probs[order]) - probs[order]  # the probability ranked above each token
    keep = np.zeros(len(probs), dtype=bool)
    keep[order] = before < top_p
    return keep


def _top_p_cases():
    return [
        Case((np.array([0.5, 0.25, 0.125, 0.125]), 0.7), label="probs [0.5, 0.25, 0.125, 0.125], top_p = 0.7"),
        Case((np.array([0.1, 0.3, 0.6]), 0.65), label="probs [0.1, 0.3, 0.6] (the largest last), top_p = 0.65"),
        Case((np.array([0.1, 0.6, 0.3]), 0.65), label="probs [0.1, 0.6, 0.3] (not sorted), top_p = 0.65"),
        Case((np.array([0.2, 0.7, 0.1]), 0.5), label="probs [0.2, 0.7, 0.1], top_p = 0.5: one token is enough"),
        Case((np.array([0.05, 0.15, 0.3, 0.5]), 0.9), label="probs [0.05, 0.15, 0.3, 0.5], top_p = 0.9"),
        Case((np.array([0.4, 0.35, 0.25]), 0.01), label="probs [0.4, 0.35, 0.25], a tiny top_p = 0.01"),
        Case((np.array([0.125, 0.5, 0.125, 0.25]), 0.75), label=_BOUNDARY_LABEL),
    ]


#: The case whose two most probable tokens sum to exactly top_p (binary fractions: every sum is exact).
_BOUNDARY_LABEL = "probs [0.125, 0.5, 0.125, 0.25], top_p = 0.75: the two most probable sum to exactly top_p"


def _top_p_wrongs():
    def cumulative_below(probs, top_p):  # stops before the token that crosses top_p
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) <= top_p
        return keep

    def unsorted(probs, top_p):  # cumulative sums in token-id order
        return np.cumsum(probs) - probs < top_p

    def in_sorted_order(probs, top_p):  # right mask, but in sorted order: never mapped back to the tokens
        ranked = probs[np.argsort(-probs, kind="stable")]
        return np.cumsum(ranked) - ranked < top_p

    def mapped_back_the_wrong_way(probs, top_p):  # keep = keep_sorted[order] instead of keep[order] = keep_sorted
        return in_sorted_order(probs, top_p)[np.argsort(-probs, kind="stable")]

    def up_to_and_including(probs, top_p):  # before <= top_p: one token too many where a sum hits top_p
        order = np.argsort(-probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) - probs[order] <= top_p
        return keep

    def ascending(probs, top_p):  # np.argsort(probs): the LEAST probable first
        order = np.argsort(probs, kind="stable")
        keep = np.zeros(len(probs), dtype=bool)
        keep[order] = np.cumsum(probs[order]) - probs[order] < top_p
        return keep

    return [
        Wrong(in_sorted_order, "your mask is in SORTED order (entry 0 = the most probable token): put each "
                               "answer back at its token's position, keep[order] = kept_in_sorted_order"),
        Wrong(mapped_back_the_wrong_way, "keep_sorted[order] moves the answers the wrong way: write them into "
                                         "the tokens' positions, keep[order] = keep_sorted"),
        Wrong(cumulative_below, "you kept the tokens whose cumulative sum stays below top_p, which drops the token "
                                "that crosses it (and with a small top_p leaves nothing). Keep the SMALLEST set whose "
                                "sum reaches top_p: a token stays while the tokens ranked ABOVE it sum to < top_p"),
        Wrong(up_to_and_including, "the tokens ranked above the third one already sum to exactly top_p, so the "
                                   "nucleus is complete without it: keep a token while the tokens above it sum to "
                                   "LESS than top_p (before < top_p), not before <= top_p"),
        Wrong(unsorted, "sort first: the nucleus is the most PROBABLE tokens, so add them up from the largest "
                        "probability down (np.argsort(-probs)), not in token order"),
        Wrong(ascending, "np.argsort(probs) puts the LEAST probable token first: sort by -probs (or reverse the "
                         "order) so the sum starts at the most probable token"),
        Wrong(lambda probs, top_p: probs >= top_p, "top-p is not a threshold on each probability: it keeps the "
                                                   "most probable tokens until their probabilities add up to top_p"),
    ]


@shows_verdict
def check_top_p(fn):
    """Grade ``fn(probs, top_p) -> keep``: a boolean mask of the tokens top-p (nucleus) sampling keeps."""
    verdict = grade_function(fn, lambda probs, top_p: np.isfinite(filter_logits(np.log(probs), top_p=top_p)),
                             _top_p_cases(), what="top_p_keep", wrongs=_top_p_wrongs(),
                             shape_hint="return one True/False per token, in the tokens' original order",
                             success="your nucleus matches filter_logits(..., top_p=...) on every case.")
    if not verdict.passed:
        return verdict
    case = _top_p_cases()[0]
    dtype = np.asarray(call_quietly(fn, *(np.array(a, copy=True) for a in case.args))[0]).dtype
    if dtype != np.bool_:
        return Verdict(False, f"on {case.label}, the right tokens are marked, but with numbers of dtype {dtype}, "
                              "not True/False",
                       "np.zeros(len(probs)) makes an array of floats: pass dtype=bool, so that the mask can pick "
                       "tokens (probs[keep]) and be inverted (~keep)")
    return verdict

