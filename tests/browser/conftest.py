"""What every browser test module shares: one Playwright per test process."""

import pytest


@pytest.fixture(scope="session")
def playwright_session():
    """Playwright's sync API, started once per process: it refuses to start a second time while one runs (the
    JupyterLab tests keep theirs for the whole session, and pytest-xdist may give the same process the site's,
    the slides' or the feedback pages' tests after them)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        yield playwright
