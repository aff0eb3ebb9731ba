"""Your progress through the exercises (passed, attempts, last try), kept on this machine only.

The JSON file is ``attn_helpers/progress.json`` under ``jupyter --data-dir``, or ``$ATTN_HELPERS_PROGRESS``
(``off`` records nothing). A corrupt or unwritable file never breaks a checker: it says so once.

>>> attn_helpers.progress(export="progress.csv")     # doctest: +SKIP
"""

from __future__ import annotations

import csv
import datetime
import html
import importlib
import inspect
import json
import os
import pkgutil
import re
import sys
from pathlib import Path

__all__ = ["progress", "progress_file", "record", "exercises"]

ENV = "ATTN_HELPERS_PROGRESS"
_CHECKER_MODULE = re.compile(r"attn_helpers\.checks\.nb(\d\d)$")
_NOT_AN_ATTEMPT = ("is not filled in yet", "not implemented yet")  # the untouched ``...`` or stub
_state: dict = {"frame": None, "before": None, "complained": False}


def progress_file() -> Path:
    """Where progress is kept: ``$ATTN_HELPERS_PROGRESS``, else Jupyter's data directory."""
    if os.environ.get(ENV):
        return Path(os.environ[ENV]).expanduser()
    try:
        from jupyter_core.paths import jupyter_data_dir
        base = Path(jupyter_data_dir())
    except ImportError:  # jupyter_core's own default, without jupyter_core
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "jupyter"
    return base / "attn_helpers" / "progress.json"


def _complain_once(what: str, error: BaseException) -> None:
    if not _state["complained"]:
        _state["complained"] = True
        print(f"(progress not saved: could not {what} {progress_file()}: {type(error).__name__}: {error}; "
              f"your checker's answer above is unaffected)", file=sys.stderr)


def _load() -> dict:
    path = progress_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        _complain_once("read", err)
        return {}
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        _complain_once("read", ValueError("not a progress file"))
        return {}
    return data


def _save(data: dict) -> None:
    path = progress_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        partial.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(partial, path)  # never a half-written file, even with two notebooks open
    except OSError as err:
        _complain_once("write", err)


def _checker_frame():
    """The frame of the outermost ``check_*`` function of a notebook's checker module now running, or None."""
    found, frame = None, inspect.currentframe()
    while frame is not None:
        if frame.f_code.co_name.startswith("check_") and _CHECKER_MODULE.match(frame.f_globals.get("__name__", "")):
            found = frame
        frame = frame.f_back
    return found


def record(verdict) -> None:
    """Record ``verdict`` for the notebook checker making it: one attempt per call (its last verdict counts);
    nothing for verdicts outside a checker or for an untouched exercise (``...``, ``NotImplementedError``)."""
    if os.environ.get(ENV) == "off":  # e.g. nbgrader grading learners' work: their progress is not the teacher's
        return
    try:
        frame = _checker_frame()
        if frame is None or any(text in verdict.message for text in _NOT_AN_ATTEMPT):
            return
        notebook = _CHECKER_MODULE.match(frame.f_globals["__name__"]).group(1)
        exercise = frame.f_code.co_name
        data = _load()
        if frame is not _state["frame"]:  # a new call of a checker: one more attempt
            _state["frame"] = frame
            _state["before"] = dict(data.get(notebook, {}).get(exercise, {"passed": False, "attempts": 0}))
        before = _state["before"]
        data.setdefault(notebook, {})[exercise] = {
            "passed": bool(before["passed"] or verdict.passed),
            "attempts": int(before["attempts"]) + 1,
            "last_tried": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        }
        _save(data)
    except Exception as err:  # noqa: BLE001 - progress is a convenience: a checker must answer whatever happens
        _complain_once("update", err)


def exercises() -> dict:
    """Every notebook's exercises, by notebook number: the ``check_*`` names of its module's ``__all__``."""
    from .. import checks

    found = {}
    for info in pkgutil.iter_modules(checks.__path__):
        match = re.fullmatch(r"nb(\d\d)", info.name)
        if match:
            module = importlib.import_module(f"{checks.__name__}.{info.name}")
            found[match.group(1)] = [name for name in module.__all__ if name.startswith("check_")]
    return dict(sorted(found.items()))


class Progress:
    """The table ``progress()`` shows: one row per notebook, its exercises passed / tried / not yet."""

    def __init__(self, rows: list, path: Path):
        self.rows, self.path = rows, path

    def __repr__(self) -> str:
        lines = [f"{'notebook':<9}{'passed':>7}{'tried':>7}{'not yet':>9}{'of':>4}"]
        lines += [f"{nb:<9}{p:>7}{t:>7}{n:>9}{p + t + n:>4}" for nb, p, t, n in self.rows]
        return "\n".join(lines + [f"(kept in {self.path}; nothing leaves this machine)"])

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><td>{nb}</td><td>{p}</td><td>{t}</td><td>{n}</td></tr>" for nb, p, t, n in self.rows)
        return ("<table><thead><tr><th>notebook</th><th>✅ passed</th><th>tried, not passed yet</th>"
                f"<th>not tried yet</th></tr></thead><tbody>{cells}</tbody></table>"
                f"<p>Kept in <code>{html.escape(str(self.path))}</code>; nothing leaves this machine.</p>")


def progress(export: str | os.PathLike | None = None):
    """Your exercises so far, one row per notebook; with ``export``, write a CSV of one row per exercise to
    hand in (notebook, exercise, passed, attempts, last_tried) and return its path."""
    data, per_notebook, rows = _load(), exercises(), []
    for notebook, names in per_notebook.items():
        done = data.get(notebook, {})
        passed = sum(bool(done.get(name, {}).get("passed")) for name in names)
        tried = sum(name in done and not done[name].get("passed") for name in names)
        rows.append((notebook, passed, tried, len(names) - passed - tried))
    if export is None:
        return Progress(rows, progress_file())
    path = Path(export)
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["notebook", "exercise", "passed", "attempts", "last_tried"])
        for notebook, names in per_notebook.items():
            for name in names:
                entry = data.get(notebook, {}).get(name, {})
                writer.writerow([notebook, name, bool(entry.get("passed")), int(entry.get("attempts", 0)),
                                 entry.get("last_tried", "")])
    return path
