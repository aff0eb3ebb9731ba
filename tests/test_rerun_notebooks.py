"""Learners re-run cells: every notebook gives the same output when each code cell is run
again, in order, after the whole notebook has run (same kernel), and once more right after
(a cell run twice in a row).

A cell that changes shared state (an example array changed in place, a generator or a
name that a later cell also uses and that no earlier cell resets) prints something else
the second time, or fails. Compared: the text of every output (streams, ``text/plain``
results, errors), after the same sanitising as nbval (tests/sanitize.cfg). Not compared:
cells tagged ``nbval-ignore-output`` (timings, widget views) and figure or widget outputs.

The notebooks run concurrently, one kernel each (at most as many as there are cores, at
least two), so the file takes about as long as its two slowest notebooks.
"""

from __future__ import annotations

import asyncio
import configparser
import os
import re
import threading
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
IGNORE_TAG = "nbval-ignore-output"
NOT_TEXT = ("image/png", "image/svg+xml", "image/jpeg", "application/vnd.jupyter.widget-view+json")
CELL_TIMEOUT_S = 120


def _sanitizers() -> list[tuple[re.Pattern, str]]:
    config = configparser.ConfigParser(interpolation=None)
    config.read(ROOT / "tests" / "sanitize.cfg", encoding="utf-8")
    return [(re.compile(config[s]["regex"]), config[s]["replace"]) for s in config.sections()]


SANITIZERS = _sanitizers()


def texts(cell) -> list[str]:
    """The comparable text of a cell's outputs."""
    found = []
    previous_stream = None
    for output in cell.get("outputs", []):
        kind = output["output_type"]
        if kind == "stream" and output["name"] == previous_stream:  # one stream may arrive in several chunks
            found[-1] += output["text"]
            continue
        previous_stream = output["name"] if kind == "stream" else None
        if kind == "stream":
            text = f"{output['name']}: {output['text']}"
        elif kind == "error":
            text = f"error: {output['ename']}: {output['evalue']}"
        elif any(mime in output.get("data", {}) for mime in NOT_TEXT):
            continue
        else:
            text = output.get("data", {}).get("text/plain", "")
        found.append(text)
    for pattern, replacement in SANITIZERS:
        found = [pattern.sub(replacement, text) for text in found]
    return found


async def run_twice(path: Path, slots: asyncio.Semaphore) -> list[str]:
    """Run ``path`` top to bottom, then every code cell again in order; return the differences."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", allow_errors=True,
                            resources={"metadata": {"path": str(path.parent)}})
    code = [(i, cell) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    async with slots, client.async_setup_kernel():
        first = {}
        for i, cell in code:
            await client.async_execute_cell(cell, i)
            first[i] = texts(cell)
        errors = [f"cell {i + 1} raised on the first run: {text}" for i, text in first.items()
                  if any(t.startswith("error: ") for t in text)]
        if errors:
            return errors
        differences = []
        for i, cell in code:
            for attempt in ("run again", "run a third time, right after"):
                await client.async_execute_cell(cell, i)
                again = texts(cell)
                if IGNORE_TAG not in cell.metadata.get("tags", []) and again != first[i]:
                    source = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else ""
                    differences.append(f"code cell {i + 1} ({source!r}...): first run {_short(first[i])}, "
                                       f"{attempt} {_short(again)}")
                    break
        return differences


def _short(outputs: list[str]) -> str:
    text = " | ".join(outputs)
    return repr(text if len(text) <= 300 else text[:300] + "...")


def _run_in_own_thread(coroutine_function):
    """``asyncio.run(coroutine_function())`` in a thread of its own: the browser tests' Playwright
    (sync API) may have left an event loop running in this worker's main thread."""
    outcome = {}

    def run():
        try:
            outcome["value"] = asyncio.run(coroutine_function())
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            outcome["error"] = err

    thread = threading.Thread(target=run)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@pytest.fixture(scope="module")
def rerun_differences():
    async def all_notebooks():
        slots = asyncio.Semaphore(max(2, os.cpu_count() or 1))
        results = await asyncio.gather(*(run_twice(path, slots) for path in NOTEBOOKS), return_exceptions=True)
        return dict(zip(NOTEBOOKS, results))

    return _run_in_own_thread(all_notebooks)


# The first test's setup runs every notebook (the module fixture): about 2 minutes on 2 quiet cores, longer
# beside another worker or on numpy without SIMD. Past pytest-timeout's 300 s the xdist worker would be
# stopped without a word ("node down: Not properly terminated") and the session would stall.
@pytest.mark.timeout(1500)
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_cell_gives_the_same_output_when_run_again(rerun_differences, notebook):
    result = rerun_differences[notebook]
    if isinstance(result, BaseException):
        raise result
    assert not result, f"{notebook.name}: re-running cells changes their output:\n" + "\n".join(result)


def test_an_example_changed_in_place_is_caught(tmp_path):
    """The comparison itself: a cell that changes a cached example in place prints something else when run
    again (the helpers' examples are such caches; each cell must copy before changing)."""
    (tmp_path / "probe_examples.py").write_text("CACHE = [1, 2, 3]\n\n\ndef example():\n    return CACHE\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("from probe_examples import example"),
                nbformat.v4.new_code_cell("values = example()\nvalues.append(4)\nprint(len(values))"),
                nbformat.v4.new_code_cell("print('same every time')")]
    path = tmp_path / "00_probe.ipynb"
    nbformat.write(nb, path)

    async def probe():
        return await run_twice(path, asyncio.Semaphore(1))

    differences = _run_in_own_thread(probe)
    assert len(differences) == 1 and differences[0].startswith("code cell 2 "), differences
    assert "'stdout: 4\\n', run again 'stdout: 5\\n'" in differences[0]
