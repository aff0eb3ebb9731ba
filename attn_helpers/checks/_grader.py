"""The grading machinery behind every ``check_*`` function.

A checker never raises, whatever the learner passes: it runs the learner's function
on a few cases, compares with the reference, and answers with a :class:`Verdict`
that says what is right or gives a hint about what is wrong (wrong shape, wrong
axis, forgot to scale, NaN, ...).
"""

from __future__ import annotations

import html
import inspect
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Verdict", "Case", "Wrong", "grade_function", "grade_value", "grade_choice", "register_solution", "solution",
           "SOLUTIONS"]


@dataclass(frozen=True)
class Verdict:
    """The answer of a checker: ``passed`` plus a short message (and a hint on failure)."""

    passed: bool
    message: str
    hint: str = ""

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        if self.passed:
            return f"✅ Correct! {self.message}"
        text = f"❌ Not yet: {self.message}"
        return f"{text}\n💡 Hint: {self.hint}" if self.hint else text

    def _repr_html_(self) -> str:
        colour = "#1b7837" if self.passed else "#b2182b"
        lines = html.escape(repr(self)).replace("\n", "<br>")
        return f'<div style="border-left:4px solid {colour};padding:4px 10px;font-size:1.05em">{lines}</div>'


@dataclass(frozen=True)
class Case:
    """One test case: the arguments for the learner's function and a short description."""

    args: tuple
    kwargs: dict | None = None
    label: str = ""


@dataclass(frozen=True)
class Wrong:
    """A known wrong answer: when the learner's result matches ``fn(*args)``, show ``hint``."""

    fn: Callable[..., Any]
    hint: str


def _as_result_array(result):
    """The learner's result as a float array, or a string saying why it is not one."""
    if result is None:
        return None, "your function returned None. Did you forget the `return` statement?"
    if isinstance(result, tuple) and len(result) != 1:
        return None, f"your function returned a tuple of {len(result)} things; return one array"
    try:
        arr = np.asarray(result, dtype=np.float64)
    except (TypeError, ValueError):
        return None, f"your function returned {type(result).__name__}, which is not an array of numbers"
    return arr, ""


def _close(a, b, rtol, atol) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _describe(case: Case, index: int) -> str:
    return case.label or f"test case {index + 1}"


def _call(fn, case: Case):
    """Call ``fn`` on copies of the case's arrays, never raising; returns (result, error message)."""
    args = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            return fn(*args, **(case.kwargs or {})), ""
        except NotImplementedError:
            return None, "not implemented yet: replace the `raise NotImplementedError` line with your code"
        except Exception as err:  # noqa: BLE001 - a learner's bug must become a hint, never a traceback
            return None, f"your function raised {type(err).__name__}: {err}"


def grade_function(
    learner_fn,
    reference_fn: Callable[..., Any],
    cases: Sequence[Case],
    *,
    wrongs: Iterable[Wrong] = (),
    what: str = "function",
    success: str = "",
    rtol: float = 1e-4,
    atol: float = 1e-5,
    shape_hint: str = "",
    hints: Mapping[str, str] | None = None,
) -> Verdict:
    """Grade a learner's function against ``reference_fn`` on ``cases``.

    Order of diagnosis for the first failing case: not callable / raised / returned
    None -> NaN or inf in the result -> a known wrong answer (``wrongs``) -> wrong
    shape (transposed? a missing batch axis?) -> wrong values.

    ``hints`` replaces the generic hint for a kind of failure with one in the
    lesson's own terms: ``"matmul"`` (a matrix product whose inner sizes do not
    agree) and ``"tuple"`` (the function returned a tuple, not one array).
    """
    hints = dict(hints or {})
    if not callable(learner_fn):
        return Verdict(False, f"expected your {what} (a function), got {type(learner_fn).__name__}",
                       "pass the function itself, without calling it: check(my_function), not check(my_function())")
    wrongs = tuple(wrongs)
    for i, case in enumerate(cases):
        where = _describe(case, i)
        result, problem = _call(learner_fn, case)
        if problem:
            return Verdict(False, f"on {where}, {problem}", _raised_hint(problem, hints))
        got, problem = _as_result_array(result)
        if problem:
            return Verdict(False, f"on {where}, {problem}", hints.get("tuple", "") if "tuple" in problem else "")
        expected = np.asarray(reference_fn(*case.args, **(case.kwargs or {})), dtype=np.float64)
        if got.shape == expected.shape and _close(got, expected, rtol, atol):
            continue
        if np.isnan(got).any() or np.isinf(got).any():
            return Verdict(False, f"on {where}, your result contains NaN or inf",
                           "an exp() of large numbers overflows (subtract the maximum first), "
                           "or 0/0 happened (a row with nothing to sum)")
        for wrong in wrongs:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                try:
                    alt = np.asarray(wrong.fn(*case.args, **(case.kwargs or {})), dtype=np.float64)
                except Exception:  # noqa: BLE001
                    continue
            if _close(got, alt, rtol, atol):
                return Verdict(False, f"on {where}, your result matches a common mistake", wrong.hint)
        if got.shape != expected.shape:
            hint = shape_hint or "print the shapes of your intermediate arrays"
            if got.shape == expected.shape[::-1] and got.ndim == 2:
                hint = "your result looks transposed: check the order of the matrix product (rows are queries)"
            return Verdict(False, f"on {where}, your result has shape {got.shape}, expected {expected.shape}", hint)
        worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape) if got.ndim else ()
        return Verdict(
            False,
            f"on {where}, the values differ (at index {tuple(int(j) for j in worst)}: "
            f"got {got[worst]:.4f}, expected {expected[worst]:.4f})",
            "compare your code with the equation above, one term at a time",
        )
    return Verdict(True, success or f"your {what} passes all {len(cases)} test cases.")


