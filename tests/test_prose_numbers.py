"""A number the prose of a notebook states is a number the notebook computed: every decimal in a markdown cell is
printed by a code cell of the same notebook (in its source or its stored output, or rounded from one), or is listed
below with the reason it is typed. nbval recomputes every output, so a claim in the prose cannot drift from its
number: the summary of notebook 13 once said "the memory exponent is 2" where the notebook printed 1.9."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
DECIMAL = re.compile(r"(?<![\w.])\d+\.\d+(?![\d.]\d)")

#: Typed on purpose: (notebook, number) -> why it is not a computed output.
TYPED = {
    ("03", "0.02"): "the wrong weights of the lecture notes the learner is asked to check",
    ("03", "0.89"): "the wrong weights of the lecture notes the learner is asked to check",
    ("03", "0.93"): "the wrong weights of the lecture notes the learner is asked to check",
    ("08", "0.8"): "a parameter of the example's random weights (their standard deviation), set in the helper",
    ("09", "2104.09864"): "an arXiv identifier", ("09", "2108.12409"): "an arXiv identifier",
    ("09", "2306.15595"): "an arXiv identifier",
    ("10", "0.044715"): "the tanh GELU's published constant", ("14", "0.044715"): "the tanh GELU's published constant",
    ("11", "0.01"): "the usual range of AdamW's weight decay, from the literature",
    ("15", "0.45"): "a constant of the cosine learning-rate schedule's formula",
    ("15", "0.95"): "the top-p that Holtzman et al. used, from their paper",
    ("16", "2.0"): "the name of SmolLM2's licence, Apache-2.0",
}


def _cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def _printed(cells):
    """Everything the code cells show: their source and their stored outputs."""
    parts = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        parts.append("".join(cell["source"]))
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            parts += ["".join(output.get("text", "")), "".join(data.get("text/plain", "")),
                      "".join(data.get("text/html", ""))]
    return "\n".join(parts)


def unprinted_numbers(path):
    """``[(cell id, number)]``: decimals of the prose that no code cell of the notebook prints or rounds to."""
    number = path.name[:2]
    cells = _cells(path)
    printed_values = set(DECIMAL.findall(_printed(cells)))
    found = []
    for cell in cells:
        if cell["cell_type"] != "markdown":
            continue
        for value in sorted(set(DECIMAL.findall("".join(cell["source"])))):
            if re.fullmatch(rf"0?{int(number)}\.\d+", value) or (number, value) in TYPED:
                continue  # an exercise's number ("13.1"), or typed on purpose
            places = len(value.split(".")[1])
            rounded = any(len(p.split(".")[1]) > places and round(float(p), places) == float(value)
                          for p in printed_values)
            if value not in printed_values and not rounded:
                found.append((cell["id"], value))
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_number_in_the_prose_is_computed(path):
    assert unprinted_numbers(path) == [], (
        "print these numbers from the notebook's own computation (or say them in words), or list them in TYPED "
        "with the reason they are typed")


def test_the_rule_catches_a_number_typed_into_a_summary(tmp_path):
    (notebook,) = [p for p in NOTEBOOKS if p.name.startswith("13")]
    cells = _cells(notebook)
    summary = next(cell for cell in cells if cell["cell_type"] == "markdown"
                   and "".join(cell["source"]).startswith("## Summary"))
    summary["source"] = ["Measured, the memory exponent is 7.77 (typed, not printed)."]
    typed = tmp_path / notebook.name
    typed.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert unprinted_numbers(typed) == [(summary["id"], "7.77")]
