"""What a learner reads in the package stays lessons, not plumbing (issue 43): rules, not lists.

* no private name (``_x``) imported from another module of the package, nor read off one (``module._x``);
* no function longer than 60 lines;
* no ``.unchecked`` (or any second name of a function) in the package: a notebook prints what go-to-definition finds;
* each notebook's central path (its new lines: a function counts once, in the notebook that teaches it) and
  ``transformer_block??`` within their budgets (``tools/reading_path.py``);
* one implementation of each primitive: making it raise breaks every path that should run through it.
"""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from raising import replace_everywhere

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "attn_helpers"
MAX_FUNCTION_LINES = 60


def _modules():
    return sorted(PACKAGE.rglob("*.py"))


def _private(name):
    return name.startswith("_") and not name.startswith("__")


def private_imports(path):
    """``(line, what)`` for each private name ``path`` takes from another module of the package."""
    tree, found, modules = ast.parse(path.read_text()), [], set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").startswith("attn_helpers")):
            for alias in node.names:
                if _private(alias.name):
                    found.append((node.lineno, f"from {'.' * node.level}{node.module or ''} import {alias.name}"))
                elif node.level or node.module:  # "from . import gpt": gpt's private names are another module's
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name for alias in node.names if alias.name.startswith("attn_helpers"))
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in modules):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
    return found


def long_functions(path):
    tree = ast.parse(path.read_text())
    return [(node.name, node.end_lineno - node.lineno + 1) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
            and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES]


def test_no_private_name_is_imported_across_modules():
    found = {str(path.relative_to(ROOT)): private_imports(path) for path in _modules()}
    assert not {path: names for path, names in found.items() if names}


def test_the_private_import_rule_sees_both_forms(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from .pretrained import _blas\nfrom . import gpt\nx = gpt._forward\nfrom .core import softmax\n")
    assert [what for _, what in private_imports(sample)] == ["from .pretrained import _blas", "gpt._forward"]


def test_no_function_is_longer_than_60_lines():
    found = {str(path.relative_to(ROOT)): long_functions(path) for path in _modules()}
    assert not {path: functions for path, functions in found.items() if functions}


def test_no_function_of_the_package_is_called_by_a_second_name():
    """``f.unchecked(...)`` hid the maths from go-to-definition and from printed sources: the checks now run once,
    at the outermost call (``_validate.checked``), and calls from inside go to ``f`` itself."""
    for path in _modules():
        tree = ast.parse(path.read_text())
        assert not [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Attribute)
                    and node.attr == "unchecked"], path


def test_a_call_from_inside_a_checked_function_skips_its_checks_and_one_from_outside_does_not():
    from attn_helpers import _validate, scaled_dot_product_attention
    from attn_helpers.core import softmax

    calls = []

    def check(x):
        calls.append(x)
        return (np.asarray(x, dtype=float),)

    @_validate.checked(check)
    def outer(x):
        return softmax(x), scaled_dot_product_attention(x[None], x[None], x[None])

    outer(np.ones(3))
    assert len(calls) == 1
    with pytest.raises(ValueError, match="x contains NaN"):  # a learner's call is checked, as before
        softmax(np.array([np.nan]))
    with pytest.raises(ValueError, match="x contains NaN"):  # and still after an inner call left the context
        softmax(np.array([np.nan]))


def test_a_checked_function_gets_its_keyword_only_arguments_by_name():
    from attn_helpers import _validate

    @_validate.checked(lambda x, *, flag=False: (x + 1, not flag))
    def f(x, *, flag=False):
        return x, flag

    assert f(1, flag=False) == (2, True)


@pytest.fixture(scope="module")
def measured():
    command = [sys.executable, str(ROOT / "tools" / "reading_path.py"), "--root", str(ROOT), "--json"]
    return json.loads(subprocess.run(command, capture_output=True, text=True, check=True).stdout)


