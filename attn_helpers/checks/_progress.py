"""Your progress through the exercises (passed, attempts, last try), kept on this machine only.

The JSON file is ``attn_helpers/progress.json`` under ``jupyter --data-dir``, or ``$ATTN_HELPERS_PROGRESS``
(``off`` records and reads nothing). A checker's answer never depends on this file: an unreadable file is
renamed aside (and said so) instead of being overwritten, malformed entries are skipped with one notice, and
several notebooks writing at once take turns (a lock file beside it), so no attempt is lost.

>>> attn_helpers.progress(export="progress.csv", name="Ada Lovelace")     # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import csv
import datetime
import hashlib
import html
import importlib
import inspect
import io
import json
import os
import pkgutil
import re
import sys
import time
from pathlib import Path

__all__ = ["progress", "progress_file", "record", "exercises", "verify_export"]

ENV = "ATTN_HELPERS_PROGRESS"
LOCK_WAIT = 3.0  # seconds a checker waits for another notebook to finish writing before giving up saving
_CHECKER_MODULE = re.compile(r"attn_helpers\.checks\.nb(\d\d)$")
_NOT_AN_ATTEMPT = ("is not filled in yet", "not implemented yet")  # the untouched ``...`` or stub
_COLUMNS = ["learner", "notebook", "exercise", "passed", "attempts", "last_tried"]
_state: dict = {"frame": None, "flipped": False, "said": set()}


def progress_file() -> Path | None:
    """Where progress is kept: ``$ATTN_HELPERS_PROGRESS``, else Jupyter's data directory; ``None`` when it is
    ``off``."""
    value = os.environ.get(ENV)
    if value == "off":
        return None
    if value:
        return Path(value).expanduser()
    try:
        from jupyter_core.paths import jupyter_data_dir
        base = Path(jupyter_data_dir())
    except ImportError:  # jupyter_core's own default, without jupyter_core
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "jupyter"
    return base / "attn_helpers" / "progress.json"


def _say_once(kind: str, text: str) -> None:
    """One line on stderr, once per kind of trouble per session: a checker's answer is never affected."""
    if kind not in _state["said"]:
        _state["said"].add(kind)
        print(f"(progress: {text}; your checker's answer above is unaffected)", file=sys.stderr)


def _try_lock(handle) -> None:
    if os.name == "nt":
        import msvcrt
        handle.seek(0)
        msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
    else:
        import fcntl
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)


@contextlib.contextmanager
def _locked(path: Path):
    """Hold ``path``'s lock file while reading, changing and writing it: notebooks open at once take turns.
    The lock is released when the file closes, even if the process dies holding it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+b") as handle:
        deadline = time.monotonic() + LOCK_WAIT
        while True:
            try:
                _try_lock(handle)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"another notebook kept {path} busy for {LOCK_WAIT:g} s") from None
                time.sleep(0.005)
        yield  # closing the handle releases the lock (flock and msvcrt alike)


def _entry(value) -> dict | None:
    """A well-formed record (``passed`` a bool, ``attempts`` a count), or None."""
    if (isinstance(value, dict) and isinstance(value.get("passed"), bool)
            and type(value.get("attempts")) is int and value["attempts"] >= 0
            and isinstance(value.get("last_tried", ""), str)):
        return value
    return None


def _load(path: Path) -> dict | None:
    """The file's records (``{}`` if there is none yet), or None when it exists but cannot be used: then it is
    renamed aside, or left alone if even that fails, and never overwritten."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError("not a progress file")
    except FileNotFoundError:
        return {}
    except (ValueError, UnicodeDecodeError) as err:
        aside = path.with_name(f"{path.name}.unreadable-{datetime.datetime.now():%Y%m%d-%H%M%S}")
        try:
            os.replace(path, aside)
        except OSError:
            _say_once("read", f"could not read {path} ({err}); it is left as it is and nothing is saved")
            return None
        _say_once("read", f"could not read {path} ({err}); it is kept as {aside.name} and a new record starts")
        return {}
    except OSError as err:
        _say_once("read", f"could not read {path}: {type(err).__name__}: {err}; nothing is saved")
        return None
    bad = [f"{nb}/{name}" for nb, entries in data.items()
           for name, value in (entries.items() if isinstance(entries, dict) else [("*", None)])
           if _entry(value) is None]
    if bad:
        _say_once("entries", f"skipped {len(bad)} malformed entr{'y' if len(bad) == 1 else 'ies'} of {path} "
                              f"({', '.join(bad[:3])}{', ...' if len(bad) > 3 else ''})")
    return data


def _save(path: Path, data: dict) -> None:
    partial = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    partial.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)  # never a half-written file


