#!/usr/bin/env python3
"""Grades submitted notebooks in a process that never runs a learner's code.

    python3 run.py classroom autograde NN      # the teacher's one command (classroom.py calls autograde())

``nbgrader autograde`` stays the teacher's interface (gradebook, feedback, export); the course folder's
``nbgrader_config.py`` replaces its "execute the notebook" step by :class:`SandboxedGrading`, which decides
each test cell's mark here:

- each exercise (a solution cell) runs in its own child process (classroom_kit/grade_worker.py) inside a
  bubblewrap sandbox: read-only view of the machine, no network, a small private ``/tmp`` (the only place it
  may write), the course folder (gradebook, every submission, the solutions) hidden, an unprivileged user with
  a process limit, a memory limit (:data:`MEMORY`), and at most :data:`CHILDREN` such processes at once, so
  that a batch (the grader and its sandboxes) never holds more than :data:`BATCH_MEMORY` (3 GB). It sees the
  machine's system folders, Python, and a copy of the series' package whose checkers have no solutions,
  cases or slips (:func:`strip_solutions`); no home, no checkout, no course folder. The child gets only the
  teacher's copies of the cells the exercise needs (:func:`needed_cells`), then the learner's own cells above
  the exercise that define what it uses (a helper of theirs) and the learner's exercise cell;
- the test cell's checker runs here, on the grading copy of the checkers; each learner function it calls is a
  proxy (:func:`proxy`) that sends the arguments to the child and gets data back. What the child sends is
  parsed by a schema of plain values and arrays (:func:`parse`), bounded in size, depth, count and time:
  nothing in it is imported, constructed by name or called, and a malformed reply costs that exercise its
  marks with one sentence;
- answers that are not the learner's work get 0 with a message, decided from the learner's source (read with
  ``ast``, never run here) and from what this process observes, never from what the child reports: a patch
  or rebinding of numpy or a checker, the solution imported or called (a name counts for what it is bound to:
  a learner's own ``solution`` is theirs), a product the exercise forbids, the series' own helper returning
  the answer (computed here on the same arguments, within :data:`BORROWED`), code reached by a name it
  computes (``eval``, ``importlib.import_module``), an answer that changes when the same call is made again a
  second later, a printed verdict.

The mark is written as the test cell's output (an error output for 0 points), so nbgrader's own
``SaveAutoGrades`` stores it and ``generate_feedback`` shows the verdict.
"""

from __future__ import annotations

import ast
import atexit
import builtins
import functools
import importlib
import io
import itertools
import json
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
import warnings
import zipfile
from pathlib import Path

import nbformat
import numpy as np
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Float, Int, Unicode

sys.path.insert(0, str(Path(__file__).resolve().parent))
import grade_worker as worker  # noqa: E402 - the child's side; its pack() writes the grader's requests

CELL_LIMIT = 30.0  # seconds for an exercise's cells (the notebook's own and the learner's) to run
BATCH_MEMORY = 3 * 10**9  # bytes a whole batch may hold at once: the grader and the sandboxes it runs
GRADER_MEMORY = 500 * 2**20  # bytes of the grading process itself (nbgrader's; tests/classroom/test_grading_hostile.py)
MEMORY = 1_200_000_000  # bytes of address space for one exercise's process (notebook 16 loads a 0.9 GB model)
CHILDREN = (BATCH_MEMORY - GRADER_MEMORY) // MEMORY  # exercises that run at once: 2, so a batch stays in 3 GB
TMP_SIZE = 64 * 2**20  # bytes of the sandbox's /tmp (and /dev/shm), the only folders it may write
FILE_SIZE = 16 * 2**20  # bytes of any one file the sandbox writes (what it prints included)
FRAME_LIMIT = 8 * 2**20  # bytes of one reply from the sandbox
DEPTH_LIMIT = 32  # nesting of lists, tuples and dicts in one reply
ITEM_LIMIT = 100_000  # values (and arrays) in one reply
UID_BASE = 2_000_000_000  # the sandboxes' users: no account has these numbers
WORKER = Path(worker.__file__).resolve()
KERNEL = "/run/kernel/kernel.py"  # where the sandbox sees the worker: no grading name on the learner's stack
SANDBOX_HELP = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap), or grade in the container " \
               "(docs/teaching-guide.md, 'Grading')"


class Ended(Exception):
    """The learner's process stopped answering: it ran past its time limit, or ended itself."""


class Refused(Ended):
    """A reply that is not data of the agreed form (the sentence says why): that exercise gets 0."""


# --------------------------------------------------------------------------- the sandbox


#: The machine's own folders the sandbox sees (read-only): programs, libraries, settings. Nothing else of the
#: host is there (no home, no checkout with the checkers' source or the answer keys, no course folder) but
#: Python and its packages, the checkers' sandbox copy (:func:`sandbox_site`) and the worker.
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
SITE = "/run/site"  # where the sandbox sees the checkers' sandbox copy, wherever the grading copy lives (/tmp too)


