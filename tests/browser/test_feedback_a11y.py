"""The feedback page a learner gets back (``nbgrader generate_feedback``) works offline and meets WCAG 2.1 AA.

One sample assignment (notebook 03) is graded once for the module with the real nbgrader, sandboxed as in
class: the source notebook (full marks) and the untouched released one (every test fails, with the
checkers' messages). Both pages are opened in headless Chromium with the network blocked: nothing is
requested from outside, the equations are MathML, no script runs, each test in the summary is named after
its exercise, and axe-core finds no violation of the rules tagged wcag2a, wcag2aa, wcag21a and wcag21aa.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest
from test_a11y import WCAG_AA, violation_report
from test_site_in_browser import offline_page  # noqa: F401 - the static site test's offline Chromium page

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "classroom"))
from test_grading_hostile import sandbox_or_skip  # noqa: E402
from tool_loader import load_tool  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.simd_independent,
              pytest.mark.filterwarnings("ignore::ResourceWarning"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:playwright.*"),
              pytest.mark.filterwarnings("ignore::DeprecationWarning:greenlet.*")]

SAMPLE = "03_softmax"
STUDENTS = ("full_marks", "untouched")


@pytest.fixture(scope="module")
def pages(tmp_path_factory) -> dict[str, Path]:
    """The feedback page of each sample submission, graded once."""
    sandbox_or_skip()
    classroom = load_tool("classroom")
    out = tmp_path_factory.mktemp("feedback") / "classroom"
    classroom.build(out, {SAMPLE[:2]})
    classroom.install_grader(out)

    def nbgrader(step: str) -> None:
        done = classroom.nbgrader(out, step, SAMPLE, "--force")
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    nbgrader("generate_assignment")
    for student, folder in zip(STUDENTS, ("source", "release")):
        (out / "submitted" / student / SAMPLE).mkdir(parents=True)
        shutil.copy(out / folder / SAMPLE / f"{SAMPLE}.ipynb", out / "submitted" / student / SAMPLE)
    nbgrader("autograde")
    nbgrader("generate_feedback")
    return {student: out / "feedback" / student / SAMPLE / f"{SAMPLE}.html" for student in STUDENTS}


@pytest.mark.timeout(900)  # grading in the fixture: a minute, more on a loaded machine
@pytest.mark.parametrize("student", STUDENTS)
def test_feedback_page_is_offline_named_and_has_no_wcag_aa_violation(student, pages, offline_page):  # noqa: F811
    from axe_playwright_python.sync_playwright import Axe

    page, blocked = offline_page
    blocked.clear()
    page.set_viewport_size({"width": 1280, "height": 800})
    page.goto(pages[student].as_uri(), wait_until="load")
    assert not blocked, f"the feedback page asks the network for {blocked}"
    seen = page.evaluate("""() => ({
        lang: document.documentElement.lang, scripts: document.scripts.length,
        equations: document.querySelectorAll('math').length,
        raw: [...document.querySelectorAll('.text_cell_render')].map(e => e.textContent).join(' ')
          .match(/\\$[^$]+\\$/g),
        summary: [...document.querySelectorAll('#toc li a')].map(a => a.textContent)})""")
    assert seen["lang"] == "en" and seen["scripts"] == 0 and seen["equations"] >= 10 and not seen["raw"], seen
    assert [name for name in seen["summary"] if name != "Comment"] == \
        ["Exercise 03.1 (check_spot_the_slip)", "Exercise 03.2 (check_softmax_any_axis)"]
    violations = Axe().run(page, options=WCAG_AA).response["violations"]
    assert not violations, f"{student}'s feedback: WCAG 2.1 AA violations:\n{violation_report(violations)}"


@pytest.mark.timeout(300)
def test_no_payload_of_a_student_runs_in_the_feedback_page(tmp_path, offline_page):  # noqa: F811
    """tests/classroom/test_feedback.py's hostile submission (script tags, event handlers, svg onload, iframe srcdoc,
    javascript: links, CSS expressions, HTML and JavaScript outputs...), each payload trying to set the page's
    title and a global: after the page has loaded and had time to fire its events, neither changed. A script
    put into the finished page (one that slipped through) does not run either: the page's policy stops it."""
    from test_feedback import TITLE, feedback_page, hostile_notebook

    page, _ = offline_page
    written = feedback_page(hostile_notebook())
    slipped = written.replace("</body>", "<script>document.title='PWNED';window.pwned=1</script>"
                                         "<img src=x onerror=\"window.pwned=2\"></body>")
    for name, text in (("feedback.html", written), ("slipped.html", slipped)):
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_timeout(1500)  # onerror, onload, autofocus, animations: time to fire
        for link in page.query_selector_all("a[href^='javascript' i]"):
            link.click()
        seen = page.evaluate("() => ({title: document.title, pwned: typeof window.pwned, "
                             "policy: document.querySelector('meta[http-equiv=Content-Security-Policy]').content})")
        assert seen["title"] == TITLE and seen["pwned"] == "undefined", (name, seen)
        assert "default-src 'none'" in seen["policy"]
