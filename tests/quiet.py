"""Keep the other test workers out of the browser tests' way.

The browser tests are the longest test file and the suite's critical path: one
JupyterLab, one Chromium, one notebook after another. When pytest-xdist runs the
other files beside them on a small machine, both compete for the same cores. Two
measures keep the browser file as fast as when it runs alone:

1. Workers running anything else lower their CPU priority (``nice``; the kernels that
   nbval starts inherit it), so they use the cycles the browser tests leave idle while
   waiting on the page, the server or a kernel, instead of taking cycles from them.
2. While a browser test times a widget (a median under a target), the other workers
   start no new test, so that the figure describes the widget, not the neighbours.

For (2) the browser test raises a flag (a file shared by the run's workers) for the few
seconds of a measurement; the other workers wait before their next test until it is
lowered. In a single-process run nothing is reniced, nothing waits, nothing is written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from pathlib import Path

WAIT_LIMIT_S = 60.0  # never hold a worker longer than this (a crashed browser test leaves the flag behind)
SETTLE_S = 0.1  # lets a short test already running elsewhere finish (the others run niced anyway)


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


NICENESS = 10  # at 10 a process gets about a tenth of a core that a normal-priority one also wants


class WaitForQuiet:
    """Plugin for pytest-xdist workers: make way for the browser tests (see the module's docstring)."""

    def __init__(self):
        self.reniced = False

    def pytest_runtest_setup(self, item):
        flag = _flag()
        if flag is None or "browser" in item.keywords:
            return
        if not self.reniced and hasattr(os, "nice"):
            os.nice(NICENESS)
            self.reniced = True
        deadline = time.monotonic() + WAIT_LIMIT_S
        while flag.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
