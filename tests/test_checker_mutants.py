"""No near miss passes a checker: every one-edit variant of every registered solution fails its checker, and
every wrong value a learner would type near a right answer fails its checker.

The solutions come from the registry (``register_solution``), so an exercise added later is covered without a
line here; its checker is the one checker of the solution's module that accepts the solution. A variant that
gives the same output as the solution on every input is listed in :data:`EQUIVALENT` with the reason, and must
pass. A solution without arguments (a prediction measured, a value designed) has one input: its variants are
judged by their value, equal to the right one (then they must pass) or not (then they must fail), or, for a
design with many right answers, by an independent test of the design (:data:`DESIGNS`).

Run with ``-s`` to see each checker's kill rate.
"""

from __future__ import annotations

import functools
import inspect
import itertools

import numpy as np
import pytest
from mutants import one_edit_variants
from test_checks import CHECKERS, KNOWN_ANSWERS, Arguments, _check, _right_answers

from attn_helpers import checks  # noqa: F401 - registers every solution
from attn_helpers.checks import _grader
from attn_helpers.checks._grader import SOLUTIONS
from attn_helpers.checks.nb04 import DOUBLING_CHOICES
from attn_helpers.core import softmax
from attn_helpers.examples import CREATURE_TOKENS, I_LOVE_AI_TOKENS, JOURNEY_TOKENS, creature_example, i_love_ai

#: Variants that compute the solution's output on every input, with the reason. They must pass their checker.
_ROWS = "the input is always 2-D: axis 1 is its last axis, axis -2 its first"
_OVERWRITTEN = "every entry of the array is assigned afterwards, so its first value never shows"
_ONE_FLOAT16 = "two bytes viewed as float16 are ONE number: its index -1 is its index 0"
EQUIVALENT = {
    "softmax_any_axis": {
        "statement dropped: x = np.asarray(x, dtype=float)": "x is an array of floats in every case, and np.exp "
                                                             "makes floats of integers anyway",
        "dtype dropped: x = np.asarray(x)": "x is an array of floats in every case, and np.exp makes floats of "
                                           "integers anyway",
    },
    "mean_embedding": {"axis -> -2: return X.mean(axis=-2)": _ROWS},
    "one_hot": {"statement dropped: token_ids = np.asarray(token_ids)": "a list indexes the columns as an array "
                                                                        "does, and len() counts it the same"},
    "cosine_scores": {"axis -> -1: lengths = np.linalg.norm(vectors, axis=-1) * np.linalg.norm(query)": _ROWS},
    "context_vectors": {"axis -> 1: weights = softmax(scores, axis=1)": _ROWS},
    "self_attention_qkv": {"axis -> 1: weights = softmax(scores / np.sqrt(d_k), axis=1)": _ROWS},
    "score_slip": {"constant 2 -> 3: return (slip_key, round(float(row[np.argmax(differs)]), 3))":
                   "1.414 is the same score as 1.41, one more decimal: the exercise asks for at least 2"},
    "masked_attention": {
        "constant 0 -> 1: weights = exps / np.where(total > 1, total, 1.0)":
            "a row with a key has total >= 1 (its max gives exp(0) = 1), and dividing by 1.0 or by a total of 1 is "
            "the same",
        "constant 1.0 x 2: weights = exps / np.where(total > 0, total, 2.0)":
            "the 1.0 divides only a fully masked row, whose exps are all 0",
        "constant 1.0 / 2: weights = exps / np.where(total > 0, total, 0.5)":
            "the 1.0 divides only a fully masked row, whose exps are all 0",
    },
    "sinusoidal_encoding": {
        "arange bound 1 - 1: two_i = np.arange(0, d_model - 1, 2)": "d_model is even: the last even number below "
                                                                     "d_model is below d_model - 1 too",
        "zeros -> ones: pe = np.ones((T, d_model))": _OVERWRITTEN,
    },
    "my_previous_token_weight": {"constant 1 -> 2: T = attentions.shape[-2]": "attention matrices are square, "
                                                                               "(T, T)"},
    "online_softmax_row": {"dtype dropped: return np.exp(np.asarray(scores) - m) / l":
                           "the scores are floats already; np.exp makes floats of integers too"},
    "online_attention_row": {
        "zeros -> ones: acc = np.ones(values.shape[1])": "the first key's correction is exp(-inf) = 0, which "
                                                         "multiplies the accumulator's first value away",
        "operands of @ swapped: s = key @ query / np.sqrt(len(query))": "the dot product of two vectors is "
                                                                        "symmetric",
    },
    "top_p_keep": {"zeros -> ones: keep = np.ones(len(probs), dtype=bool)": _OVERWRITTEN},
    "q4_1_block": {
        "constant 0 -> -1: d = block[0:2].view(np.float16).astype(np.float32)[-1]": _ONE_FLOAT16,
        "constant 0 -> -1: m = block[2:4].view(np.float16).astype(np.float32)[-1]": _ONE_FLOAT16,
        "constant 20 -> 21: codes = block[4:21]": "a block has 20 bytes: a slice to 21 stops at 20 as well",
    },
    "rolling_slot": {"Lt -> LtE: if t <= sinks:": "at t == sinks both branches give slot sinks: sinks + 0 % window"},
    "share_kv_heads": {"FloorDiv -> Div: group = num_heads / keys.shape[0]":
                       "np.repeat truncates a count given as a float, which for positive numbers is what // does"},
}

