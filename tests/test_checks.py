"""Every checker of every notebook: exported by name, never raises, never hangs, never warns,
never passes a wrong answer; solutions pass.

The checkers are collected from the modules ``attn_helpers/checks/nbNN.py`` themselves,
so a checker added later is probed too (and a missing export line fails a test).
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
from learner_inputs import crash

from attn_helpers import checks
from attn_helpers.block import transformer_block
from attn_helpers.checks import Verdict, _grader, solution
from attn_helpers.checks._grader import SOLUTIONS
from attn_helpers.checks.nb10 import DROPOUT_P
from attn_helpers.checks.nb11 import induction_queries
from attn_helpers.core import causal_mask, scaled_dot_product_attention, softmax
from attn_helpers.examples import (
    CREATURE_TOKENS,
    I_LOVE_AI_TOKENS,
    JOURNEY_TOKENS,
    creature_block_example,
    creature_example,
    creature_heads_example,
    i_love_ai,
    journey_embeddings,
    qkv_attention_steps,
    reorder_outputs,
)
from attn_helpers.glove import load_glove, most_similar, word_to_index
from attn_helpers.kv_cache import PUBLISHED_CONFIGS, kv_cache_bytes
from attn_helpers.llm import SMOLLM2_CONFIG, load_smollm2
from attn_helpers.llm_measures import induction_study, sink_study
from attn_helpers.measures import summary_shares
from attn_helpers.multihead import multi_head_attention
from attn_helpers.pretrained import FINGERPRINT_SENTENCES, head_fingerprints, load_minilm
from attn_helpers.published import ATTENTION_VARIANTS
from attn_helpers.scaling import scaling_summary
from attn_helpers.training import load_runs
from attn_helpers.windows import load_streaming_runs

MODULES = [importlib.import_module(f"attn_helpers.checks.{m.name}")
           for m in sorted(pkgutil.iter_modules(checks.__path__), key=lambda m: m.name) if m.name.startswith("nb")]
CHECKERS = {name: fn for module in MODULES for name, fn in vars(module).items()
            if name.startswith("check_") and inspect.isfunction(fn) and fn.__module__ == module.__name__}


class Arguments:
    """The right answer of a checker that takes several arguments: ``check(*arguments.args)``."""

    def __init__(self, *args):
        self.args = args

    def __repr__(self):
        return f"Arguments{self.args!r}"


def _check(checker, answer):
    return checker(*answer.args) if isinstance(answer, Arguments) else checker(answer)


def _changed(before, after):
    """The rows (positions) of ``after`` that differ from ``before``."""
    return [int(i) for i in np.flatnonzero(~np.isclose(before, after, atol=1e-9).all(axis=-1))]


def _shared_neighbours(word="frog", k=5):
    vectors, row = load_glove()[1], word_to_index()[word]
    by_dot, by_cosine = (most_similar(vectors[row], vectors, k=k, metric=metric, exclude=[row])[0]
                         for metric in ("dot", "cosine"))
    return len(set(by_dot.tolist()) & set(by_cosine.tolist()))


def _changed_score_rows():
    """Notebook 05: the rows of S = Q K^T that change when W_q[0, 0] goes from 1 to 2."""
    ex = i_love_ai(dtype=np.float64)
    W_q = ex["W_q"].copy()
    W_q[0, 0] = 2.0
    K = ex["X"] @ ex["W_k"]  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    return _changed((ex["X"] @ ex["W_q"]) @ K.T, (ex["X"] @ W_q) @ K.T)  # (T, d_k) @ (d_k, T) -> (T, T)


def _score_slip():
    """Notebook 05: the key whose scaled score the notes' row [0.71, 0.71, 0.71] got wrong, and its right value."""
    row = qkv_attention_steps(*i_love_ai().values())["scaled"][1]
    slip = int(np.argmax(~np.isclose([0.71, 0.71, 0.71], row, atol=0.005)))
    return Arguments(I_LOVE_AI_TOKENS[slip], round(float(row[slip]), 2))


