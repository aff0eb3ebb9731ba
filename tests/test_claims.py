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
    """Notebook 15 reads its 5 control draws and 3 held-out sequences from attn_helpers/data (8 s to recompute)."""
    from attn_helpers.llm_measures import induction_checks, stored_induction_checks

    stored, fresh = stored_induction_checks(), induction_checks(claims.smollm2())
    assert stored.keys() == fresh.keys()
    for key in stored:
        np.testing.assert_allclose(fresh[key], stored[key], atol=0.02, err_msg=key)  # float32 forwards, any SIMD
