"""The grading machinery behind every ``check_*`` function: it never raises and never hangs.

The learner's code runs through :func:`call_quietly` (calling thread, warnings silenced, any exception returned
as a value; on the main thread where ``signal.setitimer`` exists, an alarm stops it after ``TIME_LIMIT`` s;
CPython 3.10 runs no signal handler inside a loop of pure arithmetic wrapped in a bare ``except:``, so there,
as for the notebook's interrupt button, only restarting the kernel stops that one).
Answers become numbers only through :func:`as_numbers`, which refuses text, complex numbers and huge integers.
Under IPython a checker shows its verdict as soon as it returns (:func:`shows_verdict`), so a ``print`` after it
in the cell does not hide it, and the verdict stays a value (``assert check_...(...)``, ``if check_...(...):``).
"""

from __future__ import annotations

import contextlib
import functools
import html
import inspect
import signal
import sys
import sysconfig
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._progress import record

__all__ = ["Verdict", "Case", "Wrong", "grade_function", "grade_value", "grade_choice", "register_solution", "solution",
           "SOLUTIONS", "TIME_LIMIT", "TimeLimit", "call_quietly", "as_numbers", "describe_error", "read_answer",
           "failed_call", "never_raises", "shows_verdict", "read_filled", "whole_number"]

TIME_LIMIT = 5.0  # seconds a learner's function may run before a checker stops waiting for it

#: The hint for values that differ in no known way: true in every notebook, whatever is above the exercise.
VALUES_DIFFER = ("call your function on this case yourself and print each intermediate array: compare each step "
                 "with the formula of the exercise")


def _ipython():
    """The running IPython shell, or None (plain Python, doctests), found without importing IPython."""
    ipython = sys.modules.get("IPython")
    return ipython.get_ipython() if ipython is not None else None


@dataclass(frozen=True)
class Verdict:
    """The answer of a checker: ``passed`` plus a short message (and a hint on failure)."""

    passed: bool
    message: str
    hint: str = ""
    _shown_in: object = field(default=None, init=False, repr=False, compare=False)  # the cell that showed it

    def show(self) -> Verdict:
        """Display the verdict now under IPython, once per cell (nothing in plain Python); return it unchanged."""
        shell = _ipython()
        if shell is not None and self._shown_in != shell.execution_count:
            from IPython.display import display

            display({"text/plain": repr(self), "text/html": self._repr_html_()}, raw=True)
            object.__setattr__(self, "_shown_in", shell.execution_count)  # frozen: the one field that changes
        return self

    _ipython_display_ = show  # a check on a cell's last line: already shown by its checker, not shown twice

    def __post_init__(self) -> None:
        record(self)  # progress(): the checker that made this verdict, noted on this machine only

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


def each_slip(variant: Callable[..., Callable[..., Any]], slips: Mapping[str, tuple[dict, str]]) -> list[Wrong]:
    """Every slip of ``slips`` as a known wrong answer: ``variant(**options)`` is the solution with the slip
    ``options``; ``slips`` maps a slip's name to ``(options, hint)``.

    >>> wrongs = each_slip(lambda power=1: lambda x: x ** power, {"squared": ({"power": 2}, "no square")})
    >>> wrongs[0].hint, wrongs[0].fn(3)
    ('no square', 9)
    """
    return [Wrong(variant(**options), hint) for options, hint in slips.values()]


