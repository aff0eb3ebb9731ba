import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # lets tests import the independent reference

from quiet import WaitForQuiet  # noqa: E402

# The browser tests record one latency line per notebook as a user property
# ("browser_latency"). Reports travel from pytest-xdist workers to the controller with
# their user properties, so collecting them here prints the summary in serial and
# parallel runs alike. Maintainers see it with ATTN_LATENCY=1; a learner's run stays quiet.
_LATENCY_LINES: list[str] = []
SHOW_LATENCY = os.environ.get("ATTN_LATENCY", "") not in ("", "0")


@pytest.fixture(scope="module")
def shared_explorer(request):
    """One live explorer for the test module, as in a notebook: made by the module's
    ``SHARED_EXPLORER`` factory and rendered once, so that later renders take the update
    path a learner's control change takes. (A fresh explorer per case would pay a full
    constrained-layout draw each time, ~0.5 s; each module checks the full drawing against
    the update path in a test of its own.)"""
    explorer = request.module.SHARED_EXPLORER()
    explorer.render()
    return explorer


@pytest.fixture(scope="session")
def playwright_session():
    """Playwright's sync API, started once per test process and shared by every browser test: it refuses to start
    a second time while one runs (the JupyterLab tests keep theirs for the whole session, and pytest-xdist may give
    the same process the site's, the slides' or the feedback pages' tests after them)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        yield playwright


def pytest_configure(config):
    # A plugin rather than a hook here: hooks in this conftest would only see items under
    # tests/, and the notebooks' nbval cells must wait too.
    config.pluginmanager.register(WaitForQuiet(), "attn-wait-for-quiet")


def pytest_collection_modifyitems(config, items):
    """``-k`` without ``-m`` picks tests by name (``-k softmax``): leave out the browser tests, which would
    start JupyterLab and Chromium (a minute or two), unless the ``-k`` expression names them. The emulated Colab
    and the JupyterHub tests (markers ``colab``, ``hub``) run only when ``-m`` names them (CI: a step of their own)."""
    keyword, marks = config.getoption("keyword"), config.getoption("markexpr")
    for own_step in ("colab", "hub"):  # CI runs these in a step of their own: only when -m names them
        if own_step not in (marks or ""):
            config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker(own_step)])
            items[:] = [item for item in items if not item.get_closest_marker(own_step)]
    if not keyword or marks or "browser" in keyword:
        return
    browser = [item for item in items if item.get_closest_marker("browser")]
    if browser:
        config.hook.pytest_deselected(items=browser)
        items[:] = [item for item in items if not item.get_closest_marker("browser")]


def pytest_runtest_logreport(report):
    if report.when == "call":
        _LATENCY_LINES.extend(value for key, value in report.user_properties if key == "browser_latency")


def pytest_terminal_summary(terminalreporter):
    if _LATENCY_LINES and SHOW_LATENCY:
        terminalreporter.section("browser: widget latency (control change -> new figure, in Chromium)")
        for line in sorted(_LATENCY_LINES):
            terminalreporter.write_line(line)
    skipped = terminalreporter.stats.get("skipped", [])
    if any("test_pytorch_bridge" in str(report.location[0]) for report in skipped):
        terminalreporter.write_line("(tests/test_pytorch_bridge.py is skipped as expected: PyTorch is not a "
                                    "dependency of the series; install torch to compare with it)")