def _raised_hint(problem: str, hints: Mapping[str, str]) -> str:
    if "not implemented" in problem:
        return "write the body of the function, then run this cell again"
    if "matmul" in problem or "not aligned" in problem:  # numpy's words for mismatched inner dimensions
        return hints.get("matmul") or ("a matrix product's inner dimensions must agree: (a, b) @ (b, c). "
                                       "Print the shapes and check for a missing .T")
    if "axis" in problem:
        return "check the axis argument: attention weights normalise over the last axis (axis=-1)"
    return "read the error message, then test your function on the tiny example above"


def grade_value(value, expected, *, name: str = "value", wrongs: Sequence[tuple[Any, str]] = (),
                rtol: float = 1e-4, atol: float = 1e-4, success: str = "") -> Verdict:
    """Grade a value the learner computed, with hints for known wrong values."""
    if value is None or value is Ellipsis:
        return Verdict(False, f"{name} is not filled in yet", f"replace the ... with your {name}")
    got, problem = _as_result_array(value)
    if problem:
        return Verdict(False, problem.replace("your function returned", f"{name} is"))
    expected = np.asarray(expected, dtype=np.float64)
    if _close(got, expected, rtol, atol):
        return Verdict(True, success or f"{name} is right.")
    if np.isnan(got).any():
        return Verdict(False, f"{name} contains NaN", "look for a division by zero or an overflow in exp()")
    for wrong_value, hint in wrongs:
        alt = np.asarray(wrong_value, dtype=np.float64)
        if _close(got, alt, rtol, atol):
            return Verdict(False, f"{name} matches a common mistake", hint)
    if got.shape != expected.shape:
        return Verdict(False, f"{name} has shape {got.shape}, expected {expected.shape}",
                       "check which axes you kept; print the shape of each step")
    return Verdict(False, f"{name} is not right yet", "redo the computation step by step on the tiny example")


def grade_choice(answer, expected: str, options: Sequence[str], *, name: str = "prediction",
                 wrongs: Mapping[str, str] | None = None, hint: str = "", success: str = "") -> Verdict:
    """Grade a prediction that names one of ``options`` (a token, say), with a hint for known wrong picks.

    ``expected`` is computed by the caller from the core, never typed in. ``hint`` answers
    any wrong option that ``wrongs`` does not name.

    Examples
    --------
    >>> grade_choice("b", "b", ["a", "b"]).passed, grade_choice(..., "b", ["a", "b"]).passed
    (True, False)
    """
    options = [str(option) for option in options]
    if answer is None or answer is Ellipsis:
        return Verdict(False, f"{name} is not filled in yet", f"replace the ... with your {name}, in quotes, "
                                                                f"e.g. {options[0]!r}")
    if not isinstance(answer, str):
        return Verdict(False, f"{name} is {type(answer).__name__}, not a string",
                       f"write one of {', '.join(map(repr, options))}, in quotes")
    by_lower = {option.lower(): option for option in options}
    answer = by_lower.get(answer.strip().strip("'\"").lower(), answer)  # "Journey " counts as "journey"
    if answer not in options:
        return Verdict(False, f"{answer[:40]!r} is not one of the choices",
                       f"write one of {', '.join(map(repr, options))}")
    if answer == expected:
        return Verdict(True, success or f"{name}: {answer!r} is right.")
    return Verdict(False, f"{name}: not {answer!r}", dict(wrongs or {}).get(answer, hint))


# ---------------------------------------------------------------------------------------------
# Solutions: reference implementations, hidden until a learner asks for one.

SOLUTIONS: dict[str, Callable[..., Any]] = {}


def register_solution(name: str):
    """Decorator: make ``fn`` the solution shown by ``solution(name)``."""

    def decorate(fn):
        previous = SOLUTIONS.get(name)
        if previous is not None and (previous.__module__, previous.__qualname__) != (fn.__module__, fn.__qualname__):
            raise ValueError(f"two solutions are named {name!r}: {previous.__module__} and {fn.__module__}")
        SOLUTIONS[name] = fn
        return fn

    return decorate


class _Solution:
    def __init__(self, name: str, source: str):
        self.name, self.source = name, source

    def __repr__(self) -> str:
        return f"Solution to {self.name!r} is hidden. To reveal it: print(solution({self.name!r}).source)"

    def _repr_html_(self) -> str:
        return (f"<details><summary>🔒 Solution to <code>{html.escape(self.name)}</code>: click to reveal</summary>"
                f"<pre>{html.escape(self.source)}</pre></details>")


def solution(name: str):
    """The solution to exercise ``name``, folded away until you click it (or print ``.source``)."""
    if name not in SOLUTIONS:
        known = ", ".join(sorted(SOLUTIONS))
        return f"No solution named {name!r}. Known: {known}"
    lines = inspect.getsource(SOLUTIONS[name]).splitlines(keepends=True)
    return _Solution(name, "".join(line for line in lines if not line.startswith("@register_solution")))