def _masked_key_rows(key="creature"):
    """Notebook 07: the queries whose weights change when ``key`` is masked on top of the causal mask."""
    ex = creature_example(dtype=np.float64)
    mask = causal_mask(len(CREATURE_TOKENS))
    hidden = mask.copy()
    hidden[:, CREATURE_TOKENS.index(key)] = False
    q, k, v = (ex["X"] @ ex[name] for name in ("W_q", "W_k", "W_v"))  # (T, d_model) @ (d_model, d) -> (T, d)
    return _changed(*(scaled_dot_product_attention(q, k, v, mask=m)[1] for m in (mask, hidden)))


def _weights_shape(batch=2, num_heads=4):
    ex = creature_heads_example()
    X = np.stack([ex["X"]] * batch)  # (B, T, d_model)
    return multi_head_attention(X, *(ex[name] for name in ("W_q", "W_k", "W_v", "W_o")), num_heads=num_heads)[1].shape


def _decoder_changed_rows(position=2):
    """Notebook 10: the output rows of the decoder block that change when token ``position`` flips its sign."""
    ex = creature_block_example(num_blocks=1)
    flipped = ex["X"].copy()
    flipped[position] *= -1
    mask = causal_mask(len(flipped))
    return _changed(*(transformer_block(x, ex["blocks"][0], mask=mask)[0] for x in (ex["X"], flipped)))


def _previous_token_head():
    model = load_minilm()
    previous = head_fingerprints([model.run(s).attentions for s in FINGERPRINT_SENTENCES])["previous"]
    return tuple(int(i) for i in np.unravel_index(np.argmax(previous), previous.shape))


def _two_back_head():
    model = load_minilm()
    two_back = np.mean([np.diagonal(model.run(s).attentions, offset=-2, axis1=-2, axis2=-1).mean(axis=-1)
                        for s in FINGERPRINT_SENTENCES], axis=0)
    return tuple(int(i) for i in np.unravel_index(np.argmax(two_back), two_back.shape))