def _budgets():
    spec = importlib.util.spec_from_file_location("reading_path", ROOT / "tools" / "reading_path.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    return tool.BUDGETS


BUDGETS = _budgets()


def _lines_of(measured, what):
    """The lines a budget counts: a notebook's new lines (each function once, in the first notebook whose path
    reaches it), the core's whole path, or what ``transformer_block??`` shows."""
    if what == "core":
        return sum(measured["core"].values())
    if what == "transformer_block??":
        return measured["transformer_block??"]
    return sum(measured["new"][what].values())


@pytest.mark.parametrize("what", sorted(BUDGETS))
def test_each_reading_path_is_within_its_budget(measured, what):
    assert 0 < _lines_of(measured, what) <= BUDGETS[what], (what, _lines_of(measured, what))


def test_each_function_is_read_once_in_the_first_notebook_whose_path_reaches_it(measured):
    paths, new = measured["paths"], measured["new"]
    first = {}
    for number in sorted(paths):
        for name in paths[number]:
            first.setdefault(name, number)
    assert {name: number for number in new for name in new[number]} == first
    assert sum(sum(path.values()) for path in new.values()) == sum(measured["core"].values())
    # notebook 10's block calls notebook 08's attention: read in 08, walked through (not counted) in 10
    assert "attn_helpers.multihead.multi_head_attention" in set(paths["10"]) & set(new["08"]) - set(new["10"])
    assert "attn_helpers.block.transformer_block" in new["10"]


def test_the_path_follows_a_method_called_before_the_walk_meets_its_class(measured):
    """``transformer_block`` calls ``p.norm_1(x)``; ``BlockParams`` is met later (in ``init_block_params``)."""
    assert {"attn_helpers.block.BlockParams.norm_1", "attn_helpers.block.BlockParams.feed_forward"} <= set(
        measured["paths"]["10"])


# --- one implementation per primitive ------------------------------------------------------------------------------

def _paths():
    """The lessons that must all run through the one scaled dot-product attention, projections, tile loop, id check."""
    from attn_helpers.ablation import ablation_effects  # noqa: F401 - the ablation's module
    from attn_helpers.backprop import training_block
    from attn_helpers.block import transformer_block
    from attn_helpers.efficient import tiled_attention
    from attn_helpers.gpt import decoder_forward, gpt_loss_and_grads, random_decoder
    from attn_helpers.kv_cache import grouped_query_attention
    from attn_helpers.online import tiled_attention_steps
    from attn_helpers.training import train

    decoder, x = random_decoder(vocab_size=10, d_model=8, num_heads=2, num_layers=1), np.ones((4, 2))
    block, X, W = decoder.blocks[0], np.ones((3, 8)), np.eye(8)
    return {
        "notebook 10's block": lambda: transformer_block(X, block),
        "notebook 10's block in training": lambda: training_block(X, block, dropout=0.1),
        "notebook 13's grouped-query attention": lambda: grouped_query_attention(X, W, W[:, :4], W[:, :4], W, 4,
                                                                                 num_kv_heads=2),
        "the tiny GPT": lambda: decoder_forward(decoder, [1, 2]),
        "notebook 11's training": lambda: train("copy previous", steps=1, batch_size=2, snapshot_steps=()),
        "notebook 11's training with RoPE": lambda: train("reverse", steps=1, batch_size=2, snapshot_steps=(),
                                                           positions="rope"),
        "notebook 11's training with ALiBi": lambda: train("reverse", steps=1, batch_size=2, snapshot_steps=(),
                                                            positions="alibi"),
        "tiled attention": lambda: tiled_attention(x, x, x, block_size=2),
        "the tile explorer": lambda: tiled_attention_steps(x, x, x, block_size=2),
        "the cached decoder": lambda: decoder_forward(decoder, [1, 2], decoder.empty_cache()),
        "the tiny GPT's training step": lambda: gpt_loss_and_grads(decoder, [1, 2], [2, 3]),
    }


def _minilm_run_from(layer):
    from attn_helpers import ablation, pretrained

    model = pretrained.load_minilm()
    intact = model.run("A short sentence.")
    return lambda: ablation._run_from(ablation.ablate_head(model, layer, 0), intact, layer)


# primitive -> the paths that must break when it raises
ONE_IMPLEMENTATION = {
    ("core", "scaled_dot_product_attention"): ["notebook 11's training", "notebook 11's training with RoPE",
                                               "notebook 11's training with ALiBi", "the cached decoder",
                                               "the tiny GPT's training step", "the ablation"],
    ("multihead", "project_heads"): ["notebook 11's training", "the cached decoder", "the tiny GPT's training step",
                                     "the ablation"],
    # the one attention layer: inference runs it whole, training its steps 1 and 2 (then dropout and a record)
    ("multihead", "multi_head_attention"): ["notebook 10's block", "notebook 13's grouped-query attention",
                                            "the tiny GPT", "the cached decoder", "the ablation"],
    ("multihead", "attention_heads"): ["notebook 10's block", "notebook 10's block in training",
                                       "notebook 13's grouped-query attention", "the tiny GPT", "the cached decoder",
                                       "notebook 11's training", "notebook 11's training with RoPE",
                                       "notebook 11's training with ALiBi", "the tiny GPT's training step",
                                       "the ablation"],
    ("online", "online_update"): ["tiled attention", "the tile explorer"],
    ("efficient", "tiled_attention"): ["the tile explorer"],
    ("_validate", "as_token_ids"): ["notebook 11's training", "the cached decoder", "the tiny GPT's training step"],
}


@pytest.mark.parametrize(("module", "name"), sorted(ONE_IMPLEMENTATION))
def test_making_a_primitive_raise_breaks_every_lesson_built_on_it(monkeypatch, module, name):
    paths = _paths()
    try:
        paths["the ablation"] = _minilm_run_from(2)
    except (FileNotFoundError, ValueError, ImportError):  # no model files here: the other paths still count
        pass
    for what in ONE_IMPLEMENTATION[module, name]:
        if what in paths:
            paths[what]()  # they all run
    original = getattr(importlib.import_module(f"attn_helpers.{module}"), name)

    def broken(*args, **kwargs):
        raise RuntimeError(f"{name} was called")

    replace_everywhere(monkeypatch, original, broken)
    for what in ONE_IMPLEMENTATION[module, name]:
        if what in paths:
            with pytest.raises(RuntimeError, match=f"{name} was called"):
                paths[what]()


# --- no import circle ---------------------------------------------------------------------------------------------

def module_imports(root=PACKAGE):
    """``{module: set of modules}``: what each module of the package imports from the others, at any depth of its
    code (an import inside a function counts: it is a circle that only a late import hides). Packages' ``__init__``
    files are left out: importing a package is not an edge between two lessons."""
    names = {path: ".".join(path.relative_to(root.parent).with_suffix("").parts) for path in root.rglob("*.py")}
    modules = {name for path, name in names.items() if path.name != "__init__.py"}
    graph = {}
    for path, name in names.items():
        if path.name == "__init__.py":
            continue
        package = name.rsplit(".", 1)[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # from .x (level 1: this package), from ..x (its parent)
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                found.update(f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules)
                found.update([base] if base in modules else [])
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names if alias.name in modules)
        graph[name] = found - {name}
    return graph


def import_circles(graph):
    """Every circle ``a -> b -> ... -> a`` in ``graph`` (each found once, from its smallest module)."""
    circles = set()

    def visit(start, node, path):
        for nxt in graph.get(node, ()):
            if nxt == start:
                circles.add(tuple(path))
            elif nxt > start and nxt not in path:
                visit(start, nxt, path + [nxt])

    for start in graph:
        visit(start, start, [start])
    return sorted(circles)


def test_no_module_of_the_package_imports_itself_in_a_circle():
    assert import_circles(module_imports()) == []


def test_the_circle_rule_sees_an_import_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import g\n")
    (package / "b.py").write_text("def g():\n    from .a import f\n")
    assert import_circles(module_imports(package)) == [("pkg.a", "pkg.b")]
