"""Hostile submissions of notebook 03 through the real nbgrader commands and the sandbox (classroom_kit/grade.py).

One course folder, one batch of submissions, one `nbgrader autograde`: each submission gets its expected mark
(out of 2: spot_the_slip and softmax_any_axis), and afterwards the checkers, the gradebook, the honest
learners' grades (graded after the hostile ones) and their folders are unchanged, and no connection was made.
The batch holds last round's attacks and this round's (issue 38): replies forged by a learner's cell that takes
over the sandbox's writer, forged dataclasses, a fork bomb, disk and memory fillers, the checkers' SOLUTIONS
bound, a function that behaves differently when it sees the grader's stack or an odd second, a ``pwn.py``
handed in beside the notebook; and honest learners a comment or a helper's name once cost their marks. The
grader's own memory (the nbgrader process, not the sandboxes) stays within 500 MB.
benchmarks/bench_grading.py builds its class from the same submissions.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import nbformat
import pytest
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading and packaging: CI's pass without SIMD leaves it out

ASSIGNMENT = "03_softmax"
HONEST = "z1_perfect"  # graded after every hostile submission (nbgrader goes in alphabetical order)


def sandbox_or_skip():
    if shutil.which("bwrap") is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("CI=true but bubblewrap (bwrap) is not installed: apt-get install bubblewrap")
        pytest.skip("bubblewrap (bwrap) is not installed, and grading runs learners' code only in it")


def course(out: Path, cell_limit: float) -> dict:
    """A course folder for notebook 03, released; returns the solutions' cells by grade id."""
    classroom = load_tool("classroom")
    classroom.build(out, {"03"})
    classroom.install_grader(out)
    with open(out / "nbgrader_config.py", "a", encoding="utf-8") as config:
        config.write(f"c.SandboxedGrading.cell_limit = {cell_limit}\n")
    done = classroom.nbgrader(out, "generate_assignment", ASSIGNMENT, "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    source = nbformat.read(out / "source" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    return {cell.metadata["nbgrader"]["grade_id"]: cell.source for cell in source.cells
            if cell.metadata.get("nbgrader", {}).get("solution")}


ZEROS = "def softmax_any_axis(x, axis=-1):\n    return np.zeros_like(x)\n"
LOOP = "while True:\n    pass\n"


#: The learner's cell replaces the sandbox's writer of replies: each reply it sends is ``{}`` (``m`` the real one).
FORGE = ("import __main__\nimport numpy as np\nsend = __main__.pack\n"
         "__main__.pack = lambda m, classes=False: send({})\n")
#: ... by a frame written by hand, naming a module and a class to rebuild (``pwn.py`` is beside the notebook).
FORGE_RAW = ("import io, json, struct, zipfile\nimport numpy as np\nimport __main__\n\n"
             "def forged(m, classes=False):\n    z = io.BytesIO()\n    with zipfile.ZipFile(z, 'w') as a:\n"
             "        h = json.dumps({'result': {'__dataclass__': ['pwn', 'run'], 'fields': {}}, 'error': None})\n"
             "        b = io.BytesIO()\n        np.save(b, np.frombuffer(h.encode(), dtype=np.uint8))\n"
             "        a.writestr('header.npy', b.getvalue())\n"
             "    return struct.pack('!Q', len(z.getvalue())) + z.getvalue()\n\n"
             "__main__.pack = forged\n")
#: A function returning a dataclass whose module and name are forged as the series' ``{0}.{1}``.
FORGED_CLASS = ("import dataclasses\nRecord = dataclasses.make_dataclass('{1}', ['path', 'steps'])\n"
                "Record.__module__, Record.__qualname__ = '{0}', '{1}'\n\n"
                "def softmax_any_axis(x, axis=-1):\n    return Record(**{{'path': None, 'steps': 1, **dict({2})}})\n")
#: Files handed in beside a notebook: a module that writes into the course folder if the grader imports it.
PWN = "open({!r}, 'w').write('ran in the grader')\n"
PWNED = ("forged_events", "forged_raw")  # students who hand in pwn.py too


