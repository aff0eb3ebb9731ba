"""The pieces of sandboxed grading (classroom_kit/grade.py, classroom_kit/grade_worker.py) and its container route.

The plain-data format round-trips what checkers pass and learners return, and never loads a pickle; the
tampering rules catch the hostile cells and none of the course's own cells; an exercise gets only the cells
it needs; a learner's function called through the sandbox answers as it would in the notebook, and one that
loops is stopped at the checkers' time limit. The Dockerfile and the guide agree on the container route.
"""

from __future__ import annotations

import ast
import inspect
import io
import re
import shutil
import struct
import tempfile
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest
from test_grading_hostile import sandbox_or_skip
from tool_loader import ROOT, load_tool

pytestmark = pytest.mark.simd_independent  # grading and packaging: CI's pass without SIMD leaves it out

grade = load_tool("grade")
worker = grade.worker


def roundtrip(value):
    """``value`` as the learner's process sends it and the grader reads it."""
    return grade.parse(worker.pack({"value": value})[8:])["value"]


def test_plain_data_round_trips_what_checkers_pass_and_learners_return():
    from attn_helpers.block import init_block_params

    params = init_block_params(8, 2, d_ff=24, rng=1, dtype=np.float64)
    value = {"x": np.arange(6.0).reshape(2, 3), "pair": (np.float32(1.5), [1, 2, (3, "a")]), "none": None,
             "dots": ..., "z": 1 + 2j, "big": 10**30, "params": params, "words": np.array(["a", "bc"])}
    back = roundtrip(value)
    np.testing.assert_array_equal(back["x"], value["x"])
    assert back["pair"] == (np.float32(1.5), [1, 2, (3, "a")]) and isinstance(back["pair"][0], np.float32)
    assert back["none"] is None and back["dots"] is Ellipsis and back["z"] == 1 + 2j and back["big"] == 10**30
    assert isinstance(back["params"], dict), "a dataclass the learner returns arrives as its fields"
    np.testing.assert_array_equal(back["params"]["W_q"], params.W_q)
    assert back["words"].tolist() == ["a", "bc"]
    request = worker.unpack_request(worker.pack({"value": params}, classes=True)[8:])  # the grader's request
    assert type(request["value"]) is type(params), "the checker's own dataclass is rebuilt in the sandbox only"


def test_an_object_that_is_not_data_arrives_as_its_name_only():
    class Sneaky:
        def __reduce__(self):  # a pickle would run this
            raise AssertionError("pickled")

        def __repr__(self):
            return "<sneaky>"

    back = roundtrip(Sneaky())
    assert type(back).__name__ == "Sneaky" and repr(back) == "<sneaky>" and isinstance(back, grade.Opaque)
    assert not callable(back)


def test_a_pickled_array_is_refused():
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(b'{"t": "dict", "v": {"value": {"t": "array", "i": 0}}}', dtype=np.uint8),
             a0=np.array([object()], dtype=object))
    with pytest.raises(grade.Refused, match="not of numbers"):
        grade.parse(buffer.getvalue())
    assert struct.unpack("!Q", worker.pack({})[:8])[0] == len(worker.pack({})) - 8


