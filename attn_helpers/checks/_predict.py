"""Predict-then-run questions: read a learner's prediction (a set of tokens, a shape) or say what to type instead."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Mapping, Sequence

import numpy as np

from ._grader import Verdict, grade_choice, grade_value, read_filled, whole_number

__all__ = ["as_token_set", "grade_token_set", "as_shape", "is_complex", "read_choice", "read_letter",
           "grade_named_choice", "grade_measurement", "filled_in"]


def filled_in(name: str, example: str):
    """Decorator for a checker of one answer (its first argument): while the answer is not filled in (still
    ``...``, or None), the checker says so (:func:`read_filled`) instead of grading it.

    >>> @filled_in("my_guess", example="a number")
    ... def check_guess(guess):
    ...     return Verdict(guess == 2, "guess is 2")
    >>> check_guess(...)
    ❌ Not yet: my_guess is not filled in yet
    💡 Hint: replace the ... with a number
    """

    def decorate(checker):
        first = next(iter(inspect.signature(checker).parameters))

        @functools.wraps(checker)
        def checking(*args, **kwargs):
            if args or first in kwargs:
                _, problem = read_filled(args[0] if args else kwargs[first], name, example=example, numbers=False)
                if problem is not None:
                    return problem
            return checker(*args, **kwargs)

        return checking

    return decorate


def is_complex(item) -> bool:
    """Whether ``item`` is a complex number or array, checked without converting it.

    >>> is_complex(2 + 1j), is_complex(np.array([1j])), is_complex(2)
    (True, True, False)
    """
    return isinstance(item, (complex, np.complexfloating)) or (isinstance(item, np.ndarray) and item.dtype.kind == "c")


def _one_token(item, tokens: Sequence[str]):
    if isinstance(item, str):
        return tokens.index(item) if item in tokens else None
    position = whole_number(item)
    return position if position is not None and 0 <= position < len(tokens) else None


def as_token_set(answer, tokens: Sequence[str], name: str):
    """``answer`` (tokens by name or position, one or several) as a set of positions, or a Verdict saying why not."""
    tokens = list(tokens)
    example = f"for example {{{tokens[0]!r}, {tokens[-1]!r}}} or [0, {len(tokens) - 1}]"
    _, problem = read_filled(answer, name, example=f"your prediction, {example}", numbers=False)
    if problem is not None:
        return None, problem
    items = [answer] if isinstance(answer, str) or whole_number(answer) is not None else answer
    try:
        items = list(items)
    except TypeError:
        return None, Verdict(False, f"{name} is a {type(answer).__name__}, not a set of tokens", f"write {example}")
    positions = [_one_token(item, tokens) for item in items]
    if any(p is None for p in positions):
        bad = next(item for item, p in zip(items, positions) if p is None)
        return None, Verdict(False, f"{name} contains {bad!r}, which is not one of the tokens",
                             f"name tokens as strings from {tokens} or by position 0..{len(tokens) - 1}")
    return set(positions), None


def grade_token_set(answer, truth: set, tokens: Sequence[str], name: str, *, why: str, extra: str, missed: str,
                    hints: Mapping[str, str] | None = None) -> Verdict:
    """Compare a predicted set of tokens with the positions ``truth``. The hint on a miss is ``hints["I, AI"]``
    (tokens in sentence order), else ``extra`` (tokens outside ``truth`` fill ``{extra}``), else ``missed``.

    >>> grade_token_set(["b"], {0, 1}, ["a", "b", "c"], "my_guess", why="both.", extra="not {extra}",
    ...                 missed="look at {missed}")
    ❌ Not yet: you predicted b
    💡 Hint: look at a
    """
    predicted, problem = as_token_set(answer, tokens, name)
    if problem is not None:
        return problem

    def names(positions):
        return ", ".join(tokens[i] for i in sorted(positions))

    if predicted == truth:
        return Verdict(True, f"{names(truth)}: {why}")
    said = names(predicted) or "none"
    if said in (hints or {}):
        hint = hints[said]
    elif predicted - truth:
        hint = extra.replace("{extra}", names(predicted - truth))
    else:
        hint = missed.replace("{missed}", names(truth - predicted))
    return Verdict(False, f"you predicted {said}", hint)


def as_shape(answer, name: str):
    """``answer`` as a tuple of ints, or a Verdict saying why it is not a shape."""
    _, problem = read_filled(answer, name, example="a tuple, e.g. (2, 3)", numbers=False)
    if problem is not None:
        return None, problem
    if isinstance(answer, (str, bytes)) or not hasattr(answer, "__iter__"):
        return None, Verdict(False, f"{name} is a {type(answer).__name__}, not a shape",
                             "a shape is a tuple of whole numbers, e.g. (2, 3)")
    try:
        items = list(answer)
    except Exception:  # noqa: BLE001 - any odd object: not a shape
        items = None
    if items is not None and any(is_complex(n) for n in items):
        return None, Verdict(False, f"{name} contains complex numbers, not whole numbers",
                             "a shape is a tuple of whole numbers, e.g. (2, 3)")
    if items is None or any(whole_number(n) is None for n in items):
        return None, Verdict(False, f"{name} is not a tuple of whole numbers",
                             "a shape is a tuple of whole numbers, e.g. (2, 3)")
    return tuple(whole_number(n) for n in items), None


def read_choice(answer, choices):
    """The key of ``choices`` that ``answer`` names ("b", "(b)", "b.", "B)" or the choice's text), else ``None``.

    >>> read_choice(" (B). ", {"a": "yes", "b": "under a third"}), read_choice("Under a third", {"b": "under a third"})
    ('b', 'b')
    """
    if not isinstance(answer, str):
        return None
    text = " ".join(answer.strip().strip("'\"").lower().split())
    key = text.strip("().: ")
    if key in choices:
        return key
    for name, description in choices.items():
        said = description.lower()
        if text.rstrip(".") in (said, f"({name}) {said}", f"{name}) {said}", f"{name} {said}", f"{name}. {said}"):
            return name
    return None


def read_letter(answer, questions, question, whose: str, quote: str):
    """``(letter, None)`` for a prediction that names a choice of ``questions[question]``, else ``(None, Verdict)``."""
    _, problem = read_filled(answer, "the prediction", example='one letter, e.g. "a"', numbers=False)
    if problem is not None:
        return None, problem
    if not isinstance(answer, str):
        return None, Verdict(False, f"the prediction is {type(answer).__name__}, not a string",
                             'write one letter in quotes, e.g. "a"')
    if question not in questions:
        return None, Verdict(False, f"{question!r} is not one of {whose} questions",
                             f"use one of {', '.join(map(repr, questions))}")
    choice = read_choice(answer, questions[question]["choices"])
    if choice is None:
        letters = ", ".join(quote.format(key) for key in questions[question]["choices"])
        return None, Verdict(False, f"{answer[:40]!r} is not one of the choices", f"answer {letters}")
    return choice, None


def grade_named_choice(prediction, truth: str, choices: Mapping[str, str], **grading) -> Verdict:
    """:func:`grade_choice` of a prediction that names one of ``choices`` by its letter ("b", "(b)", "B.") or its text.

    >>> grade_named_choice("(B).", "b", {"a": "early", "b": "late"}).passed
    True
    """
    if isinstance(prediction, str):
        prediction = read_choice(prediction, choices) or prediction
    return grade_choice(prediction, truth, list(choices), **grading)


def grade_measurement(prediction, truth: float, *, atol: float, success: str, hint: str) -> Verdict:
    """:func:`grade_value` of a predicted measurement (within ``atol``); a miss is told whether the measurement is
    higher or lower, then ``hint``.

    >>> grade_measurement(0.2, 0.5, atol=0.1, success="measured 0.5.", hint="see the next cell").hint
    'the measurement is higher. see the next cell'
    """
    guess = float(prediction) if isinstance(prediction, (int, float, np.floating, np.integer)) else truth
    return grade_value(prediction, truth, name="prediction", rtol=0.0, atol=atol, success=success,
                       hint=f"the measurement is {'higher' if guess < truth else 'lower'}. {hint}")
