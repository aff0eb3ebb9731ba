"""attn_helpers.progress(): each checker's verdict is recorded in a local JSON file, shown as a table and
exported as CSV; a corrupt or unwritable file never breaks a checker. Every test writes to a file of its own
(ATTN_HELPERS_PROGRESS), never to the real Jupyter data directory."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

import attn_helpers
from attn_helpers.checks import (
    _progress,
    check_best_key,
    check_dot_score,
    check_score_matrix,
    check_softmax_any_axis,
    grade_value,
)


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "progress.json"
    monkeypatch.setenv("ATTN_HELPERS_PROGRESS", str(path))
    monkeypatch.setitem(_progress._state, "said", set())
    monkeypatch.setitem(_progress._state, "frame", None)
    return path


def test_the_default_file_is_under_jupyters_data_directory(monkeypatch):
    from jupyter_core.paths import jupyter_data_dir

    monkeypatch.delenv("ATTN_HELPERS_PROGRESS", raising=False)
    assert _progress.progress_file().parent.parent == Path(jupyter_data_dir())


def test_each_call_of_a_checker_is_one_attempt_and_a_pass_stays_passed(store):
    assert not check_score_matrix(lambda X: X.T @ X)
    assert check_score_matrix(lambda X: X @ X.T)
    assert not check_score_matrix(lambda X: X * X)
    entry = json.loads(store.read_text())["02"]["check_score_matrix"]
    assert entry["attempts"] == 3 and entry["passed"] is True and entry["last_tried"]


def test_a_checker_that_refines_its_graders_verdict_counts_once(store):
    verdict = check_softmax_any_axis(lambda x, axis=-1: np.exp(x) / np.exp(x).sum(axis=axis, keepdims=True))
    assert not verdict and "NaN" in verdict.message
    assert json.loads(store.read_text())["03"]["check_softmax_any_axis"] == {
        "attempts": 1, "passed": False, "last_tried": json.loads(store.read_text())["03"]["check_softmax_any_axis"][
            "last_tried"]}


def test_untouched_exercises_and_verdicts_outside_a_checker_are_not_recorded(store):
    def stub(query, key):
        raise NotImplementedError

    assert not check_best_key(...) and not check_dot_score(stub)
    assert grade_value(2.0, 2.0)  # the machinery used directly, not a notebook's checker
    assert not store.exists()


def test_progress_table_and_csv_cover_every_exercise(store, tmp_path):
    check_score_matrix(lambda X: X @ X.T)
    check_dot_score(lambda q, k: q * k)
    table = attn_helpers.progress()
    exercises = _progress.exercises()
    assert [row[0] for row in table.rows] == list(exercises) and "02" in exercises
    assert dict((row[0], row[1:]) for row in table.rows)["02"] == (1, 1, len(exercises["02"]) - 2)
    assert all(sum(row[1:]) == len(exercises[row[0]]) for row in table.rows)
    assert "passed" in repr(table) and "<table>" in table._repr_html_()
    written = attn_helpers.progress(export=tmp_path / "progress.csv", name="Ada Lovelace")
    with open(written, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["learner", "notebook", "exercise", "passed", "attempts", "last_tried"]
    assert rows[-1]["learner"] == "sha256" and len(rows) == sum(map(len, exercises.values())) + 1
    by_name = {row["exercise"]: row for row in rows[:-1]}
    assert {row["learner"] for row in rows[:-1]} == {"Ada Lovelace"}
    assert by_name["check_score_matrix"]["passed"] == "True" and by_name["check_dot_score"]["attempts"] == "1"
    assert by_name["check_best_key"]["attempts"] == "0" and by_name["check_best_key"]["last_tried"] == ""
    assert _progress.verify_export(written) == (True, "Ada Lovelace")


def test_every_checker_module_names_its_exercises():
    from attn_helpers import checks

    exercises = _progress.exercises()
    named = {name for names in exercises.values() for name in names}
    assert named == {name for name in checks.__all__ if name.startswith("check_")}


def test_an_unreadable_file_is_renamed_aside_never_overwritten_and_said_once(store, capsys):
    store.write_text('{"02": {"check_dot_score": {"passed": true, "attempts": 2}},}')  # a stray comma
    assert check_score_matrix(lambda X: X @ X.T)
    assert not check_score_matrix(lambda X: X.T @ X)
    err = capsys.readouterr().err
    assert err.count("could not read") == 1 and "kept as progress.json.unreadable-" in err
    (aside,) = store.parent.glob("progress.json.unreadable-*")
    assert aside.read_text().endswith("},}")  # the learner's file, byte for byte
    assert json.loads(store.read_text())["02"]["check_score_matrix"]["attempts"] == 2  # a new record
    assert attn_helpers.progress().rows  # the table still shows


def test_an_unwritable_file_never_breaks_a_checker_and_is_reported_once(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("ATTN_HELPERS_PROGRESS", str(blocker / "progress.json"))  # its folder is a file
    monkeypatch.setitem(_progress._state, "said", set())
    assert check_score_matrix(lambda X: X @ X.T)
    assert not check_score_matrix(lambda X: X.T @ X).passed
    err = capsys.readouterr().err
    assert err.count("progress:") == 1 and f"not saved to {blocker / 'progress.json'}" in err


@pytest.mark.parametrize("entry", ["yes", {"passed": True, "attempts": "three"}, {"passed": "false", "attempts": 1},
                                   {"passed": True}, {"passed": True, "attempts": -1}, None])
def test_malformed_entries_are_skipped_with_one_notice_and_never_break_anything(store, capsys, tmp_path, entry):
    store.write_text(json.dumps({"02": {"check_dot_score": entry, "check_best_key": {"passed": True, "attempts": 1}},
                                 "03": "junk"}))
    table = dict((row[0], row[1:]) for row in attn_helpers.progress().rows)
    assert table["02"][:2] == (1, 0)  # best_key passed; the malformed dot_score is not counted as passed
    assert attn_helpers.progress(export=tmp_path / "p.csv", name="Ada")
    assert check_dot_score(lambda q, k: float((q * k).sum()))  # an update over a malformed entry works
    assert not check_dot_score(lambda q, k: 0.0)
    assert json.loads(store.read_text())["02"]["check_dot_score"]["attempts"] == 2
    assert capsys.readouterr().err.count("progress: skipped") == 1


def test_off_means_off_everywhere(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTN_HELPERS_PROGRESS", "off")
    assert check_score_matrix(lambda X: X @ X.T)
    table = attn_helpers.progress()
    assert "off" in repr(table) and "off" in table._repr_html_()
    assert attn_helpers.progress(export="p.csv", name="Ada") is None
    assert "ATTN_HELPERS_PROGRESS is off" in capsys.readouterr().out
    assert list(tmp_path.iterdir()) == []  # no file named off, no p.csv


def test_export_names_the_learner_refuses_a_missing_folder_and_shows_an_edit(store, tmp_path, capsys):
    check_score_matrix(lambda X: X @ X.T)
    assert attn_helpers.progress(export=tmp_path / "p.csv") is None
    assert attn_helpers.progress(export=tmp_path / "nowhere" / "p.csv", name="Ada") is None
    out = capsys.readouterr().out
    assert "name='Your Name'" in out and f"the folder {tmp_path / 'nowhere'} does not exist" in out
    written = attn_helpers.progress(export=tmp_path / "p.csv", name="Ada")
    assert _progress.verify_export(written) == (True, "Ada")
    written.write_text(written.read_text().replace("False", "True", 1))
    ok, message = _progress.verify_export(written)
    assert not ok and "changed after it was written" in message


_WRITER = """
import sys, time
from pathlib import Path
import numpy as np
from attn_helpers.checks import check_dot_score
start = float(sys.argv[1])
while time.time() < start:
    time.sleep(0.001)
for i in range(int(sys.argv[2])):
    check_dot_score(lambda q, k: float((q * k).sum()) + i % 2)
"""


def test_three_notebooks_writing_at_once_lose_no_attempt(store):
    import subprocess
    import sys
    import time

    races = 20
    start = str(time.time() + 3)  # all three start writing at the same moment
    env = {**__import__("os").environ, "ATTN_HELPERS_PROGRESS": str(store)}
    writers = [subprocess.Popen([sys.executable, "-c", _WRITER, start, str(races)], env=env) for _ in range(3)]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0, 0]
    assert json.loads(store.read_text())["02"]["check_dot_score"]["attempts"] == 3 * races


def test_the_recorder_sends_nothing_anywhere():
    source = Path(_progress.__file__).read_text(encoding="utf-8")
    assert not any(name in source for name in ("socket", "urllib", "http.client", "requests"))