#: A solution that needs arguments although its checker takes values: the arguments its notebook passes.
VALUE_CALLS = {
    "spot_the_slip": lambda: (np.array(checks.NOTES_SCORES), np.array(checks.NOTES_WEIGHTS)),
}


def _asymmetric(W_k):
    """Exercise 05.2: whether ``W_k`` makes the scores of "I love AI" asymmetric."""
    ex = i_love_ai(dtype=np.float64)
    scores = (ex["X"] @ ex["W_q"]) @ (ex["X"] @ np.asarray(W_k, dtype=float)).T  # (T, d_k) @ (d_k, T) -> (T, T)
    return not np.allclose(scores, scores.T, atol=1e-9)


def _roamed_wins(W_k, clear_win=0.8):
    """Exercise 05.4: whether ``W_k`` gives "creature" at least ``clear_win`` of the weight of "roamed", no other
    row changing."""
    ex = creature_example(dtype=np.float64)
    W_k = np.asarray(W_k, dtype=float)
    if W_k.shape != ex["W_k"].shape or np.abs(W_k).max() > 1e3:
        return False

    def weights(W):
        Q, K = ex["X"] @ ex["W_q"], ex["X"] @ W  # (T, d_model) @ (d_model, d_k) -> (T, d_k)
        return softmax(Q @ K.T / np.sqrt(K.shape[-1]), axis=-1)  # (T, d_k) @ (d_k, T) -> (T, T)

    before, after = weights(ex["W_k"]), weights(W_k)
    roamed = CREATURE_TOKENS.index("roamed")
    others = np.arange(len(CREATURE_TOKENS)) != roamed
    return after[roamed, CREATURE_TOKENS.index("creature")] >= clear_win and np.allclose(
        after[others], before[others], atol=0.01)


#: Design exercises (many right answers): an independent test of the design decides whether a variant is right.
DESIGNS = {"asymmetric_keys": _asymmetric, "roamed_keys": _roamed_wins}


def _takes_values(name):
    fn = SOLUTIONS[name]
    return name in VALUE_CALLS or all(p.default is not p.empty for p in inspect.signature(fn).parameters.values())


def _answer(name, fn):
    """What the learner hands the checker when their code is ``fn``: the function, or the value it computes."""
    if not _takes_values(name):
        return fn
    value = fn(*VALUE_CALLS.get(name, tuple)())  # no time limit: a measurement may take seconds on a busy machine
    return Arguments(*value) if isinstance(value, tuple) else value


