"""How the course folder collects submissions and reports them (nbgrader plugins named in ``nbgrader_config.py``).

- :func:`notebook_id`: the assignment a handed-in file is, whatever name a browser, Jupyter or an LMS gave
  the copy (``03_softmax (1).ipynb``, ``03_softmax-Copy1.ipynb``, ``03_Softmax.ipynb``, ``03 softmax.ipynb``);
- :class:`CopyNamesCollector`: ``nbgrader zip_collect`` with those names (the LMS's prefix is read by the
  course's ``named_regexp``);
- :class:`MissingCsvExport`: ``nbgrader export`` that writes ``missing``, not 0, for a roster student with no
  submission;
- :class:`StickyInboundRelease`: ``nbgrader release_assignment`` that also sets the sticky bit of the exchange's
  inbound folder (nbgrader makes it writable by all and readable by the teacher only, 2733): a student who
  learnt the name of another's submission still cannot rename or delete it;
- :class:`OwnSubmissionsCollect`: ``nbgrader collect`` that takes from the exchange only the submissions handed
  in by the student they name (``nbgrader submit --student=someone_else`` is refused, said in its log), and of
  each only the notebook (:func:`accepted_files`);
- :func:`accepted_files` and :func:`clean_copy`: the one rule of what a submission is. Only the assignment's
  notebook, a regular file with one name, read with ``O_NOFOLLOW`` below folders opened the same way, by content and
  size-capped; a symbolic link anywhere on the path, a FIFO, a device file, a hard link, a folder, any other file is
  refused with its reason. Collect, zip_collect, the kit's autograde and release_feedback all go through it, so a
  link to the gradebook or ``/etc/shadow`` is never followed and never reaches the feedback;
- :func:`canonical_notebook`: a handed-in notebook checked against the released one and repaired into the form
  nbgrader grades (grade cells by grade id, the release's metadata and points), or refused with a reason;
- :class:`ReleaseOnlyFeedback`: ``nbgrader release_feedback`` that releases a feedback page only if it is a regular
  file (never a link).
"""

from __future__ import annotations

import copy
import csv
import glob
import json
import os
import pwd
import re
import stat
import uuid
from pathlib import Path

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.plugins import CsvExportPlugin, FileNameCollectorPlugin

#: What browsers and Jupyter add to a copy's name: " (1)", "-Copy1", " - Copy", " copy 2"; and Canvas's "-1".
COPY = re.compile(r"(?:\s*\(\d+\)|-copy\d*|\s*-\s*copy(?:\s*\d+)?|\s+copy(?:\s*\d+)?|-\d+)+$", re.IGNORECASE)


def notebook_id(name: str) -> str:
    """The assignment's notebook name that file ``name`` is a copy of (without ``.ipynb``).

    >>> [notebook_id(n) for n in ("03_softmax (1).ipynb", "03_softmax-Copy1.ipynb", "03 Softmax.ipynb")]
    ['03_softmax', '03_softmax', '03_softmax']
    """
    stem = re.sub(r"\.ipynb$", "", os.path.basename(name).strip(), flags=re.IGNORECASE)
    return re.sub(r"[\s-]+", "_", COPY.sub("", stem).strip()).lower()


#: The largest notebook read, in bytes (the hostile batch's 50 MB notebook is read and graded).
MAX_NOTEBOOK = 64 * 2**20
#: What ``nbgrader submit`` adds beside the notebook: kept only as regular files of at most ``MAX_NBGRADER_FILE``.
NBGRADER_FILES = ("timestamp.txt", "submission_secret.txt")
MAX_NBGRADER_FILE = 1024
#: The course folder's record of what was refused or repaired, read by the export: ``refused/<assignment>.json``
#: (the refused files themselves stay where they were handed in, never opened).
LEDGER = "refused"


class Refused(Exception):
    """A file that is not taken: its message is the reason (``is a symbolic link``)."""


def file_kind(mode: int) -> str | None:
    """Why a file of mode ``mode`` is not a notebook, or None for a regular file."""
    for test, reason in ((stat.S_ISLNK, "is a symbolic link"), (stat.S_ISFIFO, "is a FIFO (named pipe)"),
                         (stat.S_ISCHR, "is a device file"), (stat.S_ISBLK, "is a device file"),
                         (stat.S_ISSOCK, "is a socket"), (stat.S_ISDIR, "is a folder")):
        if test(mode):
            return reason
    return None if stat.S_ISREG(mode) else "is not a regular file"


