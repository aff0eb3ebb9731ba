"""Hold the other test workers back while the browser tests time a widget.

The browser tests measure how fast a widget answers (a median under a target). When
pytest-xdist runs other test files beside them, those compete for the same cores and
the measurement says more about the neighbours than about the widget. So, for the few
seconds of a measurement, the browser test raises a flag (a file shared by the run's
workers) and the other workers wait before starting their next test until it is
lowered. The other workers are not on the critical path (the browser file is the
longest), so the suite's wall time barely changes. In a single-process run nothing
waits and nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

WAIT_LIMIT_S = 60.0  # never hold a worker longer than this (a crashed browser test leaves the flag behind)
SETTLE_S = 0.3  # lets the tests already running on other workers finish before the measurement starts


def _flag() -> Path | None:
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")  # set by pytest-xdist in every worker, shared by the run
    return Path(tempfile.gettempdir()) / f"attn-helpers-quiet-{run}" if run else None


@contextlib.contextmanager
def quiet_neighbours():
    """Within this block, the run's other workers start no new test."""
    flag = _flag()
    if flag is None:
        yield
        return
    flag.touch()
    time.sleep(SETTLE_S)
    try:
        yield
    finally:
        flag.unlink(missing_ok=True)


class WaitForQuiet:
    """Plugin: before each test, wait while another worker's measurement is running."""

    def pytest_runtest_setup(self, item):
        flag = _flag()
        if flag is None or "browser" in item.keywords:
            return
        deadline = time.monotonic() + WAIT_LIMIT_S
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
