"""Checkers for notebook 12 (a real pretrained model): the attention sink (12.1), what removing a head changes (12.2)
and the previous-token head (12.3), graded on measurements of the real model."""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..ablation import ablation_effects, load_all_heads
from ..core import softmax
from ..examples import SEED
from ..pretrained import FINGERPRINT_SENTENCES, head_fingerprints, load_minilm, weighted_value_norms
from ._grader import Case, Verdict, Wrong, grade_function, read_filled, register_solution, shows_verdict, whole_number
from ._predict import filled_in, read_choice, read_letter

__all__ = ["check_previous_token_weight", "check_previous_token_head", "check_two_back_head", "check_sink_prediction",
           "check_ablation_prediction", "sink_measurements", "ablated_heads", "ABLATION_QUESTIONS"]


# Exercise 12.3 (a): the previous-token weight of every head
@register_solution("my_previous_token_weight")
def my_previous_token_weight(attentions):
    """(layers, heads, T, T) -> (layers, heads): the mean over tokens i = 1..T-1 of attentions[..., i, i - 1]."""
    T = attentions.shape[-1]
    rows = np.arange(1, T)                               # every token that has a previous token
    on_previous = attentions[..., rows, rows - 1]        # (layers, heads, T - 1): weight of token i on token i-1
    return on_previous.mean(axis=-1)                     # average over those tokens


def _random_attentions(rng, layers, heads, T):
    return softmax(rng.standard_normal((layers, heads, T, T)) * 2)  # random scores -> (layers, heads, T, T) weights


def _previous_cases():
    rng = np.random.default_rng(12)
    one_back = np.eye(5, k=-1)
    one_back[0, 0] = 1
    return [
        Case((_random_attentions(rng, 2, 3, 6),), label="random weights of shape (2, 3, 6, 6)"),
        Case((one_back[None, None],), label="one head that always looks one token back (T=5)"),
        Case((_random_attentions(rng, 6, 12, 9),), label="random weights of shape (6, 12, 9, 9), like the model's"),
        Case((_random_attentions(rng, 1, 2, 2),), label="random weights of shape (1, 2, 2, 2), the shortest text"),
    ]


def _wrapped_previous(a):
    """Every row i on column i - 1, row 0 included: column -1 is the last one (also np.roll(a, 1, axis=-1))."""
    rows = np.arange(a.shape[-1])
    return a[..., rows, rows - 1].mean(axis=-1)


_PREVIOUS_WRONGS = [
    Wrong(lambda a: np.diagonal(a, offset=1, axis1=-2, axis2=-1).mean(axis=-1),
          "that is the weight on the NEXT token: row i is the query, so its previous token is column i - 1, "
          "the diagonal just below the main one (np.diagonal(..., offset=-1, axis1=-2, axis2=-1))"),
    Wrong(lambda a: np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(axis=-1) / a.shape[-1],
          "you divided by T, but only T - 1 tokens have a previous token (the first one has none): take the mean "
          "of the T - 1 weights"),
    Wrong(lambda a: np.diagonal(a, offset=-1, axis1=-2, axis2=-1).sum(axis=-1),
          "that is the sum over tokens; the fingerprint is the mean weight per token"),
    Wrong(lambda a: np.diagonal(a, axis1=-2, axis2=-1).mean(axis=-1),
          "that is the weight on the token itself (the main diagonal); the previous token is one column to the left"),
    Wrong(_wrapped_previous,
          "row 0 has no previous token, but rows - 1 gives -1 there, which numpy reads as the LAST column "
          "(it wraps around): you averaged row 0's weight on the last token in. Start at row 1: "
          "rows = np.arange(1, T)"),
    Wrong(lambda a: a[..., np.arange(2, a.shape[-1]), np.arange(1, a.shape[-1] - 1)].mean(axis=-1),
          "you started at token 2: token 1 has a previous token too (token 0), so the mean runs over tokens "
          "1 .. T - 1, rows = np.arange(1, T)"),
    Wrong(lambda a: np.diagonal(a, offset=-1).mean(axis=-1),
          "np.diagonal takes the first two axes unless told otherwise (layers and heads here): "
          "pass axis1=-2, axis2=-1"),
]


@shows_verdict
def check_previous_token_weight(fn):
    """Grade ``fn(attentions)``: ``(layers, heads, T, T) -> (layers, heads)``, mean weight on the previous token."""
    return grade_function(fn, my_previous_token_weight, _previous_cases(), what="my_previous_token_weight",
                          wrongs=_PREVIOUS_WRONGS, rtol=1e-5, atol=1e-7,
                          shape_hint="one number per head: average over the query tokens (the last axis after "
                                     "taking the diagonal), keep the layer and head axes",
                          success="the mean weight on the previous token, one number per head.")


