"""Every checker of every notebook: never raises, whatever it is given; solutions pass."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from attn_helpers import checks
from attn_helpers.checks import Verdict, solution
from attn_helpers.checks._grader import SOLUTIONS

CHECKERS = sorted(name for name in checks.__all__ if name.startswith("check_"))


def _crash(*args, **kwargs):
    raise RuntimeError("boom")


GARBAGE = [None, 3, "text", [1, 2, 3], np.zeros((2, 2)), np.full((6, 3), np.nan), _crash, lambda *a, **k: None,
           lambda *a, **k: "x", lambda *a, **k: np.zeros((1, 1)), lambda *a, **k: np.full((6, 6), np.nan), Ellipsis]


@pytest.mark.parametrize("name", CHECKERS)
def test_checker_never_raises_and_rejects_garbage(name):
    checker = getattr(checks, name)
    for garbage in GARBAGE:
        verdict = checker(garbage)
        assert isinstance(verdict, Verdict), f"{name}({garbage!r}) returned {type(verdict).__name__}"
        assert not verdict.passed, f"{name} accepted {garbage!r}"
        assert verdict.message


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
    for name in CHECKERS:
        assert inspect.getdoc(getattr(checks, name)), name