def _skipped_tiles(T=8, block_size=2):
    tiles = causal_mask(T).reshape(T // block_size, block_size, T // block_size, block_size)
    return int((~tiles.any(axis=(1, 3))).sum())  # tiles with no cell a query may attend to


def _cache_gib(model="Llama 2 7B", T=4096):
    config = PUBLISHED_CONFIGS[model]
    return kv_cache_bytes(config["num_layers"], config["num_kv_heads"], config["head_dim"], T) / 2**30


_reverse = load_runs()["reverse"]

# Checkers whose right answer is not a registered solution (or a solution's return value), computed as the
# notebooks compute it; Arguments(...) for a checker that takes several:
KNOWN_ANSWERS = {
    "check_num_tokens": journey_embeddings().shape[0],
    "check_first_token_share": summary_shares(len(JOURNEY_TOKENS))[0],
    "check_shared_neighbours": _shared_neighbours(),
    "check_spot_the_slip": Arguments(np.sum(checks.NOTES_WEIGHTS),
                                     softmax(np.array(checks.NOTES_SCORES))),
    "check_changed_rows": _changed_score_rows(),
    "check_score_slip": _score_slip(),
    "check_score_std_prediction": scaling_summary(256)["unscaled"]["score std"],
    "check_masked_key_prediction": _masked_key_rows(),
    "check_weights_shape": _weights_shape(),
    "check_order_prediction": {key: int((reorder_outputs((2, 1, 0), with_positions=key == "with positions")["change"]
                                         > 1e-4).sum()) for key in ("without positions", "with positions")},
    "check_decoder_changed_rows": _decoder_changed_rows(),
    "check_attention_prediction": _reverse.snapshots[_reverse.steps][0, 0].argmax(axis=-1),
    "check_induction_prediction": Arguments(*induction_queries(load_runs()["induction"].probe)[1::2]),
    "check_previous_token_head": _previous_token_head(),
    "check_two_back_head": _two_back_head(),
    "check_skipped_tiles": _skipped_tiles(),
    "check_cache_prediction": _cache_gib(),
    "check_late_sink_prediction": float(sink_study(load_smollm2())[:, 15:].mean()),
    "check_induction_layers_prediction": "abc"[min(induction_study(load_smollm2())["top"][0][0] // 10, 2)],
    "check_cache_size_prediction": kv_cache_bytes(*(SMOLLM2_CONFIG[k] for k in ("num_layers", "num_kv_heads",
                                                                                 "head_dim")), 1000, 4) / 2**20,
    "check_dropout_mean": (1 - DROPOUT_P) / (1 - DROPOUT_P),  # the expected value: the kept share times 1 / (1 - p)
    "check_window_loss_prediction": float(load_streaming_runs()["losses"][1, 256:].mean()),
    "check_latent_cache_prediction": ATTENTION_VARIANTS["DeepSeek-V3"]["kv_lora_rank"]
    + ATTENTION_VARIANTS["DeepSeek-V3"]["qk_rope_head_dim"],
    "check_recall_prediction": "a",  # only the softmax cache keeps every one of 64 pairs in 32 dimensions
}

# Checkers whose right answer is a choice (a word, a letter), not numbers: the complex probe does not apply.
CHOICE_CHECKERS = {"check_best_key", "check_cold_choice", "check_doubled_weights", "check_sink_prediction",
                   "check_length_prediction", "check_training_prediction", "check_ablation_prediction",
                   "check_first_pair", "check_induction_layers_prediction", "check_recall_prediction"}


def test_every_checker_of_every_module_is_exported_by_name():
    assert len(MODULES) >= 9 and len(CHECKERS) >= 17
    for module in MODULES:
        defined = sorted(name for name, fn in CHECKERS.items() if fn.__module__ == module.__name__)
        assert sorted(n for n in module.__all__ if n.startswith("check_")) == defined, module.__name__
        for name in defined:
            assert name in checks.__all__, f"add `from .{module.__name__.rsplit('.', 1)[1]} import {name}` " \
                                           "to attn_helpers/checks/__init__.py and the name to its __all__"
            assert getattr(checks, name) is CHECKERS[name]
    source = inspect.getsource(checks)
    assert "globals()" not in source and "import_module" not in source  # names are written out, not injected


# ---------------------------------------------------------------- what a learner might pass


GARBAGE = [None, 3, "text", [1, 2, 3], np.zeros((2, 2)), np.full((6, 3), np.nan), crash, lambda *a, **k: None,
           lambda *a, **k: "x", lambda *a, **k: np.zeros((1, 1)), lambda *a, **k: np.full((6, 6), np.nan), Ellipsis]


class RaisingArray:
    """An object from another library whose conversion to numpy fails."""

    def __array__(self, dtype=None, copy=None):
        raise RuntimeError("cannot convert this tensor to numpy")


class RaisingFloat:
    def __float__(self):
        raise RuntimeError("no float for you")


class Truthless:
    """Like a symbolic or lazy value: asking whether it is true raises."""

    def __bool__(self):
        raise ValueError("the truth value is ambiguous")

    def __float__(self):
        raise ValueError("not a number yet")


class SlowArray:
    """Conversion to numpy never finishes."""

    def __array__(self, dtype=None, copy=None):
        while True:
            pass


def _exit(*args, **kwargs):
    sys.exit("bye")


def _exit0(*args, **kwargs):
    sys.exit()


def _forever(*args, **kwargs):
    while True:
        pass


def _recurse(*args, **kwargs):
    return _recurse(*args, **kwargs)


VALUE_PROBES = [10**400, 4 * 512**512, -(10**400), [1.0, 10**400], RaisingArray(), RaisingFloat(), Truthless(),
                np.array([[Truthless(), Truthless()], [Truthless(), Truthless()]], dtype=object),
                np.array([1, "a"], dtype=object), {}, {1, 2}, b"6", 1j]


def _returning(value):
    return lambda *args, **kwargs: value


PROBES = [*VALUE_PROBES, *map(_returning, VALUE_PROBES), _exit, _exit0, _recurse,
          lambda *a, **k: (_ for _ in range(3)), lambda *a, **k: (np.zeros(2), np.zeros(2), np.zeros(2))]
HANGING = [_forever, SlowArray(), _returning(SlowArray())]


def _grade(checker, answer, limit_s=20.0):
    """The verdict, asserting it is a Verdict, came with no warning and in bounded time."""
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        verdict = _check(checker, answer)
    elapsed = time.perf_counter() - start
    assert isinstance(verdict, Verdict), f"{checker.__name__}({answer!r}) returned {type(verdict).__name__}"
    assert verdict.message
    assert not caught, f"{checker.__name__}({answer!r}) warned: {caught[0].message}"
    assert elapsed < limit_s, f"{checker.__name__}({answer!r}) took {elapsed:.1f} s"  # a hang, not a slow machine
    return verdict


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_never_raises_and_rejects_garbage(name):
    for garbage in GARBAGE + PROBES:
        verdict = _grade(CHECKERS[name], garbage)
        assert not verdict.passed, f"{name} accepted {garbage!r}"


DOUBLED_WORD = re.compile(r"(?<![\w'])([A-Za-z]{3,}) \1(?![\w'])", re.IGNORECASE)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_no_verdict_repeats_a_word(name):
    """"replace the ... with your your prediction" (10's dropout hint): every verdict on garbage, on a blank and on
    a right answer is read for a doubled word."""
    for answer in [*GARBAGE, *PROBES, *_right_answers(name)]:
        verdict = _grade(CHECKERS[name], answer)
        text = f"{verdict.message} {verdict.hint or ''}"
        prose = re.sub(r"<[^>]*>|0x[0-9a-f]+", " ", text)  # the learner's own values, echoed back, are not prose
        assert not DOUBLED_WORD.search(prose), f"{name}({answer!r}): {text}"


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_never_raises_when_numpy_errors_raise(name):
    """A learner may have run np.seterr(all="raise"): the package's own references must not raise."""
    answers = _right_answers(name)
    with np.errstate(all="raise"):
        for probe in [*GARBAGE, *PROBES[:4], _exit]:
            assert not _grade(CHECKERS[name], probe).passed
        for answer in answers:
            assert _grade(CHECKERS[name], answer).passed


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_gives_up_on_code_that_never_returns(name, monkeypatch):
    answers = _right_answers(name)
    takes_a_function = bool(answers) and all(callable(answer) for answer in answers)
    monkeypatch.setattr(_grader, "TIME_LIMIT", 0.25)
    threads_before = threading.active_count()
    for probe in HANGING:
        verdict = _grade(CHECKERS[name], probe, limit_s=10.0)  # 40 times the limit: stopped, not waited for
        assert not verdict.passed
        if probe is _forever and takes_a_function:
            assert "did not return within 0.25 s: is there a loop that never ends?" in verdict.message
    assert threading.active_count() == threads_before  # the learner's code ran in this thread: none is left running


# ---------------------------------------------------------------- right answers, and right answers made wrong


def _right_answers(name):
    """The solutions of the checker's module (functions, or what a zero-argument solution returns) it accepts,
    and its entry of KNOWN_ANSWERS (a predict-then-run checker's right prediction, computed)."""
    checker = CHECKERS[name]
    candidates = [KNOWN_ANSWERS[name]] if name in KNOWN_ANSWERS else []
    for fn in SOLUTIONS.values():
        if fn.__module__ == checker.__module__:
            candidates.append(fn)
            if not any(p.default is p.empty for p in inspect.signature(fn).parameters.values()):
                candidates.append(fn())
    return [answer for answer in candidates if _check(checker, answer).passed]


def _plus_1j(value):
    if isinstance(value, Arguments):  # only the numeric arguments (not a token's name)
        return Arguments(*(_plus_1j(v) if _numeric(v) else v for v in value.args))
    if isinstance(value, dict):
        return {key: _plus_1j(v) for key, v in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(_plus_1j(v) for v in value)
    return np.asarray(value) + 1j


def _numeric(answer) -> bool:
    """Whether ``answer`` (or what it returns on the checker's cases) can be made complex: numbers, arrays."""
    if callable(answer):
        return True
    if isinstance(answer, Arguments):
        return any(_numeric(v) for v in answer.args)
    if isinstance(answer, dict):
        return all(_numeric(v) for v in answer.values())
    values = answer if isinstance(answer, (tuple, list)) else [answer]
    return all(np.asarray(v).dtype.kind in "biuf" for v in values)


def _text_version(answer):
    return Arguments(*map(str, answer.args)) if isinstance(answer, Arguments) else str(answer)


def _complex_version(answer):
    if callable(answer):
        return lambda *args, **kwargs: _plus_1j(answer(*args, **kwargs))
    return _plus_1j(answer)


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_checker_refuses_a_right_answer_made_complex_or_text(name):
    if name in CHOICE_CHECKERS:  # the right answer is a choice, a string: a number of any kind is the wrong type
        for wrong_type in (1j, np.array([1j]), 1 + 0j, 0):
            verdict = _grade(CHECKERS[name], wrong_type)
            assert not verdict.passed and ("not a string" in verdict.message or "not one of" in verdict.message), \
                verdict
        return
    answers = [answer for answer in _right_answers(name) if _numeric(answer)]
    if not answers:
        pytest.skip(f"{name}: no known numeric right answer to probe with; register its solution "
                    "(register_solution) or add its right answer, computed, to KNOWN_ANSWERS")
    for answer in answers:
        verdict = _grade(CHECKERS[name], _complex_version(answer))
        assert not verdict.passed and "complex" in verdict.message, verdict
        if not callable(answer):
            assert not _grade(CHECKERS[name], _text_version(answer)).passed, name


def test_a_huge_integer_gets_a_hint_about_the_power_operator():
    verdict = checks.check_parameter_count(4 * 512**512)
    assert not verdict.passed and "**" in verdict.message
    verdict = checks.check_attention_scale(lambda d, h: d**d)
    assert not verdict.passed and "too large" in verdict.message


def test_sys_exit_is_named():
    verdict = checks.check_mean_embedding(_exit)
    assert not verdict.passed and "sys.exit()" in verdict.message and "return" in verdict.hint


def test_call_quietly_returns_errors_as_values(monkeypatch):
    assert _grader.call_quietly(lambda x: x + 1, 1) == (2, None)
    result, error = _grader.call_quietly(_exit)
    assert result is None and isinstance(error, SystemExit)
    monkeypatch.setattr(_grader, "TIME_LIMIT", 0.2)
    start = time.perf_counter()
    result, error = _grader.call_quietly(_forever)
    assert isinstance(error, _grader.TimeLimit) and time.perf_counter() - start < 3


def _sleeps_a_minute(*args, **kwargs):
    time.sleep(60)


def test_a_function_that_sleeps_a_minute_gets_a_timeout_verdict_long_before_the_minute():
    """The real TIME_LIMIT, 5 s: the verdict says so. The clock only tells "stopped at the limit" (5 s and a little)
    from "waited for the sleep" (60 s): a bound of 30 s, which no busy machine reaches (it was 6.5 s)."""
    start = time.perf_counter()
    verdict = checks.check_mean_embedding(_sleeps_a_minute)
    assert time.perf_counter() - start < 30
    assert not verdict.passed and "did not return within 5 s" in verdict.message and "■" in verdict.hint


def _bare_except_loop(*args, **kwargs):
    x = 0
    while True:
        try:
            x += 1
        except:  # noqa: E722 - the learner's bare except, which would swallow one TimeLimit
            pass


def _bare_except_sleep_loop(*args, **kwargs):
    while True:
        try:
            time.sleep(0.05)  # the alarm lands inside the try, every time
        except:  # noqa: E722
            pass


def _except_base_exception_continue(*args, **kwargs):
    while True:
        try:
            sum(range(1000))
        except BaseException:
            continue


# CPython 3.10 never runs a signal handler inside `while True: try: x += 1 except: pass` (it checks for
# signals at no instruction of that loop), so no alarm, and not the notebook's interrupt either, can stop it
# there; 3.11 checks at the loop's jump back. A loop that calls anything (sleep, sum) is stopped on 3.10 too.
@pytest.mark.parametrize("loop", [
    pytest.param(_bare_except_loop, marks=pytest.mark.skipif(
        sys.version_info < (3, 11), reason="CPython 3.10 runs no signal handler inside a pure-bytecode loop")),
    _bare_except_sleep_loop, _except_base_exception_continue])
def test_a_bare_except_in_the_learners_loop_does_not_keep_it_running(monkeypatch, loop):
    monkeypatch.setattr(_grader, "TIME_LIMIT", 0.3)
    start = time.perf_counter()
    result, error = _grader.call_quietly(loop)
    assert isinstance(error, _grader.TimeLimit) and time.perf_counter() - start < 3
    assert sys.gettrace() is None or sys.gettrace() is not _grader._stop_at_each_line


def test_the_previous_alarm_handler_and_timer_are_restored(monkeypatch):
    monkeypatch.setattr(_grader, "TIME_LIMIT", 0.2)
    calls = []
    previous = signal.signal(signal.SIGALRM, lambda *a: calls.append(a))
    try:
        mine = signal.getsignal(signal.SIGALRM)
        assert _grader.call_quietly(_forever)[1].__class__ is _grader.TimeLimit
        assert _grader.call_quietly(divmod, 7, 2) == ((3, 1), None)
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # no alarm left armed
        time.sleep(0.3)
        assert not calls  # and none fired late
    finally:
        signal.signal(signal.SIGALRM, previous)


def _interrupted(*args, **kwargs):
    raise KeyboardInterrupt  # what the ■ button raises in a running cell


def test_the_interrupt_button_becomes_a_verdict():
    verdict = checks.check_mean_embedding(_interrupted)
    assert not verdict.passed and "you stopped your function" in verdict.message


def test_off_the_main_thread_there_is_no_time_limit_but_checkers_still_answer():
    verdicts = []
    worker = threading.Thread(target=lambda: verdicts.append(checks.check_mean_embedding(_exit)))
    worker.start()
    worker.join(20)
    assert len(verdicts) == 1 and not verdicts[0].passed and "sys.exit()" in verdicts[0].message


# ---------------------------------------------------------------- solutions and verdicts


def test_every_solution_is_hidden_but_readable():
    assert SOLUTIONS, "no solutions registered"
    for name in SOLUTIONS:
        shown = solution(name)
        assert "hidden" in repr(shown)
        assert "<details>" in shown._repr_html_()
        assert "@register_solution" not in shown.source and "def " in shown.source


def test_unknown_solution_name_is_a_message():
    assert "No solution named" in str(solution("no-such-exercise"))


def test_verdict_repr():
    assert repr(Verdict(True, "fine")) == "✅ Correct! fine"
    assert repr(Verdict(False, "bad", "try this")) == "❌ Not yet: bad\n💡 Hint: try this"
    assert not Verdict(False, "bad")


def test_checkers_have_docstrings():
    for name, checker in CHECKERS.items():
        assert inspect.getdoc(checker), name


# ---------------------------------------------------------------- a verdict shows once, in any line of a cell


class FakeShell:
    """What a checker asks of IPython: the number of the cell now running."""

    execution_count = 1


def _displays(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(_grader, "_ipython", lambda: FakeShell)
    monkeypatch.setattr(IPython.display, "display", lambda data, raw=False: shown.append((data, raw)))
    return shown


@pytest.mark.parametrize("name", sorted(CHECKERS))
def test_every_checker_shows_its_verdict_once_as_it_returns(name, monkeypatch):
    answers = (..., crash, *_right_answers(name)[:1])
    shown = _displays(monkeypatch)
    for answer in answers:
        verdict = _check(CHECKERS[name], answer)
        assert len(shown) == 1, f"{name}({answer!r}) displayed {len(shown)} times"
        data, raw = shown.pop()
        assert raw and data == {"text/plain": repr(verdict), "text/html": verdict._repr_html_()}
        verdict._ipython_display_()  # the check was the cell's last line: IPython asks it to display itself
        assert not shown


def test_a_verdict_built_from_sub_verdicts_shows_only_the_final_one(monkeypatch):
    shown = _displays(monkeypatch)
    verdict = checks.check_masked_attention(lambda q, k, v, m: (None, None))  # grades weights and context in turn
    assert [data["text/plain"] for data, _ in shown] == [repr(verdict)]
    assert not _grader.grade_value(..., 1.0)  # the machinery's own verdicts do not display
    assert len(shown) == 1


def test_a_verdict_kept_in_a_name_shows_again_in_a_later_cell(monkeypatch):
    shown = _displays(monkeypatch)
    verdict = checks.check_num_tokens(6)
    verdict._ipython_display_()
    assert len(shown) == 1
    monkeypatch.setattr(FakeShell, "execution_count", 2)
    verdict._ipython_display_()  # `verdict` alone in the next cell
    assert len(shown) == 2 and verdict.passed


def test_outside_ipython_a_checker_displays_nothing(capsys):
    assert _grader._ipython() is None  # pytest is plain Python
    verdict = checks.check_num_tokens(6)
    assert verdict and capsys.readouterr().out == ""


def test_the_verdict_html_says_it_in_words_not_colour_alone():
    for verdict in (Verdict(True, "fine <b>"), Verdict(False, "bad <b>", "try & see")):
        page = verdict._repr_html_()
        assert ("✅ Correct!" if verdict.passed else "❌ Not yet:") in page and "&lt;b&gt;" in page
        assert "color:" not in page  # the text keeps the page's own colour (and contrast); only the border is coloured


@pytest.mark.slow
def test_in_a_real_kernel_each_verdict_shows_exactly_once_whatever_follows_it():
    import nbformat
    from nbclient import NotebookClient

    sources = ["from attn_helpers.checks import check_num_tokens",
               "check_num_tokens(6); print('hi')",
               "check_num_tokens(5)",
               "verdict = check_num_tokens(6)\nassert verdict\nif verdict:\n    print('usable')",
               "verdict",
               "check_num_tokens(6)\ncheck_num_tokens(...)"]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    root = str(Path(__file__).resolve().parents[1])  # the kernel imports this copy of attn_helpers
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": root}}).execute()

    def outputs(cell):  # each output's kind and its first words
        return [(o["output_type"], o["text"] if "text" in o else o["data"]["text/plain"][:10]) for o in cell.outputs]

    right, wrong = ("display_data", "✅ Correct!"), ("display_data", "❌ Not yet:")
    assert [outputs(cell) for cell in nb.cells] == [[], [right, ("stream", "hi\n")], [wrong],
                                                    [right, ("stream", "usable\n")], [right], [right, wrong]]
    assert all("text/html" in o["data"] for cell in nb.cells for o in cell.outputs if o["output_type"] != "stream")


# ---------------------------------------------------------------- fallback hints say only what is true anywhere


@pytest.mark.parametrize("error, hint", [
    (IndexError("index 3 is out of bounds for axis 0 with size 3"), "went past the end of an axis"),
    (np.exceptions.AxisError(2, 2), "that axis does not exist"),
    (TypeError("Cannot interpret '3' as a data type"), "give the shape as ONE tuple"),
    (KeyError("x"), "the error above names the problem"),
])
def test_a_crash_gets_a_hint_about_its_kind(error, hint):
    verdict = _grader.failed_call(error, "case 1")
    assert hint in verdict.hint and "attention weights" not in verdict.hint


def test_generic_hints_do_not_point_at_what_a_notebook_may_not_have():
    differ = _grader.grade_function(lambda x: x + 1, lambda x: x, [_grader.Case((np.ones(2),))])
    crash = _grader.failed_call(KeyError("x"), "case 1")
    wrong = _grader.grade_value(2.0, 1.0)
    transposed = _grader.grade_function(lambda x: x.T, lambda x: x, [_grader.Case((np.ones((2, 3)),))])
    nan = _grader.grade_function(lambda x: x / 0, lambda x: x, [_grader.Case((np.zeros(2),))])
    assert "0/0" in nan.hint and "row" not in nan.hint
    assert "looks transposed" in transposed.hint
    for verdict in (differ, crash, wrong, transposed, nan):
        assert not verdict.passed and verdict.hint
        assert not any(claim in verdict.hint for claim in ("above:", "equation above", "tiny example", "table", "quer"))