# Exercise 12.3 (b): which head is the previous-token head?
@lru_cache(maxsize=1)
def _model_fingerprints():
    model = load_minilm()
    return head_fingerprints([model.run(s).attentions for s in FINGERPRINT_SENTENCES])


@shows_verdict
@filled_in("previous_head", example="(layer, head), two integers")
def check_previous_token_head(answer):
    """Grade ``(layer, head)``: the head with the largest mean weight on the previous token (0-based)."""
    try:
        fingerprints = _model_fingerprints()
    except Exception as err:  # noqa: BLE001 - a missing model becomes a message, never a traceback
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    next_weight, previous = fingerprints["next"], fingerprints["previous"]
    best = tuple(int(i) for i in np.unravel_index(np.argmax(previous), previous.shape))
    if whole_number(answer) is not None:
        answer = whole_number(answer)
        if answer == int(np.argmax(previous)):
            return Verdict(False, f"{answer} is the position in the flattened array, not (layer, head)",
                           "np.argmax on a 2-D array counts cells row by row; turn it into (layer, head) with "
                           "np.unravel_index(index, shape)")
        return Verdict(False, f"{answer!r} is one number", "give two: answer = (layer, head)")
    try:
        layer, head = answer
        if whole_number(layer) is None or whole_number(head) is None:
            raise TypeError
        layer, head = whole_number(layer), whole_number(head)
    except (TypeError, ValueError):
        return Verdict(False, f"{answer!r} is not a pair of integers", "write answer = (layer, head), e.g. (3, 7)")
    if (layer, head) == best:
        return Verdict(True, f"layer {layer}, head {head}: its tokens put {previous[best]:.2f} of their weight on "
                             f"the previous token, on average over {len(FINGERPRINT_SENTENCES)} sentences.")
    if (head, layer) == best:
        return Verdict(False, f"({layer}, {head}) has the layer and the head swapped",
                       "the fingerprint arrays have shape (layers, heads): the first index is the layer")
    if (layer - 1, head - 1) == best:
        return Verdict(False, f"({layer}, {head}) counts from 1", "Python counts layers and heads from 0")
    shape = previous.shape
    if not (0 <= layer < shape[0] and 0 <= head < shape[1]):
        return Verdict(False, f"there is no head ({layer}, {head})",
                       f"layers go from 0 to {shape[0] - 1}, heads from 0 to {shape[1] - 1}")
    nxt = tuple(int(i) for i in np.unravel_index(np.argmax(next_weight), next_weight.shape))
    if (layer, head) == nxt:
        return Verdict(False, f"({layer}, {head}) is the NEXT-token head ({next_weight[nxt]:.2f} on the next token)",
                       "for query row i the previous token is column i - 1: check your function with exercise "
                       "12.3 (a)'s checker first")
    return Verdict(False, f"head ({layer}, {head}) puts only {previous[layer, head]:.2f} on the previous token",
                   "apply your function to each sentence's attentions, average over the sentences, then take the "
                   "(layer, head) of the largest value with np.unravel_index(np.argmax(...), shape)")


@lru_cache(maxsize=1)
def _diagonal_weights():
    """offset -> (layers, heads): each head's mean weight of query i on key i + offset, over the 8 sentences."""
    model = load_minilm()
    attentions = [model.run(s).attentions for s in FINGERPRINT_SENTENCES]
    return {offset: np.mean([np.diagonal(a, offset=offset, axis1=-2, axis2=-1).mean(axis=-1) for a in attentions],
                            axis=0) for offset in (-2, -1, 1, 2)}


def _read_head(answer, name, flat_best):
    """``((layer, head), None)`` from a learner's pair, or ``(None, Verdict)`` saying what it is instead."""
    answer, problem = read_filled(answer, name, example="(layer, head), two integers", numbers=False)
    if problem is not None:
        return None, problem
    if whole_number(answer) is not None:
        if whole_number(answer) == flat_best:
            return None, Verdict(False, f"{answer} is the position in the flattened array, not (layer, head)",
                                 "np.argmax on a 2-D array counts cells row by row; turn it into (layer, head) "
                                 "with np.unravel_index(index, shape)")
        return None, Verdict(False, f"{answer!r} is one number", f"give two: {name} = (layer, head)")
    try:
        layer, head = (whole_number(v) for v in answer)
        if layer is None or head is None:
            raise TypeError
    except (TypeError, ValueError):
        return None, Verdict(False, f"{answer!r} is not a pair of integers",
                             f"write {name} = (layer, head), e.g. (3, 7)")
    return (layer, head), None


