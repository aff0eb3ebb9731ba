"""Root pytest configuration: names available to every doctest."""

import numpy as np
import pytest

import attn_helpers


@pytest.fixture(autouse=True)
def _doctest_names(doctest_namespace):
    doctest_namespace["np"] = np
    for name in attn_helpers.__all__:
        doctest_namespace[name] = getattr(attn_helpers, name)
