#!/usr/bin/env python3
"""Count the lines a learner reads on each notebook's central path through the helper package.

    python tools/reading_path.py                  # this tree: one line per notebook, then the core's whole path
    python tools/reading_path.py --root DIR       # another tree (an extracted commit, say)
    python tools/reading_path.py --show 13        # the functions of notebook 13's path, with their lines

A notebook's *central path* starts at the functions it sends the learner to: those it prints
(``show_source(f)``, ``inspect.getsource(f)``) and those it points at with ``f??``; a notebook that prints
none (08, 10) sends the learner to the helpers it teaches: the functions it imports from a module whose
docstring names that notebook ("notebook 08", "notebooks 13 and 14"). From
there the path follows every call into the package: a name the function's module resolves to a function or
class of ``attn_helpers``, a method ``obj.name(...)`` of a class met on the way, a class's ``__post_init__``
when it is constructed. Input checks (``attn_helpers._validate``) are not on the path: they run once, at the
boundary, and a learner reading the maths never opens them. Only the numpy core is followed (:data:`CORE`;
checkers, widgets and figures are not lessons). A function counts its code lines: its ``def`` and body without
the docstring, blank lines and comment-only lines; each function once per path. The *core's path* is the union
of every notebook's. ``transformer_block??`` counts everything it shows from the ``def`` down.

A learner reads a function once, in the notebook that teaches it. The series is read in order; notebook 10's
block calls notebook 08's ``multi_head_attention``, which the learner read in 08 and now knows by its name. So
a notebook's *lines* are those of its path's functions that no earlier notebook's path holds (its *new* lines);
the walk still goes through the known ones (what they call is on the path too), and the whole path, known
functions included, is printed beside it. The same rule holds for every notebook: each function counts once,
in the first notebook (by number) whose path reaches it, so the notebooks' new lines add up to the core's.

The budgets (issue 43) are :data:`BUDGETS`; ``tests/test_reading_path.py`` holds them.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: The numpy core: the modules whose functions are lessons (checkers, widgets, figures and examples are not).
CORE = {f"attn_helpers.{name}" for name in ("core", "multihead", "block", "kv_cache", "positions", "efficient",
                                            "online", "backprop", "training", "gpt", "pretrained", "llama", "bpe")}

#: Lines a learner reads: each notebook's new lines on its central path, the core's, and ``transformer_block??``.
BUDGETS = {"08": 60, "10": 90, "13": 90, "14": 200, "15": 200, "core": 1000, "transformer_block??": 30}

PRINTED = re.compile(r"(?:getsource|show_source)\(\s*([A-Za-z_][\w.]*)|([A-Za-z_][\w.]*)\?\?")
NOTEBOOK_NAMED = re.compile(r"[Nn]otebooks? (\d\d)(?:(?:, | and | or )(\d\d))*")


def _cells(path):
    return [("".join(cell["source"]), cell["cell_type"]) for cell in json.loads(path.read_text())["cells"]]


def _imports(code):
    """``{name: module}`` of every ``from attn_helpers[.module] import name`` in a cell."""
    lines = [line for line in code.splitlines() if not line.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return {}
    return {alias.asname or alias.name: node.module for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("attn_helpers")
            for alias in node.names}


def _notebooks_named(module):
    found = set()
    for match in NOTEBOOK_NAMED.finditer(module.__doc__ or ""):
        found.update(re.findall(r"\d\d", match.group(0)))
    return found


def _resolve(name, module_name):
    obj = importlib.import_module(module_name)
    for part in name.split("."):
        obj = getattr(obj, part, None)
    return obj


def entry_points(notebook):
    """The functions a notebook prints, points at with ``??``, or imports from a module that names it."""
    number = notebook.name[:2]
    imported, entries = {}, {}
    for source, kind in _cells(notebook):
        if kind == "code":
            imported.update(_imports(source))
    for source, _ in _cells(notebook):
        for match in PRINTED.finditer(source):
            name = match.group(1) or match.group(2)
            head = name.split(".")[0]
            if head in imported:
                obj = _resolve(name, imported[head]) if imported[head] != "attn_helpers" or "." in name else None
                obj = obj if obj is not None else _resolve(name, imported[head])
                if obj is not None:
                    entries[name] = obj
    for name, module_name in ({} if entries else imported).items():  # nothing printed: the helpers it teaches
        obj = _resolve(name, module_name)
        home = inspect.getmodule(obj) if callable(obj) else None
        if home is not None and home.__name__ in CORE and number in _notebooks_named(home):
            entries.setdefault(name, obj)
    return entries


def _on_path(obj):
    obj = inspect.unwrap(obj) if callable(obj) else obj
    module = getattr(obj, "__module__", "") or ""
    return isinstance(obj, (types.FunctionType, type)) and module in CORE


def _shown(function):
    """The lines ``function??`` shows from its ``def`` to its end."""
    source, _ = inspect.getsourcelines(function)
    start = next(i for i, line in enumerate(source) if line.lstrip().startswith(("def ", "async def ")))
    return len(source) - start


def _lines(function):
    """Its code lines: the ``def`` and the body, without the docstring, blank lines and comment-only lines."""
    source = textwrap.dedent(inspect.getsource(function))
    node = ast.parse(source).body[0]
    skip = set()
    if node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant):
        skip.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))  # the docstring
    lines = source.splitlines()
    return sum(1 for number in range(node.lineno, node.end_lineno + 1)
               if number not in skip and lines[number - 1].strip() and not lines[number - 1].strip().startswith("#"))


def _calls(function, classes):
    """What ``function``'s body calls in the package: functions, classes, methods of ``classes``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    scope = function.__globals__
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in scope:
            found.append(scope[f.id])
        elif isinstance(f, ast.Attribute):
            base = f.value
            if isinstance(base, ast.Name) and isinstance(scope.get(base.id), types.ModuleType):
                found.append(getattr(scope[base.id], f.attr, None))
            elif isinstance(base, ast.Name) and f.attr == "unchecked":  # f.unchecked(...): f's body, as before #43
                found.append(scope.get(base.id))
            else:  # obj.method(...): a method of a class met on the way
                found += [vars(cls)[f.attr] for cls in classes if isinstance(vars(cls).get(f.attr), types.FunctionType)]
    return [obj for obj in found if obj is not None and _on_path(obj)]


