"""Grading cases a learner cannot see: fresh inputs, drawn for each student, beside the notebook's own.

    python classroom_kit/grade_cases.py EXERCISE SEED      # the new cases a mark was decided on (e.g. softmax_any_axis
                                                   # "ada/03_softmax"), as the feedback names them

A checker's cases are visible in the learner's own notebook, so a function that looks its answers up in a table
of them would pass it. When grading (classroom_kit/grade.py), the notebook's checker runs first and keeps every hint it
gives; when it passes, the learner's function is also called on new cases and compared with the registered
solution, within the checker's own tolerance. The new cases are the visible ones redrawn (:func:`redrawn`):
the checker is run once on the solution to see which inputs it passes, and each is drawn again with the same
shapes, dtypes, masks and special values (``-inf``, all-zero rows, rows in the 1000s, rows of probabilities,
token ids from the same vocabulary). Exercises whose inputs are only sizes draw new sizes instead (``FRESH``).
The random generator is seeded by HMAC-SHA256 of the course's secret (:func:`course_secret`: 32 random bytes in
the course folder, mode 600, made once; never released, never in feedback) over the student, the assignment and
the exercise: a student who knows all three cannot recompute the cases. The feedback names the student/assignment
and a short public case id (:func:`case_id`), so the teacher reproduces a mark with
``python classroom_kit/grade_cases.py EXERCISE STUDENT/ASSIGNMENT --course DIR`` (which prints the id too). Exercises
that ask for a value (a number, a choice) cannot take new cases (``EXEMPT``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import hmac
import inspect
import os
import secrets
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from attn_helpers import checks
from attn_helpers.checks import _grader
from attn_helpers.checks._grader import SOLUTIONS, Case, TimeLimit, Verdict, call_quietly, describe_error
from attn_helpers.checks.nb13 import _half_state

__all__ = ["FRESH", "EXEMPT", "with_hidden_cases", "visible_calls", "fresh_cases", "seed_of", "case_id",
           "course_secret"]


def redrawn(visible: list[Case], rng, at_least: int = 6) -> list[Case]:
    """Each visible case drawn again (:func:`_like`), as many times as it takes to make ``at_least`` cases."""
    rounds = -(-at_least // max(len(visible), 1))
    return [Case(_like(case.args, rng), {k: _like(v, rng) for k, v in (case.kwargs or {}).items()})
            for _ in range(rounds) for case in visible]


def _head_sizes(visible, rng):  # attention_scale(d_model, num_heads): head sizes other than the notebook's 64
    heads = rng.choice([1, 2, 3, 4, 6, 8, 12, 16], size=6)
    return [Case((int(h * rng.integers(2, 129)), int(h))) for h in heads]


def _lengths(visible, rng):  # build_causal_mask(T)
    return [Case((int(T),)) for T in rng.choice(np.arange(2, 33), size=5, replace=False)]


def _positions(visible, rng):  # sinusoidal_encoding(T, d_model): d_model even, as in the lesson
    return [Case((int(rng.integers(1, 81)), int(2 * rng.integers(1, 17)))) for _ in range(5)]


def _configs(visible, rng):  # my_gpt2_parameter_count(config): new sizes for every key of the visible configs
    cases = []
    for case in visible:
        heads = int(rng.choice([1, 2, 4, 8, 12, 16]))
        sizes = {"num_layers": int(rng.integers(1, 49)), "d_model": heads * int(rng.integers(1, 129)),
                 "num_heads": heads, "vocab_size": int(rng.integers(2, 60_000)),
                 "context_length": int(rng.integers(1, 4097))}
        cases.append(Case(({**case.args[0], **sizes},)))
    return cases


def _half_states(visible, rng):  # merge_softmax_states(m_a, l_a, m_b, l_b): the states of two halves of a row
    cases = []
    for _ in range(8):  # rows near 0 or in the 1000s; a half fully masked (m = -inf, l = 0) now and then
        offset = float(rng.choice([0.0, 1000.0]))
        halves = [np.full(int(rng.integers(1, 5)), -np.inf) if rng.random() < 0.2
                  else offset + 2 * rng.standard_normal(int(rng.integers(1, 5))) for _ in range(2)]
        cases.append(Case(tuple(float(v) for half in halves for v in _half_state(half))))
    return cases


def _splits(visible, rng):  # attention_by_splits(query, keys, values, num_splits): new sizes, small and large scores
    cases = []
    for _ in range(6):
        T, d_k, d_v = (int(n) for n in rng.integers(1, 10, size=3))
        spread = float(rng.choice([0.5, 1.5, 30.0]))  # 30: scores in the tens, exp overflows unshifted
        cases.append(Case((spread * rng.standard_normal(d_k), rng.standard_normal((T, d_k)),
                           rng.standard_normal((T, d_v)), int(rng.integers(1, T + 1)))))
    return cases


def _q4_1_blocks(visible, rng):  # q4_1_block(block): 20 bytes, a float16 scale and minimum, then 16 bytes of codes
    cases = []
    for _ in range(6):
        scale_and_min = np.array([rng.uniform(1e-3, 0.5), rng.uniform(-4.0, 1.0)], dtype=np.float16)
        codes = rng.integers(0, 256, 16, dtype=np.uint8)
        cases.append(Case((np.concatenate([scale_and_min.view(np.uint8), codes]),)))
    return cases


def _kv_heads(visible, rng):  # share_kv_heads(keys, num_heads): h_kv key/value heads, num_heads a multiple of h_kv
    cases = []
    for _ in range(6):
        kv_heads, group, T, d_h = (int(n) for n in rng.integers(1, 6, size=4))
        cases.append(Case((rng.standard_normal((kv_heads, T, d_h)), kv_heads * group)))
    return cases


def _repeats(visible, rng):  # induction_score(weights, period): causal rows of weights, T >= 2 * period
    cases = []
    for _ in range(6):
        period = int(rng.integers(2, 8))
        T = 2 * period + int(rng.integers(0, 4))
        raw = np.tril(rng.random((T, T)) + 0.05)
        cases.append(Case((raw / raw.sum(axis=1, keepdims=True), period)))
    return cases


def _slots(visible, rng):  # rolling_slot(t, window, sinks): tokens before, at and past the buffer's wrap
    cases = []
    for _ in range(8):
        window, sinks = int(rng.integers(1, 9)), int(rng.integers(0, 5))
        cases.append(Case((int(rng.integers(0, sinks + 4 * window + 1)), window, sinks)))
    return cases


#: How each exercise whose checker takes a function draws its new cases (tests/classroom/test_grade_cases.py holds every
#: registered solution to this table or to EXEMPT). online_softmax_row and online_attention_row are drills the
#: teaching guide offers (no notebook asks for them): a teacher who adds one to a notebook gets new cases too.
FRESH: dict[str, Callable] = {
    **dict.fromkeys(["mean_embedding", "one_hot", "cosine_scores", "dot_score", "score_matrix", "softmax_any_axis",
                     "context_vectors", "self_attention_qkv", "scaled_scores", "masked_attention", "my_split_heads",
                     "my_merge_heads", "my_layer_norm", "my_pre_norm_block", "softmax_backward",
                     "my_previous_token_weight", "online_softmax_row", "online_attention_row", "merge_pair",
                     "layer_norm_backward", "top_p_keep", "sink_weights", "absorbed_query", "linear_step",
                     "top_k_keep"], redrawn),
    "rolling_slot": _slots,
    "attention_scale": _head_sizes,
    "build_causal_mask": _lengths,
    "sinusoidal_encoding": _positions,
    "my_gpt2_parameter_count": _configs,
    "merge_softmax_states": _half_states,
    "attention_by_splits": _splits,
    "q4_1_block": _q4_1_blocks,
    "share_kv_heads": _kv_heads,
    "induction_score": _repeats,
}

_VALUE = "a value the notebook's own data decide (one right answer): there is no other input to draw"
#: The exercises that ask for a value, and why they take no new cases.
EXEMPT: dict[str, str] = {
    "spot_the_slip": _VALUE + " (the notes' printed sum and softmax)",
    "asymmetric_keys": _VALUE + " (a W_k for the notebook's sentence)",
    "score_slip": _VALUE + " (the slip in the notes' score row)",
    "roamed_keys": _VALUE + " (a W_k for the notebook's sentence)",
    "parameter_count": _VALUE + " (the count for the paper's base model)",
    "parameter_count_with_biases": _VALUE + " (the count for the paper's base model)",
    "sink_prediction": "a prediction about the pretrained model, a choice among named options",
    "first_pair": "a prediction about the tiny corpus, a choice",
    "previous_token_heads": "a prediction about the trained tiny GPT, a choice",
}


# --------------------------------------------------------------------------- drawing an input again


def _like(value, rng):
    """``value`` drawn again: arrays keep shape, dtype, masks (booleans), ``±inf``/NaN entries and all-zero rows;
    rows of probabilities stay probabilities (same zeros); other floats move by half their row's spread; integer
    arrays and lists of ints draw from their own values (token ids stay in the vocabulary); sizes, flags and
    strings stay."""
    if isinstance(value, dict):
        return {k: _like(v, rng) for k, v in value.items()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):  # a block's parameters
        return dataclasses.replace(value, **{f.name: _like(getattr(value, f.name), rng)
                                             for f in dataclasses.fields(value) if f.init})
    if isinstance(value, (list, tuple)) and value and all(type(v) is int for v in value) and isinstance(value, list):
        return [int(v) for v in rng.choice(value, size=len(value))]
    if isinstance(value, (list, tuple)):
        return type(value)(_like(v, rng) for v in value)
    if not isinstance(value, np.ndarray) or value.size == 0:
        return value
    if value.dtype.kind in "iu":
        return rng.choice(value.ravel(), size=value.shape).astype(value.dtype)
    if value.dtype.kind != "f":
        return value.copy()
    rows = value.reshape(-1, value.shape[-1]) if value.ndim else value.reshape(1, 1)
    finite = np.isfinite(rows)
    if _probabilities(rows, finite):
        drawn = np.where(rows > 0, rng.gamma(1.0, size=rows.shape), 0.0)
        sums = drawn.sum(axis=-1, keepdims=True)
        new = np.divide(drawn, sums, out=np.zeros_like(drawn), where=sums > 0)
    else:
        kept = np.where(finite, rows, 0.0)
        spread = kept.std(axis=-1, keepdims=True)
        spread = np.where(spread > 0, spread, 0.1 * np.abs(kept).max(axis=-1, keepdims=True))
        new = np.where(finite, rows + 0.5 * spread * rng.standard_normal(rows.shape), rows)
    return new.reshape(value.shape).astype(value.dtype)


def _probabilities(rows, finite) -> bool:
    sums = rows.sum(axis=-1)
    return bool(finite.all() and (rows >= 0).all() and np.isclose(sums, 1).any()
                and (np.isclose(sums, 1) | np.isclose(sums, 0)).all())


# ---------------------------------------------------------------- the visible cases, as checkers use them


@contextlib.contextmanager
def _tolerances(found: list):
    """Note the ``rtol``/``atol`` of every ``grade_function`` call a checker makes while this runs."""
    defaults = {k: p.default for k, p in inspect.signature(_grader.grade_function).parameters.items()
                if k in ("rtol", "atol")}
    original = _grader.grade_function
    modules = [m for name, m in list(sys.modules.items())
               if name.startswith(checks.__name__ + ".") and getattr(m, "grade_function", None) is original]

    def noting(*args, **kwargs):
        found.append((kwargs.get("rtol", defaults["rtol"]), kwargs.get("atol", defaults["atol"])))
        return original(*args, **kwargs)

    for module in modules:
        module.grade_function = noting
    try:
        yield
    finally:
        for module in modules:
            module.grade_function = original


_VISIBLE: dict = {}


def visible_calls(exercise: str, checker) -> tuple[list[Case], float, float]:
    """The inputs ``checker`` gives the solution of ``exercise`` (each once), and its loosest ``rtol``, ``atol``."""
    key = (exercise, checker)
    if key not in _VISIBLE:
        solution, calls, tolerances = SOLUTIONS[exercise], [], []

        def noting(*args, **kwargs):
            calls.append(Case(tuple(_plain(a) for a in args), {k: _plain(v) for k, v in kwargs.items()}))
            return solution(*args, **kwargs)

        with _tolerances(tolerances):
            checker(noting)
        seen, cases = set(), []
        for case in calls:
            if _key(case) not in seen:
                seen.add(_key(case))
                cases.append(case)
        rtol, atol = np.max(tolerances or [(1e-4, 1e-5)], axis=0)
        _VISIBLE[key] = (cases, float(rtol), float(atol))
    return _VISIBLE[key]


def _plain(value):
    if isinstance(value, np.ndarray):
        return np.array(value)  # a copy, and a plain array (a checker may pass a watched subclass)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    return value


def _key(case: Case) -> str:
    def part(value):
        if isinstance(value, np.ndarray):
            return (value.shape, value.dtype.str, value.tobytes())
        if isinstance(value, dict):
            return tuple(sorted((k, part(v)) for k, v in value.items()))
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return part(dataclasses.asdict(value))
        if isinstance(value, (list, tuple)):
            return tuple(part(v) for v in value)
        return repr(value)

    return repr(part((case.args, case.kwargs or {})))


SECRET = ".grading_secret"  # the course's secret, in the course folder (hex text, mode 600)


def course_secret(course: Path, create: bool = False) -> bytes:
    """The course's secret (32 random bytes) from ``course/.grading_secret``; with ``create``, made there first
    if it is missing (mode 600, never overwritten). ``b""`` when it is missing and not made."""
    path = Path(course) / SECRET
    if create and not path.exists():
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(descriptor, "w", encoding="ascii") as handle:
                handle.write(secrets.token_hex(32) + "\n")
    try:
        return bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return b""


def _mac(secret: bytes, text: str) -> bytes:
    return hmac.new(secret, text.encode(), hashlib.sha256).digest()


def seed_of(seed_text: str, exercise: str, secret: bytes = b"") -> int:
    """The random seed of ``exercise``'s new cases for ``seed_text`` ("student/assignment"): HMAC-SHA256 keyed
    by the course's ``secret`` (without one, a seed anyone can recompute: for tests only)."""
    return int.from_bytes(_mac(secret, f"cases|{seed_text}|{exercise}")[:8], "big")