SOLUTIONS = {"softmax_any_axis", "spot_the_slip"}
HOSTILE = {
    "print('✅ Correct!')": "prints a verdict",
    "print(chr(9989), 'Correct!')": "prints a verdict",
    "import numpy\nnumpy.allclose = lambda *a, **k: True": "changes numpy.allclose",
    "import numpy as xp\nxp.testing.assert_allclose = print": "changes xp.testing.assert_allclose",
    "import attn_helpers.checks._grader as g\ng._close = max": "changes g._close",
    "check_softmax_any_axis = lambda fn: True": "rebinds check_softmax_any_axis",
    "def check_softmax_any_axis(fn):\n    return True": "defines check_softmax_any_axis",
    "from attn_helpers.checks.nb03 import softmax_any_axis": "imports softmax_any_axis",
    "from attn_helpers.checks import check_cold_choice as check_softmax_any_axis": "imports check_cold_choice",
    "from attn_helpers import checks\nsetattr(checks, 'check_x', 1)": "calls setattr on checks",
    "from attn_helpers.checks import solution\nprint(solution('softmax_any_axis').source)": "calls solution",
    "import attn_helpers.checks as c\nc.SOLUTIONS": "reads c.SOLUTIONS",
    "from attn_helpers.checks import Verdict\nVerdict(True, 'yes')": "calls Verdict",
    "from attn_helpers.checks._grader import SOLUTIONS": "imports SOLUTIONS",
    "from attn_helpers.checks import _grader": "imports _grader",
    "import attn_helpers.checks._grader": "imports attn_helpers.checks._grader",
    "from attn_helpers.checks._grader import *\nSOLUTIONS['softmax_any_axis']": "imports *",
    "import attn_helpers.checks.nb03 as m\nf = m.softmax_any_axis": "reads m.softmax_any_axis",
    "check_softmax_any_axis: object = print": "rebinds check_softmax_any_axis",
    "print('\\N{WHITE HEAVY CHECK MARK} Correct!')": "prints a verdict",
    "'✅ Correct!'": "prints a verdict",
    "x = 1\nf'{x} ✅'": "prints a verdict",
}
HONEST = [  # code that an honest learner writes: none of it is tampering
    "def softmax_any_axis(x, axis=-1):\n    e = np.exp(x - x.max(axis=axis, keepdims=True))  # ✅ finally works!\n"
    "    return e / e.sum(axis=axis, keepdims=True)",
    'def check_rows_sum_to_one(w):\n    """Prints ✅ when each row sums to 1."""\n    return np.allclose(w.sum(-1), 1)',
    "'✅ a note to myself, never shown'\nx = 1",
    "check_rows = lambda w: w.sum(-1)\nimport numpy as check_np",
    "from attn_helpers.checks import check_softmax_any_axis\ncheck_softmax_any_axis(softmax_any_axis)",
]


@pytest.mark.parametrize("source", HOSTILE, ids=range(len(HOSTILE)))
def test_tampering_is_named(source):
    found = grade.tampering(source, "cell 7", SOLUTIONS)
    assert found and HOSTILE[source] in "; ".join(found) and found[0].startswith("cell 7")


@pytest.mark.parametrize("source", HONEST, ids=range(len(HONEST)))
def test_honest_code_is_not_tampering(source):
    assert grade.tampering(source, "cell 7", SOLUTIONS) == []


def test_the_course_own_cells_and_solutions_are_not_tampering(tmp_path):
    classroom = load_tool("classroom")
    classroom.build(tmp_path)
    names = set(classroom.solutions()) | {fn.__name__ for fn in classroom.solutions().values()}
    for path in sorted(tmp_path.glob("source/*/*.ipynb")):
        for cell in nbformat.read(path, 4).cells:
            if cell.cell_type == "code" and not cell.metadata.get("nbgrader", {}).get("grade"):
                assert grade.tampering(cell.source, path.name, names) == []


def test_an_exercise_gets_only_the_cells_it_needs():
    cells = ["import numpy as np\nimport matplotlib.pyplot as plt", "X = np.ones(3)", "plt.plot(X)\nfig = 1",
             "for x in X:\n    print(x)", "Y = X * 2"]
    target = "def f(x):\n    return Y + x\n\ncheck_f(f)"
    assert grade.needed_cells(cells, target) == [cells[0], cells[1], cells[4]]
    assert grade.without_checks("a = 1\ncheck_f(f)\ndisplay(check_g(a), check_h(a))\nb = 2") == "a = 1\n\n\nb = 2"


@pytest.fixture
def learner(tmp_path):
    sandbox_or_skip()
    one = grade.Learner(ROOT, [tmp_path])
    yield one
    one.close()


def test_a_function_called_through_the_sandbox_answers_as_in_the_notebook(learner):
    cell = "def f(x, axis=-1):\n    print('hello')\n    return x.sum(axis=axis), x.T"
    answer = learner.request({"op": "run", "context": ["import numpy as np"], "cell": cell}, 30)
    assert answer == {"error": None}
    f = grade.learner_value(learner, "f", 5, TimeoutError, grade.Code([cell]))
    x = np.arange(6.0).reshape(2, 3)
    total, transposed = f(x, axis=0)
    np.testing.assert_array_equal(total, x.sum(axis=0))
    np.testing.assert_array_equal(transposed, x.T)
    assert f.__name__ == "f" and "hello" in learner.output()
    assert inspect.getsource(f) == "def f(x, axis=-1):\n    print('hello')\n    return x.sum(axis=axis), x.T", \
        "a checker that reads the source gets the learner's"
    with pytest.raises(AttributeError):
        f("text")