def _accepts(checker, answer):
    try:
        return _check(checker, answer).passed
    except (TypeError, ValueError):  # several values for a checker that takes one, or a value as its option
        return False


@functools.cache
def checker_of(name):
    """The name of the one checker of the solution's module that accepts the solution."""
    fn = SOLUTIONS[name]
    answer = _answer(name, fn)
    accepting = [checker for checker, check in CHECKERS.items()
                 if check.__module__ == fn.__module__ and _accepts(check, answer)]
    assert len(accepting) == 1, f"solution {name!r}: checkers accepting it {accepting}, expected exactly one"
    return accepting[0]


def _same(a, b):
    if isinstance(a, Arguments) and isinstance(b, Arguments):
        return len(a.args) == len(b.args) and all(_same(x, y) for x, y in zip(a.args, b.args))
    if isinstance(a, str) or isinstance(b, str):
        return type(a) is type(b) and a == b
    try:
        a, b = np.asarray(a), np.asarray(b)
        return a.shape == b.shape and bool(np.allclose(a, b, rtol=1e-12, atol=0))
    except (TypeError, ValueError):
        return False


def _should_pass(name, variant, right):
    """Whether the checker must accept ``variant``: listed as equivalent, or (value solutions) right by value."""
    if variant.edit in EQUIVALENT.get(name, {}):
        return True
    if not _takes_values(name):
        return False
    try:
        value = _answer(name, variant.fn)
    except BaseException:  # noqa: BLE001 - a variant that raises never reaches the checker
        return None
    if name in DESIGNS:
        return bool(DESIGNS[name](value.args[0] if isinstance(value, Arguments) else value))
    return _same(value, right)


@pytest.mark.parametrize("name", sorted(SOLUTIONS))
def test_every_one_edit_variant_of_a_solution_fails_its_checker(name, monkeypatch, request):
    checker = CHECKERS[checker_of(name)]
    right = _answer(name, SOLUTIONS[name])
    if not _takes_values(name):  # a measured value may take a second; a learner's function, a few milliseconds
        monkeypatch.setattr(_grader, "TIME_LIMIT", 0.5)  # a variant that loops forever costs half a second
    variants = one_edit_variants(SOLUTIONS[name])
    edits = [variant.edit for variant in variants]
    assert not set(EQUIVALENT.get(name, {})) - set(edits), "EQUIVALENT lists an edit no longer made"
    survivors, rejected, killed, equivalent, raised = [], [], 0, 0, 0
    for variant in variants:
        should_pass = _should_pass(name, variant, right)
        if should_pass is None:
            raised += 1
            continue
        passed = _check(checker, _answer(name, variant.fn) if _takes_values(name) else variant.fn).passed
        if should_pass:
            equivalent += 1
            if not passed:
                rejected.append(variant.edit)
        elif passed:
            survivors.append(variant.edit)
        else:
            killed += 1
    wrong = len(variants) - equivalent
    summary = (f"{checker_of(name)} on {name}: {killed + raised}/{wrong} one-edit variants killed "
               f"({raised} raise before reaching it), {equivalent} equivalent")
    print(summary)
    request.node.add_report_section("call", "kill rate", summary)
    assert not survivors, f"{summary}; these pass although they are wrong: {survivors}"
    assert not rejected, f"{summary}; these are right (equivalent) and were refused: {rejected}"


# ---------------------------------------------------------------- values: the wrong numbers a learner would type


def _number_neighbours(x):
    """Off by one, twice or half, in percent, the wrong unit (GB for GiB), rounded."""
    x = float(x)
    near = [x + 1, x - 1, 2 * x, x / 2, 100 * x, x / 100, x * 2**30 / 1e9, x * 1e9 / 2**30, -x]
    near += [round(x, digits) for digits in (0, 1, 2)]
    return [n for n in near if not np.isclose(n, x, rtol=1e-9, atol=0)]