def sandbox_command(site: Path, hidden: list[Path], uid: int) -> list[str]:
    """The command that runs the worker in bubblewrap: the machine's :data:`SYSTEM` folders, Python and the
    sandbox copy of the series' package (``site``'s, without the checkers' solutions: :func:`sandbox_site`)
    read-only, a private ``/tmp`` of :data:`TMP_SIZE` bytes, no network, no home folder; ``hidden`` folders
    empty and ``hidden`` files blank where they lie inside what it sees. The worker becomes user ``uid``
    before it reads a cell (it keeps only the capability to do so until then)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError(f"bubblewrap (bwrap) is not installed, and learners' code runs only in a sandbox: "
                           f"{SANDBOX_HELP}")
    size = str(TMP_SIZE)
    command = [bwrap]
    for folder in SYSTEM:
        if os.path.islink(folder):  # /bin -> usr/bin on a merged-/usr system
            command += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            command += ["--ro-bind", folder, folder]
    command += ["--dev", "/dev", "--proc", "/proc",
                "--size", size, "--perms", "1777", "--tmpfs", "/tmp",
                "--size", size, "--perms", "1777", "--tmpfs", "/dev/shm", "--tmpfs", "/run",
                "--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
                "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--die-with-parent", "--new-session"]
    seen = [Path(folder).resolve() for folder in SYSTEM if os.path.isdir(folder)]
    python = sorted({Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})
    # Python where it is, except under /tmp (a checkout or venv there): at /run/python/N, so that the private /tmp
    # stays empty wherever the course lives.
    where = {p: Path("/run/python", str(n)) if Path("/tmp") in p.parents else p for n, p in enumerate(python)}
    package, checks = sandbox_site(site)
    mounts = [*where.items(), (package, Path(SITE) / "attn_helpers"),
              (checks, Path(SITE) / "attn_helpers" / "checks"), (WORKER, Path(KERNEL))]
    for path, there in mounts:
        for folder in reversed(there.parents[:-1]):  # readable by the learner's user where nothing else is
            if not any(folder == root or root in folder.parents for root in seen):
                command += ["--perms", "0755", "--dir", str(folder)]
        command += ["--ro-bind", str(path), str(there)]  # Python and its packages, the checkers, the worker
    for path in [*hidden, *_other_copies(python)]:  # what lies inside them: blank
        path = Path(path).resolve()
        if path.exists() and any(path == root or root in path.parents for root in [*seen, *python]):
            inside = _moved(path, where)
            command += ["--tmpfs", str(inside)] if path.is_dir() else ["--ro-bind", "/dev/null", str(inside)]
    return [*command, "--chdir", "/tmp", str(_moved(Path(sys.executable), where)), "-I", KERNEL, SITE, str(uid)]


def _moved(path: Path, where: dict) -> Path:
    """Where ``path`` (inside one of Python's folders, or not) is seen in the sandbox (``where``: folder -> its
    place there)."""
    for folder, there in where.items():
        for form in (path, path.resolve()):
            if form == folder or folder in form.parents:
                return there / form.relative_to(folder)
    return path


def _other_copies(roots) -> list[Path]:
    """The checkers of any copy of the series' package installed inside Python's folders ``roots`` (a
    non-editable install): hidden in the sandbox, as the solutions are in :func:`sandbox_site`'s copy."""
    found = []
    for root in roots:
        for lib in ("lib", "Lib"):
            found += Path(root, lib).glob("python3*/site-packages/attn_helpers/checks")
        found += Path(root).glob("Lib/site-packages/attn_helpers/checks")
    return found


STRIPPED = "the checkers' solutions and their machinery are not in the grading sandbox: an answer is your own code"


def _is_solution(node) -> bool:
    return any(isinstance(d, ast.Call) and _root(d.func) == "register_solution" for d in node.decorator_list)


def strip_solutions(source: str) -> str:
    """A checkers' module ``source`` as the grading sandbox holds it: the body of every function replaced by a
    stub that raises ``RuntimeError(STRIPPED)`` (a checker's: returns ``None``, as a learner's cell may call it;
    the name, signature and docstring stay), but for what the module's own data
    need when it is imported and the public functions that are not a checker or a solution (data a notebook
    imports, e.g. ``sink_measurements``), and what those use. A checker's cases, its reference answers and
    its one-edit slips (some are a solution with one argument changed) are therefore not there either."""
    tree = ast.parse(source)
    functions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}

    def loads(node) -> set:
        return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}

    wanted = set().union(*(loads(node) for node in tree.body if node.__class__ not in (
        ast.FunctionDef, ast.AsyncFunctionDef, ast.Import, ast.ImportFrom)))
    wanted |= {name for name, node in functions.items()
               if not name.startswith(("_", "check_")) and not _is_solution(node)}
    kept: set = set()
    while wanted & (set(functions) - kept):
        name = (wanted & (set(functions) - kept)).pop()
        kept.add(name)
        wanted |= loads(functions[name])
    for name, node in functions.items():
        if name not in kept or _is_solution(node):
            doc = ast.get_docstring(node, clean=False)
            stub = ast.Return(ast.Constant(None)) if name.startswith("check_") else \
                ast.Raise(ast.Call(ast.Name("RuntimeError", ast.Load()), [ast.Constant(STRIPPED)], []))
            node.body = [*([ast.Expr(ast.Constant(doc))] if doc else []), stub]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


