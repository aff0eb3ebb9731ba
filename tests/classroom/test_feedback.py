"""What a teacher hands back and how learners hand in: feedback named per exercise, and the LMS workflow.

Each autograder test cell of the course folder (classroom_kit/classroom.py) names its exercise on its first line, as
the notebook numbers it, and the feedback page's summary shows that name (classroom_kit/feedback.py; the page
itself, offline and WCAG 2.1 AA, is checked in Chromium by tests/browser/test_feedback_a11y.py). The slow
test runs the guide's workflow with the real nbgrader: a roster imported from CSV, submissions collected
from an LMS's "download all" archive (``nbgrader zip_collect``), and a release, fetch, submit and collect
through the course's own exchange, with no root.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import nbformat
import pytest
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading and packaging: CI's pass without SIMD leaves it out

classroom = load_tool("classroom")
feedback = load_tool("feedback")
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
SAMPLE = "02_dot_product_scores"


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    return out, classroom.build(out)


def test_each_test_names_its_exercise_and_checker(course):
    out, written = course
    named = 0
    for path in NOTEBOOKS:
        cells = json.loads((out / "source" / path.stem / path.name).read_text(encoding="utf-8"))["cells"]
        titles = {m for c in cells if c["cell_type"] == "markdown"
                  for m in re.findall(rf"(?:^#+ [^\n]*?|\*\*)Exercise ({path.stem[:2]}\.\d+)", "".join(c["source"]),
                                      re.MULTILINE)}
        tests = ["".join(c["source"]) for c in cells if c["metadata"].get("nbgrader", {}).get("grade")]
        assert len(tests) == len(written[path.stem])
        for source in tests:
            name = feedback.test_name(source)
            checker = re.search(r"verdict = (check_\w+)\(", source).group(1)
            assert name and name.endswith(f" ({checker})"), source.splitlines()[0]
            number = re.fullmatch(r"Exercise (\d\d\.\d+) \(\w+\)", name)
            if number:
                assert number.group(1) in titles, f"{path.name}: {name} is not an exercise the notebook names"
                named += 1
    assert named >= 0.9 * sum(len(graded) for graded in written.values())


def test_a_test_cell_without_the_name_line_gets_none():
    assert feedback.test_name("# Autograder test (1 point)\nassert True") is None
    assert feedback.test_name("# Exercise 03.2 (check_x): autograder test (1 point)") == "Exercise 03.2 (check_x)"


def nbgrader(folder, *args):
    """``nbgrader args`` run in ``folder`` (the course folder, or a learner's)."""
    done = classroom.nbgrader(folder, *args)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


ROSTER = [{"id": "1234", "first_name": "Ada", "last_name": "Lovelace", "email": "ada@example.org"},
          {"id": "5678", "first_name": "Alan", "last_name": "Turing", "email": "alan@example.org"},
          {"id": "4321", "first_name": "Grace", "last_name": "Hopper", "email": "grace@example.org"},
          {"id": "8765", "first_name": "Emmy", "last_name": "Noether", "email": "emmy@example.org"}]


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_roster_lms_archive_and_course_exchange_without_root(tmp_path, capsys):
    out = tmp_path / "classroom"
    classroom.build(out, {SAMPLE[:2]})
    nbgrader(out, "generate_assignment", SAMPLE, "--force")
    released = out / "release" / SAMPLE / f"{SAMPLE}.ipynb"

    # The roster, as a CSV an LMS exports: nbgrader's gradebook knows every learner.
    with open(tmp_path / "roster.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(ROSTER[0]))
        writer.writeheader()
        writer.writerows(ROSTER)
    nbgrader(out, "db", "student", "import", str(tmp_path / "roster.csv"))
    listed = nbgrader(out, "db", "student", "list").stdout
    assert all(f"{s['id']} ({s['last_name']}, {s['first_name']}) -- {s['email']}" in listed for s in ROSTER), listed

    # Canvas's "Download submissions": one zip, each notebook renamed name_id_submission_file, with the names
    # browsers and Jupyter give copies; a late one, a resubmission ("-1"), a file that is not a notebook and
    # another assignment's notebook among them. Emmy (8765) hands in nothing.
    archive = out / "downloaded" / SAMPLE / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as lms:
        lms.write(released, f"lovelaceada_1234_901_{SAMPLE} (1).ipynb")
        lms.write(released, f"turingalan_LATE_5678_902_{SAMPLE}-Copy1-1.ipynb")
        lms.write(released, f"hoppergrace_4321_904_{SAMPLE.replace('_', ' ').title()}.ipynb")
        lms.writestr("turingalan_5678_903_notes.txt", "not a notebook")
        lms.write(released, "hoppergrace_4321_905_03_softmax.ipynb")
    done = nbgrader(out, "zip_collect", SAMPLE)
    collected = sorted(p.relative_to(out / "submitted") for p in (out / "submitted").rglob("*") if p.is_file())
    assert sorted(map(str, collected)) == sorted(f"{s['id']}/{SAMPLE}/{SAMPLE}.ipynb" for s in ROSTER[:3])
    assert all((out / "submitted" / p).read_bytes() == released.read_bytes() for p in collected)
    log = done.stdout + done.stderr
    assert "turingalan_5678_903_notes.txt" in log and "03_softmax" in log and "3 files collected, 2 files skipped" \
        in log, log[-2000:]

    # Release, fetch, submit and collect through the course's own exchange, all as this (unprivileged) user.
    nbgrader(out, "release_assignment", SAMPLE, "--force")
    assert (out / "exchange" / "attention-from-first-principles" / "outbound" / SAMPLE / released.name).is_file()
    learner = tmp_path / "learner"
    learner.mkdir()
    course_options = ["--course", "attention-from-first-principles", f"--Exchange.root={out / 'exchange'}"]
    nbgrader(learner, "fetch_assignment", SAMPLE, *course_options)
    assert (learner / SAMPLE / released.name).read_bytes() == released.read_bytes()
    nbgrader(learner, "submit", SAMPLE, *course_options)
    nbgrader(out, "collect", SAMPLE)
    (mine,) = [p for p in (out / "submitted").iterdir() if p.name not in {s["id"] for s in ROSTER}]
    assert (mine / SAMPLE / released.name).is_file()

    # Grading says what it did: who was graded, who is missing (and "missing" in grades.csv, not 0), what was
    # skipped; a copy's name handed in straight into submitted/ is read too.
    from test_grading_hostile import sandbox_or_skip

    sandbox_or_skip()
    shutil.rmtree(mine)
    (out / "submitted" / "1234" / SAMPLE / f"{SAMPLE}.ipynb").rename(
        out / "submitted" / "1234" / SAMPLE / f"{SAMPLE}-Copy1.ipynb")
    (out / "submitted" / "4321" / SAMPLE / "scratch.py").write_text("x = 1\n")
    capsys.readouterr()
    assert classroom.main(["autograde", "--out", str(out), SAMPLE]) == 0
    said = capsys.readouterr().out
    assert f"{SAMPLE}: graded 3 submissions (1234, 4321, 5678)" in said, said
    assert f"renamed a copy's name: submitted/1234/{SAMPLE}/{SAMPLE}-Copy1.ipynb -> {SAMPLE}.ipynb" in said, said
    assert re.search(r"missing \(no .*\): 8765$", said, re.MULTILINE), said
    assert f"skipped (not the assignment's notebook, not graded): submitted/4321/{SAMPLE}/scratch.py" in said, said
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        scores = {row["student_id"]: row["score"] for row in csv.DictReader(handle)}
    assert scores["8765"] == "missing" and all(float(scores[s["id"]]) == 0.0 for s in ROSTER[:3]), scores


def _as_user(user: str, home: Path, *command: str, python=()) -> subprocess.CompletedProcess:
    """``command`` run as the Unix user ``user`` in ``home``; ``python``: the environment that runs this Python
    for another user (:func:`_python_for_others`)."""
    env = ["env", "-i", f"HOME={home}", "PATH=/usr/bin:/bin", "LANG=C.UTF-8", *python]
    return subprocess.run(["runuser", "-u", user, "--", *env, *command], cwd=home, capture_output=True, text=True)


def _python_for_others(user: str, base: Path) -> tuple[str, list[str]]:
    """``(python, environment)`` that run this Python, with this environment's packages, as ``user``: this one when
    ``user`` can run it; else a copy of its installation in ``base`` (pyenv's, under root's home, is root's only)."""
    site = next(p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir())
    if _as_user(user, base, sys.executable, "-c", "import nbgrader").returncode == 0:
        return sys.executable, []
    copy = base / "python"
    shutil.copytree(sys.base_prefix, copy, symlinks=True, ignore=shutil.ignore_patterns(
        "site-packages", "test", "tests", "idlelib", "tkinter", "__pycache__", "*.a"))
    python = copy / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    return str(python), [f"PYTHONPATH={site}", f"LD_LIBRARY_PATH={copy / 'lib'}"]


@pytest.fixture
def two_students():
    """Two real Unix users (removed afterwards), for the exchange's permissions; needs root."""
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but not root: the exchange's permissions are tested with two real Unix users")
        pytest.skip("not root: the exchange's permissions are tested with two real Unix users (useradd, runuser)")
    base = Path(tempfile.mkdtemp(prefix="attn-exchange-"))
    base.chmod(0o755)  # the machine's shared folder; the course folder inside it stays private
    names = [f"attn{os.getpid() % 10**6}{who}" for who in ("a", "b")]
    try:
        for name in names:
            (base / name).mkdir()
            subprocess.run(["useradd", "--no-create-home", "--home-dir", str(base / name), "--shell", "/bin/sh",
                            "--user-group", name], check=True, capture_output=True)
            shutil.chown(base / name, name, name)
        yield base, names
    finally:
        for name in names:
            subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_through_the_exchange_a_student_submits_but_cannot_see_or_touch_anothers(two_students):
    base, (alice, bob) = two_students
    out, exchange = base / "classroom", base / "exchange"
    classroom.build(out, {SAMPLE[:2]})
    out.chmod(0o700)  # the course folder: gradebook, solutions and submissions are the teacher's alone
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o1777)  # like /tmp: everyone may create, nobody may rename or remove another's entry
    root = f"--Exchange.root={exchange}"
    nbgrader(out, "generate_assignment", SAMPLE, "--force")
    nbgrader(out, "release_assignment", SAMPLE, root)
    inbound = exchange / "attention-from-first-principles" / "inbound"
    assert stat.S_IMODE(inbound.stat().st_mode) == 0o3733, oct(inbound.stat().st_mode)

    course = ["--course", "attention-from-first-principles", root]
    python, env = _python_for_others(alice, base)
    nbgrader_cli = [python, "-m", "nbgrader"]
    for student in (alice, bob):
        done = _as_user(student, base / student, *nbgrader_cli, "fetch_assignment", SAMPLE, *course, python=env)
        assert done.returncode == 0, done.stderr[-2000:]
        work = base / student / SAMPLE / f"{SAMPLE}.ipynb"  # marked in the notebook: collect takes nothing else
        work.write_text(work.read_text(encoding="utf-8").replace('"cells": [', f'"cells": [{{"cell_type": "raw", '
                        f'"id": "mark", "metadata": {{}}, "source": "{student}\'s work"}}, ', 1), encoding="utf-8")
        done = _as_user(student, base / student, *nbgrader_cli, "submit", SAMPLE, *course, python=env)
        assert done.returncode == 0, done.stderr[-2000:]
    (theirs,) = [p for p in inbound.iterdir() if p.name.startswith(f"{alice}+")]

    # Bob, a classmate: he cannot list the inbound folder, so cannot find Alice's submission (its name ends in
    # 72 random bits); even with its name he cannot rename or remove it (sticky); the course folder is closed.
    probe = f"""
import glob, os
def tried(action):
    try:
        action()
        return "done"
    except OSError as err:
        return type(err).__name__
print(tried(lambda: os.listdir({str(inbound)!r})))
print(len(glob.glob({str(inbound / (alice + '+*'))!r})))
print(tried(lambda: os.rename({str(theirs)!r}, {str(inbound / (bob + '+taken'))!r})))
print(tried(lambda: os.listdir({str(out)!r})))
print(tried(lambda: open({str(out / 'gradebook.db')!r}, 'rb').read(1)))
"""
    done = _as_user(bob, base / bob, python, "-c", probe, python=env)
    assert done.stdout.split() == ["PermissionError", "0", "PermissionError", "PermissionError", "PermissionError"], \
        done.stdout + done.stderr
    listing = _as_user(bob, base / bob, *nbgrader_cli, "list", "--inbound", *course, python=env)
    assert alice not in listing.stdout + listing.stderr

    # Bob hands in as Alice (nbgrader submit --student): collect takes Alice's own submission and names his.
    done = _as_user(bob, base / bob, *nbgrader_cli, "submit", SAMPLE, f"--student={alice}", *course, python=env)
    assert done.returncode == 0, done.stderr[-2000:]
    done = nbgrader(out, "collect", SAMPLE, root)
    assert f"handed in by {bob} for {alice}" in done.stdout + done.stderr
    for student in (alice, bob):
        handed = out / "submitted" / student / SAMPLE
        marks = re.findall(r"(\w+)'s work", (handed / f"{SAMPLE}.ipynb").read_text(encoding="utf-8"))
        assert marks == [student], (marks, list(handed.iterdir()))


# --------------------------------------------------------------------------- a student's markup in the feedback

TITLE = "Feedback: 03_softmax"  # what the page's title stays: every payload tries to change it, or set a global
RUN = "document.title='PWNED';window.pwned=1"
TAGS = [f"<script>{RUN}</script>", f"<img src=x onerror=\"{RUN}\">", f"<svg onload=\"{RUN}\"></svg>",
        f"<iframe srcdoc=\"<script>parent.{RUN}</script>\"></iframe>", f"<a href=\"javascript:{RUN}\">click</a>",
        f"<div style=\"width: expression({RUN})\">x</div>",
        f"<div style=\"background:url('javascript:{RUN}')\">x</div>",
        f"<body onload=\"{RUN}\">", f"<details open ontoggle=\"{RUN}\">x</details>",
        f"<math><mtext><img src=x onerror=\"{RUN}\"></mtext></math>", f"<object data=\"javascript:{RUN}\"></object>",
        f"<embed src=\"javascript:{RUN}\">", f"<meta http-equiv=\"refresh\" content=\"0;url=javascript:{RUN}\">",
        "<base href=\"javascript:alert(1)//\">", f"<form action=\"javascript:{RUN}\"><button>go</button></form>",
        f"<input autofocus onfocus=\"{RUN}\">", f"<video><source onerror=\"{RUN}\"></video>",
        f"<style>@import 'javascript:{RUN}';</style>", f"<IMG SRC=\"jav&#x09;ascript:{RUN}\">",
        f"<scr<script>ipt>{RUN}</script>", f"<svg><animate onbegin=\"{RUN}\" attributeName=x dur=1s>",
        f"<marquee onstart=\"{RUN}\">x</marquee>", f"<x onclick=\"{RUN}\">x</x>",
        "<div style=\"position:fixed;top:0;left:0;width:100%;background:white\">Score: 100 / 100</div>"]
LINKS = [f"[click](javascript:{RUN})", f"[click](JaVaScRiPt:{RUN})", f"[click]( javascript:{RUN})",
         f"![a figure](javascript:{RUN})", f"[click](data:text/html,<script>{RUN}</script>)",
         f"[click](vbscript:{RUN})", f"[click](\"javascript:{RUN}\")", f"<javascript:{RUN}>",
         f"$</math><img src=x onerror=\"{RUN}\">$", f"$$</math><script>{RUN}</script>$$"]


def hostile_notebook():
    """A submission of 03 whose markdown, raw cells, outputs, ids and metadata each carry one payload."""
    nb = nbformat.v4.new_notebook(metadata={"language_info": {"name": "python"}})
    nb.cells = [nbformat.v4.new_markdown_cell(f"Payload {k}: {payload}") for k, payload in enumerate(TAGS + LINKS)]
    nb.cells.append(nbformat.v4.new_raw_cell(f"<script>{RUN}</script>", metadata={"format": "text/html"}))
    nb.cells.append(nbformat.v4.new_markdown_cell("![picture](attachment:p.svg)", attachments={
        "p.svg": {"image/svg+xml": f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{RUN}\"></svg>"}}))
    outputs = [
        nbformat.v4.new_output("display_data", data={"text/html": f"<script>{RUN}</script>", "text/plain": "x"}),
        nbformat.v4.new_output("display_data", data={"application/javascript": RUN}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": f"<svg onload=\"{RUN}\"></svg>"}),
        nbformat.v4.new_output("display_data", data={"text/markdown": f"<img src=x onerror=\"{RUN}\">"}),
        nbformat.v4.new_output("execute_result", data={"text/html": f"<img src=x onerror=\"{RUN}\">"},
                               execution_count=1),
        nbformat.v4.new_output("display_data", data={"image/png": f"\" onerror=\"{RUN}"}),
        nbformat.v4.new_output("display_data", data={"image/png": "iVBORw0KGgo="},
                               metadata={"image/png": {"alt": f"x\" onerror=\"{RUN}", "width": "1\" onload=\"x"}}),
        nbformat.v4.new_output("stream", name="stdout", text=f"<script>{RUN}</script>"),
        nbformat.v4.new_output("error", ename="<b>E</b>", evalue=f"<img src=x onerror=\"{RUN}\">",
                               traceback=[f"<script>{RUN}</script>"]),
    ]
    cell = nbformat.v4.new_code_cell("print(1)", outputs=outputs)
    cell["id"] = f"x\"><script>{RUN}</script>"
    nb.cells.append(cell)
    nb.cells.append(nbformat.v4.new_code_cell("1", metadata={"nbgrader": {
        "grade": True, "solution": False, "points": 1, "score": 1,
        "grade_id": f"x\"><img src=x onerror=\"{RUN}\"><li>Score: 100 / 100</li>"}}))
    return nb


