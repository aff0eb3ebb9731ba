#!/usr/bin/env python3
"""How much a learner reads on each notebook's core path, against the budgets of one sitting.

    python tools/density.py                      # every notebook: a table, then the budgets it breaks
    python tools/density.py notebooks/10_*.ipynb # some notebooks
    python tools/density.py --json               # the same as JSON

The core path is every cell not tagged ``optional``. Prose is the markdown with fenced and indented code,
LaTeX (``$...$``, ``$$...$$``) and inline code removed; a word is a run of letters (``don't`` is two).
Sentences end at ``.``, ``!`` or ``?`` followed by a space or the end, and at the end of a list item, a
table row, a heading or a paragraph.

Two estimates of the self-paced minutes, which must both stay within one sitting:

- ``core_path``: the teaching guide's own estimate (``tools/core_path.py``: 105 words a minute, 45 s a code
  cell, figures, widgets, predictions, exercises, derivations; a learner's timed minutes where they are more);
- ``independent``: 110 prose words a minute, 50 s a code cell, 3 min a prediction, 4 min an exercise and 4 min
  an explorer (a live widget) -- rates set apart from the guide's, so that the two disagree where either is off.

Budgets (``BUDGETS``): at most 75 minutes by each estimate; no markdown cell over 200 words and at most two over
150; a mean sentence of at most 18 words and at most three sentences over 40; a summary of at most six bullets;
a picture within the first two screens (``lines_before_picture``: the lines a learner scrolls past before the first
stored figure, every cell counted, optional or not, as JupyterLab shows it at 1280 x 720: a markdown line of
``LINE_CHARS`` characters per line, a heading as two, the code as it is and its printed output; a collapsed input
as one line; a screen is ``SCREEN_LINES`` lines).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import pprint
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"

BUDGETS = {"core_path_minutes": 75, "independent_minutes": 75, "longest_cell": 200, "cells_over_150": 2,
           "mean_sentence": 18.0, "sentences_over_40": 3, "summary_bullets": 6}
LINE_CHARS, SCREEN_LINES = 100, 35  # JupyterLab at 1280 x 720: a line of prose, the lines one screen shows
BUDGETS["lines_before_picture"] = 2 * SCREEN_LINES
RATES = {"words_per_minute": 110, "code": 50 / 60, "prediction": 3.0, "exercise": 4.0, "explorer": 4.0}

WORD = re.compile(r"[A-Za-z]+")


def _core_path_tool():
    spec = importlib.util.spec_from_file_location("core_path", ROOT / "tools" / "core_path.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prose(markdown: str) -> str:
    """The words a learner reads in a markdown cell: no code blocks, LaTeX, inline code, HTML tags or link targets."""
    text = re.sub(r"```.*?```", " ", markdown, flags=re.DOTALL)
    text = re.sub(r"^(?: {4}|\t).*$", " ", text, flags=re.MULTILINE)
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.DOTALL)
    text = re.sub(r"(?<!\\)\$[^$\n]+\$", " ", text)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"<[^>\n]+>", " ", text)
    text = re.sub(r"\]\([^)\s]*\)", "]", text)  # a link keeps its words, not its address
    return text


def sentences(text: str) -> list[str]:
    """Sentences of ``text`` (already through ``prose``): split at . ! ? and at every line that starts a list
    item, a table row or a heading, and at blank lines."""
    pieces = []
    for block in re.split(r"\n\s*\n|\n(?=\s*(?:[-*+] |\d+\. |\||#))", text):
        block = block.replace("\n", " ")
        for part in re.split(r"(?<=[.!?])\s+", block):
            if WORD.search(part):
                pieces.append(part.strip())
    return pieces


def words(text: str) -> int:
    return len(WORD.findall(text))


def summary_bullets(cells: list) -> int:
    """Bullets of the notebook's summary: the markdown cell whose heading says Summary (0 if none)."""
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and re.match(r"#+ .*\b(Summary|summary|What you)", source):
            return len(re.findall(r"^\s*[-*] ", source, re.MULTILINE))
    return 0