@functools.lru_cache(maxsize=8)
def sandbox_site(site: Path) -> tuple[Path, Path]:
    """``(the series' package, its checkers' sandbox copy)`` for a grading copy ``site``: the package as it is,
    and a copy of its ``checks`` folder without solutions (:func:`strip_solutions`), made once per grading
    process in a folder of its own that is removed when the process ends."""
    package = Path(site).resolve() / "attn_helpers"
    folder = Path(tempfile.mkdtemp(prefix="attn-sandbox-checks-"))
    atexit.register(shutil.rmtree, folder, True)
    folder.chmod(0o755)
    for path in sorted((package / "checks").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        (folder / path.name).write_text(strip_solutions(text) if path.name != "__init__.py" else text,
                                        encoding="utf-8")
        (folder / path.name).chmod(0o644)
    return package, folder


def _limits(memory: int = MEMORY):  # in the child, before bubblewrap starts: no big files, no core dumps, memory
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE, FILE_SIZE))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def sandboxes(total: int = BATCH_MEMORY, children: int = CHILDREN) -> tuple[int, int]:
    """``(exercises run at once, bytes of address space each)`` for a batch that may hold ``total`` bytes with
    its grader (:data:`GRADER_MEMORY`): at most ``children`` of :data:`MEMORY` each, one at a time when two
    would not fit (then the one gets what is left, at most :data:`MEMORY`)."""
    room = max(total - GRADER_MEMORY, 2**28)
    at_once = max(1, min(children, room // MEMORY))
    return at_once, min(MEMORY, room // at_once)


_children = itertools.count()


class Learner:
    """One exercise's sandboxed process, and the requests the grader sends it."""

    def __init__(self, site: Path, hidden: list[Path], memory: int = MEMORY):
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "MPLCONFIGDIR": "/tmp", "MPLBACKEND": "Agg",
               "ATTN_HELPERS_PROGRESS": "off", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
               "LANG": "C.UTF-8"}
        uid = UID_BASE + (os.getpid() % 100_000) * 1000 + next(_children) % 1000  # one per process at once
        self.printed_to = tempfile.TemporaryFile(prefix="attn-grading-")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(sandbox_command(site.resolve(), hidden, uid), stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=self.printed_to, env=env, cwd="/",
                                        start_new_session=True, preexec_fn=functools.partial(_limits, memory))
        self.printed, self.sent, self.violation = None, time.monotonic(), ""

    def request(self, message: dict, timeout: float, make_function=None):
        """The child's answer to ``message``: :class:`Ended` when it does not answer within ``timeout`` s,
        :class:`Refused` when its answer is not data of the agreed form."""
        self.send(message)
        return self.receive(timeout, make_function, message["op"])

    def send(self, message: dict, timeout: float = CELL_LIMIT) -> None:
        """Write ``message`` to the child, giving up after ``timeout`` s if it stops reading (receive() then says
        that it did not answer)."""
        self.sent = time.monotonic()
        data = memoryview(worker.pack(message, classes=True))
        try:
            stream = self.process.stdin.fileno()
            os.set_blocking(stream, False)
            while data:
                if not select.select([], [stream], [], max(self.sent + timeout - time.monotonic(), 0))[1]:
                    return
                data = data[os.write(stream, data):]
        except (OSError, ValueError):  # a broken pipe, or closed: the process has ended, which receive() says
            pass

    def receive(self, timeout: float, make_function=None, op: str = "run"):
        """The answer to the last message (an ``op`` request), if all of it comes within ``timeout`` s of sending
        it."""
        try:
            payload = self._read_frame(self.sent + timeout)
            if payload is None:
                timed_out = self.process.poll() is None
                raise Ended(f"did not finish within {timeout:g} s: is there a loop that never ends?" if timed_out
                            else "ended its Python process (os._exit, a crash, or memory) before answering")
            return parse(payload, make_function, op)
        except Refused as refused:
            self.violation = self.violation or f"your code sent the grader something that is not an answer: {refused}"
            self.close()
            raise
        except Ended:
            self.close()
            raise
        except (OSError, ValueError):
            self.close()
            raise Ended("ended its Python process before answering") from None

    def _read_frame(self, deadline: float) -> bytes | None:
        """One frame's payload, read as it comes until ``deadline`` (a slow trickle is cut there)."""
        if self.printed is not None:
            return None
        stream, chunks, wanted, header = self.process.stdout.fileno(), [], 8, None
        while wanted:
            left = max(deadline - time.monotonic(), 0)  # an answer already there is read even after the deadline
            if not select.select([stream], [], [], left)[0]:
                if header is not None:  # the worker writes a frame at once: this one trickles, or was cut short
                    raise Refused("an answer that did not arrive whole in time (a slow trickle, or cut short)")
                return None
            chunk = os.read(stream, min(wanted, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            wanted -= len(chunk)
            if header is None and not wanted:
                header = int.from_bytes(b"".join(chunks), "big")
                if header > FRAME_LIMIT:
                    raise Refused(f"an answer of {header:,} bytes, more than the {FRAME_LIMIT // 2**20} MB a "
                                  "reply may have")
                chunks, wanted = [], header
        return b"".join(chunks)

    def output(self, limit: int = 3000) -> str:
        """What the learner's code printed (its end, at most ``limit`` characters)."""
        if self.printed is not None:
            return self.printed
        try:
            size = self.printed_to.seek(0, os.SEEK_END)
            self.printed_to.seek(max(size - limit, 0))
            return self.printed_to.read(limit).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        """Stop the process (and all it started); what it printed stays readable."""
        if self.printed is not None:
            return
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            try:
                stream.close()
            except OSError:
                pass
        self.printed = self.output()
        self.printed_to.close()


# --------------------------------------------------------------------------- what crosses back: data only

#: The form of every tagged value a reply may hold: its tag and exactly these keys.
FORMS = {"array": {"t", "i"}, "scalar": {"t", "i"}, "tuple": {"t", "v"}, "dict": {"t", "v"}, "complex": {"t", "v"},
         "ellipsis": {"t"}, "function": {"t", "h", "name"}, "object": {"t", "type", "repr"}}
#: The replies to each request, by their keys: the exercise cell ran (or the notebook's own cells failed), a
#: value (or the name is not defined), a call's result (or the learner's exception).
REPLIES = {"run": ({"error"}, {"setup_error"}), "value": ({"value"}, {"error"}), "call": ({"result", "error"},)}
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,79}")


class Opaque:
    """A stand-in for an object that stays in the sandbox: its type's name and its repr text, nothing else."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


@functools.lru_cache(maxsize=256)
def _named(base: type, name: str) -> type:
    """An empty subclass of ``base`` called ``name`` (a label for a checker's message; it has no code)."""
    return type(name, (base,), {"__module__": "learner"})


def parse(payload: bytes, make_function=None, op: str = ""):
    """The reply in one frame's ``payload``, as plain values; :class:`Refused` (one sentence) for anything else.

    The payload is an uncompressed ``.npz``: ``header.npy`` (UTF-8 JSON) and ``a0.npy``, ``a1.npy``... (arrays of
    numbers, booleans or text, read without numpy's pickle path). ``make_function(handle, name)`` stands in for
    a function that stays in the sandbox; ``op``, the request it answers (any request's reply when empty)."""
    try:
        arrays = _arrays(payload)
        header = arrays.pop("header")
        if header.dtype != np.uint8 or header.ndim != 1:
            raise Refused("its header is not text")
        data = json.loads(header.tobytes().decode("utf-8"))
        reply = _value(data, arrays, make_function, 0, [ITEM_LIMIT])
    except Refused:
        raise
    except Exception as err:  # noqa: BLE001 - whatever breaks while reading it, it is not an answer
        raise Refused(f"a reply that cannot be read ({type(err).__name__})") from None
    if not isinstance(reply, dict) or set(reply) not in REPLIES.get(op, sum(REPLIES.values(), ())):
        raise Refused("a reply without the parts an answer has")
    for key in ("error", "setup_error"):
        if reply.get(key) is not None:
            error = reply[key]
            if not isinstance(error, dict) or set(error) != {"type", "message", "traceback"} \
                    or not all(isinstance(v, str) for v in error.values()):
                raise Refused("an error report without its type, message and traceback")
            reply[key] = {"type": error["type"] if NAME.fullmatch(error["type"]) else "Exception",
                          "message": error["message"][:500], "traceback": error["traceback"][-2000:]}
    return reply


def _arrays(payload: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        members = archive.infolist()
        names = [member.filename for member in members]
        if len(members) > ITEM_LIMIT or sorted(names) != sorted(["header.npy", *(f"a{k}.npy" for k in
                                                                                  range(len(members) - 1))]):
            raise Refused("its parts are not named as an answer's are")
        if any(m.compress_type != zipfile.ZIP_STORED or m.file_size > len(payload) for m in members):
            raise Refused("a compressed part, or one larger than the reply")
        return {name[:-4]: _array(archive.read(name)) for name in names}


def _array(data: bytes) -> np.ndarray:
    """One ``.npy`` part: numbers, booleans or text only, exactly as many bytes as its shape says."""
    stream = io.BytesIO(data)
    version = np.lib.format.read_magic(stream)
    read = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}.get(version)
    if read is None:
        raise Refused("an array in an unknown format")
    shape, fortran, dtype = read(stream)
    if dtype.kind not in worker.NUMBERS or dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        raise Refused(f"an array of {dtype}, not of numbers, booleans or text")
    count = 1
    for size in shape:
        count *= size
    if count * dtype.itemsize != len(data) - stream.tell():
        raise Refused("an array whose size is not its shape's")
    return np.frombuffer(data, dtype, count, stream.tell()).reshape(shape, order="F" if fortran else "C").copy()


def _value(data, arrays: dict, make_function, depth: int, budget: list):
    budget[0] -= 1
    if budget[0] < 0 or depth > DEPTH_LIMIT:
        raise Refused("more values, or values nested deeper, than an answer may have")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [_value(item, arrays, make_function, depth + 1, budget) for item in data]
    tag = data.get("t") if isinstance(data, dict) else None
    if not isinstance(tag, str) or set(data) != FORMS.get(tag):
        raise Refused(f"a value of an unknown kind ({str(tag)[:40]!r})")
    if tag in ("array", "scalar"):
        array = arrays[f"a{data['i']}"] if type(data["i"]) is int else None
        if array is None or (tag == "scalar" and array.ndim):
            raise Refused("a number that is not one")
        return array[()] if tag == "scalar" else array
    if tag in ("tuple", "dict"):
        items = data["v"]
        if tag == "tuple" and isinstance(items, list):
            return tuple(_value(item, arrays, make_function, depth + 1, budget) for item in items)
        if tag == "dict" and isinstance(items, dict):
            return {key: _value(item, arrays, make_function, depth + 1, budget) for key, item in items.items()}
    elif tag == "complex":
        if isinstance(data["v"], list) and len(data["v"]) == 2 and all(type(x) in (int, float) for x in data["v"]):
            return complex(*data["v"])
    elif tag == "ellipsis":
        return Ellipsis
    elif tag == "function":
        if type(data["h"]) is int and isinstance(data["name"], str) and make_function is not None:
            return make_function(data["h"], data["name"][:100])
    elif isinstance(data["type"], str) and isinstance(data["repr"], str):
        name = data["type"] if NAME.fullmatch(data["type"]) else "object"
        return _named(Opaque, name)(data["repr"][:200])
    raise Refused(f"a {tag} value of the wrong form")


#: The exception classes a learner's error arrives as (the builtins and numpy's AxisError); others are labels.
EXCEPTIONS = {**{name: cls for name, cls in vars(builtins).items() if isinstance(cls, type)
                 and issubclass(cls, BaseException) and not name.endswith("ExceptionGroup")},
              "AxisError": getattr(np, "exceptions", np).AxisError}


def learner_error(report: dict) -> BaseException:
    """The learner's exception as one a checker can describe: its type (from :data:`EXCEPTIONS`, or an empty
    class with its name) and its message."""
    cls = EXCEPTIONS.get(report["type"])
    if cls is not None:
        try:
            return cls(report["message"])
        except Exception:  # noqa: BLE001 - an exception whose constructor wants more arguments
            pass
    return _named(Exception, report["type"])(report["message"])


# --------------------------------------------------------------------------- the learner's functions, called from here


def proxy(learner: Learner, handle: int, name: str, time_limit: float, stop, code: Code | None = None):
    """A stand-in for the learner's function number ``handle`` (called ``name``): the call runs in the learner's
    process and its answer comes back as data (see :func:`parse`).

    The stand-in takes and returns plain data, raises the learner's exception (:func:`learner_error`), and
    raises ``stop(sentence)`` when the process loops past ``time_limit`` s, ends, or answers with something
    that is not data (then ``learner.violation`` says what). Each call is noted in ``calls`` as
    ``(args, kwargs, result or exception, time)``. Arrays of a subclass (a checker's watched arrays) get the
    operations that ``code`` (the learner's source, read here) applies to its arguments."""

    def make(index, label):
        return proxy(learner, index, label, time_limit, stop)

    def learner_function(*args, **kwargs):
        watched = [a for a in args if isinstance(a, np.ndarray) and type(a) is not np.ndarray]  # a checker's
        args, kwargs = [_plain(a) for a in args], {k: _plain(v) for k, v in kwargs.items()}
        message = {"op": "call", "handle": handle, "args": args, "kwargs": kwargs}
        started = time.time()
        try:
            reply = learner.request(message, time_limit, make)
        except Ended as ended:
            raise stop(learner.violation or str(ended)) from None
        finally:
            if code is not None:
                code.replay(name, watched)
        outcome = learner_error(reply["error"]) if reply["error"] else reply["result"]
        learner_function.calls.append((args, kwargs, outcome, started))
        if reply["error"]:
            raise outcome
        return outcome

    source = code.source(name) if code is not None else ""
    if source:  # inspect.getsource(learner_function) is the learner's def, as the grader read it
        filename = f"<your function {name}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        learner_function.__code__ = learner_function.__code__.replace(co_filename=filename, co_firstlineno=1)
    learner_function.__name__ = learner_function.__qualname__ = name
    learner_function.calls = []
    return learner_function


def _plain(value):
    """A checker's argument as the data sent to the sandbox (a watched array as a plain copy)."""
    if isinstance(value, np.ndarray):
        return np.array(value)
    if isinstance(value, (list, tuple)):
        items = [_plain(item) for item in value]
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def learner_value(learner: Learner, name: str, time_limit: float, stop, code: Code | None = None):
    """The value the learner's cells bound to ``name`` (a function as a :func:`proxy`); ``Refused`` when it is
    not defined, ``stop(sentence)`` when the process ends, loops or answers with what is not data."""
    try:
        reply = learner.request({"op": "value", "name": name}, time_limit,
                                lambda index, label: proxy(learner, index, name, time_limit - 0.5, stop, code))
    except Ended as ended:
        raise stop(learner.violation or str(ended)) from None
    if "value" not in reply:
        raise Refused(f"{name} is not defined")
    return reply["value"]


# --------------------------------------------------------------------------- the learner's source, read here

#: numpy's products by name: what a replay calls on a checker's watched array when the learner's code names it.
#: Calls that reach code by a computed name.
DYNAMIC = {"eval", "exec", "compile", "__import__", "vars", "globals", "locals"}
PRODUCTS = {"dot": np.dot, "inner": np.inner, "vdot": np.vdot, "tensordot": np.tensordot, "einsum": np.einsum}
MATMUL = {"matmul", "__matmul__", "__rmatmul__", "__imatmul__"}


class Code:
    """The names a notebook's cells bind and what the learner's functions do, read with ``ast``.

    ``cells``: the submitted notebook's code cells, in order (the last binding of a name counts)."""

    def __init__(self, cells: list[str]):
        self.defined: dict = {}  # name -> (the node that binds it, the cell's source)
        self.imported: dict = {}  # name -> what it is: "numpy", "numpy.dot", "attn_helpers.core.softmax", ...
        for source in cells:
            try:
                tree = ast.parse(_without_magics(source))
            except SyntaxError:
                continue
            for node in _top_level(tree.body):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    self.defined[node.name] = (node, source)
                elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                    self.defined[node.targets[0].id] = (node.value, source)
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for alias in node.names:
                        if alias.asname:
                            self.imported[alias.asname] = alias.name
                        else:
                            self.imported[alias.name.split(".")[0]] = alias.name.split(".")[0]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    for alias in node.names:
                        self.imported[alias.asname or alias.name] = f"{node.module}.{alias.name}"

    def source(self, name: str) -> str:
        """The learner's ``def name`` as written, or ``""``."""
        node, source = self.defined.get(name, (None, ""))
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return ""
        lines = _without_magics(source).splitlines(True)
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        return "".join(lines[first - 1:node.end_lineno])

    def reach(self, name: str) -> list:
        """The nodes of what ``name`` is bound to, and of the functions of the notebook it uses, and so on."""
        seen, todo, nodes = set(), [name], []
        while todo:
            current = todo.pop()
            if current in seen or current not in self.defined:
                continue
            seen.add(current)
            node = self.defined[current][0]
            nodes.append(node)
            local, _ = _names(node) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else (set(), None)
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                     and n.id not in local - {current}]
        return nodes

    def dotted(self, node) -> str:
        """What an expression like ``ah.core.softmax`` or ``np.dot`` names, by the imports: ``attn_helpers.core
        .softmax``, ``numpy.dot``; ``""`` for anything else."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.imported:
            return ""
        return ".".join([self.imported[node.id], *reversed(parts)])

    def series(self, name: str) -> set:
        """The series' names (``attn_helpers...``) that ``name``'s code uses, itself included."""
        found = {self.imported[name]} if name in self.imported else set()
        for node in self.reach(name):
            for part in ast.walk(node):
                if isinstance(part, (ast.Name, ast.Attribute)):
                    found.add(self.dotted(part))
        return {dotted for dotted in found if dotted.split(".")[0] == "attn_helpers"}

    def dynamic(self, name: str) -> str:
        """How ``name``'s code reaches code by a name it computes (``eval(...)``, ``importlib.import_module``,
        ``getattr`` with a computed name, a module's ``__dict__``), or ``""``: the grader cannot tell what that
        calls, so no answer may depend on it."""
        for node in self.reach(name):
            for part in ast.walk(node):
                if isinstance(part, ast.Call):
                    func = part.func.id if isinstance(part.func, ast.Name) else self.dotted(part.func)
                    if func in DYNAMIC or func.split(".")[0] in ("importlib", "runpy", "pkgutil"):
                        return f"{func}(...)"
                    if func == "getattr" and len(part.args) >= 2 and not isinstance(part.args[1], ast.Constant):
                        return "getattr with a computed name"
                elif isinstance(part, ast.Attribute) and part.attr in ("__dict__", "__globals__", "modules") \
                        and (part.attr != "modules" or self.dotted(part.value) == "sys"):
                    return ast.unparse(part)
        return ""

    def operations(self, name: str) -> list:
        """The products, transposes and sums that ``name``'s code takes, as ``(kind, *details)``."""
        found = []
        for node in self.reach(name):
            for part in ast.walk(node):
                if isinstance(part, (ast.BinOp, ast.AugAssign)) and isinstance(part.op, ast.MatMult):
                    found.append(("matmul",))
                elif isinstance(part, ast.Attribute) and part.attr == "T":
                    found.append(("T",))
                elif isinstance(part, ast.Attribute) and part.attr in MATMUL:
                    found.append(("matmul",))
                elif isinstance(part, ast.Call):
                    found += self._call(part)
        return found

    def _call(self, call: ast.Call) -> list:
        func, dotted = call.func, self.dotted(call.func)
        if isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) >= 2 \
                and isinstance(call.args[1], ast.Constant) and isinstance(call.args[1].value, str):
            attr, method = call.args[1].value, self.dotted(call.args[0]) != "numpy"
        elif dotted.startswith("numpy.") and dotted.count(".") == 1:
            attr, method = dotted.split(".")[1], False
        elif isinstance(func, ast.Attribute):
            attr, method = func.attr, True
        else:
            return []
        args = call.args[0 if method else 1:]
        keywords = {k.arg: k.value for k in call.keywords}
        if attr in MATMUL:
            return [("matmul",)]
        if attr == "dot":
            return [("method", "dot")] if method else [("function", "dot")]
        if attr in PRODUCTS:
            return [("function", attr)]
        try:
            if attr == "transpose":
                axes = tuple(ast.literal_eval(a) for a in args)
                axes = axes[0] if len(axes) == 1 and isinstance(axes[0], (tuple, list)) else axes
                return [("transpose", tuple(axes))]
            if attr == "sum":
                axis = ast.literal_eval(keywords.get("axis", args[0] if args else ast.Constant(None)))
                return [("sum", axis, bool(ast.literal_eval(keywords.get("keepdims", ast.Constant(False)))))]
        except (ValueError, TypeError, SyntaxError):
            return []  # an axis the code computes: nothing to replay
        return []

    def replay(self, name: str, watched: list) -> None:
        """Take the operations of ``name``'s code on each of a checker's ``watched`` arrays, so that a checker
        that watches them sees what the learner's function does (its own notes; every result is discarded)."""
        if not watched:
            return
        for operation in self.operations(name):
            for array in watched:
                try:
                    with np.errstate(all="ignore"), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        _operate(array, operation)
                except Exception:  # noqa: BLE001, S110 - shapes that do not fit: the note is taken first
                    pass


def _operate(array, operation) -> None:
    kind, *details = operation
    if kind == "matmul":
        np.matmul(array, array)
    elif kind == "function":
        PRODUCTS[details[0]](array, array)
    elif kind == "method":
        array.dot(array)
    elif kind == "T":
        _ = array.T
    elif kind == "transpose":
        array.transpose(*details[0])
    elif kind == "sum":
        array.sum(axis=details[0], keepdims=details[1])


def _top_level(body: list):
    """The statements of a cell's top level, those inside its ``if``, ``try``, ``with`` and ``for`` included."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
            for part in ("body", "orelse", "finalbody"):
                yield from _top_level(getattr(node, part, []))
            for handler in getattr(node, "handlers", []):
                yield from _top_level(handler.body)


def series_functions() -> dict:
    """The series' functions by every name a learner can import them under (``attn_helpers.softmax``,
    ``attn_helpers.core.softmax``), from the modules of the grading copy this process has loaded."""
    table = {}
    for module_name, module in list(sys.modules.items()):
        if module_name.split(".")[0] == "attn_helpers" and module is not None:
            for attr, value in list(vars(module).items()):
                if callable(value) and not isinstance(value, type):
                    table[f"{module_name}.{attr}"] = value
    return table


# --------------------------------------------------------------------------- what a submission may not do

CHECKMARK = "\u2705"
PROTECTED = ("numpy", "attn_helpers", "builtins", "sys")
REGISTRY = {"SOLUTIONS", "solution", "register_solution", "_grader"}  # the checkers' solutions, and their table


def checker_names() -> set:
    """The names of the series' checkers (``check_...``) and of their verdict."""
    from attn_helpers import checks

    return {name for name in vars(checks) if name.startswith("check_")} | {"Verdict"}


def bindings(cells: list[str]) -> dict:
    """What each name is bound to last in ``cells`` (in order): the series' name it was imported as
    (``attn_helpers.checks.solution``; a star import binds the module's public names), or ``""`` for a binding
    of the notebook's own (a ``def``, an assignment, another import)."""
    found: dict = {}
    for source in cells:
        try:
            tree = ast.parse(_without_magics(source))
        except SyntaxError:
            continue
        for node in sorted((n for n in ast.walk(tree) if hasattr(n, "lineno")),
                           key=lambda n: (n.lineno, n.col_offset)):
            found.update(_binds(node))
    return found


def _binds(node) -> dict:
    if isinstance(node, ast.ImportFrom) and node.module and not node.level:
        if any(alias.name == "*" for alias in node.names):
            if node.module.split(".")[0] != "attn_helpers":
                return {}
            try:
                module = importlib.import_module(node.module)
            except Exception:  # noqa: BLE001 - a module that does not import binds nothing
                return {}
            names = getattr(module, "__all__", [n for n in vars(module) if not n.startswith("_")])
            return {name: f"{node.module}.{name}" for name in names}
        return {alias.asname or alias.name: f"{node.module}.{alias.name}" for alias in node.names}
    if isinstance(node, ast.Import):
        return {alias.asname or alias.name.split(".")[0]: alias.name if alias.asname else alias.name.split(".")[0]
                for alias in node.names}
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {node.name: ""}
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return {node.id: ""}
    return {}


def tampering(source: str, where: str, solutions: set, checkers: set | None = None,
              notebook: dict | None = None) -> list[str]:
    """Sentences naming what cell ``source`` does that no answer may: print a verdict, patch or rebind numpy or
    a checker (one of ``checkers``, default: the series' own), import or reveal a solution (one of the function
    names ``solutions``) or the checkers' table of solutions. Read from the code: comments, docstrings and
    strings that are never shown are not code; a name counts for what it is bound to (the cell's own binding,
    else the notebook's last, ``notebook``: :func:`bindings`), so a learner's own ``solution`` is theirs."""
    checkers = checker_names() if checkers is None else checkers
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return []
    local = bindings([source])

    def series(name: str) -> bool:  # the name is the series' (imported from attn_helpers), not the learner's
        return local.get(name, (notebook or {}).get(name, "")).split(".")[0] == "attn_helpers"
    found = [f"{where} prints a verdict of its own (a ✅)"] if _shows_checkmark(tree) else []
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
            private = any(part.startswith("_") for part in node.module.split("."))
            for alias in node.names:
                if private or alias.name in solutions or alias.name in REGISTRY or alias.name.startswith("_") \
                        or (alias.name in checkers and alias.asname not in (None, alias.name)):
                    found.append(f"{line} imports {alias.name} from {node.module}: a solution, the checkers' "
                                 "own machinery, or a checker renamed")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("attn_helpers.checks.") and "._" in alias.name:
                    found.append(f"{line} imports {alias.name}, the checkers' own machinery")
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname in checkers and alias.asname != alias.name:
                    found.append(f"{line} names an import {alias.asname}, as a checker is named")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name in checkers:
            found.append(f"{line} defines {node.name}, a checker's name")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and _root(node.args[0]) in modules:
            found.append(f"{line} calls {node.func.id} on {ast.unparse(node.args[0])}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in ("solution", "Verdict") and series(node.func.id):
            found.append(f"{line} calls {node.func.id}(...), the checkers' own")
        elif isinstance(node, ast.Attribute) and (node.attr in REGISTRY or node.attr in solutions) \
                and (_root(node) in modules or series(_root(node))):
            found.append(f"{line} reads {ast.unparse(node)}")
        elif isinstance(node, ast.Name) and node.id in ("SOLUTIONS", "_grader") and isinstance(node.ctx, ast.Load) \
                and series(node.id):
            found.append(f"{line} reads {node.id}, the checkers' table of solutions")
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AugAssign, ast.AnnAssign)) else node.targets if isinstance(node, ast.Delete) else []
        for target in targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name) and name.id in checkers:
                    found.append(f"{line} rebinds {name.id}, a checker")
            if isinstance(target, (ast.Attribute, ast.Subscript)) and _root(target) in modules:
                found.append(f"{line} changes {ast.unparse(target)}")
    return found


