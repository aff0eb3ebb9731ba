#!/usr/bin/env python3
"""Grades submitted notebooks in a process that never runs a learner's code.

    python3 run.py classroom autograde NN      # the teacher's one command (tools/classroom.py calls autograde())

``nbgrader autograde`` stays the teacher's interface (gradebook, feedback, export); the course folder's
``nbgrader_config.py`` replaces its "execute the notebook" step by :class:`SandboxedGrading`, which decides
each test cell's mark here:

- each exercise (a solution cell) runs in its own child process (tools/grade_worker.py) inside a
  bubblewrap sandbox: read-only view of the machine, no network, a fresh writable folder, the course folder
  (gradebook, every submission, the solutions) hidden. The child gets only the notebook's own cells the
  exercise needs (the teacher's copies) and the learner's exercise cell;
- the test cell's checker runs here, on the grading copy of the checkers; each learner function it calls is a
  proxy that sends the arguments to the child and gets plain data back (``.npz``, never a pickle). A patch of
  numpy or of the checkers in the learner's code changes nothing here; an exercise that loops past its time
  limit or kills its process costs that exercise only;
- answers that are not the learner's work get 0 with a message: a patch or rebinding of numpy or a checker,
  the solution imported or called, the series' own helper returning the answer, a printed verdict.

The mark is written as the test cell's output (an error output for 0 points), so nbgrader's own
``SaveAutoGrades`` stores it and ``generate_feedback`` shows the verdict.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import linecache
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Unicode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade_worker as worker  # noqa: E402 - the child's side, and the plain-data format both sides share

CELL_LIMIT = 30.0  # seconds for an exercise's cells (the notebook's own and the learner's) to run
WORKER = Path(worker.__file__).resolve()
SANDBOX_HELP = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or grade in the container " \
               "(docs/teaching-guide.md, 'Grading')"


class Ended(Exception):
    """The learner's process stopped answering: it ran past its time limit, or ended itself."""


# --------------------------------------------------------------------------- the sandbox


