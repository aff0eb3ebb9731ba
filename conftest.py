"""Root pytest configuration: names available to every doctest; no learner progress recorded."""

import os

import numpy as np
import pytest

import attn_helpers

# The checkers record each verdict in the learner's progress file (attn_helpers.progress()); a test run,
# and the notebook kernels it starts (they inherit the environment), must not write there.
os.environ.setdefault("ATTN_HELPERS_PROGRESS", "off")


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    for name in attn_helpers.__all__:
        doctest_namespace[name] = getattr(attn_helpers, name)