def two_slips(reference: Callable[..., Any], slips: Mapping[str, tuple[dict, str]]) -> list[Wrong]:
    """Every slip of ``slips`` alone, then every two at once, as known wrong answers of ``reference``.

    ``reference(*args, **kwargs, **options)`` computes the right answer with its default options and a slip
    with others: ``slips`` maps a slip's name to ``(options, hint)``. Two slips at once get both hints, numbered,
    so a learner who made two is told both (a single slip's hint would send them to fix one and find the
    numbers still wrong). Slips that set the same option are not combined.

    >>> wrongs = two_slips(lambda x, power=1, plus=0: x ** power + plus,
    ...                    {"squared": ({"power": 2}, "no square"), "shifted": ({"plus": 1}, "no shift")})
    >>> [w.hint for w in wrongs]
    ['no square', 'no shift', 'two slips at once: (1) no square; (2) no shift']
    >>> wrongs[2].fn(3)
    10
    """
    def variant(**options):
        return lambda *args, **kwargs: reference(*args, **{**kwargs, **options})

    pairs = [Wrong(variant(**a, **b), f"two slips at once: (1) {hint_a}; (2) {hint_b}")
             for i, (a, hint_a) in enumerate(slips.values()) for b, hint_b in list(slips.values())[i + 1:]
             if not set(a) & set(b)]
    return each_slip(variant, slips) + pairs


class TimeLimit(BaseException):
    """Still running after ``TIME_LIMIT`` s (a ``BaseException``: ``except Exception:`` does not catch it)."""


class NotNumbers(ValueError):
    """An answer that is not real numbers; the message says what it is instead."""


@contextlib.contextmanager
def _silenced():
    """No warnings and no floating-point errors, even after ``np.seterr(all="raise")``."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def _on_alarm(signum, frame):
    """SIGALRM (every 0.1 s after ``TIME_LIMIT``): raise :class:`TimeLimit` now and at each later line of the
    learner's code (so a bare ``except:`` cannot swallow it), never in :func:`call_quietly`'s own frame."""
    if frame is not None and frame.f_code in _OWN_CODE:
        return
    sys.settrace(_stop_at_each_line)
    while frame is not None and frame.f_code not in _OWN_CODE:  # the frames already running
        frame.f_trace = _stop_at_each_line
        frame = frame.f_back
    raise TimeLimit


#: Frames of installed packages (a test runner's garbage-collector callback, say) that may run while the learner's
#: code is being stopped: a TimeLimit raised there would surface as an "exception ignored", not as the verdict.
_INSTALLED = tuple({sysconfig.get_paths()[key] for key in ("purelib", "platlib")})


def _stop_at_each_line(frame, event, arg):
    if frame.f_code in _OWN_CODE or frame.f_code.co_filename.startswith(_INSTALLED):
        return None
    if event == "line":
        raise TimeLimit
    return _stop_at_each_line


def call_quietly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` as ``(result, None)``, or ``(None, error)`` for any ``BaseException`` it raised.

    >>> call_quietly(divmod, 7, 2)
    ((3, 1), None)
    >>> call_quietly(int, "seven")[1]
    ValueError("invalid literal for int() with base 10: 'seven'")
    """
    with _silenced():
        try:
            previous_handler = signal.signal(signal.SIGALRM, _on_alarm) if hasattr(signal, "setitimer") else None
        except ValueError:  # not the main thread: no alarm can reach this call
            previous_handler = None
        previous_trace = sys.gettrace()
        if previous_handler is not None:
            signal.setitimer(signal.ITIMER_REAL, TIME_LIMIT, 0.1)  # after TIME_LIMIT s, then every 0.1 s
        try:
            return fn(*args, **kwargs), None
        except BaseException as err:  # noqa: BLE001 - a learner's bug (or interrupt) must become a verdict
            return None, err
        finally:
            if previous_handler is not None:
                signal.setitimer(signal.ITIMER_REAL, 0)
                sys.settrace(previous_trace)
                signal.signal(signal.SIGALRM, previous_handler)


_OWN_CODE = {call_quietly.__code__}