def _refusal(st: os.stat_result, cap: int) -> str | None:
    """Why the file of ``st`` is refused (kind, hard link, size), or None.

    A notebook with more than one name (``st_nlink > 1``) is refused: it is the same file as another one, perhaps
    another learner's submission or the teacher's notebook, and which of its names is the original cannot be told.
    Neither Jupyter nor nbgrader makes hard links, so an honest submission never has one.
    """
    kind = file_kind(st.st_mode)
    if kind:
        return kind
    if st.st_nlink > 1:
        return f"is a hard link (one file with {st.st_nlink} names, perhaps another's)"
    if st.st_size > cap:
        return f"is larger than {cap} bytes ({st.st_size})"
    return None


def _open_folder(folder, root=None) -> int:
    """A file descriptor of ``folder``, each part of its path below ``root`` (the course's submitted/ or the
    exchange's inbound/; default: the folder's parent) opened without following a link; Refused if one is a link or
    no folder."""
    folder = Path(os.path.abspath(folder))
    root = Path(os.path.abspath(root)) if root is not None else folder.parent
    parts = folder.relative_to(root).parts
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts:
            st = os.stat(part, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISDIR(st.st_mode):
                raise Refused(f"is reached through {part}, which {file_kind(st.st_mode)}")
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = inner
    except OSError as err:
        os.close(fd)
        raise Refused(f"cannot be read ({err.strerror})") from err
    except Refused:
        os.close(fd)
        raise
    return fd


def _is_notebook_name(name: str, assignment: str) -> bool:
    return name.lower().endswith(".ipynb") and notebook_id(name) == assignment


def accepted_files(folder, assignment: str | None = None, root=None) -> tuple[str | None, list[tuple[str, str]]]:
    """``(notebook, refused)`` of a submission ``folder`` of ``assignment`` (default: the folder's name): the name
    of the file in it that is the assignment's notebook (``03_softmax.ipynb``, or the one copy's name
    ``03_softmax (1).ipynb``), or None; and ``(name, reason)`` of every other entry, nbgrader's own
    ``timestamp.txt``/``submission_secret.txt`` aside (they are checked where they are read, :func:`clean_copy`).

    Nothing is followed or opened: entries are read with ``lstat`` in the folder opened by :func:`_open_folder`.
    A notebook that is a link, a FIFO, a device, a hard link or larger than ``MAX_NOTEBOOK`` is refused.
    """
    assignment = assignment or Path(folder).name
    try:
        fd = _open_folder(folder, root)
    except Refused as err:
        return None, [(".", str(err))]
    try:
        entries = {name: os.stat(name, dir_fd=fd, follow_symlinks=False) for name in sorted(os.listdir(fd))}
    finally:
        os.close(fd)
    exact = f"{assignment}.ipynb"
    copies = [name for name in entries if _is_notebook_name(name, assignment)]
    chosen = exact if exact in entries else copies[0] if len(copies) == 1 else None
    refused = []
    for name, st in entries.items():
        if name == chosen:
            reason = _refusal(st, MAX_NOTEBOOK)
            if reason:
                refused.append((name, reason))
                chosen = None
        elif name in NBGRADER_FILES or (name == ".ipynb_checkpoints" and stat.S_ISDIR(st.st_mode)):
            continue  # nbgrader's files are checked where they are read; Jupyter's checkpoints are never read
        elif name in copies:
            refused.append((name, f"is one of {len(copies)} copies of the notebook" if chosen is None else
                            "is another copy of the notebook (not graded)"))
        else:
            refused.append((name, file_kind(st.st_mode) or "is not the assignment's notebook"))
    return chosen, refused


def read_accepted(folder, name: str, root=None, cap: int = MAX_NOTEBOOK) -> bytes:
    """The content of file ``name`` of ``folder``, opened with ``O_NOFOLLOW`` (and not blocking: a FIFO cannot
    hang it), checked again on the open file and read to at most ``cap`` bytes; Refused otherwise."""
    fd = _open_folder(folder, root)
    try:
        try:
            handle = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY, dir_fd=fd)
        except OSError as err:
            raise Refused("is a symbolic link" if err.errno == 40 else f"cannot be read ({err.strerror})") from err
    finally:
        os.close(fd)
    reason = _refusal(os.fstat(handle), cap)
    if reason:
        os.close(handle)
        raise Refused(reason)
    with os.fdopen(handle, "rb") as opened:
        data = opened.read(cap + 1)
    if len(data) > cap:
        raise Refused(f"is larger than {cap} bytes")
    return data


