"""The static site really works offline: every page opened in headless Chromium with the
network blocked renders every equation (MathML, no raw ``$...$``) and every figure, each
with alt text, and asks the network for nothing.

Needs Debian's Chromium, like the other browser tests (``ATTN_CHROMIUM`` overrides the
path); without it the test is skipped with the reason (``run.py test`` fails instead
under ``CI=true``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("ATTN_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]

pytestmark = [pytest.mark.browser, pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:playwright.*"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:greenlet.*")]

# What the page shows, read in the page: equations, leftovers of LaTeX, figures.
INSPECT = """() => {
  const maths = [...document.querySelectorAll('math')];
  const rendered = maths.filter(m => { const r = m.getBoundingClientRect(); return r.width > 0 && r.height > 0; });
  const scripts = maths.filter(m => m.querySelector('msub, msup, msubsup'));
  const raised = scripts.filter(m => {  // a real MathML layout puts a sub- or superscript off the baseline
    const s = m.querySelector('msub, msup, msubsup');
    const [base, script] = [s.children[0], s.children[1]];
    if (!base || !script) return false;
    const [b, t] = [base.getBoundingClientRect(), script.getBoundingClientRect()];
    return Math.abs((t.top + t.bottom) / 2 - (b.top + b.bottom) / 2) > 1;
  });
  const text = [...document.querySelectorAll('.jp-RenderedMarkdown, .site-index')].map(el => {
    const copy = el.cloneNode(true);
    copy.querySelectorAll('math, code, pre').forEach(n => n.remove());
    return copy.textContent;
  }).join('\\n');
  const images = [...document.querySelectorAll('img')].map(img => ({
    alt: img.getAttribute('alt') || '', loaded: img.complete && img.naturalWidth > 0}));
  return {maths: maths.length, rendered: rendered.length, scripts: scripts.length, raised: raised.length,
          dollars: (text.match(/\\$[^$\\n]{1,80}\\$/g) || []), images};
}"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    spec = importlib.util.spec_from_file_location("build_site", ROOT / "tools" / "build_site.py")
    build_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_site)
    return build_site.build(tmp_path_factory.mktemp("site"), ROOT / "notebooks")


@pytest.fixture(scope="module")
def offline_page(playwright_session):
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}: browser tests skipped (apt-get install chromium)")
    playwright = playwright_session  # one per process (tests/conftest.py)
    browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
    try:
        context = browser.new_context(offline=True)
        blocked: list[str] = []

        def block(route):
            blocked.append(route.request.url)
            route.abort()

        context.route(lambda url: not url.startswith(("file://", "data:")), block)
        yield context.new_page(), blocked
    finally:
        browser.close()


def test_every_page_renders_its_equations_and_figures_with_the_network_blocked(site, offline_page):
    page, blocked = offline_page
    assert len(site) >= 10
    for path in site:
        blocked.clear()
        page.goto(path.as_uri(), wait_until="load")
        seen = page.evaluate(INSPECT)
        where = path.name
        assert not blocked, f"{where} asked the network for {blocked[:3]}"
        assert seen["maths"] > 0, f"{where}: no equation rendered as MathML"
        assert seen["rendered"] == seen["maths"], f"{where}: {seen['maths'] - seen['rendered']} equations not drawn"
        assert seen["raised"] == seen["scripts"], f"{where}: sub/superscripts not laid out as MathML"
        assert not seen["dollars"], f"{where}: raw LaTeX left in the text: {seen['dollars'][:3]}"
        for image in seen["images"]:
            assert image["loaded"], f"{where}: a figure did not load"
            assert len(image["alt"]) > 10, f"{where}: a figure without alt text"