def describe_error(error: BaseException) -> str:
    """What went wrong in the learner's code, in a short sentence starting in lower case.

    >>> describe_error(ZeroDivisionError("division by zero"))
    'your function raised ZeroDivisionError: division by zero'
    """
    if isinstance(error, TimeLimit):
        return f"your function did not return within {TIME_LIMIT:g} s: is there a loop that never ends?"
    if isinstance(error, NotImplementedError):
        return "not implemented yet: replace the `raise NotImplementedError` line with your code"
    if isinstance(error, KeyboardInterrupt):
        return "you stopped your function (the ■ button, or Ctrl+C) before it returned"
    if isinstance(error, SystemExit):
        return ("your function called sys.exit() (or exit()), which stops Python instead of returning: "
                "return the result instead")
    return f"your function raised {type(error).__name__}: {error}"


def as_numbers(value) -> np.ndarray:
    """``value`` as a float64 array of real numbers, or :class:`NotNumbers` saying what it is instead.

    >>> as_numbers([1, 2.5])
    array([1. , 2.5])
    >>> as_numbers(1 + 1j)
    Traceback (most recent call last):
    ...
    attn_helpers.checks._grader.NotNumbers: complex numbers (with an imaginary part, like 1j), not real numbers
    """
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "USVMm":
            raise NotNumbers(f"{type(value).__name__}, not an array of numbers")
        if arr.dtype.kind == "O":
            try:
                arr = arr.astype(np.float64)
            except TypeError:  # complex numbers in a list of Python objects
                arr = arr.astype(np.complex128)
        if arr.dtype.kind == "c":
            if np.any(arr.imag != 0):
                raise NotNumbers("complex numbers (with an imaginary part, like 1j), not real numbers")
            arr = arr.real
        return arr.astype(np.float64)
    except OverflowError:
        raise NotNumbers("a number too large to compute with (beyond 1e308): "
                         "did you type ** (a power) where you meant * (a product)?") from None
    except (TypeError, ValueError) as err:
        if isinstance(err, NotNumbers):
            raise
        raise NotNumbers(f"{type(value).__name__}, not an array of numbers") from None


def read_answer(value, name: str = "value"):
    """``(array, "")`` with ``value`` as float64 numbers, or ``(None, message)`` saying why it is not numbers.

    >>> read_answer("6", name="T")
    (None, 'T is str, not an array of numbers')
    """
    return _as_result_array(value, subject=f"{name} is")