def test_the_teachers_home_folder_and_checkout_are_out_of_sight(monkeypatch):
    """Neither the teacher's home nor the checkout (the checkers' source, the answer keys) is in the sandbox:
    it sees the machine's system folders, Python, and the checkers' sandbox copy without solutions."""
    sandbox_or_skip()
    home = Path(tempfile.mkdtemp(dir="/var/tmp"))  # not under /tmp, which the sandbox replaces anyway
    secret = home / ".ssh" / "id_key"
    secret.parent.mkdir(parents=True)
    secret.write_text("private")
    monkeypatch.setenv("HOME", str(home))
    one = grade.Learner(ROOT, [])
    try:
        cell = f"import os\nseen = os.path.exists({str(secret)!r}), os.path.exists({str(ROOT / 'README.md')!r})"
        one.request({"op": "run", "context": [], "cell": cell}, 30)
        assert grade.learner_value(one, "seen", 5, TimeoutError) == (False, False)
    finally:
        one.close()
        shutil.rmtree(home)


def test_a_loop_is_stopped_at_the_time_limit_and_costs_only_its_call(learner):
    loop = "def f():\n    while True:\n        pass"
    learner.request({"op": "run", "context": [], "cell": loop}, 30)
    f = grade.learner_value(learner, "f", 1.5, TimeoutError)
    start = time.monotonic()
    with pytest.raises(TimeoutError, match="did not finish within 1 s"):
        f()
    assert time.monotonic() - start < 1 + 10
    assert learner.process.poll() is not None, "the looping process is gone"


def test_the_container_route_in_the_guide_is_the_dockerfile_one():
    dockerfile = (ROOT / "classroom_kit" / "grading.Dockerfile").read_text(encoding="utf-8")
    guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.1[0-3]", dockerfile, re.MULTILINE)
    assert "bubblewrap" in re.search(r"^RUN apt-get[^\n]*\n[^\n]*", dockerfile, re.MULTILINE).group(0)
    assert 'pip install --no-cache-dir ".[notebooks,teacher]"' in dockerfile
    assert 'ENTRYPOINT ["python3", "run.py", "classroom", "autograde"]' in dockerfile
    for path in re.findall(r"^COPY (\S+)", dockerfile, re.MULTILINE):
        assert (ROOT / path).exists(), path
    comments = " ".join(line.lstrip("#").strip() for line in dockerfile.splitlines() if line.startswith("#"))
    run = re.search(r"docker run .*? attn-grading", comments.replace("\\ ", "")).group(0)
    assert "--network none" in run and run in guide and "python3 run.py classroom autograde" in guide
    assert "bubblewrap" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


@pytest.mark.parametrize("product, named", [("query @ key", "@ (np.matmul)"), ("np.dot(query, key)", "np.dot"),
                                            ("np.asarray(query) @ np.asarray(key)", "@ (np.matmul)"),
                                            ("query.dot(key)", ".dot"), ("np.einsum('i,i', query, key)", "np.einsum"),
                                            ("(query * key).sum()", None)])
def test_a_checker_that_watches_the_products_sees_them_through_the_sandbox(learner, product, named):
    from attn_helpers.checks import check_dot_score
    from attn_helpers.checks._grader import TimeLimit

    cell = f"def dot_score(query, key):\n    return {product}"
    learner.request({"op": "run", "context": ["import numpy as np"], "cell": cell}, 30)
    fn = grade.learner_value(learner, "dot_score", 5, TimeLimit, grade.Code(["import numpy as np", cell]))
    verdict = check_dot_score(fn)
    assert verdict.passed == (named is None)
    if named:
        assert f"uses {named}" in verdict.message