HELPER = ("def stable_exp_normalise(x, axis=-1):\n    e = np.exp(x - x.max(axis=axis, keepdims=True))\n"
          "    return e / e.sum(axis=axis, keepdims=True)\n")


def lookup_table(student: str) -> str:
    """An exercise cell that answers from a table: the notebook's visible cases and the new cases
    ``classroom_kit/grade_cases.py`` computes without the course's secret (all a student can run), their answers
    from the solution."""
    import sys

    sys.path.insert(0, str(ROOT / "classroom_kit"))
    import grade_cases

    from attn_helpers import checks
    from attn_helpers.checks._grader import SOLUTIONS

    name = "softmax_any_axis"
    visible, _, _ = grade_cases.visible_calls(name, checks.check_softmax_any_axis)
    cases = [*visible, *grade_cases.fresh_cases(name, checks.check_softmax_any_axis, f"{student}/{ASSIGNMENT}")]
    table = {}
    for case in cases:
        x, axis = case.args[0], (case.args[1:] or [case.kwargs.get("axis", -1)])[0]
        key = f"{x.dtype.str}{x.shape}{axis}{x.tobytes().hex()}"
        table[key] = SOLUTIONS[name](x, axis).tolist()
    return (f"TABLE = {table!r}\n\ndef softmax_any_axis(x, axis=-1):\n    x = np.asarray(x)\n"
            "    return np.array(TABLE[f'{x.dtype.str}{x.shape}{axis}{x.tobytes().hex()}'])\n")


def issue50() -> dict:
    """This round's submissions (issue 50), as :func:`submissions` gives them: honest work a grader once took
    for a cheat or could not run, and cheats it once let through. An ``above:ID`` answer is a cell of the
    learner's own just above exercise ``ID``."""
    spot, soft = "spot_the_slip", "softmax_any_axis"
    return {
        "own_helper_above": (2, {spot: "SOLVED", f"above:{soft}": HELPER,
                                 soft: "def softmax_any_axis(x, axis=-1):\n    return stable_exp_normalise(x, axis)\n"},
                             []),
        "own_solution_name": (2, {spot: "SOLVED", soft: "SOLVED"},
                              ["def solution(x):\n    return 2 * x\n\n\nprint(solution(3))\n"]),
        "np_before_reimport": (2, {spot: "SOLVED", soft: "x0 = np.ones(3)\nimport numpy as np\n\nSOLVED"}, []),
        "helper_nudged": (1, {spot: "SOLVED", soft: "from attn_helpers import softmax\n\n"
                                                    "def softmax_any_axis(x, axis=-1):\n"
                                                    "    return softmax(x, axis=axis) * (1 + 5e-5)\n"}, []),
        "solution_import_module": (1, {spot: "SOLVED", soft: (
            "import importlib\n\ndef softmax_any_axis(x, axis=-1):\n"
            "    found = importlib.import_module('attn_helpers.checks.nb' + '03')\n"
            "    return getattr(found, 'softmax_any_axis')(x, axis)\n")}, []),
        "solution_eval": (1, {spot: "SOLVED", soft: "def softmax_any_axis(x, axis=-1):\n    found = eval(\"__import__("
                                                    "'attn_helpers.checks.nb03', fromlist=['nb03'])\")\n"
                                                    "    return found.softmax_any_axis(x, axis)\n"}, []),
        "helper_import_module": (1, {spot: "SOLVED", soft: (
            "import importlib\n\ndef softmax_any_axis(x, axis=-1):\n"
            "    core = importlib.import_module('attn_helpers.' + 'core')\n"
            "    return getattr(core, 'soft' + 'max')(x, axis=axis)\n")}, []),
        "slip_machinery": (1, {spot: "SOLVED", soft: "from attn_helpers.checks import nb03\n\n"
                                                     "def softmax_any_axis(x, axis=-1):\n"
                                                     "    return nb03._max_along(x, axis, axis)\n"}, []),
        "lookup_table": (1, {spot: "SOLVED", soft: lookup_table("lookup_table")}, []),
    }


