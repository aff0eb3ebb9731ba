#!/usr/bin/env python3
"""Maintainer tool: execute notebooks in place, the way "Restart & Run All" does.

    python tools/nbtool.py run notebooks/03_softmax.ipynb [...]   # execute and save
    python tools/nbtool.py run --all                              # every notebook
    python tools/nbtool.py time --all                             # execution time per notebook

Each notebook runs in a fresh ``python3`` kernel with ``notebooks/`` as its working
directory; execution counts come out 1..n, and per-cell timing metadata and widget
state are dropped so that a re-run changes only what really changed.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def md(source: str) -> nbformat.NotebookNode:
    """A markdown cell (leading/trailing blank lines removed)."""
    return nbformat.v4.new_markdown_cell(source.strip("\n"))


def code(source: str, *tags: str) -> nbformat.NotebookNode:
    """A code cell, optionally tagged (for example ``"nbval-ignore-output"``)."""
    cell = nbformat.v4.new_code_cell(source.strip("\n"))
    if tags:
        cell.metadata["tags"] = list(tags)
    return cell


def write_new(path: Path, cells: list) -> Path:
    """Write a new (unexecuted) notebook from cells; then run ``execute``/``run`` on it."""
    nb = nbformat.v4.new_notebook()
    nb.cells = cells
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    nb.metadata["language_info"] = {"name": "python"}
    for i, cell in enumerate(nb.cells):  # stable ids keep diffs small
        cell["id"] = f"{Path(path).stem[:2]}-{i:03d}"
    nbformat.write(nb, path)
    return Path(path)


def execute(path: Path, timeout: int = 30, attempts: int = 3) -> tuple[nbformat.NotebookNode, float]:
    """Execute a notebook in a fresh kernel; returns it with its outputs and the run time.

    Every cell here runs in seconds. nbclient's asyncio client sometimes misses a kernel's
    execute reply until its timeout expires (jupyter/nbclient#312; seen here about one run
    in five), so a cell that times out is not a slow cell: run the notebook again.
    """
    for attempt in range(1, attempts + 1):
        try:
            return _execute_once(path, timeout)
        except CellTimeoutError:
            print(f"{path.name}: a cell timed out after {timeout} s (attempt {attempt}/{attempts}); running again")
    raise RuntimeError(f"{path.name}: timed out {attempts} times")


def joined_streams(outputs: list) -> list:
    """``outputs`` with consecutive pieces of the same stream joined into one: a busy kernel may send one printout
    in two messages, and a notebook's stored outputs must not depend on that (a re-run compares them piece by piece).

    >>> [o["text"] for o in joined_streams([nbformat.v4.new_output("stream", name="stdout", text="a "),
    ...                                     nbformat.v4.new_output("stream", name="stdout", text="b\\n")])]
    ['a b\\n']
    """
    joined = []
    for output in outputs:
        previous = joined[-1] if joined else None
        if (output.get("output_type") == "stream" and previous is not None
                and previous.get("output_type") == "stream" and previous.get("name") == output.get("name")):
            previous["text"] = previous["text"] + output["text"]
        else:
            joined.append(output)
    return joined


def _execute_once(path: Path, timeout: int) -> tuple[nbformat.NotebookNode, float]:
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
    resources = {"metadata": {"path": str(NOTEBOOKS)}}
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources=resources)
    start = time.perf_counter()
    client.execute()
    elapsed = time.perf_counter() - start
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        if cell.cell_type == "code":
            cell.outputs = joined_streams(cell.get("outputs", []))
            for output in cell.get("outputs", []):
                if output.get("output_type") == "error":
                    raise RuntimeError(f"{path.name}: a cell raised {output.get('ename')}: {output.get('evalue')}")
    return nb, elapsed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["run", "time"])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--all", action="store_true", help="every notebook in notebooks/")
    args = parser.parse_args(argv)
    paths = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")) if args.all else args.notebooks
    if not paths:
        parser.error("name notebooks or pass --all")
    for path in paths:
        nb, elapsed = execute(path.resolve())
        if args.command == "run":
            nbformat.validate(nb)
            nbformat.write(nb, path)
        print(f"{path.name}: executed in {elapsed:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