def _neighbours(value):
    """The wrong values near a right ``value``: one change each, kept in the value's own form."""
    if isinstance(value, Arguments):
        for i, arg in enumerate(value.args):
            for near in _neighbours(arg):
                yield Arguments(*value.args[:i], near, *value.args[i + 1:])
    elif isinstance(value, dict):
        for key, item in value.items():
            for near in _neighbours(item):
                yield {**value, key: near}
    elif isinstance(value, str):
        if len(value) > 1:
            yield value[::-1]
        choices = next((c for c in CHOICE_LISTS if value in c), "abcd" if len(value) == 1 else ())
        yield from (choice for choice in choices if choice != value)
    elif isinstance(value, (set, frozenset)):
        for item in value:
            yield value - {item}
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        for near in _number_neighbours(value):
            yield type(value)(near) if isinstance(value, (int, np.integer)) and float(near).is_integer() else near
    else:
        arr = np.asarray(value)
        if arr.dtype.kind not in "iuf" or arr.ndim == 0:
            return
        form = tuple if isinstance(value, tuple) else list if isinstance(value, list) else np.asarray
        flat = arr.ravel()
        for i, delta in itertools.product(range(flat.size), (1, -1)):
            near = flat.copy()
            near[i] += delta
            yield form(near.reshape(arr.shape).tolist()) if form is not np.asarray else near.reshape(arr.shape)
        if arr.ndim == 1 and arr.size > 1:
            if form is not list:  # a list of positions is a set: in another order it is the same answer
                yield form(arr[::-1].tolist()) if form is tuple else arr[::-1]
            yield form(arr[:-1].tolist()) if form is not np.asarray else arr[:-1]
        if arr.ndim == 2:
            yield arr.T
        if arr.dtype.kind == "f":
            yield np.round(arr, 1)


#: The choices of the choice questions: a wrong pick is one of the others.
CHOICE_LISTS = [JOURNEY_TOKENS, CREATURE_TOKENS, I_LOVE_AI_TOKENS, DOUBLING_CHOICES]

#: Values near a right answer that the checker rightly accepts (a prediction graded with a tolerance): the
#: tolerance it states, ``(rtol, atol)`` as in ``np.isclose``, and why.
ACCEPTED_NEAR = {
    "check_score_std_prediction": ((0.1, 0), "a prediction of a spread, graded within 10 %: 15 and 17 for 16 are "
                                             "close"),
    "check_cache_prediction": ((0.02, 0), "a size in GiB graded within 2 %: rounded to 1 or 2 decimals it stays "
                                          "inside"),
    "check_cache_size_prediction": ((0.02, 0), "a size in MiB graded within 2 %: 44 or 43.9 for 43.95 is right"),
    "check_window_loss_prediction": ((0, 0.3), "a prediction of a loss in nats, graded within 0.3: 4.0 or 4.2 for "
                                               "4.12 is right"),
    "check_late_sink_prediction": ((0, 0.15), "a prediction of a mean weight between 0 and 1, graded within 0.15: "
                                              "0.7 or 0.75 for 0.70 is right"),
}


def _value_checkers():
    return sorted(name for name in CHECKERS if any(not callable(a) for a in _right_answers(name))
                  or name in KNOWN_ANSWERS)


@pytest.mark.parametrize("name", _value_checkers())
def test_wrong_values_near_a_right_answer_fail(name, request):
    checker = CHECKERS[name]
    rights = [answer for answer in _right_answers(name) if not callable(answer)]
    assert rights, f"{name}: no right value to start from"
    design = next((DESIGNS[s] for s in DESIGNS if checker_of(s) == name), None)
    tried, passed, refused = 0, [], []
    for right in rights:
        for near in _neighbours(right):
            if any(_same(near, r) for r in rights):
                continue
            verdict = _check(checker, near).passed
            if design is not None and design(near):
                if not verdict:
                    refused.append(near)
                continue
            tried += 1
            if verdict:
                passed.append(near)
    summary = f"{name}: {tried - len(passed)}/{tried} nearby wrong values refused"
    print(summary)
    request.node.add_report_section("call", "kill rate", summary)
    assert not refused, f"{name} refuses right designs: {refused[:3]}"
    if name in ACCEPTED_NEAR:  # only within the tolerance it states
        (rtol, atol), _ = ACCEPTED_NEAR[name]
        passed = [near for near in passed if not any(np.isclose(near, r, rtol=rtol, atol=atol) for r in rights)]
    assert tried and not passed, f"{summary}; these pass: {passed[:5]}"