def _shows_checkmark(tree) -> bool:
    """Whether code shows a ✅: a string holding one that is not a docstring nor a statement of its own before
    the cell's last (Jupyter shows neither), or ``chr(9989)``."""
    silent = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else []:
            shown = isinstance(node, ast.Module) and statement is body[-1]
            if isinstance(statement, ast.Expr) and isinstance(statement.value, (ast.Constant, ast.JoinedStr)) \
                    and not shown:
                silent |= {id(part) for part in ast.walk(statement)}
    return any((isinstance(node, ast.Constant) and isinstance(node.value, str) and CHECKMARK in node.value
                and id(node) not in silent)
               or (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "chr"
                   and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == ord(CHECKMARK))
               for node in ast.walk(tree))


def _root(node) -> str:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def _without_magics(source: str) -> str:
    return "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines())


# --------------------------------------------------------------------------- which cells an exercise needs


def _names(source) -> tuple[set, set]:
    """(names ``source`` (text or a parsed node) binds anywhere, names it reads)."""
    try:
        tree = ast.parse(_without_magics(source)) if isinstance(source, str) else source
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


def free_names(source: str) -> set:
    """The names ``source`` reads before it binds them, statement by statement: ``np`` in
    ``x = np.ones(3)`` followed by ``import numpy as np`` is read from an earlier cell. A function's body runs
    later: it reads what the cell does not bind anywhere."""
    try:
        tree = ast.parse(_without_magics(source))
    except SyntaxError:
        return set()
    everywhere, _ = _names(tree)
    before, free = set(), set()
    for statement in tree.body:
        bound, read = _names(statement)
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            free |= read - bound - everywhere
        else:
            free |= read - bound - before
        before |= bound
    return free


