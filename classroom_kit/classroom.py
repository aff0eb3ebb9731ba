#!/usr/bin/env python3
"""Write an nbgrader course folder from the notebooks: graded assignments a teacher can collect.

    python3 run.py classroom                       # the usual way: writes classroom/
    python classroom_kit/classroom.py [--out DIR] [NN ...]
    python3 run.py classroom autograde NN          # grades classroom/submitted/*/NN_topic (classroom_kit/grade.py)

Autograde takes from each ``submitted/<student>/NN_topic/`` only the notebook, never through a link, checked and
repaired against the released notebook (classroom_kit/submissions.py), into ``accepted/``, which nbgrader grades; one
notebook nbgrader cannot grade costs only its learner, and the summary counts every row of ``grades.csv``.

For each notebook (or only those numbered ``NN``) it writes ``source/NN_topic/NN_topic.ipynb``,
and ``nbgrader_config.py`` once. In each source notebook:

- every exercise with a registered solution becomes an nbgrader solution cell: the solution's code,
  between ``### BEGIN SOLUTION`` and ``### END SOLUTION``, goes just before the learner's stub (a
  ``raise NotImplementedError``) or just after it (``name = ...`` lines), so that the source notebook
  computes the answer and the released one, whose regions ``nbgrader generate_assignment`` strips,
  is the learner's notebook as before;
- after it, one autograder test cell (one point) per ``check_*`` call of the exercise: it asserts that
  the series' own checker passes, so the checker's message and hint are the learner's feedback; its first
  line names it after the exercise ("Exercise 03.2 (check_softmax_any_axis)"), the name the feedback shows;
- the cells that reveal a solution (``solution("name")``) are removed, and so is ``solution`` from imports.

Everything else (predictions, demonstrations, figures) stays as it is. Nothing is executed here. It also
installs the checkers' grading copy (``.grader/``, not editable) that ``nbgrader_config.py`` makes
``nbgrader autograde`` use: there each exercise runs sandboxed and classroom_kit/grade.py decides its marks; and
``nbgrader generate_feedback`` writes its pages with classroom_kit/feedback.py (offline, WCAG 2.1 AA). The config
also keeps nbgrader's exchange inside the folder (``exchange/``, no root needed) and reads an LMS's file
names for ``nbgrader zip_collect`` (docs/teaching-guide.md).
"""

from __future__ import annotations

import ast
import builtins
import copy
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the kit's modules import each other as siblings
sys.path.insert(1, str(Path(__file__).resolve().parents[1] / "tools"))  # the series' own scripts
import core_path  # noqa: E402 - the series' notebooks (tools/core_path.py)

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "classroom"
BEGIN, END = "### BEGIN SOLUTION", "### END SOLUTION"

