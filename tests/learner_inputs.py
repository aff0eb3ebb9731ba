"""What a learner might hand a checker instead of a right answer: shared by the checker tests."""

import numpy as np


def crash(*args, **kwargs):
    """A learner's function that raises."""
    raise RuntimeError("boom")


def stub(*args, **kwargs):
    """A learner's function not written yet (the exercise's template)."""
    raise NotImplementedError


def wrong_answers(*extra):
    """Wrong answers of every kind (values, and functions returning nonsense), plus a test's own ``extra``."""
    return [None, 3, "text", [1, 2], np.zeros((2, 2)), crash, stub, lambda *a: None, lambda *a: "x",
            lambda *a: np.zeros((1, 1)), lambda *a: [[1, 2], [3]], Ellipsis, *extra]