def needed_cells(cells: list[str], target: str) -> list[str]:
    """The cells among ``cells`` (in order) that define what ``target`` reads, and what those read, and so on."""
    wanted, chosen = free_names(target), []
    for source in reversed(cells):
        defines, _ = _names(source)
        if defines & wanted:
            chosen.append(source)
            wanted |= free_names(source)
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
                   children: int = CHILDREN, seed: str = "", secret: bytes = b"", memory: int = BATCH_MEMORY) -> dict:
    """``{grade_id: (passed, text)}`` for every test cell of ``source`` (the teacher's notebook, with the
    solutions), judging the learner's cells of ``submitted``; ``{solution id: output}`` under key ``None``.

    Each exercise's process gets the teacher's copies of the cells it needs (an earlier exercise's cell too,
    with the teacher's solution), then the learner's cell: a raise in one exercise cell costs that exercise
    only. At most ``children`` processes run at once, fewer if they would not fit in ``memory`` bytes with the
    grader (:func:`sandboxes`). ``seed`` ("student/assignment") and the course's ``secret``
    draw the new cases (classroom_kit/grade_cases.py)."""
    from attn_helpers import checks
    from attn_helpers.checks._grader import SOLUTIONS, TIME_LIMIT, TimeLimit

    given = {_meta(c).get("grade_id"): c.source for c in submitted.cells if _meta(c).get("solution")}
    own = {c.source for c in source.cells if c.cell_type == "code" and not _meta(c).get("solution")}
    names = set(SOLUTIONS) | {fn.__name__ for fn in SOLUTIONS.values()}
    notebook = bindings([c.source for c in submitted.cells if c.cell_type == "code"])
    wrong = [sentence for k, c in enumerate(submitted.cells) if c.cell_type == "code" and c.source not in own
             for sentence in tampering(c.source, f"cell {k + 1}", names, notebook=notebook)]
    code = Code([c.source for c in submitted.cells if c.cell_type == "code"])
    helpers = learners_cells(submitted, own)
    exercises, before = [], []  # [grade id, the cells it needs, the learner's cells, its test cells]
    for cell in source.cells:
        meta = _meta(cell)
        if meta.get("solution"):
            mine = given.get(meta["grade_id"], "")
            theirs = [*needed_cells(helpers.get(meta["grade_id"], []), mine), mine]  # their helpers, their cell
            exercises.append((meta["grade_id"], needed_cells(before, "\n".join(theirs)), theirs, []))
        elif meta.get("grade") and exercises:
            exercises[-1][3].append(cell)
        if cell.cell_type == "code" and not meta.get("grade"):
            before.append(without_checks(cell.source))  # the teacher's copy, an exercise's with its solution
    results, outputs, learners = {}, {}, []
    children, each = sandboxes(memory, children)

    def start(k):  # an exercise's process, started before its turn: a loop waits while the others run
        _, context, theirs, _ = exercises[k]
        learners.append(Learner(site, hidden, each))
        learners[-1].send({"op": "run", "context": context, "cell": "\n\n".join(map(without_checks, theirs))})

    try:
        for k, (exercise, _, theirs, tests) in enumerate(exercises):
            while len(learners) < min(k + max(children, 1), len(exercises)):
                start(len(learners))
            learner = learners[k]
            state = {"error": None, "ended": ""}
            try:
                answer = learner.receive(cell_limit)
                if answer.get("setup_error"):
                    state["ended"] = ("the notebook's own cells failed before your exercise cell ran "
                                      f"({answer['setup_error']['type']}: {answer['setup_error']['message']})")
                elif "error" in answer:
                    state["error"] = answer["error"]
                else:
                    learner.violation = "your code sent the grader something that is not an answer: a setup error " \
                                        "without its report"
            except Refused:
                pass  # learner.violation says what
            except Ended as ended:
                state["ended"] = f"your exercise cell {ended}"
            outputs[exercise] = (learner.output(), state["error"])
            graded = graded_with(theirs[:-1])
            for test in tests:
                passed, text = _judge(test.source, learner, state, wrong, checks, code, TIME_LIMIT, TimeLimit,
                                      (exercise, seed, secret))
                results[test.metadata["nbgrader"]["grade_id"]] = (passed, text + graded)
            learner.close()
    finally:
        for learner in learners:
            learner.close()
    results[None] = outputs
    return results


