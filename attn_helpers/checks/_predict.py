"""Predict-then-run questions: read a learner's prediction (a set of tokens, a number, a shape) and compare.

The learner writes a prediction first, runs the cell that shows the answer, and a checker compares the
two with a hint aimed at the typical wrong prediction. These helpers turn whatever the learner typed
into something comparable, or into a :class:`Verdict` saying what to type instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ._grader import Verdict

__all__ = ["as_token_set", "grade_token_set", "as_shape", "is_complex"]


def is_complex(item) -> bool:
    """Whether ``item`` is a complex number (or a complex array), checked without converting it.

    >>> is_complex(2 + 1j), is_complex(np.array([1j])), is_complex(2)
    (True, True, False)
    """
    return isinstance(item, (complex, np.complexfloating)) or (isinstance(item, np.ndarray) and item.dtype.kind == "c")


def _one_token(item, tokens: Sequence[str]):
    if isinstance(item, str):
        return tokens.index(item) if item in tokens else None
    if isinstance(item, (bool, np.bool_)):
        return None
    if isinstance(item, (int, np.integer)) and 0 <= int(item) < len(tokens):
        return int(item)
    return None


def as_token_set(answer, tokens: Sequence[str], name: str):
    """``answer`` (tokens by name or position, one or several) as a set of positions, or a Verdict saying why not."""
    tokens = list(tokens)
    example = f"for example {{{tokens[0]!r}, {tokens[-1]!r}}} or [0, {len(tokens) - 1}]"
    if answer is None or answer is Ellipsis:
        return None, Verdict(False, f"{name} is not filled in yet", f"replace the ... with your prediction, {example}")
    items = [answer] if isinstance(answer, (str, int, np.integer)) else answer
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
    """Compare a predicted set of tokens with the set of positions ``truth``; on a miss, say what was overlooked.

    The hint is ``hints[said]`` for a prediction with a hint of its own (``said`` names its tokens as the
    message does, in sentence order: ``"I, AI"``); else ``extra`` when it names tokens outside ``truth``;
    else ``missed``. ``{extra}`` and ``{missed}`` in those two stand for the names of those tokens.

    Examples
    --------
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
    if answer is None or answer is Ellipsis:
        return None, Verdict(False, f"{name} is not filled in yet", "replace the ... with a tuple, e.g. (2, 3)")
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
    if items is None or not all(isinstance(n, (int, np.integer)) and not isinstance(n, bool) for n in items):
        return None, Verdict(False, f"{name} is not a tuple of whole numbers",
                             "a shape is a tuple of whole numbers, e.g. (2, 3)")
    return tuple(int(n) for n in items), None