@shows_verdict
def check_two_back_head(answer):
    """Grade ``(layer, head)``: the head with the largest mean weight on the token two places back (0-based)."""
    try:
        weights = _diagonal_weights()
    except Exception as err:  # noqa: BLE001 - a missing model becomes a message, never a traceback
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    two_back = weights[-2]
    best = tuple(int(i) for i in np.unravel_index(np.argmax(two_back), two_back.shape))
    pair, problem = _read_head(answer, "two_back_head", int(np.argmax(two_back)))
    if problem is not None:
        return problem
    layer, head = pair
    if pair == best:
        return Verdict(True, f"layer {layer}, head {head}: its tokens put {two_back[best]:.2f} of their weight on "
                             f"the token two places back, on average over {len(FINGERPRINT_SENTENCES)} sentences: "
                             f"the strongest such head, and far from a sharp one.")
    for offset, what, hint in ((2, "two places AHEAD", "row i is the query: two places back is column i - 2, the "
                                                         "diagonal two below the main one (offset=-2)"),
                               (-1, "ONE place back (the previous-token head)", "change the offset of your "
                                                                                 "diagonal from -1 to -2"),
                               (1, "one place ahead", "two places back is column i - 2: offset=-2")):
        other = weights[offset]
        if pair == tuple(int(i) for i in np.unravel_index(np.argmax(other), other.shape)):
            return Verdict(False, f"({layer}, {head}) is the strongest head on the token {what}", hint)
    if (head, layer) == best:
        return Verdict(False, f"({layer}, {head}) has the layer and the head swapped",
                       "your array has shape (layers, heads): the first index is the layer")
    if (layer - 1, head - 1) == best:
        return Verdict(False, f"({layer}, {head}) counts from 1", "Python counts layers and heads from 0")
    if not (0 <= layer < two_back.shape[0] and 0 <= head < two_back.shape[1]):
        return Verdict(False, f"there is no head ({layer}, {head})",
                       f"layers go from 0 to {two_back.shape[0] - 1}, heads from 0 to {two_back.shape[1] - 1}")
    return Verdict(False, f"head ({layer}, {head}) puts only {two_back[layer, head]:.2f} on the token two back",
                   "average your two-back weights over the sentences, then take the (layer, head) of the largest "
                   "value with np.unravel_index(np.argmax(...), shape)")


# Exercise 12.1: predict, then measure: how much does a sink head take from [CLS]?
SINK_LAYER, SINK_HEAD = 4, 5

#: The choices of the prediction, and the range of the measured share each one stands for.
SINK_CHOICES = {"a": ("about 90%, like its weight", 0.75, 1.0),
                "b": ("about half", 0.35, 0.75),
                "c": ("under a third", 0.0, 0.35)}


def sink_measurements(sentences=FINGERPRINT_SENTENCES, layer=SINK_LAYER, head=SINK_HEAD):
    """Per sentence, two arrays of shape (len(sentences),): the mean weight on ``[CLS]`` and its mean share
    ``||w_i0 v_0 W_o|| / sum_j ||w_ij v_j W_o||`` of the summed lengths of the head's contributions."""
    model = load_minilm()
    weights, shares = [], []
    for sentence in sentences:
        result = model.run(sentence)
        moved = weighted_value_norms(model, result, layer)[head]  # (T, T)
        weights.append(result.attentions[layer, head, :, 0].mean())
        shares.append((moved[:, 0] / moved.sum(axis=-1)).mean())
    return np.array(weights), np.array(shares)


def sink_shares(sentences=FINGERPRINT_SENTENCES, layer=SINK_LAYER, head=SINK_HEAD):
    """Mean weight on ``[CLS]`` and ``[CLS]``'s mean share of the head's contribution lengths, over ``sentences``."""
    weights, shares = sink_measurements(sentences, layer, head)
    return float(weights.mean()), float(shares.mean())


@register_solution("sink_prediction")
def sink_prediction():
    """The measured answer: [CLS] gets most of the weight but supplies under a third of the summed lengths."""
    weight, share = sink_shares()
    return next(key for key, (_, low, high) in SINK_CHOICES.items() if low <= share < high)