def case_id(seed_text: str, exercise: str, secret: bytes = b"") -> str:
    """A short public name of ``exercise``'s new cases for ``seed_text`` under ``secret``: the feedback shows it,
    and the teacher's ``grade_cases.py --course`` prints it, so both can tell that they speak of the same cases
    (it reveals nothing of the seed)."""
    return _mac(secret, f"id|{seed_text}|{exercise}")[:4].hex()


def fresh_cases(exercise: str, checker, seed_text: str, secret: bytes = b"") -> list[Case]:
    """The new cases of ``exercise`` for ``seed_text`` under the course's ``secret``: none equal to a visible
    one, each on which the solution returns, labelled by the solution's argument names."""
    visible, _, _ = visible_calls(exercise, checker)
    rng = np.random.default_rng(seed_of(seed_text, exercise, secret))
    shown = {_key(case) for case in visible}
    solution, cases = SOLUTIONS[exercise], []
    for case in FRESH[exercise](visible, rng):
        if _key(case) in shown or call_quietly(solution, *_copied(case.args), **(case.kwargs or {}))[1] is not None:
            continue
        cases.append(Case(case.args, case.kwargs, _label(solution, case)))
    return cases


def _copied(args):
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else _plain(a) for a in args)


def _label(solution, case: Case) -> str:
    bound = inspect.signature(solution).bind_partial(*case.args, **(case.kwargs or {})).arguments

    def show(value):
        if isinstance(value, np.ndarray):
            return f"{value.dtype} array of shape {value.shape}"
        if isinstance(value, dict):
            return "{" + ", ".join(f"{k}: {show(v)}" for k, v in value.items()) + "}"
        text = repr(value)
        if len(text) <= 40:
            return text
        return f"{type(value).__name__} of length {len(value)}" if isinstance(value, (list, tuple, str)) \
            else f"new {type(value).__name__}"

    return ", ".join(f"{name} = {show(value)}" for name, value in bound.items())