def clean_copy(src, dest, assignment: str | None = None, root=None, repair=None) -> tuple[str | None, list, list]:
    """Copy of submission folder ``src`` into the new folder ``dest``: only the notebook (by content, as
    ``<assignment>.ipynb``) and nbgrader's own small files. ``repair(data) -> (text, notes)`` may check and rewrite
    the notebook (Refused to refuse it). Returns ``(copied, refused, notes)``: the name of the notebook copied (a
    copy's name, ``03_softmax (1).ipynb``, is written as ``03_softmax.ipynb``) or None, the ``(name, reason)``
    refused, the repair's notes."""
    assignment = assignment or Path(dest).name
    notebook, refused = accepted_files(src, assignment, root)
    os.makedirs(dest, mode=0o700)
    notes, copied = [], None
    for name in NBGRADER_FILES:
        try:
            data = read_accepted(src, name, root, MAX_NBGRADER_FILE)
        except Refused as err:
            if not str(err).startswith("cannot be read (No such file"):
                refused.append((name, str(err)))
            continue
        Path(dest, name).write_bytes(data)
    if notebook is not None:
        try:
            data = read_accepted(src, notebook, root)
            if repair:
                text, notes = repair(data)
                data = text.encode("utf-8")
            Path(dest, f"{assignment}.ipynb").write_bytes(data)
            copied = notebook
        except Refused as err:
            refused.append((notebook, str(err)))
    return copied, refused, notes


CELL_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def _text(source) -> str | None:
    """A cell's source as text (nbformat allows a string or a list of strings), None for anything else."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


def _grade_id(cell: dict) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) else None


def _looks_like(cell: dict, stub: dict) -> bool:
    """Whether learner cell ``cell`` is the exercise whose released stub is ``stub``: a code cell that defines the
    stub's functions (or assigns its ``name = ...`` names) and calls the same checkers."""
    if cell["cell_type"] != "code":
        return False
    names = re.findall(r"^def (\w+)\(", stub["source"], re.MULTILINE) or \
        re.findall(r"^(\w+) = \.\.\.", stub["source"], re.MULTILINE)
    checkers = set(re.findall(r"\b(check_\w+)\(", stub["source"]))
    return bool(names) and all(re.search(rf"^(?:def {n}\(|{n}\s*=)", cell["source"], re.MULTILINE) for n in names) \
        and checkers <= set(re.findall(r"\b(check_\w+)\(", cell["source"]))


def _learner_cells(raw: list, notes: list) -> list[dict]:
    """The cells of a handed-in notebook that are cells, in nbformat 4's form; the others dropped, with a note."""
    cells = []
    for number, cell in enumerate(raw, 1):
        source = _text(cell.get("source")) if isinstance(cell, dict) else None
        kind = cell.get("cell_type") if isinstance(cell, dict) else None
        if kind not in ("code", "markdown", "raw") or source is None:
            what = "not a cell" if kind not in ("code", "markdown", "raw") else \
                f"its source is {type(cell.get('source')).__name__}, not text"
            notes.append(f"cell {number} dropped ({what})")
            continue
        meta = cell.get("metadata") if isinstance(cell.get("metadata"), dict) else {}
        kept = {"cell_type": kind, "source": source, "number": number,
                "metadata": {key: meta[key] for key in ("nbgrader", "tags") if key in meta},
                "id": cell.get("id")}
        if kind == "code":
            count = cell.get("execution_count")
            kept["execution_count"] = count if isinstance(count, int) and not isinstance(count, bool) else None
            kept["outputs"] = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        cells.append(kept)
    return cells


