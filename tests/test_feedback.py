"""What a teacher hands back and how learners hand in: feedback named per exercise, and the LMS workflow.

Each autograder test cell of the course folder (tools/classroom.py) names its exercise on its first line, as
the notebook numbers it, and the feedback page's summary shows that name (tools/feedback.py; the page
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
