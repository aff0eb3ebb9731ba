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
import re
import shutil
import zipfile

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
