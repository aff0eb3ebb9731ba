"""The collection boundary of the classroom kit (classroom_kit/submissions.py, classroom_kit/classroom.py): only the
assignment's notebook is taken from a submission, never followed through a link, and a notebook nbgrader cannot
grade costs only its learner.

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
from tool_loader import load_tool

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
                         "x" * 200]) | st.text(st.characters(blacklist_characters="/\x00",  # no surrogates: a
                                                             blacklist_categories=("Cs",)),  # file name is UTF-8
                                               min_size=1, max_size=12)
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
        if name in submissions.NBGRADER_FILES or (name == ".ipynb_checkpoints" and path.is_dir()
                                                  and not path.is_symlink()):
            continue
        assert (name == chosen) != (name in said), name  # each entry either the notebook or refused with its reason
        if path.is_symlink():
            assert said[name] == "is a symbolic link" or name != chosen
            assert name != chosen
    if chosen is not None:
        assert (dest / f"{ASSIGNMENT}.ipynb").read_bytes() == entries[chosen].read_bytes()
        assert stat.S_ISREG(entries[chosen].lstat().st_mode) and entries[chosen].lstat().st_nlink == 1


# Bob, a real Unix account on a shared server, with links in his inbound folder and in submitted/.

from test_feedback import _as_user, _python_for_others, two_students  # noqa: E402, F401, F811 - the accounts fixture

BOB_PLANTS = """
import os, sys
folder, source, gradebook = sys.argv[1:4]
notebook = os.path.join(folder, os.path.basename(folder.split("+")[1]) + ".ipynb")
os.remove(notebook)
os.symlink(source, notebook)                        # his notebook: the teacher's source notebook (the solutions)
os.symlink(gradebook, os.path.join(folder, "gb"))   # the gradebook
os.symlink("/etc/shadow", os.path.join(folder, "shadow"))
os.mkfifo(os.path.join(folder, "pipe"))
print("planted")
"""


def kit_files(*folders: Path):
    """Every regular file under ``folders``, links not followed."""
    for folder in folders:
        for parent, _, names in os.walk(folder):
            for name in names:
                path = Path(parent) / name
                if stat.S_ISREG(path.lstat().st_mode):
                    yield path


def bob_attack(classroom_module, base: Path, alice: str, bob: str, in_submitted: bool = True) -> dict:
    """Bob's attack, played with ``classroom_module`` (today's or an older classroom_kit/classroom.py): links and a FIFO
    in his own inbound folder, then links, a hard link and a device placed in submitted/; collect, the kit's autograde,
    release_feedback, fetch_feedback as bob (``in_submitted=False``: the inbound links only). Returns what
    happened: ``grades`` (student -> (score, reason)), the kit's files that are no notebook nor page, those with
    /etc/shadow's or the gradebook's content, bob's feedback files."""
    out, exchange = base / "classroom", base / "exchange"
    classroom_module.build(out, {"02"})
    out.chmod(0o700)
    exchange.mkdir(mode=0o777)
    exchange.chmod(0o1777)
    root = f"--Exchange.root={exchange}"
    for step in (("generate_assignment", ASSIGNMENT, "--force"), ("release_assignment", ASSIGNMENT, root)):
        done = classroom_module.nbgrader(out, *step)
        assert done.returncode == 0, done.stderr[-2000:]
    course = ["--course", "attention-from-first-principles", root]
    python, env = _python_for_others(alice, base)
    cli = [python, "-m", "nbgrader"]
    source = out / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student in (alice, bob):
        done = _as_user(student, base / student, *cli, "fetch_assignment", ASSIGNMENT, *course, python=env)
        assert done.returncode == 0, done.stderr[-2000:]
    mine = base / alice / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    mine.write_bytes(source.read_bytes())  # Alice hands in the solutions: full marks, honestly
    shutil.chown(mine, alice, alice)
    for student in (alice, bob):
        done = _as_user(student, base / student, *cli, "submit", ASSIGNMENT, *course, python=env)
        assert done.returncode == 0, done.stderr[-2000:]
    inbound = exchange / "attention-from-first-principles" / "inbound"
    (his,) = [p for p in inbound.iterdir() if p.name.startswith(f"{bob}+")]
    done = _as_user(bob, base / bob, python, "-c", BOB_PLANTS, str(his), str(source), str(out / "gradebook.db"),
                    python=env)
    assert done.stdout.strip() == "planted", done.stderr[-2000:]
    collected = classroom_module.nbgrader(out, "collect", ASSIGNMENT, root)
    submitted = out / "submitted"
    theirs = submitted / alice / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    spare = out / "solutions.ipynb"
    shutil.copy(source, spare)
    for student, plant_it in (("carol", lambda p: os.symlink(theirs, p)),    # another's submission, linked
                              ("dave", lambda p: os.link(spare, p)),         # a hard link to the solutions
                              ("erin", lambda p: os.symlink(source, p)))[:3 * in_submitted]:  # the teacher's source
        (submitted / student / ASSIGNMENT).mkdir(parents=True)
        plant_it(submitted / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    if in_submitted:
        os.symlink(submitted / alice, submitted / "frank")  # a whole folder that is a link
    if in_submitted and (submitted / bob / ASSIGNMENT).is_dir():
        os.symlink("/etc/shadow", submitted / bob / ASSIGNMENT / "shadow.html")
        os.mknod(submitted / bob / ASSIGNMENT / "tty", stat.S_IFCHR | 0o666, os.makedev(5, 0))
    status = classroom_module.autograde(out, {"02"})
    for step in (("release_feedback", ASSIGNMENT, root),):
        classroom_module.nbgrader(out, *step)
    fetched = _as_user(bob, base / bob, *cli, "fetch_feedback", ASSIGNMENT, *course, python=env)
    grades = {}
    if (out / "grades.csv").exists():
        with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
            grades = {row["student_id"]: (row["score"], row.get("reason", "")) for row in csv.DictReader(handle)
                      if row["assignment"] == ASSIGNMENT}
    shared = exchange / "attention-from-first-principles"
    written = [out / name for name in ("accepted", "autograded", "feedback")] + [shared / "outbound",
                                                                                  shared / "feedback", base / bob]
    needles = [needle for needle in (shadow(), (out / "gradebook.db").read_bytes()[:512]) if needle]
    leaked = sorted(str(p.relative_to(base)) for p in kit_files(*written, out / "submitted")
                    if any(n in p.read_bytes() for n in needles))
    strays = sorted(str(p.relative_to(base)) for p in kit_files(*written)
                    if not p.name.endswith((".ipynb", ".html")) and p.name not in submissions.NBGRADER_FILES)
    strays += sorted(str(p) for folder in written for p in Path(folder).rglob("*")
                     if p.is_symlink() and folder != base / bob)
    return {"status": status, "grades": grades, "leaked": leaked, "strays": strays,
            "collect_log": collected.stdout + collected.stderr, "fetched": fetched.returncode,
            "bob_feedback": sorted(p.name for p in (base / bob / ASSIGNMENT / "feedback").rglob("*") if p.is_file())
            if (base / bob / ASSIGNMENT / "feedback").is_dir() else []}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_bob_links_the_solutions_the_gradebook_and_etc_shadow_and_gets_nothing(two_students, capsys):  # noqa: F811
    from test_grading_hostile import sandbox_or_skip

    sandbox_or_skip()
    base, (alice, bob) = two_students
    found = bob_attack(classroom, base, alice, bob)
    said = capsys.readouterr().out
    print(json.dumps(found, indent=1))
    assert found["status"] == 0
    grades = found["grades"]
    assert float(grades[alice][0]) == 2.0 and grades[alice][1] == "", "the honest student keeps her marks"
    for student in (bob, "carol", "erin"):
        assert grades[student][0] == "0.0" and "is a symbolic link" in grades[student][1], (student, grades)
        assert re.search(rf"refused \(0 in grades.csv\): {student}: .*is a symbolic link", said), said
    assert grades["dave"][0] == "0.0" and "is a hard link" in grades["dave"][1]
    assert grades["frank"][0] == "0.0" and "submitted/frank is a symbolic link" in grades["frank"][1]
    for name in ("gb is a symbolic link", "shadow is a symbolic link", "pipe is a FIFO"):
        assert name in grades[bob][1] and name in found["collect_log"], (name, grades[bob])
    assert found["leaked"] == [], "the gradebook's or /etc/shadow's content reached a file the kit wrote"
    assert found["strays"] == [], "a file that is not a notebook or a page was copied, or a link kept"
    assert found["bob_feedback"] == [], "bob's refused submission has no feedback to fetch"


# Home folders on a shared server (docs/teaching-guide.md, "Home folders on a shared server").

def login_defs_home_mode() -> int:
    """The mode ``useradd -m`` gives a home here, as useradd(8) computes it: HOME_MODE, else 0777 & ~UMASK."""
    text = Path("/etc/login.defs").read_text(encoding="utf-8")
    found = dict(re.findall(r"^(HOME_MODE|UMASK)\s+(\d+)", text, re.MULTILINE))
    return int(found["HOME_MODE"], 8) if "HOME_MODE" in found else 0o777 & ~int(found.get("UMASK", "022"), 8)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_default_homes_let_a_classmate_read_a_notebook_and_the_guides_advice_closes_them():
    import subprocess
    import tempfile

    if os.geteuid() != 0:
        pytest.skip("not root: home folders are tested with real Unix users (useradd -m, runuser)")
    base = Path(tempfile.mkdtemp(prefix="attn-homes-"))
    base.chmod(0o755)  # like /home
    tag = f"h{os.getpid() % 10**5}"
    users = {f"{tag}{who}": options for who, options in (("a", []), ("b", []), ("c", ["-K", "HOME_MODE=0700"]),
                                                           ("d", []))}
    reader = f"{tag}r"

    def run_as(user, script):
        return subprocess.run(["runuser", "-u", user, "--", "env", f"HOME={base / user}", "sh", "-c", script],
                              capture_output=True, text=True, cwd="/")

    try:
        for user, options in [*users.items(), (reader, [])]:
            subprocess.run(["useradd", "-m", "--home-dir", str(base / user), "--shell", "/bin/sh", *options, user],
                           check=True, capture_output=True)
        default, chmodded, home_mode, masked = users
        run_as(chmodded, 'chmod 700 "$HOME"')  # the guide's chmod 700 (the teacher's chmod 700 /home/*)
        for user in users:
            umask = "077" if user == masked else "022"
            work = '"$HOME/work"'
            done = run_as(user, f"umask {umask}; mkdir -p {work} && echo 'def softmax(x): ...' > {work}/05.ipynb")
            assert done.returncode == 0, done.stderr
        modes = {user: stat.S_IMODE((base / user).stat().st_mode) for user in users}
        read = {user: run_as(reader, f"cat {base / user / 'work' / '05.ipynb'}").returncode == 0 for user in users}
    finally:
        for user in [*users, reader]:
            subprocess.run(["userdel", user], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)
    print(f"useradd -m homes: {oct(modes[default])} by default here (login.defs: {oct(login_defs_home_mode())}); "
          f"a classmate reads the notebook: {read}")
    assert modes[default] == login_defs_home_mode()
    assert read[default] == bool(modes[default] & 0o005 == 0o005), "the default's leak is what its mode says"
    assert modes[chmodded] == modes[home_mode] == 0o700
    assert read == {default: read[default], chmodded: False, home_mode: False, masked: False}


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_when_nbgrader_fails_on_one_student_the_others_are_graded_and_that_one_is_not_graded_not_missing(
        tmp_path, capsys, monkeypatch):
    """nbgrader stopping a batch (as "old version of the nbgrader metadata format" did) is played by a wrapper
    around the kit's nbgrader call: the batch run and victim's own run fail, every other run is the real one."""
    from test_grading_hostile import sandbox_or_skip

    sandbox_or_skip()
    out = tmp_path / "classroom"
    classroom.build(out, {"02"})
    assert classroom.nbgrader(out, "generate_assignment", ASSIGNMENT, "--force").returncode == 0
    source = out / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    for student in ("honest", "victim"):
        (out / "submitted" / student / ASSIGNMENT).mkdir(parents=True)
        shutil.copy(source, out / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
    real = classroom.nbgrader

    def failing(course, *args):
        if args[0] == "autograde" and not any(a.startswith("--student=") and a != "--student=victim" for a in args):
            import subprocess

            return subprocess.CompletedProcess(args, 1, "", "[AutogradeApp | ERROR] One or more notebooks in the "
                                               "assignment use an old version of the nbgrader metadata format.\n")
        return real(course, *args)

    monkeypatch.setattr(classroom, "nbgrader", failing)
    capsys.readouterr()
    assert classroom.autograde(out, {"02"}) == 0
    said = capsys.readouterr().out
    rows = grades(out)
    assert summary_counts(said) == {"graded": 1, "refused": 0, "not graded": 1, "missing": 0}, said
    assert float(rows["honest"]["score"]) == 2.0 and rows["honest"]["reason"] == ""
    assert rows["victim"]["score"] == "0.0" and rows["victim"]["reason"].startswith("not graded: nbgrader autograde "
                                                                                     "failed: ")
    assert "old version of the nbgrader metadata format" in rows["victim"]["reason"]
    assert re.search(r"not graded \(0 in grades.csv\): victim: nbgrader autograde failed", said), said
    assert not (out / "feedback" / "victim" / ASSIGNMENT).exists()