def _records(path: Path | None) -> dict:
    """``{notebook: {exercise: record}}``, well-formed records only (nothing when progress is off)."""
    data = (_load(path) or {}) if path is not None else {}
    return {nb: {name: value for name, value in entries.items() if _entry(value)}
            for nb, entries in data.items() if isinstance(entries, dict)}


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
    path = progress_file()
    if path is None:  # off, e.g. nbgrader grading learners' work: their progress is not the teacher's
        return
    try:
        frame = _checker_frame()
        if frame is None or any(text in verdict.message for text in _NOT_AN_ATTEMPT):
            return
        notebook = _CHECKER_MODULE.match(frame.f_globals["__name__"]).group(1)
        exercise = frame.f_code.co_name
        with _locked(path):
            data = _load(path)
            if data is None:
                return
            if not isinstance(data.get(notebook), dict):
                data[notebook] = {}
            now = _entry(data[notebook].get(exercise)) or {"passed": False, "attempts": 0}
            if frame is not _state["frame"]:  # a new call of a checker: one more attempt
                _state["frame"], _state["flipped"] = frame, False
                now = {"passed": now["passed"], "attempts": now["attempts"] + 1}
            elif _state["flipped"]:  # a later verdict of the same call: it replaces this call's earlier one
                now["passed"] = False
            _state["flipped"] = verdict.passed and not now["passed"]
            data[notebook][exercise] = {
                "passed": now["passed"] or bool(verdict.passed),
                "attempts": now["attempts"],
                "last_tried": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
            }
            _save(path, data)
    except Exception as err:  # noqa: BLE001 - progress is a convenience: a checker must answer whatever happens
        _say_once("write", f"not saved to {path}: {type(err).__name__}: {err}")


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

    def __init__(self, rows: list, path: Path | None):
        self.rows, self.path = rows, path

    def _where(self) -> str:
        return ("ATTN_HELPERS_PROGRESS is off: nothing is recorded" if self.path is None
                else f"kept in {self.path}; nothing leaves this machine")

    def __repr__(self) -> str:
        lines = [f"{'notebook':<9}{'passed':>7}{'tried':>7}{'not yet':>9}{'of':>4}"]
        lines += [f"{nb:<9}{p:>7}{t:>7}{n:>9}{p + t + n:>4}" for nb, p, t, n in self.rows]
        return "\n".join(lines + [f"({self._where()})"])

    def _repr_html_(self) -> str:
        cells = "".join(f"<tr><td>{nb}</td><td>{p}</td><td>{t}</td><td>{n}</td></tr>" for nb, p, t, n in self.rows)
        return ("<table><thead><tr><th>notebook</th><th>✅ passed</th><th>tried, not passed yet</th>"
                f"<th>not tried yet</th></tr></thead><tbody>{cells}</tbody></table>"
                f"<p>{html.escape(self._where()[:1].upper() + self._where()[1:])}.</p>")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def progress(export: str | os.PathLike | None = None, *, name: str | None = None):
    """Your exercises so far, one row per notebook. With ``export`` (a file name) and ``name`` (yours), write a
    CSV to hand in: one row per exercise (learner, notebook, exercise, passed, attempts, last_tried) and a last
    ``sha256`` row that shows whether the file was edited afterwards; returns its path."""
    path, per_notebook, rows = progress_file(), exercises(), []
    data = _records(path)
    for notebook, names in per_notebook.items():
        done = data.get(notebook, {})
        passed = sum(done.get(name, {}).get("passed", False) for name in names)
        tried = sum(name in done and not done[name]["passed"] for name in names)
        rows.append((notebook, passed, tried, len(names) - passed - tried))
    if export is None:
        return Progress(rows, path)
    target = Path(export)
    problem = ("ATTN_HELPERS_PROGRESS is off, so there is no progress to export" if path is None else
               "say whose progress it is: progress(export=..., name='Your Name')" if not str(name or "").strip() else
               f"the folder {target.parent} does not exist: create it or choose another place"
               if not target.parent.is_dir() else None)
    if problem:
        print(f"Nothing written: {problem}.")
        return None
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(_COLUMNS)
    for notebook, names in per_notebook.items():
        for exercise in names:
            entry = data.get(notebook, {}).get(exercise, {})
            writer.writerow([str(name).strip(), notebook, exercise, entry.get("passed", False),
                             entry.get("attempts", 0), entry.get("last_tried", "")])
    body = buffer.getvalue()
    target.write_text(f"{body}sha256,{_digest(body)}\n", encoding="utf-8", newline="")
    return target


def verify_export(path: str | os.PathLike) -> tuple[bool, str]:
    """For the teacher: ``(True, learner's name)`` if a file written by ``progress(export=...)`` is unchanged,
    else ``(False, what is wrong)``. The checksum catches edits by hand, not a learner who recomputes it."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        return False, f"could not read {path}: {err}"
    body, _, last = text.rstrip("\n").rpartition("\n")
    body += "\n"
    if not last.startswith("sha256,"):
        return False, f"{path} has no sha256 line: not written by progress(export=...)"
    if last.removeprefix("sha256,") != _digest(body):
        return False, f"{path} was changed after it was written (its sha256 does not match)"
    rows = list(csv.DictReader(io.StringIO(body)))
    return True, rows[0]["learner"] if rows else ""