@shows_verdict
@filled_in("my_prediction", example='"a", "b" or "c", before you measure')
def check_sink_prediction(prediction):
    """Compare a prediction ("a", "b" or "c") with the measurement on the real model."""
    choice = read_choice(prediction, {key: text for key, (text, _, _) in SINK_CHOICES.items()})
    if choice is None:
        return Verdict(False, f"{prediction!r} is not one of the choices", 'answer "a", "b" or "c"')
    try:
        with np.errstate(all="ignore"):  # the measurement, whatever np.seterr the learner has set
            weight, share = sink_shares()
    except Exception as err:  # noqa: BLE001
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    measured = (f"[CLS] gets {weight:.2f} of the weight but supplies {share:.2f} of the summed lengths of what the "
                f"head writes (means over {len(FINGERPRINT_SENTENCES)} sentences)")
    low, high = SINK_CHOICES[choice][1:]
    if low <= share < high:
        return Verdict(True, f"measured: {measured}. [CLS]'s value vector is short, so the weight parked on it "
                             "moves the output little.")
    return Verdict(False, f"you predicted {SINK_CHOICES[choice][0]}; measured: {measured}",
                   "a weight multiplies a value vector: a large weight on a short vector adds little. Compare the "
                   "lengths of the value vectors in the cell below")


# Exercise 12.2: predict, then run: what does removing a head change?
def ablated_heads(seed=SEED):
    """The heads exercise 12.2 removes: the previous-token head, a sink, and one drawn at random among the others."""
    named = {"previous-token (0, 2)": (0, 2), f"sink ({SINK_LAYER}, {SINK_HEAD})": (SINK_LAYER, SINK_HEAD)}
    others = [(layer, head) for layer in range(6) for head in range(12) if (layer, head) not in named.values()]
    layer, head = others[int(np.random.default_rng(seed).integers(len(others)))]
    return {**named, f"random ({layer}, {head})": (layer, head)}


@lru_cache(maxsize=1)
def measured_ablation():
    """:func:`~attn_helpers.ablation.ablation_effects` of :func:`ablated_heads` on the fingerprint sentences."""
    return ablation_effects(load_minilm(), FINGERPRINT_SENTENCES, ablated_heads())


#: Exercise 12.2's questions: choices, a hint for each wrong one, and how the answer is read off the measurement.
ABLATION_QUESTIONS = {
    "largest change": {  # within the head's own layer: "right after its block" is another depth for each layer
        "choices": {"a": "more than removing any other head of layer 0",
                    "b": "about as much as removing a typical head of layer 0",
                    "c": "less than removing most heads of layer 0"},
        "hints": {"b": "a typical head of layer 0 spreads its weight over many tokens, so what it adds is much the "
                       "same blur for every token; the previous-token head writes each token's neighbour into it, a "
                       "different vector for every token",
                  "c": "compare what the heads add: the previous-token head writes each token's neighbour into it, a "
                       "different vector for every token, where a broad head adds much the same blur to all",
                  "a": "right after its block nothing has had a chance to undo the change"},
    },
    "similarities": {
        "choices": {"a": "a lot: some sentence gets another nearest neighbour",
                    "b": "a little: the cosines move by a few hundredths at most, every nearest neighbour stays"},
        "hints": {"a": "a sentence embedding is a mean over every token of the last layer, after five more blocks: "
                       "a change that differs from token to token largely averages out",
                  "b": "look at how large the changes of the hidden states are, token by token"},
    },
}


def ablation_answer(question, effects=None):
    """The right choice of ``question``, read off the measurement (zero ablation; never typed in)."""
    effects = measured_ablation() if effects is None else effects
    names = list(ablated_heads())
    if question == "largest change":  # the previous-token head's rank among the 12 heads of its layer, zeroed
        layer, head = ablated_heads()[names[0]]
        block = load_all_heads()["block"][0, layer]  # (12,): mean change right after block 0, each head zeroed
        rank = 1 + int((np.delete(block, head) > block[head]).sum())
        return "a" if rank == 1 else "b" if rank <= len(block) // 2 else "c"
    if question == "similarities":
        effect = effects[names[0], "zero"]
        small = np.abs(effect["similarity change"]).max() < 0.05 and effect["neighbours changed"] == 0
        return "b" if small else "a"
    raise ValueError(f"no question {question!r}")


@shows_verdict
def check_ablation_prediction(answer, question=None):
    """Grade a prediction of exercise 12.2 (``question`` one of :data:`ABLATION_QUESTIONS`) on the measurement."""
    choice, problem = read_letter(answer, ABLATION_QUESTIONS, question, "this exercise's", "{!r}")
    if problem is not None:
        return problem
    choices = ABLATION_QUESTIONS[question]["choices"]
    try:
        with np.errstate(all="ignore"):
            right = ablation_answer(question)
    except Exception as err:  # noqa: BLE001 - a missing model becomes a message, never a traceback
        return Verdict(False, f"the model could not be loaded ({type(err).__name__}: {err})")
    if choice == right:
        return Verdict(True, f"({right}) {choices[right]}. The cells below measure it.")
    return Verdict(False, f"you predicted ({choice}) {choices[choice]}; the measurement says otherwise",
                   ABLATION_QUESTIONS[question]["hints"][choice])