# --------------------------------------------------------------------------- the mark


def _differs(got, expected, rtol, atol) -> str:
    """``""`` when ``got`` is ``expected`` within the tolerance, else what differs."""
    if isinstance(expected, tuple):
        if not isinstance(got, tuple) or len(got) != len(expected):
            return f"returned {type(got).__name__}, expected a tuple of {len(expected)}"
        return next((f"item {i}: {d}" for i, (g, e) in enumerate(zip(got, expected))
                     if (d := _differs(g, e, rtol, atol))), "")
    got_numbers, problem = _grader.read_answer(got, "your result")
    if problem:
        return problem
    expected = _grader.as_numbers(expected)
    if got_numbers.shape != expected.shape:
        return f"your result has shape {got_numbers.shape}, expected {expected.shape}"
    if np.allclose(got_numbers, expected, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    return "the values differ"


def with_hidden_cases(verdict, exercise: str, checker, args, seed_text: str, secret: bytes = b""):
    """The mark of a test whose visible ``checker`` gave ``verdict`` on ``args``: that verdict when it failed or
    when ``exercise`` takes no new cases; else whether the learner's function (the callable in ``args``) also
    matches the solution on the new cases drawn for ``seed_text`` under the course's ``secret``."""
    learner = next((a for a in args if callable(a)), None)
    if not verdict or exercise not in FRESH or learner is None:
        return verdict
    cases = fresh_cases(exercise, checker, seed_text, secret)
    _, rtol, atol = visible_calls(exercise, checker)
    wrong = []
    for case in cases:
        expected = SOLUTIONS[exercise](*_copied(case.args), **(case.kwargs or {}))
        got, error = call_quietly(learner, *_copied(case.args), **(case.kwargs or {}))
        problem = describe_error(error) if error is not None else _differs(got, expected, rtol, atol)
        if problem:
            wrong.append((case.label, problem))
            if isinstance(error, TimeLimit):  # a loop, or the learner's process has ended: no more calls
                break
    seed = f"new cases {case_id(seed_text, exercise, secret)} for {seed_text!r}"
    if not wrong:
        return Verdict(True, f"{verdict.message} Also right on {len(cases)} new cases ({seed}).")
    label, problem = wrong[0]
    return Verdict(False, f"right on the notebook's cases, wrong on {len(wrong)} of {len(cases)} new cases like "
                          f"{label} ({problem})",
                   f"your function must compute the answer for any input like the notebook's, not only for the "
                   f"cases it shows: call it on an input of your own and compare with the formula ({seed})")


def main(argv) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python classroom_kit/grade_cases.py", description="The new cases a mark was "
                                     "decided on, as the feedback names them (the teacher's command).")
    parser.add_argument("exercise", choices=sorted(FRESH), metavar="EXERCISE")
    parser.add_argument("seed", metavar="STUDENT/ASSIGNMENT")
    parser.add_argument("--course", type=Path, help="the course folder, whose secret seeds the cases")
    options = parser.parse_args(argv[1:])
    secret = course_secret(options.course) if options.course else b""
    if not secret:
        print("the new cases are seeded by the course's secret: name the course folder (--course DIR) that holds "
              f"{SECRET}", file=sys.stderr)
        return 2
    from classroom import exercises

    checker = getattr(checks, exercises()[options.exercise][1][0])
    print(f"new cases {case_id(options.seed, options.exercise, secret)} for {options.seed!r}:")
    for case in fresh_cases(options.exercise, checker, options.seed, secret):
        print(case.label)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
