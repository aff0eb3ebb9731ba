"""No answer before its question: nothing a learner reads before a question shows its answer.

- For each checker whose answer is one value (a share, a shape, a (layer, head) pair, a size in GiB), the value
  is computed from the checker's own module, and no markdown or printed text output before the first cell that
  calls the checker contains it in the forms a notebook would print it.
- For each registered solution, no printed output, and no code cell, before its exercise (the markdown cell that
  states it) shows most of the solution's lines: a worked example or a printed helper that is the solution
  gives the exercise away.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import nbformat
import pytest

from attn_helpers.checks import _grader

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@cache
def notebook(number: int):
    return nbformat.read(NOTEBOOKS[number], as_version=4)


def printed(cell) -> str:
    return "\n".join(o.text if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                     for o in cell.get("outputs", []))


def visible(cell) -> str:
    return cell.source if cell.cell_type == "markdown" else printed(cell)


def _share_forms():
    from attn_helpers.measures import summary_shares

    share = summary_shares(6)[0]
    return [f"{share:.4f}", f"{share:.3f}", f"{100 * share:.1f} %", f"{100 * share:.1f}%", "1/32"]


def _shape_forms():
    from attn_helpers.checks.nb08 import BATCH, HEADS, TOKENS

    return [str((BATCH, HEADS, TOKENS, TOKENS))]


def _cache_forms():
    from attn_helpers.checks.nb13 import PUBLISHED_CONFIGS, kv_cache_bytes

    config = PUBLISHED_CONFIGS["Llama 2 7B"]
    gib = kv_cache_bytes(config["num_layers"], config["num_kv_heads"], config["head_dim"], 4096, 2) / 2**30
    return [f"{gib:.2f} GiB", f"{gib:g} GiB"]


def _two_back_head_forms():
    from attn_helpers.checks import nb12

    try:
        two_back = nb12._diagonal_weights()[-2]
    except Exception as err:  # noqa: BLE001 - the model files are an optional install
        pytest.skip(f"notebook 12's model could not be loaded: {err}")
    import numpy as np

    layer, head = np.unravel_index(np.argmax(two_back), two_back.shape)
    return [f"({layer}, {head})", f"layer {layer}, head {head}"]


def _induction_forms():
    from attn_helpers.checks.nb11 import induction_queries
    from attn_helpers.training import load_runs

    _, keys_0, _, keys_1 = induction_queries(load_runs()["induction"].probe)
    return [str(keys_1.tolist()), str(keys_0.tolist()), f"position {keys_1[0]}"]


def _std_forms():
    from attn_helpers.checks.nb06 import check_score_std_prediction  # noqa: F401 - the question's module
    from attn_helpers.scaling import scaling_summary

    std = scaling_summary(256)["unscaled"]["score std"]
    return [f"{std:.2f}", f"{std:.1f}"]


def _first_pair_forms():
    from attn_helpers.checks.nb14 import first_pair

    pair = first_pair()
    return [repr(pair), repr(pair).replace("'", '"'), str(tuple(pair.encode("utf-8")))]


#: (notebook, checker, the forms of its answer, marks)
ANSWERS = [
    (0, "check_first_token_share", _share_forms, ()),
    (6, "check_score_std_prediction", _std_forms, ()),
    (8, "check_weights_shape", _shape_forms, ()),
    (14, "check_first_pair", _first_pair_forms, ()),
    (11, "check_induction_prediction", _induction_forms, ()),
    (12, "check_two_back_head", _two_back_head_forms, ()),
    (13, "check_cache_prediction", _cache_forms, ()),
]


def question_cell(nb, checker: str) -> int:
    calls = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"
             and any(re.search(rf"\b{checker}\(", line) and "import" not in line for line in c.source.splitlines())]
    assert calls, f"no cell calls {checker}"
    argument = re.search(rf"\b{checker}\((\w+)", nb.cells[calls[0]].source)
    asked = [i for i, c in enumerate(nb.cells) if argument and c.cell_type == "code"
             and re.search(rf"^{argument.group(1)}\s*=", c.source, re.MULTILINE)]
    return min(asked[:1] + calls[:1])  # the cell where the learner writes the prediction, if it comes first


@pytest.mark.parametrize(("number", "checker", "forms"),
                         [pytest.param(n, c, f, marks=m, id=c) for n, c, f, m in ANSWERS])
def test_no_value_before_its_question(number, checker, forms):
    nb = notebook(number)
    question = question_cell(nb, checker)
    leaks = [f"cell {i} shows {form!r}: {visible(cell)[max(0, visible(cell).find(form) - 60):][:140]!r}"
             for i, cell in enumerate(nb.cells[:question]) for form in forms() if form in visible(cell)]
    assert not leaks, f"notebook {number:02d}: the answer of {checker} (cell {question}) is shown before:\n" + \
        "\n".join(leaks)


def solution_lines(name: str) -> set[str]:
    """The lines that make a solution: code, not its signature, docstring, comments or a bare ``return``."""
    source = _grader.solution(name).source
    body = re.sub(r'"""[\s\S]*?"""', "", source)
    lines = {re.sub(r"\s+#.*$", "", line).strip() for line in body.splitlines()[1:]}
    return {line for line in lines if len(line) >= 8 and not line.startswith(("#", "@", "def "))}


def skeleton(line: str) -> str:
    """A line with its names and numbers blanked, so that a worked example with other names still matches."""
    line = re.sub(r"\s+#.*$", "", line).strip()
    line = re.sub(r"\b(?!np\b|exp\b|max\b|maximum\b|sum\b|where\b|sqrt\b)[A-Za-z_]\w*\b", "x", line)
    return re.sub(r"\b\d+(\.\d+)?\b", "0", line).replace(" ", "")


def shown_lines(lines: set[str], text: str) -> set[str]:
    """The lines of ``lines`` that ``text`` shows, word for word or with other names."""
    seen = {line.strip() for line in text.splitlines()}
    skeletons = {skeleton(line) for line in seen}
    return {line for line in lines if line in seen or (len(skeleton(line)) >= 12 and skeleton(line) in skeletons)}


def exercises():
    """(notebook, solution name, index of the markdown cell that states its exercise)."""
    found = []
    for number in range(len(NOTEBOOKS)):
        nb = notebook(number)
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            for name in re.findall(r"""\bsolution\(["'](\w+)["']\)""", cell.source):
                start = max((j for j in range(i) if nb.cells[j].cell_type == "markdown"
                             and re.search(r"\bexercise\b", nb.cells[j].source, re.IGNORECASE)), default=i)
                found.append(pytest.param(number, name, start, id=f"{number:02d}-{name}",
                                          marks=LEAKED_SOLUTIONS.get(name, ())))
    return found


LEAKED_SOLUTIONS: dict = {}  # name -> pytest marks, for a leak known and not yet fixed (none today)


@pytest.mark.parametrize(("number", "name", "start"), exercises())
def test_no_solution_before_its_exercise(number, name, start):
    lines = solution_lines(name)
    assert len(lines) >= 1, f"solution {name!r} has no line to look for"
    nb = notebook(number)
    leaks = []
    for i, cell in enumerate(nb.cells[:start]):
        shown = shown_lines(lines, printed(cell) + "\n" + (cell.source if cell.cell_type == "code" else ""))
        if len(shown) >= max(1, (len(lines) + 1) // 2):
            leaks.append(f"cell {i} shows {len(shown)} of its {len(lines)} lines: {sorted(shown)[:3]}")
    assert not leaks, f"notebook {number:02d}: the solution {name!r} (exercise at cell {start}) is shown before:\n" + \
        "\n".join(leaks)