def _choice_answers():
    """``(checker, options, keyword arguments)`` for each choice question: exactly one option is right."""
    from attn_helpers.checks.nb11 import TRAINING_QUESTIONS
    from attn_helpers.checks.nb12 import ABLATION_QUESTIONS
    from attn_helpers.position_runs import KINDS

    kinds = [set(c) for r in range(len(KINDS) + 1) for c in itertools.combinations(KINDS, r)]
    yield "check_best_key", list(JOURNEY_TOKENS), {}
    yield "check_cold_choice", list(JOURNEY_TOKENS), {}
    yield "check_doubled_weights", list(DOUBLING_CHOICES), {}
    yield "check_length_prediction", kinds, {}
    for checker, questions in (("check_training_prediction", TRAINING_QUESTIONS),
                               ("check_ablation_prediction", ABLATION_QUESTIONS)):
        for question, asked in questions.items():
            yield checker, list(asked["choices"]), {"question": question}


@pytest.mark.parametrize(("name", "options", "kwargs"), list(_choice_answers()),
                         ids=lambda v: v if isinstance(v, str) else "")
def test_a_choice_question_accepts_exactly_one_of_its_options(name, options, kwargs):
    accepted = [option for option in options if CHECKERS[name](option, **kwargs).passed]
    assert len(accepted) == 1, f"{name}{kwargs or ''} accepts {accepted}"


# ---------------------------------------------------------------- hints: each known slip is named as itself


def _graded_slips():
    """``(checker, wrong, calls)`` for each known slip (:class:`Wrong`) a checker grades with: ``calls`` are the
    ``(args, kwargs)`` of the checker's calls of ``grade_function`` that list it, in order, recorded while the
    checker grades its solution."""
    import importlib

    found = {}
    for name in sorted(SOLUTIONS):
        checker = CHECKERS[checker_of(name)]
        module = importlib.import_module(checker.__module__)
        if not hasattr(module, "grade_function"):
            continue
        calls = []

        def spy(*args, _real=_grader.grade_function, _calls=calls, **kwargs):
            kwargs["wrongs"] = tuple(kwargs.get("wrongs", ()))
            _calls.append((args, kwargs))
            return _real(*args, **kwargs)

        original, module.grade_function = module.grade_function, spy
        try:
            _check(checker, _answer(name, SOLUTIONS[name]))
        finally:
            module.grade_function = original
        for args, kwargs in calls:
            direct = args[0] is SOLUTIONS[name]  # the checker grades the learner's function itself here
            for wrong in kwargs["wrongs"]:
                found.setdefault(id(wrong), (checker.__name__, wrong, []))[2].append((args, kwargs, direct))
    return list(found.values())


GRADED_SLIPS = _graded_slips()


@pytest.mark.parametrize(("name", "wrong", "calls"), GRADED_SLIPS,
                         ids=[f"{name}-{i}" for i, (name, *_) in enumerate(GRADED_SLIPS)])
def test_each_known_slip_gets_its_own_hint(name, wrong, calls):
    """A learner who makes a slip the checker knows reads that slip's hint, not the hint of another slip that
    gives the same result (then the hint names both, or a case tells them apart)."""
    for (_, reference, cases), kwargs, direct in calls:  # the checker's stages that know this slip, in order
        if direct:  # the whole checker, with what it makes of the grader's verdict
            verdict = CHECKERS[name](wrong.fn)
        else:  # a stage that grades one part of the learner's result
            verdict = _grader.grade_function(wrong.fn, reference, cases, **kwargs)
        if "raised" in verdict.message:
            pytest.skip("this slip, written as a function, does not apply to every case")
        if not verdict.passed:
            assert verdict.hint == wrong.hint, f"{name}: {verdict.message}: {verdict.hint}"
            return
    pytest.fail(f"{name}: the slip gives the right answer on every case: {wrong.hint}")


