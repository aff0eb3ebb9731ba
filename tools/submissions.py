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
  in by the student they name (``nbgrader submit --student=someone_else`` is refused, said in its log).
"""

from __future__ import annotations

import csv
import glob
import os
import pwd
import re
import stat

from nbgrader.api import Gradebook, MissingEntry
from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.exchange.default.release_assignment import ExchangeReleaseAssignment
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


class CopyNamesCollector(FileNameCollectorPlugin):
    """nbgrader's file-name collector, with the notebook's name read as :func:`notebook_id` reads it."""

    def collect(self, submitted_file: str):
        found = super().collect(submitted_file)
        if found:
            found["file_id"] = notebook_id(found["file_id"]) + ".ipynb"
        return found


class MissingCsvExport(CsvExportPlugin):
    """nbgrader's CSV export, with ``missing`` in the score columns of a student who handed in nothing."""

    def export(self, gradebook: Gradebook) -> None:
        super().export(gradebook)
        dest = self.to or "grades.csv"
        with open(dest, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        for row in rows:
            try:
                gradebook.find_submission(row["assignment"], row["student_id"])
            except MissingEntry:
                row.update(raw_score="missing", late_submission_penalty="", score="missing")
        with open(dest, "w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["assignment"], lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)


class OwnSubmissionsCollect(ExchangeCollect):
    """nbgrader's collect from the exchange, leaving out each submission whose folder belongs to another user
    than the student it names (the student's own latest one is collected instead)."""

    def _owner(self, record) -> str:
        try:
            return pwd.getpwuid(os.stat(os.path.join(self.inbound_path, record["filename"])).st_uid).pw_name
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


class StickyInboundRelease(ExchangeReleaseAssignment):
    """nbgrader's release through the exchange, with the inbound folder sticky (3733)."""

    def init_dest(self):
        super().init_dest()
        os.chmod(self.inbound_path, os.stat(self.inbound_path).st_mode | stat.S_ISVTX)