def _shown_lines(cell) -> int:
    """How many lines ``cell`` takes on the screen (its source and its text outputs), one more for the gap."""
    source = "".join(cell["source"])
    if cell.get("metadata", {}).get("jupyter", {}).get("source_hidden"):
        return 2
    if cell["cell_type"] == "markdown":
        return 1 + sum(2 if line.startswith("#") else max(1, -(-len(line) // LINE_CHARS))
                       for line in source.splitlines() or [""])
    printed = 0
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            printed += len("".join(output["text"]).splitlines())
        elif "text/plain" in data and "image/png" not in data:
            printed += len("".join(data["text/plain"]).splitlines())
    return 1 + len(source.splitlines()) + printed


def lines_before_picture(cells: list) -> int:
    """The lines shown above the first stored figure (the source of its cell included), or all of them if none."""
    lines = 0
    for cell in cells:
        if any("image/png" in output.get("data", {}) for output in cell.get("outputs", [])):
            return lines + 1 + len("".join(cell["source"]).splitlines())
        lines += _shown_lines(cell)
    return lines


def measure(path: Path, tool=None) -> dict:
    """The density figures of one notebook's core path."""
    tool = tool or _core_path_tool()
    cells = json.loads(Path(path).read_text(encoding="utf-8"))["cells"]
    core = [c for c in cells if "optional" not in c.get("metadata", {}).get("tags", [])]
    cell_words, all_sentences, counts = [], [], {"code": 0, "prediction": 0, "exercise": 0, "explorer": 0}
    for cell in core:
        source = "".join(cell["source"])
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "markdown":
            text = prose(source)
            cell_words.append(words(text))
            all_sentences += sentences(text)
        elif cell["cell_type"] == "code":
            if "nbval-ignore-output" in tags and ".show()" in source:
                counts["explorer"] += 1
                continue
            counts["code"] += 1
            if tool.is_prediction(source):
                counts["prediction"] += 1
            elif "raise NotImplementedError" in source or (re.search(r"^\w+ = \.\.\.", source, re.MULTILINE)
                                                          and re.search(r"\bcheck_\w+\(", source)):
                counts["exercise"] += 1
    lengths = [words(s) for s in all_sentences]
    total = sum(cell_words)
    independent = (total / RATES["words_per_minute"] + counts["code"] * RATES["code"]
                   + sum(counts[k] * RATES[k] for k in ("prediction", "exercise", "explorer")))
    return {
        "notebook": Path(path).name[:2],
        "core_prose_words": total,
        "longest_cell": max(cell_words, default=0),
        "cells_over_150": sum(w > 150 for w in cell_words),
        "cells_over_200": sum(w > 200 for w in cell_words),
        "mean_sentence": round(total / len(lengths), 1) if lengths else 0.0,
        "sentences_over_40": sum(n > 40 for n in lengths),
        "summary_bullets": summary_bullets(core),
        **counts,
        "independent_minutes": round(independent),
        "core_path_minutes": tool.core_path(path)["self_paced_minutes"],
        "lines_before_picture": lines_before_picture(cells),
    }


def over_budget(row: dict) -> list[str]:
    """The budgets ``row`` breaks, each as 'name value > budget'."""
    return [f"{name} {row[name]} > {limit}" for name, limit in BUDGETS.items() if row[name] > limit]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--over", action="store_true", help="print the budgets each notebook breaks, as a dict")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
    tool = _core_path_tool()
    rows = [measure(p, tool) for p in paths]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if args.over:  # the record tests/test_density.py keeps of what is still over budget
        record = {row["notebook"]: {name: row[name] for name, limit in BUDGETS.items() if row[name] > limit}
                  for row in rows}
        print("OVER = " + pprint.pformat({k: v for k, v in record.items() if v}, width=110, sort_dicts=False))
        return 0
    columns = ["notebook", "core_prose_words", "longest_cell", "cells_over_150", "cells_over_200", "mean_sentence",
               "sentences_over_40", "summary_bullets", "independent_minutes", "core_path_minutes",
               "lines_before_picture"]
    short = ["nb", "words", "longest", ">150", ">200", "mean sent", ">40 w", "bullets", "min (indep.)", "min (guide)",
             "lines to a picture"]
    print("| " + " | ".join(short) + " |")
    print("|" + " --- |" * len(short))
    for row in rows:
        print("| " + " | ".join(str(row[c]) for c in columns) + " |")
    broken = [(row["notebook"], over_budget(row)) for row in rows if over_budget(row)]
    for number, budgets in broken:
        print(f"{number}: " + "; ".join(budgets))
    return 0


if __name__ == "__main__":
    sys.exit(main())