def canonical_notebook(data: bytes, release: dict) -> tuple[str, list[str]]:
    """The handed-in notebook ``data`` repaired into the form nbgrader grades, against the released notebook
    ``release`` (a dict); ``(text, notes)``, each note a sentence for the learner's row; Refused if it is no notebook.

    - Each grade id of the release is matched by its id. A copied exercise cell (the same grade id twice, Jupyter
      copies metadata) is graded on the copy the learner ran last (the highest execution count; the later cell on
      a tie), the other copies stay as ordinary cells.
    - An exercise whose cell lost its metadata or grade id is found by its content (the stub's ``def`` or
      ``name = ...`` and its checker calls) if exactly one cell looks like it; otherwise the released stub is put
      back (that exercise gets 0) and the note says why.
    - A grade id that is not the release's (a renamed one, an extra grade cell worth 100) becomes an ordinary cell;
      the test cells, their points and every grade cell's metadata are the release's (a learner never sets points).
    - A cell that is no cell (a source that is a number) is dropped; outputs that are not valid are dropped.
    """
    import nbformat

    try:
        found = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise Refused(f"is not a notebook (not UTF-8 text: byte {err.start})") from err
    except ValueError as err:
        raise Refused(f"is not a notebook (its JSON does not parse: {getattr(err, 'msg', err)}, line "
                      f"{getattr(err, 'lineno', '?')})") from err
    except RecursionError as err:
        raise Refused("is not a notebook (its JSON is nested too deep)") from err
    if not isinstance(found, dict) or not isinstance(found.get("cells"), list) or found.get("nbformat") != 4:
        raise Refused("is not a Jupyter notebook (nbformat 4 with a list of cells)")
    notes: list[str] = []
    cells = _learner_cells(found["cells"], notes)
    released = [dict(cell, source=_text(cell["source"])) for cell in release["cells"]]
    solutions = [c for c in released if _grade_id(c) and c["metadata"]["nbgrader"].get("solution")]
    fixed_after: dict = {}  # the release's test (and other nbgrader) cells after each exercise
    current = None
    for cell in released:
        if cell in solutions:
            current = _grade_id(cell)
        elif _grade_id(cell):
            fixed_after.setdefault(current, []).append(cell)
    fixed = {_grade_id(c): c for group in fixed_after.values() for c in group}
    fixed_sources = {c["source"] for c in fixed.values()}
    by_id = {_grade_id(c): c for c in solutions}
    copies: dict = {}
    for cell in cells:
        gid = _grade_id(cell)
        if gid in by_id:
            copies.setdefault(gid, []).append(cell)
        elif gid in fixed:
            cell["drop"] = True
            meta, theirs = cell["metadata"]["nbgrader"], fixed[gid]["metadata"]["nbgrader"]
            if meta.get("points") != theirs.get("points") or cell["source"] != fixed[gid]["source"]:
                notes.append(f"{gid}: the assignment's test cell put back (its points or code had been changed)")
        elif "nbgrader" not in cell["metadata"] and cell["source"] in fixed_sources:
            cell["drop"] = True  # a test cell without its metadata: the release's is put back
        elif "nbgrader" in cell["metadata"]:
            del cell["metadata"]["nbgrader"]
            if gid or cell["cell_type"] == "code":
                notes.append(f"cell {cell['number']}: grade id {gid!r} is not the assignment's, graded as an "
                             "ordinary cell")
    chosen = {}
    for gid, stub in by_id.items():
        found_copies = copies.get(gid, [])
        if not found_copies:
            alike = [c for c in cells if "nbgrader" not in c["metadata"] and not c.get("drop") and
                     all(c is not d for d in chosen.values()) and _looks_like(c, stub)]
            if len(alike) == 1:
                chosen[gid] = alike[0]
                notes.append(f"exercise {gid}: its cell (cell {alike[0]['number']}) had lost its grading metadata, "
                             "found by its content")
            else:
                notes.append(f"exercise {gid}: " + ("its cell is gone (metadata removed or cell deleted)" if not alike
                             else f"{len(alike)} cells look like it ({', '.join(str(c['number']) for c in alike)}), "
                             "none has its grading metadata") + ": the released cell put back, 0 for it")
            continue
        last = max(found_copies, key=lambda c: (c.get("execution_count") or -1, c["number"]))
        chosen[gid] = last
        for other in found_copies:
            if other is not last:
                del other["metadata"]["nbgrader"]
        if len(found_copies) > 1:
            notes.append(f"exercise {gid}: {len(found_copies)} copies (cells "
                         f"{', '.join(str(c['number']) for c in found_copies)}), graded the one run last "
                         f"(cell {last['number']})")
    order = [_grade_id(c) for c in solutions]
    placed: list[dict] = []
    for cell in cells:
        if cell.get("drop"):
            continue
        gid = next((g for g, c in chosen.items() if c is cell), None)
        if gid is None:
            placed.append(cell)
            continue
        nbgrader = copy.deepcopy(by_id[gid]["metadata"]["nbgrader"])
        placed.append(dict(cell, metadata={**cell["metadata"], "nbgrader": nbgrader}, exercise=gid))
        placed += [dict(c, released=True, exercise=gid) for c in fixed_after.get(gid, [])]
    for k, gid in enumerate(order):  # an exercise with no cell: the released stub and its tests, in its place
        if gid in chosen:
            continue
        ends = [i for i, c in enumerate(placed) if c.get("exercise") in order[:k]]
        later = [i for i, c in enumerate(placed) if c.get("exercise") in order[k + 1:]]
        at = max(ends) + 1 if ends else min(later, default=len(placed))
        placed[at:at] = [dict(c, released=True, exercise=gid) for c in [by_id[gid], *fixed_after.get(gid, [])]]
    placed[:0] = [dict(c, released=True) for c in fixed_after.get(None, [])]
    ids, out = set(), []
    for cell in placed:
        new = {key: cell[key] for key in ("cell_type", "metadata", "source") if key in cell}
        if cell["cell_type"] == "code":
            new["execution_count"] = None if cell.get("released") else cell.get("execution_count")
            new["outputs"] = [] if cell.get("released") else cell.get("outputs", [])
        given = cell.get("id")
        new["id"] = given if isinstance(given, str) and CELL_ID.match(given) and given not in ids \
            else uuid.uuid4().hex[:12]
        ids.add(new["id"])
        out.append(new)
    nb = {"cells": out, "metadata": copy.deepcopy(release.get("metadata", {})), "nbformat": 4,
          "nbformat_minor": release.get("nbformat_minor", 5)}
    node = nbformat.from_dict(nb)
    try:
        nbformat.validate(node)
    except nbformat.ValidationError:
        for cell in node.cells:
            if cell.cell_type == "code":
                cell.outputs = []
        notes.append("outputs dropped (not valid notebook outputs)")
        try:
            nbformat.validate(node)
        except nbformat.ValidationError as err:
            raise Refused(f"is not a valid notebook ({str(err.message)[:120]})") from err
    return nbformat.writes(node), notes