CONFIG = '''"""nbgrader configuration of the attention series' course folder (written by classroom_kit/classroom.py)."""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 - provided by nbgrader
c.CourseDirectory.course_id = "attention-from-first-principles"
c.CourseDirectory.assignment_id = ""
# The released notebook keeps the learner's own stub (``raise NotImplementedError`` or ``name = ...``), which
# sits outside the solution region; the region itself leaves this line behind.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE"}
# Release and collect through this folder's own exchange (no root needed, unlike /usr/local/share/nbgrader/exchange):
# learners on the same server fetch and submit with --Exchange.root set to it (docs/teaching-guide.md).
c.Exchange.root = str(Path(__file__).resolve().parent / "exchange")
# nbgrader zip_collect NN_topic: the notebooks of an LMS's "download all submissions" archive, put in
# downloaded/NN_topic/archive/, go to submitted/<student id>/NN_topic/. These are Canvas's file names,
# e.g. lovelaceada_1234_5678_03_softmax.ipynb (name, student id, submission id, the file; "_LATE" after the name
# when late); for another LMS, change the expression (the guide gives Moodle's). The notebook's own name is read
# whatever a browser or Jupyter made of it ("03_softmax (1)", "03_softmax-Copy1", "03 Softmax", Canvas's "-1"), and a
# file that is no notebook of the assignment is skipped and named in zip_collect's log (classroom_kit/submissions.py).
c.FileNameCollectorPlugin.named_regexp = (
    r"(?:.*/)?[^_/]+_(?:LATE_)?(?P<student_id>\\d+)_\\d+_(?P<file_id>\\d\\d[^/]*)\\.ipynb$")
c.ZipCollectApp.strict = True
# The checkers' progress record is each learner's own: grading runs do not write to the teacher's.
os.environ["ATTN_HELPERS_PROGRESS"] = "off"

# Autograde never runs a learner's code in this process: instead of executing the notebook, each exercise runs
# in a sandbox and the checkers of the grading copy (.grader/, not editable) decide its marks (classroom_kit/grade.py).
GRADER = Path(__file__).resolve().parent / ".grader"
try:
    sys.path.insert(0, str(GRADER))
    from grade import SandboxedGrading
    from nbgrader.converters import Autograde

    steps = Autograde.class_traits()["autograde_preprocessors"].default()  # nbgrader's own, Execute first
    c.Autograde.autograde_preprocessors = [SandboxedGrading if step.__name__ == "Execute" else step for step in steps]
    c.SandboxedGrading.site = str(GRADER)
    c.SandboxedGrading.cell_limit = 30  # seconds for an exercise's cells; the series' cells run in seconds
    # Feedback pages that work offline (equations as MathML, no MathJax), name each test after its exercise and
    # meet WCAG 2.1 AA (classroom_kit/feedback.py).
    from feedback import CODE_STYLE, FeedbackExporter

    c.GenerateFeedback.exporter_class = FeedbackExporter
    c.CSSHTMLHeaderPreprocessor.style = CODE_STYLE
    # Collection that says what it did: copies' names read and links refused (zip_collect), "missing" rather than 0
    # for a student who handed in nothing and the reason of each refusal or repair (export), the exchange's inbound
    # folder sticky (release_assignment), only each student's own submissions taken from it and of each only the
    # notebook, never through a link (collect), only regular feedback pages released (release_feedback):
    # classroom_kit/submissions.py.
    import submissions

    c.ZipCollectApp.collector_plugin = submissions.CopyNamesCollector
    c.ExportApp.plugin_class = submissions.MissingCsvExport
    c.ExchangeFactory.release_assignment = submissions.StickyInboundRelease
    c.ExchangeFactory.collect = submissions.OwnSubmissionsCollect
    c.ExchangeFactory.release_feedback = submissions.ReleaseOnlyFeedback
except Exception as err:  # noqa: BLE001 - never nbgrader's Execute instead, which runs learners' code right here
    from nbgrader.preprocessors import NbGraderPreprocessor

    REASON = f"{type(err).__name__}: {err}"

    class NoGrading(NbGraderPreprocessor):
        def preprocess(self, nb, resources):
            raise RuntimeError(f"grading cannot start ({REASON}): run python3 run.py classroom autograde NN")

    c.Autograde.autograde_preprocessors = [NoGrading]
'''


def solutions() -> dict:
    """The registered solutions by name (the functions ``solution(name)`` reveals)."""
    sys.path.insert(0, str(ROOT))
    from attn_helpers import checks  # noqa: F401 - registers every notebook's solutions
    from attn_helpers.checks._grader import SOLUTIONS

    return dict(SOLUTIONS)


def _function_node(fn) -> ast.FunctionDef:
    return ast.parse(textwrap.dedent(inspect.getsource(fn))).body[0]


def _body_source(fn) -> str:
    """The statements of ``fn``'s body without its docstring, dedented."""
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    body = _function_node(fn).body
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1:
        body = body[1:]
    return textwrap.dedent("\n".join(lines[body[0].lineno - 1:body[-1].end_lineno]))