def learners_cells(submitted, own: set) -> dict:
    """``{grade id: the learner's own code cells above that exercise cell}``: cells that are not the teacher's
    (``own``: their sources) nor an exercise's or a test's."""
    found, mine = {}, []
    for cell in submitted.cells:
        meta = _meta(cell)
        if meta.get("solution") and meta.get("grade_id"):
            found.setdefault(meta["grade_id"], list(mine))
        elif cell.cell_type == "code" and not meta.get("grade") and cell.source not in own:
            mine.append(cell.source)
    return found


def graded_with(cells: list[str]) -> str:
    """The sentence the mark adds when the learner's own cells above the exercise cell were graded with it."""
    if not cells:
        return ""
    names = []
    for cell in cells:
        try:
            body = ast.parse(_without_magics(cell)).body
        except SyntaxError:
            continue
        names += [node.name for node in body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                    ast.ClassDef))]
        names += [t.id for node in body if isinstance(node, ast.Assign) for t in node.targets
                  if isinstance(t, ast.Name)]
    names = sorted(set(names))
    return (f"\n(graded with {len(cells)} cell{'s' if len(cells) > 1 else ''} of your own above the exercise "
            f"cell, which define{'' if len(cells) > 1 else 's'} {', '.join(names[:6])}"
            f"{', ...' if len(names) > 6 else ''})")