def ledger_path(root, assignment: str) -> Path:
    return Path(root) / LEDGER / f"{assignment}.json"


def read_ledger(root, assignment: str) -> dict:
    """``{student: {"collect": [reasons], "status": ..., "reasons": [...], "notes": [...]}}`` of an assignment (the
    kit's record of refusals and repairs; empty when there is none or it is not a JSON object)."""
    try:
        found = json.loads(ledger_path(root, assignment).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return found if isinstance(found, dict) else {}


def write_ledger(root, assignment: str, ledger: dict) -> None:
    path = ledger_path(root, assignment)
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(ledger, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def sentences(refused) -> list[str]:
    return [f"{name} {reason}" if name != "." else f"the submission's folder {reason}" for name, reason in refused]


FEEDBACK_FILES = NBGRADER_FILES


def clean_feedback(folder) -> list[str]:
    """Remove from feedback folder ``folder`` (``feedback/<student>/<assignment>/``) every entry that is not a
    feedback page or nbgrader's file as a regular file with one name: a link is removed, never followed. Returns
    what was removed (``name reason``)."""
    removed = []
    try:
        fd = _open_folder(folder)
    except Refused:
        return []
    try:
        for name in sorted(os.listdir(fd)):
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            reason = _refusal(st, MAX_NOTEBOOK * 4)
            if reason is None and (name.endswith(".html") or name in FEEDBACK_FILES):
                continue
            if stat.S_ISDIR(st.st_mode):
                import shutil

                shutil.rmtree(os.path.join(folder, name))
            else:
                os.unlink(name, dir_fd=fd)
            removed.append(f"{name} {reason or 'is not a feedback page'}")
    finally:
        os.close(fd)
    return removed


class CopyNamesCollector(FileNameCollectorPlugin):
    """nbgrader's file-name collector, with the notebook's name read as :func:`notebook_id` reads it."""

    def collect(self, submitted_file: str):
        try:
            reason = _refusal(os.lstat(submitted_file), MAX_NOTEBOOK)
        except OSError as err:
            reason = f"cannot be read ({err.strerror})"
        if reason is None and os.path.realpath(submitted_file) != os.path.abspath(submitted_file):
            reason = "is reached through a symbolic link"
        if reason:
            self.log.warning("Refused %s: it %s (not collected)", submitted_file, reason)
            return None
        found = super().collect(submitted_file)
        if found:
            found["file_id"] = notebook_id(found["file_id"]) + ".ipynb"
        return found


class MissingCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with ``missing`` in the score columns of a student who handed in nothing, and a
    ``reason`` column from the kit's record (``refused/<assignment>.json``): a refused submission scores 0 and says
    why (``03_softmax.ipynb is a symbolic link``), one nbgrader could not grade says so, a repaired one says what
    was repaired. Run in the course folder, as nbgrader is."""

    def export(self, gradebook: Gradebook) -> None:
        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        ledgers = {}
        for row in rows:
            ledger = ledgers.setdefault(row["assignment"], read_ledger(os.getcwd(), row["assignment"]))
            entry = ledger.get(row["student_id"], {})
            status, reasons = entry.get("status"), entry.get("reasons", [])
            try:
                gradebook.find_submission(row["assignment"], row["student_id"])
                handed_in = True
            except MissingEntry:
                handed_in = False
            if status in ("refused", "not graded"):
                row.update(raw_score="0.0", score="0.0", reason=f"{status}: " + "; ".join(reasons))
            elif not handed_in:
                row.update(raw_score="missing", late_submission_penalty="", score="missing", reason="missing")
            else:
                row["reason"] = "; ".join(reasons)
        with open(dest, "w", newline="", encoding="utf-8") as handle:
            fields = [*rows[0], "reason"] if rows else ["assignment", "reason"]
            writer = csv.DictWriter(handle, fieldnames=list(dict.fromkeys(fields)), lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)


class OwnSubmissionsCollect(ExchangeCollect):
    """nbgrader's collect from the exchange, leaving out each submission whose folder belongs to another user
    than the student it names (the student's own latest one is collected instead)."""

    def _owner(self, record) -> str:
        try:
            return pwd.getpwuid(os.lstat(os.path.join(self.inbound_path, record["filename"])).st_uid).pw_name
        except (KeyError, OSError):
            return "?"

    def _sort_by_timestamp(self, records):
        newest_first = super()._sort_by_timestamp(records)
        return sorted(newest_first, key=lambda record: self._owner(record) != record["username"])  # own first

    def init_src(self):
        super().init_src()
        pattern = os.path.join(self.inbound_path, f"*+{self.coursedir.assignment_id}+*")
        for path in sorted(glob.glob(pattern)):
            record = self._path_to_record(path)
            if self._owner(record) != record["username"]:
                self.log.warning("Skipped %s: handed in by %s for %s (nbgrader submit --student), not collected",
                                 record["filename"], self._owner(record), record["username"])
        self.src_records = [r for r in self.src_records if self._owner(r) == r["username"]]

    def do_copy(self, src, dest, log=None):
        """Only the notebook of the submission ``src`` (and nbgrader's small files), by content, into ``dest``
        (:func:`clean_copy`); what is refused is named in the log and in the course's ``refused/`` record."""
        student, assignment = os.path.basename(os.path.dirname(dest)), self.coursedir.assignment_id
        copied, refused, _ = clean_copy(src, dest, assignment, root=self.inbound_path)
        said = sentences(refused) + ([] if copied else [f"handed in no {assignment}.ipynb that can be graded"])
        for line in said:
            self.log.warning("Refused from %s's submission: %s", student, line)
        ledger = read_ledger(self.coursedir.root, assignment)
        ledger[student] = {"collect": said if refused else []}
        write_ledger(self.coursedir.root, assignment, ledger)


class ReleaseOnlyFeedback(ExchangeReleaseFeedback):
    """nbgrader's release_feedback, after :func:`clean_feedback` of each feedback folder: only regular feedback
    pages are released, a link is never followed."""

    def copy_files(self):
        for folder in sorted(glob.glob(self.src_path)):  # feedback/<student or *>/<assignment>
            for line in clean_feedback(folder):
                self.log.warning("Not released, removed from %s: %s", folder, line)
        super().copy_files()


class StickyInboundRelease(ExchangeReleaseAssignment):
    """nbgrader's release through the exchange, with the inbound folder sticky (3733)."""

    def init_dest(self):
        super().init_dest()
        os.chmod(self.inbound_path, os.stat(self.inbound_path).st_mode | stat.S_ISVTX)