def sandbox_command(site: Path, scratch: Path, hidden: list[Path]) -> list[str]:
    """The command that runs the worker in bubblewrap: everything read-only, ``scratch`` writable, no network,
    home folders and ``hidden`` folders empty, ``hidden`` files blank, Python and the checkers' grading copy
    ``site`` read-only."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError(f"bubblewrap (bwrap) is not installed, and learners' code runs only in a sandbox: "
                           f"{SANDBOX_HELP}")
    command = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
               "--unshare-all", "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    homes = {Path(p).resolve() for p in ("/root", "/home", Path.home()) if Path(p).is_dir() and Path(p) != Path("/")}
    python = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    for path in sorted(homes):  # private files (keys, mail) stay out of what a learner's code could print
        command += ["--tmpfs", str(path)]
    for path in sorted(python):  # but Python and its packages, wherever they live
        command += ["--ro-bind", str(path), str(path)]
    for path in hidden:
        command += ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]
    command += ["--ro-bind", str(site), str(site), "--ro-bind", str(WORKER.parent), str(WORKER.parent),
                "--bind", str(scratch), str(scratch), "--chdir", str(scratch)]
    return [*command, sys.executable, "-I", str(WORKER), str(site)]


def _limits():  # in the child, before bubblewrap starts: no huge files, no memory bomb
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (50 * 2**20, 50 * 2**20))
    resource.setrlimit(resource.RLIMIT_AS, (4 * 2**30, 4 * 2**30))


class Learner:
    """One exercise's sandboxed process, and the requests the grader sends it."""

    def __init__(self, site: Path, hidden: list[Path]):
        self.scratch = Path(tempfile.mkdtemp(prefix="attn-grading-"))
        env = {"PATH": "/usr/bin:/bin", "HOME": str(self.scratch), "MPLCONFIGDIR": str(self.scratch),
               "MPLBACKEND": "Agg", "ATTN_HELPERS_PROGRESS": "off", "OMP_NUM_THREADS": "1",
               "OPENBLAS_NUM_THREADS": "1", "LANG": "C.UTF-8"}
        self.process = subprocess.Popen(sandbox_command(site.resolve(), self.scratch, hidden), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env,
                                        cwd=self.scratch, start_new_session=True, preexec_fn=_limits)
        self.borrowed, self.printed, self.sent = "", None, time.monotonic()

    def request(self, message: dict, timeout: float, make_function=None) -> dict:
        """The child's answer to ``message``; :class:`Ended` when it does not answer within ``timeout`` s."""
        self.send(message)
        return self.receive(timeout, make_function)

    def send(self, message: dict) -> None:
        self.sent = time.monotonic()
        try:
            self.process.stdin.write(worker.pack(message))
            self.process.stdin.flush()
        except OSError:  # a broken pipe: the process has ended, which receive() says
            pass

    def receive(self, timeout: float, make_function=None) -> dict:
        """The answer to the last message, if it comes within ``timeout`` s of sending it."""
        try:
            payload = self._read_frame(self.sent + timeout)
        except OSError:
            payload = None
        if payload is None:
            timed_out = self.process.poll() is None
            self.close()
            raise Ended(f"did not finish within {timeout:g} s: is there a loop that never ends?" if timed_out
                        else "ended its Python process (os._exit, a crash, or memory) before answering")
        return worker.unpack(payload, make_function)

    def _read_frame(self, deadline: float) -> bytes | None:
        stream, chunks, wanted, header = self.process.stdout.fileno(), [], 8, None
        while wanted:
            left = max(deadline - time.monotonic(), 0)  # an answer already there is read even after the deadline
            if not select.select([stream], [], [], left)[0]:
                return None
            chunk = os.read(stream, min(wanted, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            wanted -= len(chunk)
            if header is None and not wanted:
                header = int.from_bytes(b"".join(chunks), "big")
                chunks, wanted = [], header
        return b"".join(chunks)

    def output(self, limit: int = 3000) -> str:
        """What the learner's code printed (its end, at most ``limit`` characters)."""
        path = self.scratch / "output.txt"
        if self.printed is None:
            return path.read_bytes()[-limit:].decode("utf-8", "replace") if path.is_file() else ""
        return self.printed

    def close(self) -> None:
        """Stop the process (and all it started) and remove its folder; what it printed stays readable."""
        if self.printed is not None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()
        self.process.stdin.close()
        self.process.stdout.close()
        self.printed = self.output()
        shutil.rmtree(self.scratch, ignore_errors=True)


def _error(data: dict) -> BaseException:
    """The learner's exception as one the checker can describe (its type's name and message only)."""
    name = str(data.get("type", "Exception"))
    builtin = getattr(builtins, name, None)
    if isinstance(builtin, type) and issubclass(builtin, BaseException):
        try:
            return builtin(data.get("message", ""))
        except Exception:  # noqa: BLE001 - exceptions whose constructor wants more
            pass
    return type(name, (Exception,), {})(data.get("message", ""))


def _replay(events: list, args: tuple) -> None:
    """Repeat on the checker's own watched arrays the products and transposes the learner's code took."""
    for index, kind, *what in events:
        target = args[index] if 0 <= index < len(args) else None
        if not isinstance(target, np.ndarray) or type(target) is np.ndarray:
            continue
        try:
            if kind == "ufunc":
                target.__array_ufunc__(getattr(np, what[0]), "__call__", target, target)
            elif kind == "function":
                func = getattr(importlib.import_module(what[0]), what[1])
                target.__array_function__(func, (type(target),), (target, target), {})
            elif what[0] == "transpose":
                target.transpose(*what[1])
            else:
                getattr(target, what[0]) if what[0] == "T" else target.dot(target)
        except Exception:  # noqa: BLE001, S110 - the replay is for the checker's notes, not for the numbers
            pass


def proxy(learner: Learner, spec: dict, time_limit: float, stop):
    """A stand-in for the learner's function ``spec``: the call runs in the learner's process."""

    def learner_function(*args, **kwargs):
        watch = [i for i, a in enumerate(args) if isinstance(a, np.ndarray) and type(a) is not np.ndarray]
        message = {"op": "call", "handle": spec["__function__"], "args": [_plain(a) for a in args],
                   "kwargs": {k: _plain(v) for k, v in kwargs.items()}, "watch": watch}
        try:
            reply = learner.request(message, time_limit, make_function=lambda s: proxy(learner, s, time_limit, stop))
        except Ended as ended:
            raise stop(str(ended)) from None
        _replay(reply["events"], args)
        if reply["borrowed"]:
            learner.borrowed = learner.borrowed or reply["borrowed"]
        if reply["error"]:
            raise _error(reply["error"])
        return reply["result"]

    name = str(spec.get("name", "function"))
    if spec.get("source"):  # inspect.getsource(learner_function) is the learner's def
        filename = f"<your function {name}, {spec['__function__']}>"
        linecache.cache[filename] = (len(spec["source"]), None, spec["source"].splitlines(True), filename)
        learner_function.__code__ = learner_function.__code__.replace(co_filename=filename, co_firstlineno=1)
    learner_function.__name__ = learner_function.__qualname__ = name
    return learner_function


def _plain(value):
    return np.asarray(value) if isinstance(value, np.ndarray) else value


# --------------------------------------------------------------------------- what a submission may not do

CHECKMARK = re.compile(r"✅|\\u2705|\\U00002705|WHITE HEAVY CHECK MARK|chr\(\s*(9989|0x2705)\s*\)", re.IGNORECASE)
PROTECTED = ("numpy", "attn_helpers", "builtins", "sys")


def tampering(source: str, where: str, solutions: set) -> list[str]:
    """Sentences naming what cell ``source`` does that no answer may: print a verdict, patch or rebind numpy or
    a checker, import or reveal a solution (one of the function names ``solutions``)."""
    found = [f"{where} prints a verdict of its own (a ✅)"] if CHECKMARK.search(source) else []
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return found
    modules = {"np", "numpy", "attn_helpers", "checks", "sys", "builtins"}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                full = f"{node.module}.{alias.name}" if isinstance(node, ast.ImportFrom) else alias.name
                if full.split(".")[0] in PROTECTED and (alias.asname or alias.name) != "*":
                    modules.add(alias.asname or alias.name.split(".")[0])
    for node in ast.walk(tree):
        line = f"{where}, line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_helpers.checks"):
            for alias in node.names:
                renamed = alias.name.startswith("check_") and alias.asname not in (None, alias.name)
                if alias.name in solutions or renamed:
                    found.append(f"{line} imports {alias.name} from the checkers, a solution or a checker renamed")
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if (alias.asname or "").startswith("check_"):
                    found.append(f"{line} names an import {alias.asname}, as a checker is named")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                and node.name.startswith(("check_", "Verdict")):
            found.append(f"{line} defines {node.name}, a checker's name")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and _root(node.args[0]) in modules:
            found.append(f"{line} calls {node.func.id} on {ast.unparse(node.args[0])}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("solution", "Verdict"):
            found.append(f"{line} calls {node.func.id}(...)")
        elif isinstance(node, ast.Attribute) and node.attr in ("SOLUTIONS", "solution", "register_solution", "_grader"):
            found.append(f"{line} reads {ast.unparse(node)}")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else node.targets if isinstance(node, ast.Delete) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and name.id.startswith("check_"):
                    found.append(f"{line} rebinds {name.id}, a checker")
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in modules:
                found.append(f"{line} changes {ast.unparse(target)}")
    return found


def _root(node) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


# --------------------------------------------------------------------------- which cells an exercise needs


def _names(source: str) -> tuple[set, set]:
    """(names ``source`` binds anywhere, names it reads)."""
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return set(), set()
    bound, read = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return bound, read - set(dir(builtins))


def needed_cells(cells: list[str], target: str) -> list[str]:
    """The cells among ``cells`` (in order) that define what ``target`` reads, and what those read, and so on."""
    bound, wanted = _names(target)
    wanted -= bound
    chosen = []
    for source in reversed(cells):
        defines, reads = _names(source)
        if defines & wanted:
            chosen.append(source)
            wanted |= reads - defines
    return chosen[::-1]


def without_checks(source: str) -> str:
    """``source`` without its top-level lines that call ``check_...(...)``: the learner's own check, graded here
    instead."""
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return source
    lines = source.splitlines()
    for node in tree.body:
        if isinstance(node, ast.Expr) and any(isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                                              and call.func.id.startswith("check_") for call in ast.walk(node)):
            for k in range(node.lineno - 1, node.end_lineno):
                lines[k] = ""
    return _without_magics("\n".join(lines))


# --------------------------------------------------------------------------- grading one notebook


def _meta(cell) -> dict:
    return cell.metadata.get("nbgrader", {}) if cell.cell_type == "code" else {}


def _checker_call(source: str) -> ast.Call:
    calls = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id.startswith("check_")]
    return calls[0]


def grade_notebook(submitted, source, site: Path, hidden: list[Path], cell_limit: float = CELL_LIMIT,
                   seed: str = "") -> dict:
    """``{grade_id: (passed, text)}`` for every test cell of ``source`` (the teacher's notebook, with the
    solutions), judging the learner's cells of ``submitted``; ``{solution id: output}`` under key ``None``."""
    from attn_helpers import checks
    from attn_helpers.checks._grader import SOLUTIONS, TIME_LIMIT, TimeLimit

    given = {_meta(c).get("grade_id"): c.source for c in submitted.cells if _meta(c).get("solution")}
    own = {c.source for c in source.cells if c.cell_type == "code" and not _meta(c).get("solution")}
    names = set(SOLUTIONS) | {fn.__name__ for fn in SOLUTIONS.values()}
    solved = sorted(f"{fn.__module__}.{fn.__name__}" for fn in SOLUTIONS.values())
    wrong = [sentence for k, c in enumerate(submitted.cells) if c.cell_type == "code" and c.source not in own
             for sentence in tampering(c.source, f"cell {k + 1}", names)]
    exercises, before = [], []  # [grade id, the cells it needs, the learner's cell, its test cells]
    for cell in source.cells:
        meta = _meta(cell)
        if meta.get("solution"):
            mine = given.get(meta["grade_id"], "")
            exercises.append((meta["grade_id"], needed_cells(before, mine), mine, []))
            before.append(mine)
        elif meta.get("grade") and exercises:
            exercises[-1][3].append(cell)
        elif cell.cell_type == "code" and not meta.get("grade"):
            before.append(cell.source)
    results, outputs, learners = {}, {}, []
    try:
        for _, context, mine, _ in exercises:  # all at once: a loop waits while the others run
            learners.append(Learner(site, hidden))
            learners[-1].send({"op": "run", "context": context, "solutions": solved, "cell": without_checks(mine)})
        for (exercise, _, _, tests), learner in zip(exercises, learners):
            state = {"error": None, "ended": "", "patched": []}
            try:
                answer = learner.receive(cell_limit)
                if "setup_error" in answer:
                    state["ended"] = ("the notebook's own cells failed before your exercise cell ran "
                                      f"({answer['setup_error']['type']}: {answer['setup_error']['message']})")
                else:
                    state.update(error=answer["error"], patched=answer["patched"])
            except Ended as ended:
                state["ended"] = f"your exercise cell {ended}"
            outputs[exercise] = (learner.output(), state["error"])
            for test in tests:
                results[test.metadata["nbgrader"]["grade_id"]] = _judge(test.source, learner, state, wrong, checks,
                                                                        TIME_LIMIT, TimeLimit, (exercise, seed))
            learner.close()
    finally:
        for learner in learners:
            learner.close()
    results[None] = outputs
    return results


def _judge(test: str, learner: Learner, state: dict, wrong: list, checks, time_limit, stop,
           hidden=("", "")) -> tuple[bool, str]:
    if wrong:
        return False, "0 points: " + "; ".join(wrong) + ". An answer must be your own work, checked by the " \
                                                         "series' own checkers."
    if state["ended"]:
        return False, state["ended"]
    if state["patched"]:
        return False, (f"0 points: your exercise cell changes {', '.join(state['patched'][:3])}; an answer may "
                       "not patch numpy or the checkers")
    call = _checker_call(test)
    checker = getattr(checks, call.func.id)
    args = []
    for node in call.args:
        if not isinstance(node, ast.Name):
            args.append(ast.literal_eval(node))
            continue
        try:
            reply = learner.request({"op": "value", "name": node.id}, time_limit,
                                    make_function=lambda spec: proxy(learner, spec, time_limit - 0.5, stop))
        except Ended as ended:
            return False, f"your code {ended}"
        if "error" in reply:
            cell = state["error"]
            why = f": your exercise cell raised {cell['type']}: {cell['message']}" if cell else ""
            return False, f"{node.id} is not defined{why}"
        args.append(reply["value"])
    try:
        verdict = checker(*args)
        import grade_cases  # the new cases each student's functions are also graded on (tools/grade_cases.py)

        verdict = grade_cases.with_hidden_cases(verdict, hidden[0], checker, args, hidden[1])  # new cases decide
    except BaseException as err:  # noqa: BLE001 - a checker never raises; if it does, the mark is 0, not a crash
        return False, f"the checker could not grade this answer ({type(err).__name__}: {err})"
    if learner.borrowed:
        return False, f"0 points: {learner.borrowed}"
    return bool(verdict), repr(verdict)


# --------------------------------------------------------------------------- nbgrader's step


class SandboxedGrading(NbGraderPreprocessor):
    """nbgrader's autograde step that replaces ``Execute``: the marks of :func:`grade_notebook`."""

    cell_limit = Float(CELL_LIMIT, help="seconds an exercise's cells may run").tag(config=True)
    site = Unicode("", help="the checkers' grading copy (default: .grader in the course folder)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        course = Path.cwd()
        site = Path(self.site or course / ".grader").resolve()
        source = nbformat.read(course / "source" / info["assignment"] / f"{info['notebook']}.ipynb", 4)
        db = re.sub(r"^sqlite:///", "", info.get("db_url", ""))
        hidden = [course] + ([Path(db).resolve()] if db and Path(db).exists() else [])
        self.log.info("Grading %s's %s in the sandbox", info["student"], info["notebook"])
        results = grade_notebook(nb, source, site, hidden, self.cell_limit, f"{info['student']}/{info['assignment']}")
        outputs = results.pop(None)
        for cell in nb.cells:
            meta = _meta(cell)
            if meta.get("grade_id") in results and meta.get("grade"):
                passed, text = results[meta["grade_id"]]
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text + "\n")] if passed \
                    else [nbformat.v4.new_output("error", ename="Not yet", evalue=text.splitlines()[0],
                                                 traceback=text.splitlines())]
            elif meta.get("solution") and meta.get("grade_id") in outputs:
                printed, error = outputs[meta["grade_id"]]
                text = printed + (error["traceback"] if error else "")
                cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)] if text else []
        return nb, resources