def submissions(out: Path, port: int) -> dict:
    """``{student: (expected mark, {grade id: cell source}, [extra cells])}``: the hostile class."""
    gradebook, other = out / "gradebook.db", out / "submitted" / HONEST / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    nb03 = ROOT / "attn_helpers" / "checks" / "nb03.py"
    spot, soft = "spot_the_slip", "softmax_any_axis"
    perfect = {spot: "SOLVED", soft: "SOLVED"}
    return {
        "untouched": (0, {}, []),
        "partial": (1, {spot: "SOLVED", soft: "def softmax_any_axis(x, axis=-1):\n    e = np.exp(x - x.max())\n"
                                                  "    return e / e.sum()\n"}, []),
        "exception": (1, {spot: "SOLVED", soft: "def softmax_any_axis(x, axis=-1):\n    return 1 / 0\n"}, []),
        "sys_exit": (1, {spot: "SOLVED", soft: "import sys\nsys.exit()\n"}, []),
        "os_exit": (1, {spot: "SOLVED", soft: "SOLVED\nimport os\nos._exit(0)\n"}, []),
        "infinite_loop": (1, {spot: "SOLVED\n" + LOOP, soft: "SOLVED"}, []),
        "sigint_ignored": (1, {spot: "SOLVED", soft: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                     + LOOP}, []),
        "setitimer_disabled": (1, {spot: "SOLVED", soft: "import signal\nsignal.setitimer = lambda *a, **k: None\n"
                                                         "def softmax_any_axis(x, axis=-1):\n    while True:\n"
                                                         "        pass\n"}, []),
        "numpy_patched": (0, {soft: "import numpy\nnumpy.allclose = lambda *a, **k: True\n" + ZEROS}, []),
        "checker_patched": (0, perfect, ["import attn_helpers.checks._grader\n"
                                         "attn_helpers.checks._grader._close = lambda *a, **k: True\n"]),
        "checker_rebound": (0, {soft: ZEROS}, ["check_softmax_any_axis = lambda fn: True\n"]),
        "checker_setattr": (0, perfect, ["import attn_helpers.checks as checks\n"
                                         "setattr(checks, 'check_softmax_any_axis', lambda fn: True)\n"]),
        "solution_imported": (0, {spot: "SOLVED", soft: "from attn_helpers.checks.nb03 import softmax_any_axis\n"},
                              []),
        "helper_returned": (1, {spot: "SOLVED", soft: "from attn_helpers import softmax\n\n"
                                                      "def softmax_any_axis(x, axis=-1):\n"
                                                      "    return softmax(x, axis=axis)\n"}, []),
        "fake_verdict": (0, {}, ["print('✅ Correct! a stable softmax over any axis')\n"]),
        "checker_file_appended": (0, {soft: f"import attn_helpers.checks.nb03 as m\n"
                                            f"for path in [m.__file__, {str(nb03)!r}]:\n"
                                            f"    open(path, 'a').write('\\nSOLUTIONS.clear()\\n')\n" + ZEROS}, []),
        "gradebook_deleted": (0, {soft: f"import os\nos.remove({str(gradebook)!r})\n"}, []),
        "other_student_written": (0, {soft: f"open({str(other)!r}, 'w').write('{{}}')\n"}, []),
        "network_opened": (0, {soft: f"import socket\nsocket.create_connection(('127.0.0.1', {port}), timeout=2)\n"},
                           []),
        "first_cell_retyped": (2, {**perfect, "__first__": "import numpy as np\n"}, []),
        # this round's (issue 38): the sandbox's replies forged, the sandbox's resources exhausted, names read
        "forged_events": (1, {spot: "SOLVED", soft: "SOLVED\n" + FORGE.format(
            "{'result': None, 'events': [[0, 'function', 'pwn', 'run']], 'patched': [], 'borrowed': ''}")}, []),
        "forged_raw": (1, {spot: "SOLVED", soft: "SOLVED\n" + FORGE_RAW}, []),
        "forged_huge": (1, {spot: "SOLVED", soft: "SOLVED\n" + FORGE.format("{**m, 'x': np.zeros(2 * 10**6)}")}, []),
        "forged_missing": (1, {spot: "SOLVED", soft: "SOLVED\n" + FORGE.format("{}")}, []),
        "dataclass_forged": (1, {spot: "SOLVED", soft: FORGED_CLASS.format("attn_helpers.checks._progress", "record",
                                                                           f"path={str(other)!r}")}, []),
        "train_forged": (1, {spot: "SOLVED", soft: FORGED_CLASS.format("attn_helpers.training", "train",
                                                                       "steps=10**9")}, []),
        "fork_bomb": (1, {spot: "SOLVED", soft: "SOLVED\nimport os\nwhile True:\n    os.fork()\n"}, []),
        "disk_filler": (1, {spot: "SOLVED", soft: "k = 0\nwhile True:\n    with open(f'fill{k}', 'wb') as f:\n"
                                                  "        f.write(b'x' * 2**20)\n    k += 1\n" + "SOLVED"}, []),
        "memory_filler": (1, {spot: "SOLVED", soft: "blocks = []\nwhile True:\n    blocks.append(np.ones(2**27))\n"
                                                    + "SOLVED"}, []),
        "solutions_table": (0, perfect, ["from attn_helpers.checks._grader import SOLUTIONS\n"]),
        "main_borrowed": (0, {spot: "SOLVED", soft: "import __main__\n__main__.borrowed = lambda *a: ''\n"
                                                    "from attn_helpers.checks import nb03\n\n"
                                                    "def softmax_any_axis(x, axis=-1):\n"
                                                    "    return nb03.softmax_any_axis(x, axis)\n"}, []),
        "stack_detect": (1, {spot: "SOLVED", soft: "SOLVED\nimport inspect\nright = softmax_any_axis\n\n"
                                                   "def softmax_any_axis(x, axis=-1):\n"
                                                   "    names = ' '.join(f.filename for f in inspect.stack())\n"
                                                   "    return right(x, axis) if 'grade' in names else 0 * x\n"}, []),
        "even_seconds": (1, {spot: "SOLVED", soft: "SOLVED\nimport time\nright = softmax_any_axis\n\n"
                                                   "def softmax_any_axis(x, axis=-1):\n    even = time.time() % 2 < 1\n"
                                                   "    return right(x, axis) if even else 0 * x\n"}, []),
        "honest_comment": (2, {spot: "SOLVED", soft: "SOLVED  # \u2705 finally works!\n"}, []),
        "honest_helper": (2, perfect, ["def check_rows_sum_to_one(w):\n    return np.allclose(w.sum(axis=-1), 1)\n\n"
                                       "check_rows_sum_to_one(softmax_any_axis(np.ones((2, 3))))\n"]),
        **issue50(),
        HONEST: (2, perfect, []),
        "z2_untouched": (0, {}, []),
    }