def feedback_page(nb) -> str:
    """``nb``'s feedback page, as ``nbgrader generate_feedback`` writes it with classroom_kit/feedback.py."""
    import nbgrader
    from traitlets.config import Config

    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader"
    config = Config()
    config.HTMLExporter.template_name = "feedback"
    config.HTMLExporter.extra_template_basedirs = [str(templates / "templates")]
    # where this nbgrader release keeps bootstrap's stylesheet (0.9.5 and 0.9.6 differ)
    bootstrap = next(iter(sorted(Path(nbgrader.__file__).parent.rglob("bootstrap.min.css"))), None)
    config.HTMLExporter.extra_template_paths = [str(bootstrap.parent)] if bootstrap else []
    resources = {"nbgrader": {"notebook": "03_softmax", "score": 1.0, "max_score": 2.0, "late_penalty": 0}}
    page, _ = feedback.FeedbackExporter(config=config).from_notebook_node(nb, resources)
    return page


def live_markup(page: str) -> list[str]:
    """What in ``page`` could run or paint over it: a script or frame element, an event handler, a ``style``
    on a body element, an address that is not a picture, a relative or web link."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(page, "html.parser")
    found = [f"<{e.name}>" for e in soup.find_all(["script", "iframe", "frame", "object", "embed", "applet", "base",
                                                   "form", "svg", "meta", "link", "style"])
             if e.name not in ("meta", "style") or e.find_parent("head") is None]
    for element in soup.find_all(True):
        for name, value in element.attrs.items():
            text = "".join(str(value).split()).lower()
            if name.lower().startswith("on") or name.lower() == "srcdoc":
                found.append(f"{element.name} {name}")
            elif name.lower() == "style" and element.find_parent("head") is None:
                found.append(f"{element.name} style")
            elif name.lower() in ("href", "src", "action", "data") and re.match(r"(javascript|vbscript|data:(?!image/"
                                                                                r"(png|jpeg)))", text):
                found.append(f"{element.name} {name}={text[:40]}")
    return found


def test_nothing_a_student_wrote_is_live_markup_in_the_feedback():
    page = feedback_page(hostile_notebook())
    assert live_markup(page) == []
    assert f'content="{feedback.POLICY}"' in page and "default-src 'none'" in feedback.POLICY
    assert "Payload 0: &lt;script&gt;" in page, "a student's raw HTML shows as text"
    assert "(an output of type application/javascript, shown as text)" in page
    assert f"<p>{feedback.GRADED}</p>" in page, "the page says what was graded"


def test_the_guards_find_the_markup_of_an_unguarded_page():
    """The check above can fail: nbconvert's own HTML exporter keeps the payloads live."""
    from nbconvert import HTMLExporter

    nb = hostile_notebook()
    for k, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{k}"  # nbconvert refuses the forged id outright
    page, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    found = live_markup(page)
    assert any("script" in f for f in found) and any("onerror" in f for f in found), found


@pytest.mark.parametrize("payload", TAGS + LINKS)
def test_each_payload_alone_leaves_no_live_markup(payload):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(payload)])
    assert live_markup(feedback_page(nb)) == []


def test_emoji_in_the_feedback_are_words():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x", outputs=[nbformat.v4.new_output(
        "error", ename="Not yet", evalue="\u274c Not yet: the values differ", traceback=["\u274c Not yet"]),
        nbformat.v4.new_output("stream", name="stdout", text="\u2705 Correct! \U0001f4a1 a hint")])])
    page = feedback_page(nb)
    body = page[page.index("<body"):]
    assert not re.search("[\u2705\u274c\U0001f4a1]", body) and "Correct!" in body
