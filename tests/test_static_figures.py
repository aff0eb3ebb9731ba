"""A static figure shows another setting than its explorer's default (issue 46): the live widget just below it
starts at the default, so a static figure at the default shows the same picture twice and the page (GitHub,
the site, print) never shows a second setting.

Read from the notebooks: every ``NAME.static(...)`` call must pass a setting, and where the notebook builds
``NAME`` with no arguments, at least one literal setting must differ from the explorer's own default.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def static_calls(path: Path) -> list[tuple[str, str, dict, list]]:
    """(name, constructor, literal settings, other settings) of each ``name.static(...)`` of the notebook."""
    code = "\n".join("".join(c["source"]) for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
                     if c["cell_type"] == "code" and not "".join(c["source"]).lstrip().startswith(("%", "!")))
    tree = ast.parse(code)
    built = {node.targets[0].id: node.value for node in ast.walk(tree)
             if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
             and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "static"
                and isinstance(node.func.value, ast.Name) and node.func.value.id in built):
            name = node.func.value.id
            literal, other = {}, []
            for keyword in node.keywords:
                try:
                    literal[keyword.arg] = ast.literal_eval(keyword.value)
                except ValueError:
                    other.append(keyword.arg)
            ctor = built[name]
            found.append((name, ctor.func.id if not (ctor.args or ctor.keywords) else "", literal, other))
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.name[:2] for p in NOTEBOOKS])
def test_each_static_figure_shows_another_setting(notebook):
    module = importlib.import_module(f"attn_helpers.widgets.nb{notebook.name[:2]}")
    problems = []
    for name, ctor, literal, other in static_calls(notebook):
        if not literal and not other:
            problems.append(f"{name}.static() draws the explorer's default, which the live widget below shows too")
            continue
        if ctor and not other:
            values = getattr(module, ctor)().values
            defaults = values() if callable(values) else values
            if all(defaults.get(key) == value for key, value in literal.items()):
                problems.append(f"{name}.static({literal}) is the explorer's default setting")
    assert not problems, f"{notebook.name}: " + "; ".join(problems)


def test_the_rule_reads_a_default_static_figure(tmp_path):
    cell = {"cell_type": "code", "source": "explorer = row_explorer()\nexplorer.static(token='journey')\n",
            "metadata": {}, "outputs": []}
    path = tmp_path / "00_x.ipynb"
    path.write_text(json.dumps({"cells": [cell]}), encoding="utf-8")
    assert static_calls(path) == [("explorer", "row_explorer", {"token": "journey"}, [])]
    assert re.match(r"\d\d", path.name)