def _imports_for(fn, skip=frozenset()) -> str:
    """An import line for the module-level names ``fn`` reads (``np`` and ``skip`` aside): the notebook may not
    have them."""
    module, node = sys.modules[fn.__module__], _function_node(fn)
    inside = [n for part in [*node.body, node.args] for n in ast.walk(part)]  # not the decorator
    loads = {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    local = {n.id for n in inside if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    local |= {n.arg for n in inside if isinstance(n, ast.arg)}
    used = sorted((loads - local) & set(vars(module)) - set(dir(builtins)) - {"np", *skip})
    return f"from {fn.__module__} import {', '.join(used)}\n" if used else ""


def _solution_def(fn, skip=frozenset()) -> str:
    """The solution's source without its decorator, with the imports it needs (but ``skip``) inside its body."""
    lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
    body = _function_node(fn).body
    documented = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and len(body) > 1
    first = body[documented].lineno - 1  # after the docstring (``inspect.getsource``'s lines are the node's)
    indent = re.match(r"\s*", lines[first]).group(0)
    imports = [indent + line for line in _imports_for(fn, skip).splitlines()]
    return "\n".join(line for line in lines[:first] + imports + lines[first:] if not line.startswith("@"))


def _solved_function(stub: str, fn) -> str:
    """The learner's ``def`` of cell source ``stub`` with its ``raise NotImplementedError`` replaced by the
    solution region (the stub's comments stay: they are the learner's hints)."""
    node = next(n for n in ast.parse(stub).body if isinstance(n, ast.FunctionDef))
    lines = stub.splitlines()
    own = [a.arg for a in node.args.args]
    theirs = [a.arg for a in _function_node(fn).args.args]
    if own[:len(theirs)] == theirs:
        code = _imports_for(fn) + _body_source(fn)
    else:  # other argument names: the solution as it is, called with the learner's arguments
        code = f"{_solution_def(fn)}\n\nreturn {fn.__name__}({', '.join(own[:len(theirs)])})"
    (stop,) = [n for n in node.body if isinstance(n, ast.Raise)][-1:]
    region = textwrap.indent(f"{BEGIN}\n{code}\n{END}", " " * stop.col_offset)
    return "\n".join(lines[:stop.lineno - 1] + [region] + lines[stop.lineno - 1:])  # the stub stays after it


ASKED = re.compile(r"^(\w+) = \.\.\.[^\n]*$", re.MULTILINE)


def _solved_values(stub: str, fns: list, defined: set) -> str:
    """Cell source ``stub`` with its ``name = ...`` lines replaced by a region that computes them."""
    names = ASKED.findall(stub)
    code = "\n\n".join(_solution_def(fn, {f.__name__ for f in fns}) for fn in fns) + "\n\n"  # one region
    if len(fns) == len(names):
        code += "".join(f"{name} = {fn.__name__}({_arguments(fn, defined)})\n" for name, fn in zip(names, fns))
    else:
        code += f"{', '.join(names)} = {fns[0].__name__}({_arguments(fns[0], defined)})\n"
    lines = stub.splitlines()
    last = max(i for i, line in enumerate(lines) if ASKED.match(line)) + 1  # after the learner's ``... `` lines
    return "\n".join(lines[:last] + [BEGIN] + code.rstrip("\n").splitlines() + [END] + lines[last:])


def _arguments(fn, defined: set) -> str:
    """The solution's required arguments, passed by the names the notebook gives them."""
    required = [p.name for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty]
    missing = [name for name in required if name not in defined]
    if missing:
        raise ValueError(f"solution {fn.__name__} needs {missing}, which the notebook does not define")
    return ", ".join(required)


def _defined_names(cells) -> set:
    names = set()
    for cell in cells:
        if cell.cell_type == "code":
            names |= set(re.findall(r"^(\w+)\s*=", cell.source, flags=re.MULTILINE))
    return names


def _is_exercise(cell) -> bool:
    return cell.cell_type == "code" and bool(re.search(r"\bcheck_\w+\(", cell.source)) and (
        "raise NotImplementedError" in cell.source or bool(ASKED.search(cell.source)))


def _checker_calls(source: str) -> list[str]:
    """The source of each ``check_*(...)`` call of a cell, in order."""
    calls = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
             and isinstance(node.func, ast.Name) and node.func.id.startswith("check_")]
    return [ast.get_source_segment(source, node) for node in sorted(calls, key=lambda n: (n.lineno, n.col_offset))]


def _nbgrader(kind: str, grade_id: str) -> dict:
    meta = {"grade_id": grade_id, "schema_version": 3, "task": False, "grade": kind == "test",
            "solution": kind == "solution", "locked": kind == "test"}
    if kind == "test":
        meta["points"] = 1
    return meta


def _test_cell(call: str, grade_id: str, name: str):
    checker = call.split("(")[0]
    source = (f"# {name} ({checker}): autograder test (1 point), the series' own checker must say ✅.\n"
              f"from attn_helpers.checks import {checker}\n\n"
              f"verdict = {call}\n"
              f"assert verdict.passed, repr(verdict)   # the checker's message and hint are the feedback")
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = _nbgrader("test", grade_id)
    cell.metadata["editable"], cell.metadata["deletable"] = False, False
    return cell


def source_notebook(path: Path, registered: dict):
    """The nbgrader source version of the notebook at ``path`` and the grade ids of its tests."""
    nb = nbformat.read(path, as_version=4)
    cells, graded = [], []
    revealed = [re.findall(r"""solution\(["'](\w+)["']\)""", c.source) if c.cell_type == "code" else []
                for c in nb.cells]
    defined = _defined_names(nb.cells)
    number = None  # the exercise's number ("03.1"), from the last heading or bold "Exercise NN.k" before it
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            titles = re.findall(rf"(?:^#+ [^\n]*?|\*\*)Exercise ({path.name[:2]}\.\d+)", cell.source, re.MULTILINE)
            number = titles[-1] if titles else number
        if revealed[index]:
            continue  # a cell that reveals a solution: not in a graded notebook
        cell = copy.deepcopy(cell)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
            cell.source = re.sub(r",\s*solution\b(?=[^\n]*$)", "", cell.source, flags=re.MULTILINE)
        names = []
        if _is_exercise(cell):  # its solutions: those revealed after it and before the next exercise
            following = next((k for k in range(index + 1, len(nb.cells)) if _is_exercise(nb.cells[k])),
                             len(nb.cells))
            names = [name for found in revealed[index + 1:following] for name in found]
        fns = [registered[name] for name in names if name in registered]
        if not fns:
            cells.append(cell)
            continue
        if "raise NotImplementedError" in cell.source:
            cell.source = _solved_function(cell.source, fns[0])
        else:
            cell.source = _solved_values(cell.source, fns, defined)
        exercise = names[0]
        cell.metadata["nbgrader"] = _nbgrader("solution", exercise)
        cells.append(cell)
        name, number = f"Exercise {number}" if number else exercise, None
        for k, call in enumerate(_checker_calls(cell.source)):
            grade_id = f"test_{exercise}" + (f"_{k + 1}" if k else "")
            cells.append(_test_cell(call, grade_id, name))
            graded.append(grade_id)
    nb.cells = cells
    return nb, graded


def exercises() -> dict:
    """``{exercise: (kind, [checker names])}`` of every notebook's graded exercises; kind ``"function"`` when the
    learner writes a function (a ``raise NotImplementedError`` stub), ``"value"`` for ``name = ...`` lines."""
    registered, found = solutions(), {}
    for path in core_path.notebooks(ROOT, None).values():
        for cell in source_notebook(path, registered)[0].cells:
            meta = cell.metadata.get("nbgrader", {})
            if meta.get("solution"):
                kind = "function" if "raise NotImplementedError" in cell.source else "value"
                found[meta["grade_id"]] = (kind, [call.split("(")[0] for call in _checker_calls(cell.source)])
    return found


def build(out: Path = OUT, numbers=None) -> dict:
    """Write the course folder ``out`` (every notebook, or those numbered in ``numbers``);
    returns ``{assignment: [grade ids]}``."""
    registered = solutions()
    (out / "source").mkdir(parents=True, exist_ok=True)
    (out / "nbgrader_config.py").write_text(CONFIG, encoding="utf-8")
    (out / "exchange").mkdir(exist_ok=True)  # the course's own exchange (c.Exchange.root)
    written = {}
    for path in core_path.notebooks(ROOT, numbers).values():
        nb, written[path.stem] = source_notebook(path, registered)
        (out / "source" / path.stem).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, out / "source" / path.stem / path.name)
    install_grader(out)  # which nbgrader_config.py imports from
    return written