def whole_number(value):
    """``value`` as an ``int`` when it is a whole number in any form (``3``, ``np.int64(3)``, ``3.0``,
    ``np.float32(3)``), else ``None`` (``True``, ``3.5``, ``3 + 0j``, ``"3"``, an array of several numbers).

    Every checker that reads a count, a position or an index reads it through this, so that the right number in
    a NumPy form (what ``np.argmax`` or ``.sum()`` return) is never refused.

    >>> whole_number(np.float32(3)), whole_number(np.int64(2)), whole_number(2.5), whole_number(True)
    (3, 2, None, None)
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    return int(value) if np.isfinite(value) and float(value).is_integer() else None


def read_filled(value, name: str, *, example: str, hint: str = "", shape: tuple | None = None,
                numbers: bool = True):
    """A checker's preamble: ``(answer, None)`` when ``value`` is filled in and, with ``numbers``, real finite
    numbers (returned as a float64 array) of ``shape``; else ``(None, Verdict)`` saying which of these it is not.

    ``example`` completes "replace the ... with"; ``hint`` is the hint when ``value`` is not numbers or not of
    ``shape`` (default: write ``example``). With ``numbers=False`` only the filling in is checked.

    >>> read_filled(..., "my_W_k", example="a 2 x 2 array")[1]
    ❌ Not yet: my_W_k is not filled in yet
    💡 Hint: replace the ... with a 2 x 2 array
    >>> read_filled([[1, 2]], "my_W_k", example="a 2 x 2 array", shape=(2, 2))[1].message
    'my_W_k has shape (1, 2), expected (2, 2)'
    """
    if value is None or value is Ellipsis:
        return None, Verdict(False, f"{name} is not filled in yet", f"replace the ... with {example}")
    if not numbers:
        return value, None
    got, problem = read_answer(value, name)
    hint = hint or f"write {example}"
    if problem:
        return None, Verdict(False, problem, hint)
    if shape is not None and got.shape != tuple(shape):
        return None, Verdict(False, f"{name} has shape {got.shape}, expected {tuple(shape)}", hint)
    if not np.isfinite(got).all():
        return None, Verdict(False, f"{name} contains NaN or inf",
                             "use finite numbers: a NaN comes from 0/0 or inf - inf, an inf from an overflow")
    return got, None


def edited_in_place(value, name: str, originals: Mapping[str, Any], defined_in: str):
    """A Verdict when ``value`` is not a copy but one of the notebook's own arrays (``my_W_k = W_k``, then
    ``my_W_k[0, 0] = 2``): the edit changed that array too, and the cells that use it print other numbers when run
    again. ``originals`` maps each such name in the learner's namespace (``"W_k"``, ``'creature["W_k"]'``) to the
    numbers the notebook gave it; ``defined_in`` names the cell that defines them. None when ``value`` is a copy.

    >>> W_k = np.zeros((2, 2)); mine = W_k; mine[0, 0] = 2.0
    >>> edited_in_place(mine, "my_W_k", {"W_k": np.zeros((2, 2))}, "the cell of step 1") is None
    True
    """
    shell = _ipython()
    space = getattr(shell, "user_ns", None) or {}
    for label, original in originals.items():
        found = space.get(label.split("[")[0])
        if "[" in label and isinstance(found, Mapping):
            found = found.get(label.split('"')[1])
        if not isinstance(found, np.ndarray) or found.shape != np.shape(original) or np.array_equal(found, original):
            continue
        if isinstance(value, np.ndarray) and np.shares_memory(found, value):
            return Verdict(False, f"{name} is not a copy: it is the notebook's {label} itself, so your change "
                                  f"changed {label} too (cells that use {label} now print other numbers)",
                           f"run {defined_in} again to get {label} back, then start from {label}.copy()")
        return Verdict(False, f"the notebook's {label} no longer holds its own numbers (an earlier try changed it), "
                              f"so this check and the cells that use {label} would not agree",
                       f"run {defined_in} again to get {label} back, then this cell")
    return None


def _as_result_array(result, subject="your function returned"):
    """The learner's result as a float array, or a string saying why it is not one."""
    if result is None:
        return None, f"{subject} None. Did you forget the `return` statement?"
    if isinstance(result, tuple) and len(result) != 1:
        return None, f"{subject} a tuple of {len(result)} things; return one array"
    arr, error = call_quietly(as_numbers, result)
    if isinstance(error, NotNumbers):
        return None, f"{subject} {error}"
    if isinstance(error, TimeLimit):
        return None, f"{subject} {type(result).__name__}, which could not be read as numbers within {TIME_LIMIT:g} s"
    if error is not None:
        return None, (f"{subject} {type(result).__name__}, which could not be read as numbers "
                      f"({type(error).__name__}: {error})")
    return arr, ""


def _close(a, b, rtol, atol) -> bool:
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=False))


def _never_loud(grader):
    """Run a grader silenced: a learner's ``np.seterr(all="raise")`` must not make the references raise."""

    @functools.wraps(grader)
    def quiet_grader(*args, **kwargs):
        with _silenced():
            return grader(*args, **kwargs)

    return quiet_grader


def shows_verdict(checker):
    """Decorator for a notebook's ``check_*``: under IPython its verdict is displayed as it returns (see
    :meth:`Verdict.show`); the verdicts it builds on the way are not."""

    @functools.wraps(checker)
    def showing_checker(*args, **kwargs):
        verdict = checker(*args, **kwargs)
        return verdict.show() if isinstance(verdict, Verdict) else verdict

    return showing_checker


