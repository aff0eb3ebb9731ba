"""One-edit variants of a function's source: the near misses a learner types, made with ``ast``.

:func:`one_edit_variants` turns a registered solution into the functions that differ from it by one edit (a
flipped comparison, ``+`` for ``-``, ``&`` for ``|``, ``>>`` for ``<<``, ``max`` for ``min``, a dropped
``keepdims=True``, another axis, a constant moved by one, a dropped ``.T`` or ``sqrt``, a ``range`` bound moved by
one, a returned pair swapped, a dropped statement), each compiled in the solution's own module namespace and named
by the edit and the line it changed.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass

_FLIPPED_COMPARISONS = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq,
                        ast.NotEq: ast.Eq}
_FLIPPED_OPERATORS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
                      ast.FloorDiv: ast.Div, ast.BitAnd: ast.BitOr, ast.BitOr: ast.BitAnd, ast.RShift: ast.LShift,
                      ast.LShift: ast.RShift}
_SWAPPED_NAMES = {"max": "min", "min": "max", "maximum": "minimum", "minimum": "maximum", "argmax": "argmin",
                  "argmin": "argmax", "amax": "amin", "amin": "amax", "nanmax": "nanmin", "nanmin": "nanmax",
                  "tril": "triu", "triu": "tril", "mean": "sum", "sum": "mean", "ones": "zeros", "zeros": "ones"}
_AXES = (-1, 0, 1, -2, None)
_DROPPED_CALLS = {"sqrt", "transpose", "swapaxes"}  # a call replaced by its first argument (or its receiver)
_RANGES = {"range", "arange"}


@dataclass(frozen=True)
class Variant:
    """One near miss: ``fn`` differs from the solution by ``edit`` (what changed, and the line as it now reads)."""

    edit: str
    fn: Callable


def _called_name(call: ast.Call) -> str:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _const(value) -> ast.expr:
    if value is None or value >= 0:
        return ast.Constant(value)
    return ast.UnaryOp(ast.USub(), ast.Constant(-value))


def _axis_value(node: ast.expr):
    if isinstance(node, ast.Constant) and (node.value is None or type(node.value) is int):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        return -node.operand.value
    return "other"


def _edits(node: ast.AST, parent: ast.AST | None) -> Iterator[tuple[str, Callable[[ast.AST], ast.AST | None]]]:
    """``(what, apply)`` for each one-edit change of ``node``; ``apply(copy_of_node)`` returns its replacement
    (``None`` to delete a statement)."""
    if isinstance(node, ast.Compare):
        for i, op in enumerate(node.ops):
            if type(op) in _FLIPPED_COMPARISONS:
                new = _FLIPPED_COMPARISONS[type(op)]

                def flip(n, i=i, new=new):
                    n.ops[i] = new()
                    return n
                yield f"{type(op).__name__} -> {new.__name__}", flip
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in _FLIPPED_OPERATORS:
        new = _FLIPPED_OPERATORS[type(node.op)]

        def swap_op(n, new=new):
            n.op = new()
            return n
        yield f"{type(node.op).__name__} -> {new.__name__}", swap_op
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        def swap_operands(n):
            n.left, n.right = n.right, n.left
            return n
        yield "operands of @ swapped", swap_operands
    if isinstance(node, ast.Call):
        name = _called_name(node)
        if name in _SWAPPED_NAMES:
            def swap_name(n, new=_SWAPPED_NAMES[name]):
                if isinstance(n.func, ast.Name):
                    n.func.id = new
                else:
                    n.func.attr = new
                return n
            yield f"{name} -> {_SWAPPED_NAMES[name]}", swap_name
        for k, keyword in enumerate(node.keywords):
            if keyword.arg in ("keepdims", "dtype"):
                def drop_keyword(n, k=k):
                    del n.keywords[k]
                    return n
                yield f"{keyword.arg} dropped", drop_keyword
            if keyword.arg == "axis":
                for axis in _AXES:
                    if axis != _axis_value(keyword.value):
                        def other_axis(n, k=k, axis=axis):
                            n.keywords[k].value = _const(axis)
                            return n
                        yield f"axis -> {axis}", other_axis
        if name in _DROPPED_CALLS:
            receiver = isinstance(node.func, ast.Attribute) and name == "transpose" and not (
                isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy"))
            if receiver or node.args:
                def drop_call(n, receiver=receiver):
                    return n.func.value if receiver else n.args[0]
                yield f"{name}(...) dropped", drop_call
        if name in _RANGES and node.args:
            for a in range(len(node.args[:2])):
                for sign, op in (("+", ast.Add), ("-", ast.Sub)):
                    def move_bound(n, a=a, op=op):
                        n.args[a] = ast.BinOp(n.args[a], op(), ast.Constant(1))
                        return n
                    yield f"{name} bound {a} {sign} 1", move_bound
    if isinstance(node, ast.Attribute) and node.attr == "T" and isinstance(node.ctx, ast.Load):
        yield ".T dropped", lambda n: n.value
    if isinstance(node, ast.Constant) and not isinstance(node.value, bool):
        if type(node.value) is int:
            for delta in (1, -1):
                yield f"constant {node.value} -> {node.value + delta}", \
                    lambda n, delta=delta: ast.Constant(n.value + delta)
        elif type(node.value) is float:
            for factor, label in ((2.0, "x 2"), (0.5, "/ 2")):
                if node.value * factor != node.value:
                    yield f"constant {node.value!r} {label}", lambda n, factor=factor: ast.Constant(n.value * factor)
    if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple) and len(node.value.elts) >= 2:
        for i in range(len(node.value.elts) - 1):
            def swap_items(n, i=i):
                n.value.elts[i], n.value.elts[i + 1] = n.value.elts[i + 1], n.value.elts[i]
                return n
            yield f"returned items {i} and {i + 1} swapped", swap_items
    if isinstance(node, ast.stmt) and parent is not None and not isinstance(node, (ast.FunctionDef, ast.Return)):
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        body = next((b for b in (getattr(parent, f, None) for f in ("body", "orelse")) if isinstance(b, list)
                     and node in b), None)
        if not docstring and body is not None and len(body) > 1:
            yield "statement dropped", lambda n: None


def _tree(fn: Callable) -> ast.Module:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    tree.body[0].decorator_list = []  # compiling it must not register it again
    return tree


def _nodes(tree: ast.AST) -> list[tuple[ast.AST, ast.AST | None]]:
    """Every node of ``tree`` with its parent, in a fixed order (the same for a deep copy)."""
    found, stack = [], [(tree, None)]
    while stack:
        node, parent = stack.pop()
        found.append((node, parent))
        stack.extend((child, node) for child in reversed(list(ast.iter_child_nodes(node))))
    return found


def _replace(parent: ast.AST, old: ast.AST, new: ast.AST | None) -> None:
    for field, value in ast.iter_fields(parent):
        if value is old:
            setattr(parent, field, new)
            return
        if isinstance(value, list) and any(item is old for item in value):
            index = next(i for i, item in enumerate(value) if item is old)
            if new is None:
                del value[index]
            else:
                value[index] = new
            return
    raise LookupError("node not found under its parent")


def _line(stmt: ast.stmt) -> str:
    """The statement as it reads: a compound statement by its first line."""
    return ast.unparse(stmt).splitlines()[0] if stmt is not None else ""


def one_edit_variants(fn: Callable) -> list[Variant]:
    """Every one-edit variant of ``fn`` that compiles, each defined in ``fn``'s module namespace (a copy)."""
    tree = _tree(fn)
    module = sys.modules[fn.__module__]
    variants, seen = [], set()
    for index, (node, parent) in enumerate(_nodes(tree)):
        if parent is None or isinstance(node, ast.FunctionDef):
            continue
        for what, apply in _edits(node, parent):
            mutated = copy.deepcopy(tree)
            nodes = _nodes(mutated)
            target, target_parent = nodes[index]
            stmt = target if isinstance(target, ast.stmt) else next(
                (n for n, _ in reversed(nodes[:index]) if isinstance(n, ast.stmt)
                 and any(c is target for c in ast.walk(n))), None)
            before = _line(stmt)
            replacement = apply(target)
            if replacement is not target:
                _replace(target_parent, target, replacement)
            ast.fix_missing_locations(mutated)
            after = _line(stmt) if replacement is not None else ""
            edit = f"{what}: {before}" if replacement is None else f"{what}: {after}"
            try:
                code = compile(mutated, f"<variant of {fn.__qualname__}>", "exec")
            except (SyntaxError, ValueError, TypeError):
                continue  # an edit that makes no valid Python is no near miss
            if edit in seen:  # two edits that read the same (e.g. the same constant twice on one line)
                edit = f"{edit} (#{sum(e.startswith(edit) for e in seen) + 1})"
            seen.add(edit)
            namespace = dict(vars(module))
            exec(code, namespace)  # noqa: S102 - the package's own solution, edited once
            variants.append(Variant(edit, namespace[fn.__name__]))
    return variants
