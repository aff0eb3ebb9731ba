"""The collection boundary of the classroom kit (tools/submissions.py, tools/classroom.py): only the assignment's
notebook is taken from a submission, never followed through a link, and a notebook nbgrader cannot grade costs only
its learner.

- ``accepted_files`` and ``clean_copy`` on trees of links, FIFOs, devices, hard links, odd names and huge files,
  crafted and generated (Hypothesis): nothing but the notebook is ever copied, no link is followed;
- ``canonical_notebook`` on each malformed kind (bad JSON, a source that is a number, a copied exercise cell,
  a renamed grade id, an extra grade cell worth 100, stripped metadata);
- the real nbgrader cycle on a class of six with each malformed kind: every row of grades.csv agrees with the
  command's summary, nobody is a silent 0;
- as root, bob (a real Unix account) attacks through the course's exchange with links and a FIFO, and the
  default home folders leak a classmate's notebook until the guide's advice is followed.
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent

submissions = load_tool("submissions")
classroom = load_tool("classroom")
ASSIGNMENT = "02_dot_product_scores"


@pytest.fixture(scope="module")
def released(tmp_path_factory):
    """A course folder of notebook 02 with its released notebook: ``(out, source, release)`` (dicts)."""
    out = tmp_path_factory.mktemp("course")
    classroom.build(out, {"02"})
    done = classroom.nbgrader(out, "generate_assignment", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr[-2000:]
    read = lambda folder: json.loads((out / folder / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text("utf-8"))  # noqa: E731
    return out, read("source"), read("release")


def grade_cells(nb: dict) -> list[tuple]:
    return [(c["metadata"]["nbgrader"]["grade_id"], c["metadata"]["nbgrader"].get("points"))
            for c in nb["cells"] if "nbgrader" in c.get("metadata", {})]


def cell_of(nb: dict, grade_id: str) -> int:
    return next(i for i, c in enumerate(nb["cells"]) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def malformed(source: dict) -> dict:
    """``{student: (notebook bytes, what the reason must say)}``: each kind nbgrader cannot grade as it is."""
    kinds = {}
    nb = copy.deepcopy(source)
    nb["cells"][3]["source"] = 42
    kinds["int_source"] = (nb, "cell 4 dropped (its source is int")
    nb = copy.deepcopy(source)
    at = cell_of(nb, "dot_score")
    stale = copy.deepcopy(release_cell(nb, at))
    stale.update(id="stalecopy", execution_count=2)
    nb["cells"][at]["execution_count"] = 7
    nb["cells"].insert(at + 2, stale)  # the released stub pasted below: the solution ran last (7 > 2)
    kinds["duplicated"] = (nb, "2 copies")
    nb = copy.deepcopy(source)
    nb["cells"][cell_of(nb, "dot_score")]["metadata"]["nbgrader"]["grade_id"] = "my_dot_score"
    kinds["renamed"] = (nb, "grade id 'my_dot_score' is not the assignment's")
    nb = copy.deepcopy(source)
    bonus = copy.deepcopy(nb["cells"][cell_of(nb, "test_dot_score")])
    bonus["metadata"]["nbgrader"].update(grade_id="bonus", points=100)
    bonus.update(id="bonus", source="assert True")
    nb["cells"].append(bonus)
    kinds["extra_100"] = (nb, "grade id 'bonus' is not the assignment's")
    nb = copy.deepcopy(source)
    for cell in nb["cells"]:
        cell["metadata"] = {}
    kinds["stripped"] = (nb, "had lost its grading metadata, found by its content")
    encoded = {student: (json.dumps(nb).encode(), said) for student, (nb, said) in kinds.items()}
    encoded["bad_json"] = (json.dumps(source).encode()[:-200], "its JSON does not parse")
    return encoded


def release_cell(nb, at):
    """The released stub of the exercise cell at ``at`` (the source's solution region taken out)."""
    cell = copy.deepcopy(nb["cells"][at])
    cell["source"] = re.sub(r"### BEGIN SOLUTION.*?### END SOLUTION\n?", "", "".join(cell["source"]), flags=re.S)
    return cell


def test_each_malformed_kind_is_repaired_into_the_released_grade_cells_or_refused_with_its_reason(released):
    _, source, release = released
    expected = grade_cells(release)
    assert [points for _, points in expected] == [None, 1, None, 1]
    for student, (data, said) in malformed(source).items():
        try:
            text, notes = submissions.canonical_notebook(data, release)
        except submissions.Refused as err:
            assert said in str(err), (student, err)
            continue
        nb = json.loads(text)
        assert grade_cells(nb) == expected, student
        assert any(said in note for note in notes), (student, notes)
        ids = [c["id"] for c in nb["cells"]]
        assert len(ids) == len(set(ids)), student
    text, notes = submissions.canonical_notebook(json.dumps(source).encode(), release)
    assert notes == [] and grade_cells(json.loads(text)) == expected


def grades(out: Path) -> dict:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: row for row in csv.DictReader(handle) if row["assignment"] == ASSIGNMENT}


