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
    monkeypatch.setitem(_progress._state, "complained", False)
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
    written = attn_helpers.progress(export=tmp_path / "progress.csv")
    with open(written, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert list(rows[0]) == ["notebook", "exercise", "passed", "attempts", "last_tried"]
    assert len(rows) == sum(map(len, exercises.values()))
    by_name = {row["exercise"]: row for row in rows}
    assert by_name["check_score_matrix"]["passed"] == "True" and by_name["check_dot_score"]["attempts"] == "1"
    assert by_name["check_best_key"]["attempts"] == "0" and by_name["check_best_key"]["last_tried"] == ""


def test_every_checker_module_names_its_exercises():
    from attn_helpers import checks

    exercises = _progress.exercises()
    named = {name for names in exercises.values() for name in names}
    assert named == {name for name in checks.__all__ if name.startswith("check_")}


def test_a_corrupt_file_never_breaks_a_checker_and_is_reported_once(store, capsys):
    store.write_text("{ half a file")
    assert check_score_matrix(lambda X: X @ X.T)
    assert not check_score_matrix(lambda X: X.T @ X)
    err = capsys.readouterr().err
    assert err.count("progress not saved") == 1 and "could not read" in err
    assert attn_helpers.progress().rows  # the table still shows


def test_an_unwritable_file_never_breaks_a_checker_and_is_reported_once(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setenv("ATTN_HELPERS_PROGRESS", str(blocker / "progress.json"))  # its folder is a file
    monkeypatch.setitem(_progress._state, "complained", False)
    assert check_score_matrix(lambda X: X @ X.T)
    assert not check_score_matrix(lambda X: X.T @ X).passed
    err = capsys.readouterr().err
    assert err.count("progress not saved") == 1 and f"could not read {blocker / 'progress.json'}" in err


def test_the_recorder_sends_nothing_anywhere():
    source = Path(_progress.__file__).read_text(encoding="utf-8")
    assert not any(name in source for name in ("socket", "urllib", "http.client", "requests"))