def _judge(test: str, learner: Learner, state: dict, wrong: list, checks, code: Code, time_limit,
           stop, hidden=("", "", b"")) -> tuple[bool, str]:
    if wrong:
        return False, "0 points: " + "; ".join(wrong) + ". An answer must be your own work, checked by the " \
                                                         "series' own checkers."
    if learner.violation:
        return False, f"0 points: {learner.violation}"
    if state["ended"]:
        return False, state["ended"]
    if state["error"]:  # as in the notebook, where the cell stops at the raise and its check never runs
        return False, (f"your exercise cell raised {state['error']['type']}: {state['error']['message']} (a cell that "
                       "raises costs its exercise: run it again until it runs without an error)")
    call = _checker_call(test)
    checker = getattr(checks, call.func.id)
    args = []
    for node in call.args:
        if not isinstance(node, ast.Name):
            args.append(ast.literal_eval(node))
            continue
        try:
            args.append(learner_value(learner, node.id, time_limit, stop, code))
        except Refused as refused:
            return False, str(refused)
        except stop as stopped:
            return False, f"0 points: {learner.violation}" if learner.violation else f"your code {stopped}"
    try:
        verdict = checker(*args)
        import grade_cases  # the new cases each student's functions are also graded on (classroom_kit/grade_cases.py)

        exercise, seed_text, secret = (*hidden, b"")[:3]  # the new cases decide (classroom_kit/grade_cases.py)
        verdict = grade_cases.with_hidden_cases(verdict, exercise, checker, args, seed_text, secret)
    except BaseException as err:  # noqa: BLE001 - a checker never raises; if it does, the mark is 0, not a crash
        return False, f"the checker could not grade this answer ({type(err).__name__}: {err})"
    if learner.violation:
        return False, f"0 points: {learner.violation}"
    if verdict:
        for arg, node in zip(args, call.args):
            unfair = borrowed(node.id, arg, code) if isinstance(node, ast.Name) else ""
            unfair = unfair or unsteady(arg)
            if learner.violation or unfair:
                return False, f"0 points: {learner.violation or unfair}"
    return bool(verdict), repr(verdict)