def summary_counts(said: str) -> dict:
    found = re.search(r"(\d+) graded, (\d+) refused, (\d+) not graded, (\d+) missing", said)
    return dict(zip(("graded", "refused", "not graded", "missing"), map(int, found.groups())))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_malformed_notebook_costs_only_its_learner_and_the_summary_agrees_with_grades_csv(tmp_path, capsys):
    from test_grading_hostile import sandbox_or_skip

    sandbox_or_skip()
    out = tmp_path / "classroom"
    classroom.build(out, {"02"})
    assert classroom.nbgrader(out, "generate_assignment", ASSIGNMENT, "--force").returncode == 0
    source = json.loads((out / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text("utf-8"))
    release = out / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    handed = {student: data for student, (data, _) in malformed(source).items()}
    handed["honest"] = json.dumps(source).encode()
    handed["untouched"] = release.read_bytes()
    for student, data in handed.items():
        (out / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        (out / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").write_bytes(data)
    assert classroom.nbgrader(out, "db", "student", "add", "absent").returncode == 0
    capsys.readouterr()
    assert classroom.autograde(out, {"02"}) == 0
    said = capsys.readouterr().out
    rows = grades(out)
    counts = summary_counts(said)
    assert sum(counts.values()) == len(rows) == len(handed) + 1, (counts, said)
    kinds = {status: {s for s, row in rows.items() if row["reason"].startswith(status + ":")}
             for status in ("refused", "not graded")}
    missing = {s for s, row in rows.items() if row["score"] == "missing"}
    assert missing == {"absent"} and rows["absent"]["reason"] == "missing"
    assert counts == {"graded": len(rows) - len(missing) - len(kinds["refused"]) - len(kinds["not graded"]),
                      "refused": len(kinds["refused"]), "not graded": len(kinds["not graded"]), "missing": 1}
    assert kinds == {"refused": {"bad_json"}, "not graded": set()}, said
    assert "its JSON does not parse" in rows["bad_json"]["reason"] and float(rows["bad_json"]["score"]) == 0
    full = float(rows["honest"]["max_score"])
    marks = {s: float(row["score"]) for s, row in rows.items() if s not in missing}
    assert marks == {"honest": full, "untouched": 0.0, "bad_json": 0.0, "int_source": full, "duplicated": full,
                     "renamed": full, "extra_100": full, "stripped": full}, marks
    assert full == 2.0, "an extra grade cell worth 100 never raises the maximum"
    for student, (_, reason) in malformed(source).items():
        assert reason in rows[student]["reason"], (student, rows[student]["reason"])
        assert student in said
    assert all((out / "feedback" / s / ASSIGNMENT / f"{ASSIGNMENT}.html").is_file() for s in marks if s != "bad_json")


# The boundary, fuzzed: trees of links, FIFOs, devices, hard links, folders, odd names and huge files.

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

SECRET = b"SECRET-6f1d2c: the teacher's gradebook and /etc/shadow"
NAMES = st.sampled_from([f"{ASSIGNMENT}.ipynb", f"{ASSIGNMENT} (1).ipynb", f"{ASSIGNMENT}-Copy1.ipynb",
                         "02_Dot_Product_Scores.IPYNB", "timestamp.txt", "submission_secret.txt", "gb", "shadow",
                         ".ipynb_checkpoints", "..x", "-rf", "notes\nwith newline.txt", "ünïcödé.ipynb", " ",
                         "x" * 200]) | st.text(st.characters(blacklist_characters="/\x00"), min_size=1, max_size=12)
KINDS = ["notebook", "file", "link_secret", "link_shadow", "link_parent", "link_dangling", "link_loop", "link_dir",
         "fifo", "device", "hardlink_secret", "huge", "folder"]
TREES = st.recursive(st.dictionaries(NAMES, st.sampled_from(KINDS), max_size=6),
                     lambda inner: st.dictionaries(NAMES, inner | st.sampled_from(KINDS), max_size=4), max_leaves=12)


def shadow() -> bytes:
    """The content of /etc/shadow when this process may read it (as root), else empty."""
    try:
        return Path("/etc/shadow").read_bytes().strip()
    except OSError:
        return b""


def plant(folder: Path, tree: dict, secret: Path, notebook: bytes) -> None:
    folder.mkdir()
    for name, kind in tree.items():
        if name in (".", ".."):
            continue
        path = folder / name
        if isinstance(kind, dict):
            plant(path, kind, secret, notebook)
        elif kind == "notebook":
            path.write_bytes(notebook)
        elif kind == "file":
            path.write_bytes(os.urandom(64))
        elif kind == "huge":
            with open(path, "wb") as handle:  # sparse: larger than the cap, no disk used
                handle.truncate(submissions.MAX_NOTEBOOK + 1)
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "device":
            if os.geteuid() == 0:
                os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))
            else:
                os.mkfifo(path)
        elif kind == "hardlink_secret":
            os.link(secret, path)
        elif kind == "folder":
            path.mkdir()
        else:
            target = {"link_secret": secret, "link_shadow": Path("/etc/shadow"), "link_parent": folder.parent,
                      "link_dangling": folder / "nowhere", "link_loop": path, "link_dir": secret.parent}[kind]
            os.symlink(target, path)


@pytest.mark.timeout(300)
@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(tree=TREES, folder_is_link=st.booleans())
def test_nothing_but_the_notebook_is_ever_copied_and_no_link_is_followed(tmp_path_factory, tree, folder_is_link):
    base = tmp_path_factory.mktemp("tree")
    (base / "outside").mkdir()
    secret = base / "outside" / "gradebook.db"
    secret.write_bytes(SECRET)
    notebook = json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()
    submitted = base / "submitted" / "bob"
    submitted.mkdir(parents=True)
    if folder_is_link:  # the submission's folder is a link to a folder that holds a notebook
        plant(base / "outside" / ASSIGNMENT, {f"{ASSIGNMENT}.ipynb": "notebook"}, secret, notebook)
        os.symlink(base / "outside" / ASSIGNMENT, submitted / ASSIGNMENT)
    else:
        plant(submitted / ASSIGNMENT, tree, secret, notebook)
    folder = submitted / ASSIGNMENT
    chosen, refused = submissions.accepted_files(folder, ASSIGNMENT, root=base / "submitted")
    dest = base / "accepted" / "bob" / ASSIGNMENT
    dest.parent.mkdir(parents=True)
    copied, refused_copy, _ = submissions.clean_copy(folder, dest, ASSIGNMENT, root=base / "submitted")
    assert copied == chosen
    written = sorted(p.name for p in dest.iterdir())
    assert set(written) <= {f"{ASSIGNMENT}.ipynb", *submissions.NBGRADER_FILES}, written
    for path in dest.iterdir():
        assert stat.S_ISREG(path.lstat().st_mode) and path.lstat().st_nlink == 1
        assert SECRET not in path.read_bytes(), path.name
        assert not shadow() or shadow() not in path.read_bytes(), path.name
    if folder_is_link:
        assert chosen is None and refused == [(".", f"is reached through {ASSIGNMENT}, which is a symbolic link")]
        assert written == []
        return
    entries = {p.name: p for p in folder.iterdir()}
    said = dict(refused)
    for name, path in entries.items():
        if name in submissions.NBGRADER_FILES:
            continue
        assert (name == chosen) != (name in said), name  # each entry either the notebook or refused with its reason
        if path.is_symlink():
            assert said[name] == "is a symbolic link" or name != chosen
            assert name != chosen
    if chosen is not None:
        assert (dest / f"{ASSIGNMENT}.ipynb").read_bytes() == entries[chosen].read_bytes()
        assert stat.S_ISREG(entries[chosen].lstat().st_mode) and entries[chosen].lstat().st_nlink == 1