def install_grader(out: Path) -> Path:
    """The checkers' grading copy ``out/.grader``: a copy of attn_helpers (not an editable install, so a later
    change to the checkers changes no grade until the next copy; nothing to build, so it works offline and on
    every supported Python), with the grading modules."""
    target = out / ".grader"
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(ROOT / "attn_helpers", target / "attn_helpers", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("grade.py", "grade_worker.py", "grade_cases.py", "submissions.py", "feedback.py"):
        shutil.copy(ROOT / "classroom_kit" / name, target / name)
    for name in ("build_site.py", "slides.py", "core_path.py"):  # the site's renderer, the slides' emoji-to-words
        shutil.copy(ROOT / "tools" / name, target / name)
    return target


def nbgrader(out: Path, *args: str) -> subprocess.CompletedProcess:
    """``nbgrader args`` in the course folder, as from an activated environment (its alembic runs by name)."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
               TRAITLETS_APPLICATION_RAISE_CONFIG_FILE_ERROR="1")  # a broken config stops it, not skipped
    return subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=out, env=env, capture_output=True,
                          text=True)


def assignment_numbers(names) -> set:
    """The notebooks' numbers named by ``names`` (``03``, ``3``, ``03_softmax``, ``03_softmax.ipynb``, any case);
    ValueError, in one sentence listing the valid names, for any other."""
    known = {path.stem: number for number, path in core_path.notebooks(ROOT).items()}
    numbers, wrong = set(), []
    for name in names:
        given = re.sub(r"\.ipynb$", "", str(name).strip(), flags=re.IGNORECASE).lower()
        found = known.get(given) or (given.zfill(2) if given.zfill(2) in known.values() else None)
        numbers.add(found) if found else wrong.append(name)
    if wrong:
        raise ValueError(f"{', '.join(map(repr, wrong))}: not a notebook of the series; name one by its number or "
                         f"its assignment's name: {', '.join(f'{n} or {a}' for a, n in known.items())}")
    return numbers


#: accepted/<student>/<assignment>/: the clean copies nbgrader grades (submitted/ stays as it was handed in).
ACCEPTED = "accepted"


def _accept(out: Path, assignment: str) -> dict:
    """``{student: entry}`` for every folder of ``out/submitted/``: its submission of ``assignment`` copied, only
    the notebook, checked and repaired against the released one (submissions.py), to ``out/accepted/``, which
    is what nbgrader grades; ``entry`` has ``status`` (``graded`` so far, ``refused``, ``missing``), ``reasons``
    (why it is refused, or what was repaired), ``renamed``, ``skipped`` (files that are not the notebook) and
    ``refused_files`` (links, FIFOs, devices: never followed). Recorded in ``refused/<assignment>.json``."""
    import submissions

    release = json.loads((out / "release" / assignment / f"{assignment}.ipynb").read_text(encoding="utf-8"))
    ledger, found = submissions.read_ledger(out, assignment), {}
    shutil.rmtree(out / ACCEPTED, ignore_errors=True)  # made afresh from submitted/ each time
    (out / ACCEPTED).mkdir()
    submitted = out / "submitted"
    for entry in sorted(os.scandir(submitted), key=lambda e: e.name) if submitted.is_dir() else []:
        student, folder = entry.name, submitted / entry.name / assignment
        collected = ledger.get(student, {}).get("collect", [])
        (out / ACCEPTED / student).mkdir()
        if not entry.is_dir(follow_symlinks=False):
            kind = submissions.file_kind(os.lstat(entry.path).st_mode)
            found[student] = {"status": "refused", "reasons": [f"submitted/{student} {kind}"], "collect": collected}
            continue
        try:
            os.lstat(folder)
        except FileNotFoundError:
            if collected:
                found[student] = {"status": "refused", "reasons": collected, "collect": collected}
            continue  # a student's other assignments only
        copied, refused, notes = submissions.clean_copy(
            folder, out / ACCEPTED / student / assignment, assignment, root=submitted,
            repair=lambda data: submissions.canonical_notebook(data, release))
        skipped = [f"submitted/{student}/{assignment}/{name}" for name, why in refused
                   if why == "is not the assignment's notebook"]
        odd = [(name, why) for name, why in refused if why != "is not the assignment's notebook"]
        renamed = [f"submitted/{student}/{assignment}/{copied} -> {assignment}.ipynb"] \
            if copied not in (None, f"{assignment}.ipynb") else []
        entry = {"collect": collected, "renamed": renamed,
                 "skipped": skipped, "refused_files": submissions.sentences(odd)}
        if copied:
            entry.update(status="graded", reasons=notes + [f"not taken: {line}" for line in
                                                           collected + entry["refused_files"]])
        elif odd or collected:
            entry.update(status="refused", reasons=collected + entry["refused_files"])
            shutil.rmtree(out / ACCEPTED / student / assignment)
        else:
            entry.update(status="missing", reasons=[])
            shutil.rmtree(out / ACCEPTED / student / assignment)
        found[student] = entry
    for student, entry in ledger.items():  # refused at collect, and its folder gone since
        if student not in found and entry.get("collect"):
            found[student] = {"status": "refused", "reasons": entry["collect"], "collect": entry["collect"]}
    submissions.write_ledger(out, assignment, found)
    return found


def _roster(out: Path) -> list[str]:
    """The students in the course's gradebook (imported from the LMS's roster, or added by a grading)."""
    from nbgrader.api import Gradebook

    if not (out / "gradebook.db").is_file():
        return []
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
        return sorted(student.id for student in gradebook.students)


def _failure(done: subprocess.CompletedProcess) -> str:
    """The last error line of an nbgrader run's log, shortened: the reason a student was not graded."""
    lines = [line.strip() for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    errors = [line for line in lines if "Error" in line or "ERROR" in line or "failed" in line.lower()]
    return ((errors or lines or ["no log"])[-1])[:200]


def _grade_each(out: Path, assignment: str, found: dict) -> None:
    """``nbgrader autograde`` and ``generate_feedback`` of the accepted submissions, in one batch; if a batch
    fails, student by student, so that one submission nbgrader cannot grade costs only that student (``not
    graded`` and the reason in ``found``). The refused ones are in the gradebook (their row in grades.csv) without
    a submission; each feedback folder keeps only its pages (classroom_kit/submissions.py's ``clean_feedback``)."""
    import submissions
    from nbgrader.api import Gradebook, MissingEntry

    def record_the_others():  # a row of grades.csv for each: in the gradebook, with no submission of its own
        with Gradebook(f"sqlite:///{out / 'gradebook.db'}") as gradebook:
            for student, entry in found.items():
                if entry["status"] in ("refused", "not graded"):
                    gradebook.update_or_create_student(student)
                if entry["status"] != "graded":
                    try:
                        gradebook.remove_submission(assignment, student)
                    except MissingEntry:
                        pass

    graded = [s for s, entry in found.items() if entry["status"] == "graded"]
    record_the_others()
    for student in found:
        for folder in ("autograded", "feedback"):
            shutil.rmtree(out / folder / student / assignment, ignore_errors=True)
    where = f"--CourseDirectory.submitted_directory={ACCEPTED}"
    for step in ("autograde", "generate_feedback"):
        if not graded:
            break
        done = nbgrader(out, step, assignment, "--force", where)
        if done.returncode != 0:
            for student in graded:
                alone = nbgrader(out, step, assignment, "--force", where, f"--student={student}")
                if alone.returncode != 0:
                    found[student].update(status="not graded" if step == "autograde" else "graded")
                    found[student]["reasons"].append(f"nbgrader {step} failed: {_failure(alone)}")
        graded = [s for s in graded if found[s]["status"] == "graded"]
    for student in graded:
        if not (out / "autograded" / student / assignment / f"{assignment}.ipynb").is_file():
            found[student].update(status="not graded")
            found[student]["reasons"].append("nbgrader autograde wrote no graded notebook")
        removed = submissions.clean_feedback(out / "feedback" / student / assignment)
        found[student]["reasons"] += [f"removed from the feedback: {line}" for line in removed]
    record_the_others()
    for student, entry in found.items():
        if entry["status"] == "not graded":
            shutil.rmtree(out / "feedback" / student / assignment, ignore_errors=True)
    submissions.write_ledger(out, assignment, found)


def _report(out: Path, assignment: str, found: dict) -> None:
    """The command's summary of ``assignment``: one count per status (the rows of grades.csv), then who."""
    by = {status: [s for s, e in found.items() if e["status"] == status] for status in ("graded", "refused",
                                                                                         "not graded")}
    graded = by["graded"]
    absent = sorted({s for s in _roster(out) if s not in found or found[s]["status"] == "missing"})
    print(f"{assignment}: graded {len(graded)} submission{'s' * (len(graded) != 1)}"
          + (f" ({', '.join(graded)})" if graded else "") + f"; feedback in {out / 'feedback'}/<student>/"
          f"{assignment}/")
    print(f"  {len(graded)} graded, {len(by['refused'])} refused, {len(by['not graded'])} not graded, "
          f"{len(absent)} missing (the rows of grades.csv, with the reason in its reason column)")
    for line in (line for e in found.values() for line in e.get("renamed", [])):
        print(f"  renamed a copy's name: {line}")
    for student in by["refused"]:
        print(f"  refused (0 in grades.csv): {student}: {'; '.join(found[student]['reasons'])}")
    for student in by["not graded"]:
        print(f"  not graded (0 in grades.csv): {student}: {'; '.join(found[student]['reasons'])}")
    for student in graded:
        if found[student]["reasons"]:
            print(f"  graded after a repair or with files left out: {student}: "
                  f"{'; '.join(found[student]['reasons'])}")
    if absent:
        print(f"  missing (no {assignment}.ipynb handed in; \"missing\" in grades.csv, not 0): {', '.join(absent)}")
    skipped = [line for e in found.values() for line in e.get("skipped", [])]
    if skipped:
        print(f"  skipped (not the assignment's notebook, not graded): {', '.join(skipped)}")


def autograde(out: Path, numbers) -> int:
    """Grade every submission of the notebooks ``numbers`` in ``out``: feedback, then ``grades.csv``; says who was
    graded, who is missing and which files were skipped."""
    if not numbers:
        print("name the notebook to grade, e.g. python3 run.py classroom autograde 03 (or 03_softmax)",
              file=sys.stderr)
        return 2
    try:
        numbers = assignment_numbers(numbers)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    if not shutil.which("bwrap"):
        print("learners' code runs only in a sandbox, and bubblewrap (bwrap) is not installed: on Debian or Ubuntu "
              "apt-get install bubblewrap; on macOS or Windows grade in the container (docs/teaching-guide.md)",
              file=sys.stderr)
        return 1
    missing = [n for n in sorted(numbers) if not list(out.glob(f"source/{n}_*"))]
    if missing or not (out / "nbgrader_config.py").is_file():
        build(out, set(missing))
    install_grader(out)
    for number in sorted(numbers):
        (assignment,) = [p.name for p in sorted(out.glob(f"source/{number}_*"))]
        if not (out / "release" / assignment).is_dir() or not (out / "gradebook.db").is_file():
            done = nbgrader(out, "generate_assignment", assignment, "--force")
            if done.returncode != 0:
                print(done.stdout[-3000:] + done.stderr[-3000:], file=sys.stderr)
                print(f"nbgrader generate_assignment {assignment} failed (its log is above)", file=sys.stderr)
                return 1
        found = _accept(out, assignment)
        _grade_each(out, assignment, found)
        _report(out, assignment, found)
    done = nbgrader(out, "export")
    print(f"grades of every assignment: {out / 'grades.csv'}" if done.returncode == 0 else done.stderr[-3000:])
    return done.returncode


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["autograde"]:
        args = core_path.selection(argv[1:], "Grade the submissions of notebooks NN (autograde NN or NN_topic)", OUT)
        return autograde(args.out, args.numbers)
    args = core_path.selection(argv, __doc__.splitlines()[0], OUT)
    try:
        args.numbers = assignment_numbers(args.numbers)
    except ValueError as err:
        print(err, file=sys.stderr)
        return 2
    written = build(args.out, args.numbers)
    for assignment, graded in written.items():
        print(f"{assignment}: {len(graded)} graded test{'s' * (len(graded) != 1)}")
    print(f"wrote {args.out / 'source'} and {args.out / 'nbgrader_config.py'}. Next, in {args.out}:\n"
          "  nbgrader generate_assignment NN_topic     # release/: the notebook without solutions\n"
          f"then, with the submissions in {args.out}/submitted/<student>/NN_topic/:\n"
          "  python3 run.py classroom autograde NN     # grades (sandboxed), feedback/, grades.csv")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