def never_raises(message: str, hint: str):
    """Decorator: a checker whose own logic raises answers ``Verdict(False, f"{message} ({ErrorType})", hint)``;
    it shows its verdict like :func:`shows_verdict`.

    >>> @never_raises("could not use this value", "give a number")
    ... def check_half(x):
    ...     return Verdict(x / 2 == 1, "x / 2 is 1")
    >>> check_half("2")
    ❌ Not yet: could not use this value (TypeError)
    💡 Hint: give a number
    """

    def decorate(checker):
        @functools.wraps(checker)
        def safe_checker(*args, **kwargs):
            try:
                return checker(*args, **kwargs)
            except Exception as err:  # noqa: BLE001 - a checker never raises
                return Verdict(False, f"{message} ({type(err).__name__})", hint)

        return shows_verdict(safe_checker)

    return decorate


@_never_loud
def grade_function(learner_fn, reference_fn: Callable[..., Any], cases: Sequence[Case], *,
                   wrongs: Iterable[Wrong] = (), what: str = "function", success: str = "", rtol: float = 1e-4,
                   atol: float = 1e-5, shape_hint: str = "", hints: Mapping[str, str] | None = None,
                   hint: str = "") -> Verdict:
    """Grade a learner's function against ``reference_fn`` on ``cases``: on the first failing case, say whether
    it raised, returned no array, NaN, a known wrong answer (``wrongs``), a wrong shape or wrong values.

    ``hints`` gives the lesson's own hint for ``"matmul"`` (inner sizes disagree), ``"index"`` (an IndexError),
    ``"tuple"`` and ``"nan"``;
    ``hint``, the one for values that differ in no known way (default: :data:`VALUES_DIFFER`)."""
    hints = dict(hints or {})
    if not callable(learner_fn):
        return Verdict(False, f"expected your {what} (a function), got {type(learner_fn).__name__}",
                       "pass the function itself, without calling it: check(my_function), not check(my_function())")
    wrongs = tuple(wrongs)
    for i, case in enumerate(cases):
        where = case.label or f"test case {i + 1}"
        args = tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in case.args)  # copies
        result, error = call_quietly(learner_fn, *args, **(case.kwargs or {}))
        if error is not None:
            return failed_call(error, where, hints)
        got, problem = _as_result_array(result)
        if problem:
            return Verdict(False, f"on {where}, {problem}", hints.get("tuple", "") if "tuple" in problem else "")
        expected = np.asarray(reference_fn(*case.args, **(case.kwargs or {})), dtype=np.float64)
        if got.shape == expected.shape and _close(got, expected, rtol, atol):
            continue
        if np.isnan(got).any() or np.isinf(got).any():
            return Verdict(False, f"on {where}, your result contains NaN or inf", hints.get("nan") or (
                "a NaN comes from 0/0 or inf - inf; an inf from a division by 0 or an exp() that overflows (subtract "
                "the maximum before exp()): print your intermediate arrays on this case to find the first one"))
        for wrong in wrongs:
            try:
                alt = np.asarray(wrong.fn(*case.args, **(case.kwargs or {})), dtype=np.float64)
            except Exception:  # noqa: BLE001 - a known mistake that does not apply to this case
                continue
            if _close(got, alt, rtol, atol):
                return Verdict(False, f"on {where}, your result matches a common mistake", wrong.hint)
        if got.shape != expected.shape:
            about_shape = shape_hint or "print the shapes of your intermediate arrays"
            if got.shape == expected.shape[::-1] and got.ndim == 2:
                about_shape = ("your result looks transposed (rows and columns swapped): check each product's order "
                               "and each .T")
            return Verdict(False, f"on {where}, your result has shape {got.shape}, expected {expected.shape}",
                           about_shape)
        worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape) if got.ndim else ()
        return Verdict(False, f"on {where}, the values differ (at index {tuple(int(j) for j in worst)}: "
                              f"got {got[worst]:.4f}, expected {expected[worst]:.4f})", hint or VALUES_DIFFER)
    return Verdict(True, success or f"your {what} passes all {len(cases)} test cases.")