def central_path(entries):
    """``{qualified name: lines}`` of every function reached from ``entries``: walked again while the walk meets
    classes it had not met when it read a method call (``p.norm_1(x)`` read before ``BlockParams`` was met)."""
    classes = []
    while True:
        known = len(classes)
        seen = _walk(entries, classes)
        if len(classes) == known:
            return seen


def _walk(entries, classes):
    seen, met, todo = {}, [], [inspect.unwrap(obj) for obj in entries.values() if _on_path(obj)]
    while todo:
        obj = todo.pop()
        if isinstance(obj, type):
            if obj not in met:
                met.append(obj)
                classes += [] if obj in classes else [obj]
                todo += [m for name, m in vars(obj).items() if name in ("__post_init__", "__init__")
                         and isinstance(m, types.FunctionType)]
            continue
        obj = inspect.unwrap(obj)
        key = f"{obj.__module__}.{obj.__qualname__}"
        if key in seen:
            continue
        try:
            seen[key] = _lines(obj)
        except OSError:  # made at run time (a dataclass's __init__): no source to read
            continue
        todo += [inspect.unwrap(o) if not isinstance(o, type) else o for o in _calls(obj, classes)]
    return seen


def first_read(paths):
    """``{notebook: {name: lines}}`` of each path's functions that no earlier notebook's path holds."""
    known, new = set(), {}
    for number in sorted(paths):
        new[number] = {name: lines for name, lines in paths[number].items() if name not in known}
        known.update(paths[number])
    return new


def measure(notebooks):
    paths = {nb.name[:2]: central_path(entry_points(nb)) for nb in notebooks}
    core = {}
    for path in paths.values():
        core.update(path)
    block = importlib.import_module("attn_helpers.block").transformer_block
    return {"paths": paths, "new": first_read(paths), "core": core,
            "transformer_block??": _shown(inspect.unwrap(block))}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT)
    parser.add_argument("--show", help="a notebook number: list its path's functions")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.child:  # measure in a fresh process that imports the package of --root
        command = [sys.executable, __file__, "--child", "--root", str(args.root), "--json"]
        result = json.loads(subprocess.run(command, env={"PYTHONPATH": str(args.root), "PATH": ""},
                                           capture_output=True, text=True, check=True).stdout)
        if args.json:
            print(json.dumps(result))
            return 0
        for number, path in result["paths"].items():
            budget, new = BUDGETS.get(number), result["new"][number]
            print(f"{number}: {sum(new.values()):5d} new lines in {len(new):3d} functions"
                  f"   (whole path {sum(path.values()):3d} lines in {len(path):3d})"
                  + ("" if budget is None else f"   (budget {budget})"))
            if args.show == number:
                for name, lines in sorted(path.items(), key=lambda item: -item[1]):
                    print(f"      {lines:4d}  {name}" + ("" if name in new else "   (read on an earlier path)"))
        print(f"core: {sum(result['core'].values()):5d} lines in {len(result['core']):3d} functions   "
              f"(budget {BUDGETS['core']})")
        print(f"transformer_block??: {result['transformer_block??']} lines (budget {BUDGETS['transformer_block??']})")
        return 0
    sys.path.insert(0, str(args.root))
    result = measure(sorted((args.root / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