def _calls(fn) -> list:
    return [call for call in getattr(fn, "calls", []) if not isinstance(call[2], BaseException)]


def borrowed(name: str, fn, code: Code, limit: float = 10.0) -> str:
    """A sentence when the learner's function ``name`` hands in the series' own work, else ``""``: its code
    (read here) uses a registered solution, or a function of the series that it uses returns, computed here on
    the same arguments, what it returned. ``limit``: seconds for those computations."""
    from attn_helpers.checks._grader import SOLUTIONS, call_quietly

    table, solved = series_functions(), {id(fn) for fn in SOLUTIONS.values()}
    used = sorted(dotted for dotted in code.series(name) if dotted in table)
    for dotted in used:
        if id(table[dotted]) in solved:
            return f"your function calls {dotted}, the series' own solution"
    dynamic = code.dynamic(name)
    if dynamic:
        return f"your function reaches code through a name it computes ({dynamic}): an answer calls what it names"
    end = time.monotonic() + limit
    for dotted in used:
        for args, kwargs, result, _ in _calls(fn)[:4]:
            if time.monotonic() > end:
                return ""
            theirs, error = call_quietly(table[dotted], *args, **kwargs)
            if error is None and _same(theirs, result, BORROWED):
                return f"your function returns what {table[dotted].__module__}.{table[dotted].__name__} " \
                       "computed: the exercise asks you to write it yourself"
    return ""


def unsteady(fn, most: int = 6) -> str:
    """A sentence when the learner's function ``fn`` answers (up to ``most`` of) the checker's calls differently
    when they are made again at a second of the other parity (an answer that depends on the time), else ``""``."""
    made = _calls(fn)
    if not made:
        return ""
    for parity in (0, 1):
        again = [call for call in made[:most] if int(call[3]) % 2 == parity]
        if again and int(time.time()) % 2 == parity:
            time.sleep(1 - time.time() % 1 + 0.01)
        for args, kwargs, result, _ in again:
            try:
                now = fn(*args, **kwargs)
            except BaseException:  # noqa: BLE001 - it raised this time, not before
                now = None
            if not _same(now, result):
                return ("your function answered the same arguments differently when called again a second later: "
                        "an answer may not depend on the time or on how it is run")
    return ""


#: (rtol, atol) within which a learner's answer is the series' helper's own, computed here on the same
#: arguments: ten times looser than the checkers' usual 1e-4, so that no nudge of the helper's result that a
#: checker still accepts (``softmax(x) * (1 + 5e-5)``) is the learner's work.
BORROWED = (1e-3, 1e-6)


def _same(a, b, tolerance=(1e-5, 1e-8)) -> bool:
    if a is b or (isinstance(a, str) and a == b):
        return True
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y, tolerance) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k], tolerance) for k in a)
    try:
        x, y = np.asarray(a), np.asarray(b)
        if x.dtype.kind not in "biufc" or y.dtype.kind not in "biufc" or x.shape != y.shape:
            return x.dtype.kind == y.dtype.kind and x.shape == y.shape and bool(np.array_equal(x, y))
        rtol, atol = tolerance
        return x.size > 0 and bool(np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True))
    except Exception:  # noqa: BLE001
        return False


# --------------------------------------------------------------------------- nbgrader's step


def private_import_path(course: Path, site: Path) -> None:
    """Take the course folder (and everything in it but the grading copy ``site``) off this process's import
    path: with it there, ``submitted/<student>/<assignment>/`` would be importable, a submission's files
    modules of the grader."""
    course, site = course.resolve(), site.resolve()

    def inside(entry: str) -> bool:
        path = Path(entry or os.getcwd()).resolve()
        return path != site and (path == course or course in path.parents)

    removed = [entry for entry in sys.path if inside(entry)]
    sys.path[:] = [entry for entry in sys.path if not inside(entry)]
    for entry in removed:
        sys.path_importer_cache.pop(entry, None)
    importlib.invalidate_caches()


class SandboxedGrading(NbGraderPreprocessor):
    """nbgrader's autograde step that replaces ``Execute``: the marks of :func:`grade_notebook`."""

    cell_limit = Float(CELL_LIMIT, help="seconds an exercise's cells may run").tag(config=True)
    children = Int(CHILDREN, help="exercises of a notebook graded at once (each in its own process)").tag(config=True)
    memory = Int(BATCH_MEMORY, help="bytes the grader and its sandboxes may hold at once").tag(config=True)
    site = Unicode("", help="the checkers' grading copy (default: .grader in the course folder)").tag(config=True)

    def preprocess(self, nb, resources):
        info = resources["nbgrader"]
        course = Path.cwd()
        site = Path(self.site or course / ".grader").resolve()
        private_import_path(course, site)
        source = nbformat.read(course / "source" / info["assignment"] / f"{info['notebook']}.ipynb", 4)
        db = re.sub(r"^sqlite:///", "", info.get("db_url", ""))
        hidden = [course] + ([Path(db).resolve()] if db and Path(db).exists() else [])
        self.log.info("Grading %s's %s in the sandbox", info["student"], info["notebook"])
        import grade_cases  # the course's secret seeds the new cases (made here once if the course has none)

        results = grade_notebook(nb, source, site, hidden, self.cell_limit, self.children,
                                 f"{info['student']}/{info['assignment']}", grade_cases.course_secret(course, True),
                                 self.memory)
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