def failed_call(error: BaseException, where: str, hints: Mapping[str, str] | None = None) -> Verdict:
    """The verdict when the learner's function raised ``error`` (or did not return) on case ``where``."""
    problem = describe_error(error)
    if "not implemented" in problem:
        hint = "write the body of the function, then run this cell again"
    elif "did not return within" in problem or "you stopped your function" in problem:
        hint = ("check that each loop ends (a `while` condition that becomes False, a counter that grows); "
                "if a cell keeps running, stop it with the ■ (interrupt) button")
    elif "sys.exit()" in problem:
        hint = "end your function with `return result`; sys.exit() and exit() are for scripts, not notebook functions"
    elif "matmul" in problem or "not aligned" in problem:  # numpy's words for mismatched inner dimensions
        hint = (hints or {}).get("matmul") or ("a matrix product's inner dimensions must agree: (a, b) @ (b, c). "
                                               "Print the shapes and check for a missing .T")
    elif "as a data type" in problem or "values for argument 'dtype'" in problem:  # np.zeros(T, d): d read as a dtype
        hint = ("np.zeros(T, d) (or np.ones) reads its second argument as a data type: give the shape as ONE tuple, "
                "np.zeros((T, d))")
    elif type(error).__name__ == "AxisError":  # numpy's, wherever its version keeps it
        hint = "that axis does not exist: an array of shape (T, d) has axis 0 (rows) and 1 (columns), or -2 and -1"
    elif isinstance(error, IndexError):
        hint = (hints or {}).get("index") or ("an index or a loop went past the end of an axis: check the size each "
                                              "loop runs over (X.shape[0] counts the rows, X.shape[1] the columns)")
    else:
        hint = ("the error above names the problem: call your function on this case yourself and print the shape "
                "of each intermediate array to find the line")
    return Verdict(False, f"on {where}, {problem}", hint)


@_never_loud
def grade_value(value, expected, *, name: str = "value", wrongs: Sequence[tuple[Any, str]] = (),
                rtol: float = 1e-4, atol: float = 1e-4, success: str = "", hint: str = "") -> Verdict:
    """Grade a value the learner computed, with hints for known wrong values (and ``hint`` for any other)."""
    yours = name if name.startswith("your ") else f"your {name}"
    got, problem = read_filled(value, name, example=yours, hint=f"give {name} as numbers, without quotes")
    if problem is not None:
        return problem
    expected = np.asarray(expected, dtype=np.float64)
    if _close(got, expected, rtol, atol):
        return Verdict(True, success or f"{name} is right.")
    for wrong_value, wrong_hint in wrongs:
        alt = np.asarray(wrong_value, dtype=np.float64)
        if _close(got, alt, rtol, atol):
            return Verdict(False, f"{name} matches a common mistake", wrong_hint)
    if got.shape != expected.shape:
        return Verdict(False, f"{name} has shape {got.shape}, expected {expected.shape}",
                       "check which axes you kept; print the shape of each step")
    return Verdict(False, f"{name} is not right yet", hint or "redo the computation one step at a time, printing "
                                                              "each intermediate number")


def grade_choice(answer, expected: str, options: Sequence[str], *, name: str = "prediction",
                 wrongs: Mapping[str, str] | None = None, hint: str = "", success: str = "") -> Verdict:
    """Grade a prediction naming one of ``options``: ``wrongs[answer]`` or else ``hint`` for a wrong pick.

    >>> grade_choice("b", "b", ["a", "b"]).passed, grade_choice(..., "b", ["a", "b"]).passed
    (True, False)
    """
    options = [str(option) for option in options]
    _, problem = read_filled(answer, name, example=f"your {name}, in quotes, e.g. {options[0]!r}", numbers=False)
    if problem is not None:
        return problem
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