def _graded_wrong_values():
    """``(checker, (value, hint), how)`` for each known wrong value a value checker grades with; ``how`` is None
    where the checker grades the whole answer, else the ``(args, kwargs)`` of its ``grade_value`` stage."""
    import importlib

    found = []
    for name in _value_checkers():
        module = importlib.import_module(CHECKERS[name].__module__)
        if not hasattr(module, "grade_value"):
            continue
        for right in (answer for answer in _right_answers(name) if not callable(answer)):
            calls = []

            def spy(*args, _real=_grader.grade_value, _calls=calls, **kwargs):
                _calls.append((args, kwargs))
                return _real(*args, **kwargs)

            original, module.grade_value = module.grade_value, spy
            try:
                _check(CHECKERS[name], right)
            finally:
                module.grade_value = original
            for args, kwargs in calls:
                direct = args[0] is right
                found += [(name, wrong, None if direct else (args, kwargs)) for wrong in kwargs.get("wrongs", ())]
    return found


GRADED_VALUES = _graded_wrong_values()


@pytest.mark.parametrize(("name", "wrong", "how"), GRADED_VALUES,
                         ids=[f"{name}-{i}" for i, (name, *_) in enumerate(GRADED_VALUES)])
def test_each_known_wrong_value_gets_its_own_hint(name, wrong, how):
    value, hint = wrong
    if how is None:
        verdict = CHECKERS[name](value)
    else:
        (_, expected), kwargs = how
        verdict = _grader.grade_value(value, expected, **kwargs)
    assert not verdict.passed and verdict.hint == hint, f"{name}({value!r}): {verdict!r}"


# ---------------------------------------------------------------- a whole number is a whole number in any form


def _in_form(value, form):
    """``value`` with each whole number (int, NumPy integer; not bool) written as ``form`` (np.float32, ...)."""
    if isinstance(value, Arguments):
        return Arguments(*(_in_form(v, form) for v in value.args))
    if isinstance(value, dict):
        return {key: _in_form(v, form) for key, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return type(value)(_in_form(v, form) for v in value)
    if isinstance(value, np.ndarray) and value.dtype.kind in "iu":
        return value.astype(form if form is not float else np.float64)
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return form(value)
    return value


@pytest.mark.parametrize("form", [np.int64, np.float32, float])
@pytest.mark.parametrize("name", _value_checkers())
def test_a_right_answer_passes_with_its_whole_numbers_in_any_numeric_form(name, form):
    """``np.argmax`` gives np.int64, ``.sum()`` of floats np.float32: a count, a position or an index that is a
    whole number passes in any of these forms (``_grader.whole_number``)."""
    rights = [answer for answer in _right_answers(name) if not callable(answer)]
    converted = [(right, _in_form(right, form)) for right in rights]
    converted = [(right, other) for right, other in converted if repr(other) != repr(right)]
    if not converted:
        pytest.skip(f"{name}: its right answer holds no whole number")
    for right, other in converted:
        assert _check(CHECKERS[name], other).passed, f"{name} refuses {other!r} (right: {right!r})"


def test_no_notebook_prints_a_verdict_that_its_checker_shows_already():
    """A checker shows its verdict as it returns: ``print(check_...(...))`` or ``check_...(...).passed`` in a
    print would show it twice (notebook 11's predictions did)."""
    import ast
    from pathlib import Path

    import nbformat

    found = []
    for path in sorted(Path(__file__).parent.parent.glob("notebooks/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            try:
                tree = ast.parse(cell.source)
            except SyntaxError:  # IPython magics
                continue
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                    calls = [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                             and n.func.id.startswith("check_")]
                    found += [f"{path.name} cell {cell.get('id')}: {ast.unparse(node)[:80]}" for _ in calls[:1]]
    assert not found, found