def write(out: Path, student: str, answers: dict, extra: list, solutions: dict) -> Path:
    """The released notebook with ``answers`` in its exercise cells (``SOLVED``: the solution) and ``extra``
    new cells at the end."""
    nb = nbformat.read(out / "release" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", 4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell.source = answers[grade_id].replace("SOLVED", solutions[grade_id])
    for grade_id, above in [(key[len("above:"):], text) for key, text in answers.items() if key.startswith("above:")]:
        at = next(k for k, cell in enumerate(nb.cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id)
        nb.cells.insert(at, nbformat.v4.new_code_cell(above))
    if "__first__" in answers:
        next(cell for cell in nb.cells if cell.cell_type == "code").source = answers["__first__"]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    folder = out / "submitted" / student / ASSIGNMENT
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, folder / f"{ASSIGNMENT}.ipynb")
    return folder / f"{ASSIGNMENT}.ipynb"


def peak_memory(pattern: str):
    """A thread that notes the largest resident size (bytes) of any process whose command line holds
    ``pattern`` (this process's descendants), until ``stop`` is set: ``(stop, peaks)``."""
    import psutil

    stop, peaks = threading.Event(), [0]

    def watch():
        me = psutil.Process()
        while not stop.wait(0.2):
            for process in me.children(recursive=True):
                try:
                    if pattern in " ".join(process.cmdline()):
                        peaks[0] = max(peaks[0], process.memory_info().rss)
                except psutil.Error:
                    pass

    threading.Thread(target=watch, daemon=True).start()
    return stop, peaks


def digest(*paths: Path, suffix: str = "*.py") -> str:
    files = sorted(f for p in paths for f in ([p] if p.is_file() else p.rglob(suffix))
                   if f.is_file() and "__pycache__" not in str(f))
    return hashlib.sha256(b"".join(f.read_bytes() for f in files)).hexdigest()


def listen():
    """A local server that counts the connections it gets."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def serve():
        while True:
            try:
                accepted.append(server.accept())
            except OSError:
                return

    threading.Thread(target=serve, daemon=True).start()
    return server, accepted


def scores(out: Path) -> dict:
    with open(out / "grades.csv", newline="", encoding="utf-8") as handle:
        return {row["student_id"]: float(row["score"]) for row in csv.DictReader(handle)
                if row["assignment"] == ASSIGNMENT}


@pytest.mark.slow
@pytest.mark.timeout(1800)  # one nbgrader run of 37 submissions, five of them looping or bombing (10 s each here)
def test_hostile_submissions_get_their_marks_and_change_nothing_else(tmp_path):
    sandbox_or_skip()
    out = tmp_path / "classroom"
    solutions = course(out, cell_limit=10)
    server, accepted = listen()
    try:
        expected = {}
        pwned = tmp_path / "PWNED"
        for student, (mark, answers, extra) in submissions(out, server.getsockname()[1]).items():
            notebook = write(out, student, answers, extra, solutions)
            expected[student] = mark
            if student in PWNED:
                (notebook.parent / "pwn.py").write_text(PWN.format(str(pwned)))
        (out / "pwn.py").write_text(PWN.format(str(pwned)))
        handed_in = digest(out / "submitted", suffix="*")
        checkers = digest(ROOT / "attn_helpers")
        host = {folder: set(folder.iterdir()) for folder in (Path("/tmp"), Path("/dev/shm"))}
        classroom = load_tool("classroom")
        stop, peak = peak_memory("autograde")
        start = time.monotonic()
        assert classroom.autograde(out, {"03"}) == 0
        seconds = time.monotonic() - start
        stop.set()
    finally:
        server.close()
    print(f"{len(expected)} submissions: autograde + feedback + export in {seconds:.0f} s; the grader's peak "
          f"memory {peak[0] / 2**20:.0f} MB")
    assert scores(out) == expected
    assert not accepted, "a submission reached the network"
    assert not pwned.exists(), "a file handed in beside a notebook ran in the grader"
    assert digest(out / ".grader" / "attn_helpers") == digest(ROOT / "attn_helpers") == checkers
    assert digest(out / "submitted", suffix="*") == handed_in, "a submission changed what was handed in"
    written = [f for folder, files in host.items() for f in set(folder.iterdir()) - files if "fill" in f.name]
    assert not written and not list(out.rglob("fill*")), "a submission wrote outside its sandbox"
    assert 0 < peak[0] <= 500 * 2**20, f"the grader took {peak[0] / 2**20:.0f} MB (budget: 500 MB)"
    assert (out / "gradebook.db").is_file()
    feedback = {student: (out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text("utf-8")
                for student in expected}
    assert "did not finish within 10 s" in feedback["infinite_loop"]
    assert "own solution" in feedback["solution_imported"] or "a solution" in feedback["solution_imported"]
    assert "what attn_helpers.core.softmax computed" in feedback["helper_returned"]
    assert "changes numpy.allclose" in feedback["numpy_patched"]
    assert "prints a verdict" in feedback["fake_verdict"]
    assert re.search("Read-only file system|Permission denied", feedback["checker_file_appended"])
    for student in ("forged_events", "forged_raw", "forged_huge", "forged_missing"):
        assert "sent the grader something that is not an answer" in feedback[student], student
    assert "more than the 8 MB" in feedback["forged_huge"]
    assert "No space left on device" in feedback["disk_filler"]
    assert re.search("MemoryError|did not finish within 10 s", feedback["memory_filler"])  # a slow machine's pages
    assert "SOLUTIONS" in feedback["solutions_table"] and "nb03.softmax_any_axis" in feedback["main_borrowed"]


def test_without_bubblewrap_autograde_refuses_and_says_why(tmp_path, monkeypatch, capsys):
    classroom = load_tool("classroom")
    monkeypatch.setattr(classroom.shutil, "which", lambda name: None)
    assert classroom.autograde(tmp_path, {"03"}) == 1
    assert "bubblewrap" in capsys.readouterr().err
    assert not list(tmp_path.iterdir()), "nothing is written before the sandbox is there"


def descendants_rss(root: int, only=(b"bwrap", b"kernel.py")) -> int:
    """The summed resident size (bytes) of ``root``'s descendants whose command line holds a word of ``only``
    (by default the sandboxes: bubblewrap and the worker it runs; other descendants of a test worker, a JupyterLab
    of the browser tests and its kernels, are not the batch's; ``None``: every descendant), read from /proc."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", encoding="utf-8") as handle:
                    parents[int(entry)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    family, todo = set(), [root]
    while todo:
        parent = todo.pop()
        children = [pid for pid, ppid in parents.items() if ppid == parent and pid not in family]
        family.update(children)
        todo += children
    total = 0
    for pid in family:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if only is not None and not any(word in handle.read() for word in only):
                    continue
            with open(f"/proc/{pid}/status", encoding="utf-8") as handle:
                total += next((int(line.split()[1]) * 1024 for line in handle if line.startswith("VmRSS:")), 0)
        except OSError:
            pass
    return total


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_submission_filling_memory_in_every_exercise_keeps_the_batch_within_its_total(tmp_path):
    """Notebook 08 with a memory filler in its first two exercises, which run at once (issue 50: a filler in
    each of 08's three took three sandboxes to 2.4 GB each, a 7.2 GiB peak on f6b00f9; now at most
    grade.CHILDREN run at once, so two fillers are the worst case): the sandboxes together stay within
    grade.BATCH_MEMORY less the grader's own budget, the fillers lose their exercises and the third keeps its
    marks."""
    sandbox_or_skip()
    grade = load_tool("grade")
    classroom = load_tool("classroom")
    out = tmp_path / "classroom"
    classroom.build(out, {"08"})
    (path,) = (out / "source").glob("08_*/08_*.ipynb")
    teacher = nbformat.read(path, 4)
    learner = nbformat.from_dict(teacher)
    solutions = [cell for cell in learner.cells if cell.metadata.get("nbgrader", {}).get("solution")]
    filler = "blocks = []\nwhile True:\n    blocks.append(np.ones(2**22))  # 32 MiB more, touched\n"
    for cell in solutions[:2]:
        cell.source = filler + cell.source
    stop, peak = threading.Event(), [0]

    def watch():
        while not stop.wait(0.05):
            peak[0] = max(peak[0], descendants_rss(os.getpid()))

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        results = grade.grade_notebook(learner, teacher, ROOT, [out], cell_limit=60)
    finally:
        stop.set()
        watcher.join()
    results.pop(None)
    lost = {grade_id for grade_id, (passed, _) in results.items() if not passed}
    print(f"sandboxes' summed peak {peak[0] / 2**20:.0f} MiB (budget "
          f"{(grade.BATCH_MEMORY - grade.GRADER_MEMORY) / 2**20:.0f} MiB), lost {sorted(lost)}")
    assert 0 < peak[0] <= grade.BATCH_MEMORY - grade.GRADER_MEMORY
    assert lost == {"test_my_split_heads", "test_my_merge_heads"}, results
    assert all("MemoryError" in results[grade_id][1] or "ended" in results[grade_id][1] for grade_id in lost), results
