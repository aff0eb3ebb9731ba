"""Print a helper's source as a learner reads it: ``show_source(f)``, or a part of it named by a label.

What is printed is the package's own source (so a notebook that prints it shows what go-to-definition finds), with
two things a reader has no use for left out: the decorator line (``@checked(...)``: the input checks, which run once
at the boundary, in ``_validate.py``) and the reStructuredText markup of the docstring (``:func:`softmax```,
``.. math::``), which the package's docstrings avoid and this removes where it is left.

A part is named, never found by searching the text: ``start`` and ``end`` are one of

* a step label: the first word of a comment that numbers a step (``# 1. Project ...``, ``# 2a. Turn ...``: ``"1"``,
  ``"2a"``);
* a name the function's body assigns (``m_new = ...`` or ``state["t"] += 1``: ``"m_new"``, ``"state"``; the first
  statement of the body, at any depth, that assigns it);
* ``"body"``: the first statement after the docstring.

``start`` is printed (with the comment lines right above it), ``end`` is not (as in ``range``; nor its comment).
An unknown name raises a ``ValueError`` that lists the names the function has, so a rename in the package breaks
the notebook's cell loudly, not silently.
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

__all__ = ["show_source", "source_text", "source_names"]

STEP = re.compile(r"^\s*#\s*(\d+[a-z]?)[.:]\s")  # "# 1. Project", "# 2a. Turn", "# 3: ..."
ROLE = re.compile(r":(?:func|class|meth|mod|data|attr):`~?(?:[\w.]+\.)?(\w+)`")  # :func:`~a.b.name` -> `name`
MATH_ROLE = re.compile(r":math:`([^`]*)`")


def _function_lines(function):
    """The lines of ``function`` from its ``def`` (decorators left out), dedented, and the parsed ``def``."""
    function = inspect.unwrap(function)
    lines, _ = inspect.getsourcelines(function)
    source = textwrap.dedent("".join(lines))
    node = ast.parse(source).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        raise TypeError(f"show_source prints a function or a class; got {function!r:.60}")
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])  # (1-based)
    return source.splitlines()[first - 1:], node, first


def source_names(function):
    """``{name: line}``: the names ``start`` and ``end`` may take for ``function`` (lines counted from its ``def``).

    >>> from attn_helpers.online import online_update
    >>> list(source_names(online_update))[:4]
    ['body', 'm_new', 'shift', 'rescale']
    """
    lines, node, first = _function_lines(function)
    offset = node.lineno - first  # decorator lines: the def is line `offset` of `lines`
    names = {}
    body = node.body[1:] if ast.get_docstring(node) is not None and len(node.body) > 1 else node.body
    names["body"] = body[0].lineno - node.lineno + offset
    for statement in (n for n in ast.walk(node) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))):
        targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        for target in targets:
            for leaf in ast.walk(target):
                while isinstance(leaf, (ast.Subscript, ast.Attribute)):  # state["t"], self.x: the base name
                    leaf = leaf.value
                if isinstance(leaf, ast.Name):
                    line = statement.lineno - node.lineno + offset
                    names[leaf.id] = min(names.get(leaf.id, line), line)
    for number, line in enumerate(lines):
        step = STEP.match(line)
        if step and number > offset:
            names.setdefault(step.group(1), number)
    return dict(sorted(names.items(), key=lambda item: item[1]))


def _line_of(names, name, function, what):
    if name not in names:
        raise ValueError(f"{what}={name!r}: {function.__name__} has no step label or assigned name {name!r}; "
                         f"it has {', '.join(repr(n) for n in names)}")
    return names[name]


def _readable(text):
    """A docstring's reStructuredText markup as plain text: roles to their names, ``.. math::`` to its formula."""
    text = MATH_ROLE.sub(r"\1", ROLE.sub(r"`\1`", text))
    return re.sub(r"\.\. math::\s*", "", text)


def source_text(function, start=None, end=None):
    """The text :func:`show_source` prints.

    >>> from attn_helpers.online import online_update
    >>> print(source_text(online_update, start="m_new", end="rescale"))
        m_new = np.maximum(m, scores.max(axis=-1, keepdims=True))  # the running max grows, or stays
        shift = np.where(m_new == -np.inf, 0, m_new)  # nothing allowed yet: no shift, e^(-inf) stays 0
        with np.errstate(over="ignore"):  # s - m' beyond -1.8e308 is -inf: its term is 0, as it should be
    """
    lines, node, first = _function_lines(function)
    names = source_names(function)
    begin = node.lineno - first if start is None else _line_of(names, start, function, "start")
    while start is not None and begin > 0 and lines[begin - 1].lstrip().startswith("#"):  # its comment, above it
        begin -= 1
    stop = len(lines) if end is None else _line_of(names, end, function, "end")
    if stop <= begin:
        raise ValueError(f"end={end!r} (line {stop}) comes before start={start!r} (line {begin}) in "
                         f"{function.__name__}")
    while stop > begin + 1 and lines[stop - 1].lstrip().startswith("#"):  # a comment that opens the end's step
        stop -= 1
    return _readable("\n".join(lines[begin:stop]).rstrip())


def show_source(function, start=None, end=None):
    """Print ``function``'s source from its ``def`` (no decorator line; docstring markup made plain), or the part
    from ``start`` to ``end`` (each a step label such as ``"1"``, a name the body assigns, or ``"body"``; ``end``
    not printed). The package's source itself, not a copy: a change there shows here.

    >>> from attn_helpers.core import softmax
    >>> show_source(softmax, start="peak", end="total")
        # Subtract each slice's largest score: the same weights, and exp never overflows. (A fully
        # masked slice has no largest score: the lowest float keeps its scores at -inf.)
        peak = x.max(axis=axis, keepdims=True, initial=np.finfo(x.dtype).min)
        exps = np.exp((x - peak) / temperature)  # in [0, 1]
    """
    print(source_text(function, start, end))
