"""Checkers for notebook 09 (word order and positions)."""

from __future__ import annotations

import re

import numpy as np

from ..examples import dog_bites_man, reorder_outputs
from ..positions import positional_encoding
from ._grader import (
    Case,
    Verdict,
    Wrong,
    call_quietly,
    grade_function,
    grade_value,
    never_raises,
    read_filled,
    register_solution,
    shows_verdict,
    whole_number,
)

__all__ = ["check_sinusoidal_encoding", "check_order_prediction", "check_length_prediction"]


# Exercise 09.1: the sinusoidal encoding
@register_solution("sinusoidal_encoding")
def sinusoidal_encoding(T, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/d_model)), PE[p, 2i+1] = cos(the same angle); shape (T, d_model)."""
    position = np.arange(T)[:, None]  # (T, 1): one row per position
    two_i = np.arange(0, d_model, 2)  # (d_model/2,): 0, 2, 4, ... is already 2i
    angle = position / 10000 ** (two_i / d_model)  # (T, 1) / (d_model/2,) -> (T, d_model/2), in radians
    pe = np.zeros((T, d_model))
    pe[:, 0::2] = np.sin(angle)  # even features: sin
    pe[:, 1::2] = np.cos(angle)  # odd features: cos of the same angle
    return pe


def _interleave(even, odd):
    pe = np.empty((even.shape[0], 2 * even.shape[1]))
    pe[:, 0::2], pe[:, 1::2] = even, odd
    return pe


def _pair_angle(T, d_model, exponent=lambda two_i, d: two_i / d, shift=0, base=10000.0):
    two_i = np.arange(0, d_model, 2)
    return (np.arange(T)[:, None] + shift) / base ** exponent(two_i, d_model)  # (T, d_model/2)


def _swapped_angle(T, d_model):
    """Pair index over a power of the position: rows and columns of the angle confused."""
    return np.arange(d_model // 2)[None, :] / 10000.0 ** (2 * np.arange(T)[:, None] / d_model)  # (T, d_model/2)


def _feature_angle(T, d_model, exponent):
    """An angle per FEATURE j (not per pair): what using np.arange(d_model) in the exponent gives."""
    j = np.arange(d_model)
    return np.arange(T)[:, None] / 10000.0 ** exponent(j, d_model)  # (T, d_model)


def _sin_even_cos_odd(angle):
    return np.where(np.arange(angle.shape[1]) % 2 == 0, np.sin(angle), np.cos(angle))


def _encoding_wrongs():
    return [
        Wrong(lambda T, d: _interleave(np.cos(_pair_angle(T, d)), np.sin(_pair_angle(T, d))),
              "sin and cos are swapped: the paper puts sin on the EVEN features (0, 2, 4, ...) and cos on the odd "
              "ones, so row 0 (position 0) reads 0, 1, 0, 1, ..."),
        Wrong(lambda T, d: np.concatenate([np.sin(_pair_angle(T, d)), np.cos(_pair_angle(T, d))], axis=1),
              "you put all the sines first and all the cosines after them (some libraries do). The paper and this "
              "series interleave them: sin on feature 2i, cos on feature 2i+1, for the same angle"),
        Wrong(lambda T, d: (_interleave(np.sin(_pair_angle(T, d)), np.cos(_pair_angle(T, d)))).T,
              "rows and columns are swapped: the encoding has one ROW per position, shape (T, d_model). "
              "Build the angle as position[:, None] / 10000 ** (two_i / d_model)"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, lambda t, d: 2 * t / d)),
                                       np.cos(_pair_angle(T, d, lambda t, d: 2 * t / d))),
              "your exponent is twice too large: np.arange(0, d_model, 2) already gives 2i (0, 2, 4, ...), so the "
              "exponent is two_i / d_model, not 2 * two_i / d_model"),
        Wrong(lambda T, d: _sin_even_cos_odd(_feature_angle(T, d, lambda j, d: j / d)),
              "each feature got its own frequency (exponent j / d_model for feature j). A sin and its cos share "
              "ONE angle: features 2i and 2i+1 both use 10000 ** (2i / d_model)"),
        Wrong(lambda T, d: _sin_even_cos_odd(_feature_angle(T, d, lambda j, d: 2 * j / d)),
              "you used 2 * j / d_model with j the feature index (0, 1, 2, 3, ...). Use the pair: features 2i "
              "and 2i+1 share the exponent 2i / d_model, so take j from np.arange(0, d_model, 2)"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, lambda t, d: t / 2 / d)),
                                       np.cos(_pair_angle(T, d, lambda t, d: t / 2 / d))),
              "your exponent is i / d_model with i counting the pairs (0, 1, 2, ...). The formula has 2i / d_model: "
              "multiply the pair index by 2, or take np.arange(0, d_model, 2), which already is 2i"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, base=1000.0)), np.cos(_pair_angle(T, d, base=1000.0))),
              "your base is 1000; the formula's is 10000 (ten thousand: 10000 ** (2i / d_model)). With 1000 the "
              "slow pairs turn too fast"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, lambda t, d: t)),
                                       np.cos(_pair_angle(T, d, lambda t, d: t))),
              "the exponent must be divided by d_model: 10000 ** (2i / d_model). Without it the frequencies "
              "collapse to 0 after the first pair"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, lambda t, d: -t / d)),
                                       np.cos(_pair_angle(T, d, lambda t, d: -t / d))),
              "you multiplied the position by 10000 ** (2i / d_model); divide by it (the frequencies must "
              "DECREASE from 1, so the later features change slowly)"),
        Wrong(lambda T, d: _interleave(np.sin(np.radians(_pair_angle(T, d))), np.cos(np.radians(_pair_angle(T, d)))),
              "you converted the angle to radians as if it were in degrees. np.sin and np.cos take radians and "
              "p / 10000 ** (2i / d_model) already is one: use it as it is"),
        Wrong(lambda T, d: _interleave(np.sin(np.degrees(_pair_angle(T, d))), np.cos(np.degrees(_pair_angle(T, d)))),
              "you converted the angle to degrees; np.sin and np.cos take radians, which is what "
              "p / 10000 ** (2i / d_model) already is"),
        Wrong(lambda T, d: _interleave(np.sin(_pair_angle(T, d, shift=1)), np.cos(_pair_angle(T, d, shift=1))),
              "your positions start at 1. They count from 0, so row 0 is sin(0), cos(0), ... = 0, 1, 0, 1, ..."),
        Wrong(lambda T, d: _interleave(np.sin(_swapped_angle(T, d)), np.cos(_swapped_angle(T, d))),
              "the roles of position and pair index are mixed up: the position p (the row) is divided by "
              "10000 ** (2i / d_model), where i counts the PAIRS (the columns), not the positions"),
    ]


_ENCODING_CASES = [
    Case((6, 8), label="T = 6 positions, d_model = 8"),
    Case((10, 16), label="T = 10, d_model = 16"),
    Case((50, 4), label="T = 50, d_model = 4"),
    Case((1, 2), label="T = 1, d_model = 2"),
]


@shows_verdict
def check_sinusoidal_encoding(fn):
    """Grade ``fn(T, d_model) -> (T, d_model)``: the sinusoidal positional encoding (even ``d_model``)."""
    case = _ENCODING_CASES[0]  # a broadcasting error: an angle array of shape (d_model/2, T)
    err = call_quietly(fn, *case.args)[1] if callable(fn) else None  # the grader below reports other failures
    if isinstance(err, ValueError) and "broadcast" in str(err):
        return Verdict(False, f"on {case.label}, your function raised ValueError: {err}",
                       "the angle array has the wrong orientation for pe[:, 0::2]: build it with positions down the "
                       "rows and pairs across the columns, position[:, None] / 10000 ** (two_i / d_model), shape "
                       "(T, d_model/2)")
    return grade_function(
        fn, lambda T, d: positional_encoding(T, d, dtype=np.float64), _ENCODING_CASES,
        what="sinusoidal_encoding", wrongs=_encoding_wrongs(), atol=1e-6,
        shape_hint="one row per position and one column per feature: shape (T, d_model)",
        success="sin on the even features, cos on the odd ones, one frequency 1 / 10000^(2i/d_model) per pair.",
        hints={"matmul": "no matrix product is needed here: broadcast position[:, None] (T, 1) against the "
                         "frequencies (d_model/2,) to get every angle, shape (T, d_model/2)"},
    )


# Exercise 09.2: predict, then run: which outputs change when "dog bites man" becomes "man bites dog"?
#: The reordering of the prediction exercise: "dog bites man" -> "man bites dog".
MAN_BITES_DOG = (2, 1, 0)

_KEYS = ("without positions", "with positions")


def changed_words(order=MAN_BITES_DOG, with_positions=False, tol=1e-4):
    """How many words of "dog bites man" get a different context vector after reordering (computed)."""
    change = reorder_outputs(order, with_positions=with_positions, example=dog_bites_man(dtype=np.float64))["change"]
    return int((change > tol).sum())


_PREDICTION_WRONGS = {
    "without positions": [
        (3, "every word is in the same company as before. Without positions, attention sees a SET of words: each "
            "output depends only on the word's own query and on all the keys and values, whatever their order. "
            "The outputs move with their words, but none of them changes"),
        (2, "'dog' and 'man' swap places, but their outputs travel with them unchanged: attention without "
            "positions cannot tell where a word stands"),
        (1, "'bites' stays in the middle, and the other two words keep their outputs as well: without positions "
            "nothing about the order reaches the scores"),
    ],
    "with positions": [
        (2, "'bites' stays at position 1, yet its output changes too: its neighbours now carry different position "
            "vectors (PE[0] and PE[2] swapped), so the keys and values it mixes are different"),
        (0, "the position vectors are added to the embeddings BEFORE the projections, so every query, key and "
            "value depends on where its word stands: reordering changes them"),
        (1, "more than one word is affected: 'dog' and 'man' get new position vectors, and 'bites' attends to "
            "them"),
    ],
}


@never_raises("could not read this prediction",
              'write a dict of two whole numbers: {"without positions": 0, "with positions": 0}')
def check_order_prediction(prediction):
    """Grade a prediction ``{"without positions": n, "with positions": m}``: how many of the 3 words of
    "dog bites man" get a different context vector when the sentence becomes "man bites dog"."""
    prediction, problem = read_filled(prediction, "my_prediction", example="a whole number from 0 to 3, each",
                                      numbers=False)
    if problem is not None:
        return problem
    if not isinstance(prediction, dict) or set(prediction) != set(_KEYS):
        got = sorted(map(str, prediction)) if isinstance(prediction, dict) else type(prediction).__name__
        return Verdict(False, f"my_prediction must be a dict with the keys {list(_KEYS)}; got {got}",
                       'write {"without positions": n, "with positions": m}, each a number of words from 0 to 3')
    for key in _KEYS:
        value = prediction[key]
        if value is Ellipsis or value is None:
            return Verdict(False, f"your prediction {key!r} is not filled in yet",
                           "replace the ... with a whole number from 0 to 3")
        if whole_number(value) is None or not 0 <= whole_number(value) <= 3:
            return Verdict(False, f"your prediction {key!r} is {value!r}",
                           "predict a count of words: a whole number from 0 to 3")
    actual = {key: changed_words(with_positions=(key == "with positions")) for key in _KEYS}
    for key in _KEYS:
        verdict = grade_value(prediction[key], actual[key], name=f"your prediction {key!r}",
                              wrongs=[w for w in _PREDICTION_WRONGS[key] if w[0] != actual[key]])
        if not verdict.passed:
            found = f"{actual[key]} {'word' if actual[key] == 1 else 'words'}"
            return Verdict(False, f"{key}: you predicted {prediction[key]}, the run above found {found} with a "
                                  f"different context vector",
                           verdict.hint or "compare with the distances printed above")
    return Verdict(True, f"without positions {actual['without positions']} words change (the outputs are only "
                         f"reordered); with positions all {actual['with positions']} do, even 'bites', which did "
                         f"not move.")


# Do positions generalise in length? Predict which kinds still work at 16 tokens, trained on 8.
#: The length of the question and the accuracy that counts as "still works".
LONG_LENGTH = 16
GOOD_ENOUGH = 0.8

#: The names a learner may use for each kind (compared in lower case).
_KIND_NAMES = {"learned": "learned", "learnt": "learned", "sinusoidal": "sinusoidal", "sinusoid": "sinusoidal",
               "sin": "sinusoidal", "sine": "sinusoidal", "rope": "rope", "rotary": "rope", "alibi": "alibi"}

_LENGTH_REASONS = {
    ("learned", False): "rows 8 to 15 of the learned table were never trained (their gradient was always zero): "
                        "from position 8 on the model adds random vectors it has never seen",
    ("sinusoidal", False): "the sinusoidal vectors exist for every position, but the model only ever saw those of "
                           "positions 0 to 7: PE[8] to PE[15] are new inputs to W_q and W_k, and what the model "
                           "learned about positions 0 to 7 does not carry over to them",
    ("rope", True): "with RoPE a score depends only on the offset between query and key: 'one before me' is the "
                    "same rotation at position 3 and at position 13",
    ("alibi", True): "ALiBi was made for this ('train short, test long'): its penalty depends only on the "
                     "distance between query and key, so 'near me' means the same at every position; the many far "
                     "keys of a longer input take a little weight, not much",
}


def length_accuracies():
    """``{kind: mean accuracy at LONG_LENGTH}`` over the seeds of the shipped runs (what the notebook prints)."""
    from ..position_runs import KINDS, accuracy_at_length, shipped_accuracy_by_position

    at_length = accuracy_at_length(shipped_accuracy_by_position(), LONG_LENGTH)  # (kinds, seeds)
    return dict(zip(KINDS, at_length.mean(axis=1).tolist()))


def _as_kinds(prediction, kinds):
    """A prediction (a set, list or string of kind names, any case) as a set of kinds, or a Verdict saying why not."""
    example = 'a set of kinds, for example {"learned", "rope"}, or set() if you expect none to work'
    prediction, problem = read_filled(prediction, "my_length_prediction", example=example, numbers=False)
    if problem is not None:
        return None, problem
    if isinstance(prediction, str):
        words = [w for w in re.split(r"[^a-z]+", prediction.lower()) if w not in ("", "and", "or")]
        if words in (["all"], ["none"]):
            return (set(kinds) if words == ["all"] else set()), None
        items = words
    elif isinstance(prediction, (set, frozenset, list, tuple)):
        items = list(prediction)
    else:
        return None, Verdict(False, f"my_length_prediction is of type {type(prediction).__name__}, not one of the "
                                    f"kinds nor a set of them", f"write {example}")
    predicted = set()
    for item in items:
        kind = _KIND_NAMES.get(item.lower().strip()) if isinstance(item, str) else None
        if kind is None:
            return None, Verdict(False, f"my_length_prediction contains {item!r}, which is not a kind of positions",
                                 f"name the kinds as {', '.join(map(repr, kinds))}; write {example}")
        predicted.add(kind)
    return predicted, None


@never_raises("could not read this prediction",
              'write a set of kinds, for example {"learned", "rope"}, or set() if you expect none to work')
def check_length_prediction(prediction):
    """Grade a prediction of the kinds of positions whose accuracy at 16 tokens is at least 80 % (trained on 8)."""
    from ..position_runs import KINDS

    predicted, problem = _as_kinds(prediction, KINDS)
    if problem is not None:
        return problem
    measured = length_accuracies()
    truth = {kind for kind in KINDS if measured[kind] >= GOOD_ENOUGH}

    def names(chosen):
        return ", ".join(kind for kind in KINDS if kind in chosen) or "none"

    summary = "; ".join(f"{kind} {measured[kind]:.0%}" for kind in KINDS)
    if predicted == truth:
        return Verdict(True, f"{names(truth)}. Mean accuracy at {LONG_LENGTH} tokens: {summary}.")
    reasons = []
    for kind in KINDS:
        if kind in predicted ^ truth:
            works = kind in truth
            what = "left it out" if works else "included it"
            said = f"{kind} gets {measured[kind]:.0%} at {LONG_LENGTH} tokens (you {what})"
            reason = _LENGTH_REASONS.get((kind, works))
            reasons.append(f"{said}: {reason}" if reason else said)
    return Verdict(False, f"you predicted {names(predicted)}; the runs above give {names(truth)}", ". ".join(reasons))
