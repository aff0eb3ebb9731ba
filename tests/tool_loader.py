"""Load a script of tools/ or classroom_kit/ as a module (they run as scripts), for the tests that call it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_tool(name: str):
    """The module ``tools/<name>.py`` (or the classroom kit's ``classroom_kit/<name>.py``), freshly executed."""
    path = ROOT / "tools" / f"{name}.py"
    if not path.exists():
        path = ROOT / "classroom_kit" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
