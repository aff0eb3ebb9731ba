"""Every general claim of the learner prose is recomputed (``tests/claims.py``), and the prose has no general claim
that is neither registered, nor hedged to its run, nor listed as no claim (``tools/claims_lint.py``).

The claims compare with thresholds and tolerances, never bit for bit: the suite runs them with and without numpy's
SIMD paths."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

import claims  # noqa: E402
import claims_lint  # noqa: E402

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


@pytest.mark.parametrize("registered", claims.CLAIMS, ids=[c.name for c in claims.CLAIMS])
def test_the_claim_is_in_its_cell_and_its_evidence_says_so(registered):
    text = " ".join(" ".join(claims.cell_text(registered.notebook, registered.cell)).split())
    assert " ".join(registered.says.split()) in text, (
        f"notebook {registered.notebook}, cell {registered.cell} no longer says {registered.says!r}: "
        "update the claim with the sentence")
    registered.check()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_unbacked_general_claim(path):
    number = path.name[:2]
    found = claims_lint.unbacked(path, claims.registered_fragments(number), claims.allowed_fragments(number))
    assert found == [], "register these claims in tests/claims.py, hedge them to their run, or list why they are " \
                        "no claim:\n" + "\n".join(f"{c}: {w}: {s}" for c, w, s in found)


def test_stored_induction_checks_are_what_induction_checks_computes():
    """Notebook 16 reads its 5 control draws and 3 held-out sequences from attn_helpers/data (8 s to recompute)."""
    from attn_helpers.llm_measures import induction_checks, stored_induction_checks

    stored, fresh = stored_induction_checks(), induction_checks(claims.smollm2())
    assert stored.keys() == fresh.keys()
    for key in stored:
        np.testing.assert_allclose(fresh[key], stored[key], atol=0.02, err_msg=key)  # float32 forwards, any SIMD


@pytest.mark.parametrize("number", [p.name[:2] for p in NOTEBOOKS])
def test_the_answer_key_and_the_guide_claim_no_more_than_the_registry(number):
    """A key or the guide's section that repeats a notebook's general claim repeats a registered one."""
    found = claims_lint.unbacked_docs(number, claims.registered_fragments(number), claims.allowed_fragments(number))
    assert found == [], "register these in tests/claims.py (the claim's function, cell 'answers' or 'guide'), hedge " \
                        "them, or list why they are no claim:\n" + "\n".join(f"{c}: {w}: {s}" for c, w, s in found)


DECIMAL = claims_lint.re.compile(r"(?<![\w.])\d+\.\d+(?![\d.]\d)")


@pytest.mark.parametrize("number", [p.name[:2] for p in NOTEBOOKS])
def test_every_decimal_of_a_registered_claim_is_printed_by_its_notebook(number):
    """The numbers a registered sentence gives (in a notebook, its key or the guide) are the notebook's own, printed
    or in its source: when a run changes, the sentence fails here until it says the new number."""
    (path,) = (ROOT / "notebooks").glob(f"{number}_*.ipynb")
    cells = claims.json.loads(path.read_text(encoding="utf-8"))["cells"]
    printed = " ".join("".join(c["source"]) + " ".join("".join(o.get("text", "")) for o in c.get("outputs", []))
                       for c in cells)
    values = set(DECIMAL.findall(printed))
    missing = [(c.cell, v) for c in claims.CLAIMS if c.notebook == number for v in DECIMAL.findall(c.says)
               if v not in values and not any(len(p.split(".")[1]) > len(v.split(".")[1]) and
                                              round(float(p), len(v.split(".")[1])) == float(v) for p in values)]
    assert missing == []


def test_the_lint_flags_an_unhedged_claim_and_passes_its_hedge(tmp_path):
    notebook = {"cells": [{"cell_type": "markdown", "id": "x", "metadata": {}, "source": [
        "From layer 3 on, most heads park on the first token. On these 12 prompts, most heads park on it. "
        "Every row sums to 1."]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    path = tmp_path / "99_x.ipynb"
    path.write_text(claims.json.dumps(notebook), encoding="utf-8")
    found = claims_lint.unbacked(path)
    assert [w for _, w, _ in found] == ["From layer 3 on"], found
    assert claims_lint.unbacked(path, registered=[("x", "From layer 3 on, most heads park")]) == []