EXHAUST = {  # a cell that takes all it can of one resource, and records how much it got before it was refused
    "processes": ("import os, time\ngot, why = 0, ''\ntry:\n    while True:\n        if os.fork() == 0:\n"
                  "            time.sleep(30)\n            os._exit(0)\n        got += 1\n"
                  "except OSError as err:\n    why = type(err).__name__", lambda: grade.worker.PROCESSES),
    "disk": ("got, why = 0, ''\ntry:\n    while True:\n        with open(f'/tmp/fill{got}', 'wb') as f:\n"
             "            f.write(b'x' * 2**20)\n        got += 1\nexcept OSError as err:\n    why = err.strerror",
             lambda: grade.TMP_SIZE // 2**20),
    "one file": ("got, why = 0, ''\ntry:\n    with open('/dev/shm/big', 'wb') as f:\n        while True:\n"
                 "            f.write(b'x' * 2**20)\n            got += 1\n"
                 "except OSError as err:\n    why = err.strerror",
                 lambda: grade.FILE_SIZE // 2**20),
    "memory": ("import numpy as np\ngot, why, blocks = 0, '', []\ntry:\n    while True:\n"
               "        blocks.append(np.ones(2**24))\n        got += 1\nexcept MemoryError as err:\n"
               "    why = type(err).__name__\nblocks.clear()", lambda: grade.MEMORY // 2**27),
}


@pytest.mark.parametrize("resource", EXHAUST)
def test_a_sandbox_that_exhausts_a_resource_is_refused_it_as_an_ordinary_user(resource):
    """The caps hold although the grader runs as root: a fork bomb, a disk filler and a memory filler each get
    their cap's worth and an error; the next exercise's process is unchanged."""
    sandbox_or_skip()
    cell, cap = EXHAUST[resource]
    one = grade.Learner(ROOT, [])
    try:
        assert one.request({"op": "run", "context": [], "cell": cell}, 60) == {"error": None}
        got, why = grade.learner_value(one, "got", 10, TimeoutError), grade.learner_value(one, "why", 10, TimeoutError)
    finally:
        one.close()
    assert 0 < got <= cap() and why, (got, why)
    after = grade.Learner(ROOT, [])
    try:
        after.request({"op": "run", "context": [], "cell": "import os\nseen = os.listdir('/tmp'), os.getuid()"}, 30)
        files, uid = grade.learner_value(after, "seen", 5, TimeoutError)
    finally:
        after.close()
    assert files == [] and uid >= grade.UID_BASE


WATCHED = {  # slips that only a checker watching the learner's operations names: the hint must survive the sandbox
    "check_context_vectors": ("context_vectors", "def context_vectors(X):\n    exps = np.exp(X @ X.T)\n"
                              "    return exps / exps.sum(axis=1) @ X"),  # on symmetric scores: a softmax on axis 0
    "check_masked_attention": ("masked_attention", "def masked_attention(queries, keys, values, mask):\n"
                               "    scores = queries @ keys.T / np.sqrt(queries.shape[-1])\n"
                               "    scores = np.where(mask, scores, -np.inf)\n"
                               "    weights = np.exp(scores - scores.max(axis=-1, keepdims=True))\n"
                               "    weights = weights / weights.sum(axis=-1, keepdims=True)\n"
                               "    return weights @ values, weights"),
    "check_dot_score": ("dot_score", "def dot_score(query, key):\n    return float(np.asarray(query) @ key)"),
}


@pytest.mark.parametrize("checker", WATCHED)
def test_a_watching_checker_gives_the_same_verdict_through_the_sandbox(learner, checker):
    from attn_helpers import checks
    from attn_helpers.checks._grader import TimeLimit

    name, cell = WATCHED[checker]
    here = {"np": np}
    exec(cell, here)  # noqa: S102 - the test's own code
    learner.request({"op": "run", "context": ["import numpy as np"], "cell": cell}, 30)
    fn = grade.learner_value(learner, name, 5, TimeLimit, grade.Code(["import numpy as np", cell]))
    expected, got = getattr(checks, checker)(here[name]), getattr(checks, checker)(fn)
    assert not expected.passed and repr(got) == repr(expected)


def recorded(fn, *calls):
    """``fn`` with ``calls`` noted as the proxy notes them: ``(args, kwargs, result, time)``."""
    fn.calls = list(calls)
    return fn


def test_an_answer_that_changes_with_the_second_is_caught_and_a_steady_one_is_not():
    x, even = np.ones(3), float(int(time.time()) // 2 * 2)
    clock = recorded(lambda x: x if int(time.time()) % 2 == 0 else 0 * x, ([x], {}, x, even))
    steady = recorded(lambda x: x, ([x], {}, x, even))
    assert "differently when called again" in grade.unsteady(clock)
    assert grade.unsteady(steady) == ""


def test_a_helper_returning_the_answer_is_found_by_computing_it_here():
    from attn_helpers import softmax

    x = np.arange(6.0).reshape(2, 3)
    borrowing = grade.Code(["from attn_helpers import softmax", "def f(x, axis=-1):\n    return softmax(x, axis=axis)"])
    own = grade.Code(["from attn_helpers import softmax", "def f(x, axis=-1):\n    e = np.exp(x - x.max(axis, "
                      "keepdims=True))\n    return e / e.sum(axis, keepdims=True)"])
    fn = recorded(lambda x, axis=-1: None, ([x], {"axis": 0}, softmax(x, axis=0), time.time()))
    assert "what attn_helpers.core.softmax computed" in grade.borrowed("f", fn, borrowing)
    assert grade.borrowed("f", fn, own) == ""
    solved = grade.Code(["import attn_helpers.checks.nb03 as m", "f = m.softmax_any_axis"])
    assert "the series' own solution" in grade.borrowed("f", fn, solved)


def test_names_read_before_a_reimport_come_from_the_notebooks_cell():
    cells = ["import numpy as np", "X = np.ones(3)"]
    assert grade.needed_cells(cells, "x0 = np.ones(3)\nimport numpy as np\n\ndef f(x):\n    return np.exp(x)") == \
        [cells[0]]
    assert grade.needed_cells(cells, "import numpy as np\nx0 = np.ones(3)") == []
    assert grade.needed_cells(cells, "def f():\n    return X\n\nimport numpy as np") == cells


def test_a_learners_own_solution_is_theirs_and_the_checkers_is_not():
    own = "def solution(x):\n    return 2 * x\n\nprint(solution(3))"
    assert grade.tampering(own, "cell 9", SOLUTIONS) == []
    imported = grade.bindings(["from attn_helpers.checks import check_score_slip, solution", "x = 1"])
    assert "calls solution" in " ".join(grade.tampering("print(solution('score_slip'))", "cell 9", SOLUTIONS,
                                                        notebook=imported))
    starred = grade.bindings(["from attn_helpers.checks import *"])
    assert grade.tampering("solution('score_slip')", "cell 9", SOLUTIONS, notebook=starred)
    assert grade.tampering("mine.solution\nSOLUTIONS = {}\nSOLUTIONS['a'] = 1", "cell 9", SOLUTIONS) == []


def test_the_sandbox_copy_of_the_checkers_has_no_solution_slip_or_reference():
    machinery = {"_reference", "_max_along", "_no_keepdims", "_wrongs", "_cases"}  # 03's: a slip is one edit away
    for path in sorted((ROOT / "attn_helpers" / "checks").glob("nb*.py")):
        stripped = grade.strip_solutions(path.read_text(encoding="utf-8"))
        functions = {node.name: node for node in ast.parse(stripped).body if isinstance(node, ast.FunctionDef)}
        for name, node in functions.items():
            body = [part for part in node.body if not (isinstance(part, ast.Expr) and isinstance(part.value,
                                                                                                ast.Constant))]
            stub = len(body) == 1 and isinstance(body[0], (ast.Raise, ast.Return))
            if grade._is_solution(node) or name in machinery or name.startswith("check_"):
                assert stub, f"{path.name}: {name} is still in the sandbox copy"
    assert "def sink_measurements" in grade.strip_solutions((ROOT / "attn_helpers/checks/nb12.py").read_text())


def test_inside_the_sandbox_no_solution_can_be_fetched_by_any_route():
    """import_module, eval, the slips: each raises; no file of a checkers' module the sandbox can read holds a
    registered solution's body."""
    sandbox_or_skip()
    cell = ("import importlib, os, ast\nroutes, found = [], []\n"
            "for fetch in (lambda: getattr(importlib.import_module('attn_helpers.checks.nb' + '03'), "
            "'softmax_any_axis')(np.ones(3)),\n"
            "              lambda: eval(\"__import__('attn_helpers.checks.nb03', fromlist=['m'])\")._max_along("
            "np.ones(3), 0, 0),\n"
            "              lambda: importlib.import_module('attn_helpers.checks._grader').SOLUTIONS['masked_attention']"
            "(np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 2), bool))):\n"
            "    try:\n        routes.append(repr(fetch()))\n    except Exception as err:\n"
            "        routes.append(type(err).__name__)\n"
            "for folder, subs, files in os.walk('/'):\n"
            "    if folder.startswith(('/proc', '/sys', '/dev')):\n        subs[:] = []\n        continue\n"
            "    for name in files:\n"
            "        if name.startswith('nb') and name.endswith('.py') and 'checks' in folder:\n"
            "            tree = ast.parse(open(os.path.join(folder, name)).read())\n"
            "            for node in ast.walk(tree):\n"
            "                if isinstance(node, ast.FunctionDef) and node.decorator_list and len(node.body) > 2:\n"
            "                    if 'register_solution' in ast.unparse(node.decorator_list[0]):\n"
            "                        found.append(os.path.join(folder, name) + ':' + node.name)\n")
    one = grade.Learner(ROOT, [])
    try:
        assert one.request({"op": "run", "context": ["import numpy as np"], "cell": cell}, 120) == {"error": None}
        routes, found = grade.learner_value(one, "routes", 10, TimeoutError), \
            grade.learner_value(one, "found", 10, TimeoutError)
    finally:
        one.close()
    assert routes == ["RuntimeError"] * 3 and found == [], (routes, found, one.output())
