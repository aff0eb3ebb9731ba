"""The claims registry: every general claim of the notebooks' learner prose, with the function that recomputes it.

A claim is registered by notebook, cell id and a piece of the sentence (``says``, as it reads in the cell, code and
maths written as in the markdown). Its function recomputes the evidence from the series' own functions and asserts
what the sentence says, quantifier included: "on every prompt" is an ``all`` over the prompts, "most heads" a share
above one half. ``tests/test_claims.py`` runs them; ``tools/claims_lint.py`` flags the sentences with a claim word
that are neither registered here, nor hedged to their run, nor listed in :data:`ALLOWED` with a reason.

Where a recomputation is too slow for the suite, a claim reads the stored evidence (``stored=...`` names the file or
the notebook output, and the test that recomputes it).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


@dataclasses.dataclass(frozen=True)
class Claim:
    notebook: str
    cell: str
    says: str
    check: object
    stored: str = ""

    @property
    def name(self):
        return f"{self.notebook}:{self.cell}:{self.check.__name__}"


CLAIMS: list[Claim] = []


def claim(notebook, cell, *says, stored=""):
    """Register the decorated function as the evidence of each sentence piece ``says`` of ``notebook``'s ``cell``."""
    def register(check):
        for piece in says:
            CLAIMS.append(Claim(notebook, cell, piece, check, stored))
        return check
    return register


def registered_fragments(notebook):
    return [(c.cell, c.says) for c in CLAIMS if c.notebook == notebook]


def cell_text(notebook, cell_id):
    """The source of a notebook's cell (by id), and the text its code printed."""
    (path,) = (ROOT / "notebooks").glob(f"{notebook}_*.ipynb")
    for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
        if cell["id"] == cell_id:
            printed = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
            return "".join(cell["source"]), printed
    raise KeyError(f"notebook {notebook} has no cell {cell_id!r}")


def printed_number(notebook, cell_id, pattern):
    """A number a cell printed, found by a regular expression with one group (the stored output nbval checks)."""
    found = re.search(pattern, cell_text(notebook, cell_id)[1])
    assert found, f"{notebook} {cell_id} no longer prints {pattern!r}"
    return float(found.group(1))


# ---------------------------------------------------------------- notebook 15: SmolLM2's heads
@functools.lru_cache(maxsize=1)
def smollm2():
    from attn_helpers.llm import load_smollm2
    return load_smollm2()


def sinks():
    from attn_helpers.llm_measures import sink_study
    return sink_study(smollm2())  # (prompts, layers, heads)


def induction():
    from attn_helpers.llm_measures import induction_study
    return induction_study(smollm2())


EVEN_SPREAD = 0.15  # what an even spread gives the first token on SINK_PROMPTS, recomputed by even_spread_is_015


@claim("15", "15-028", "an even spread would give 0.15")
def even_spread_is_015():
    from attn_helpers.llm_measures import SINK_PROMPTS
    even = np.mean([np.mean(1 / np.arange(2, len(smollm2().encode(p)) + 1)) for p in SINK_PROMPTS])
    assert abs(even - EVEN_SPREAD) < 0.005, even


@claim("15", "15-029", "From layer 3 on, most heads send well over half of their weight to the first token, "
       "on every prompt")
def most_heads_sink_from_layer_3_on_every_prompt():
    from attn_helpers.llm_measures import sink_head_shares
    shares = sink_head_shares(sinks())  # (prompts, layers): share of heads above 0.5
    failing = [layer for layer in range(3, shares.shape[1]) if not (shares[:, layer] > 0.5).all()]
    assert failing == [], f"layers where on some prompt at most half of the heads exceed 0.5: {failing}"
    per_layer = sinks().mean(axis=(0, 2))
    assert (per_layer[3:] > 0.5).all(), f"layer means below 0.5: {np.flatnonzero(per_layer <= 0.5).tolist()}"


@claim("15", "15-031", "the first token's values are a fraction of the length of the others'")
def first_token_values_short_on_every_prompt():
    from attn_helpers.llm_measures import parking_over_prompts
    ratio = parking_over_prompts(smollm2())["length_ratio"]
    assert (ratio < 0.5).all(), ratio


@claim("15", "15-031", "Notebook 12's encoder parked on `[CLS]` and `[SEP]` for the same reason")
def encoder_parked_on_sep():
    largest = printed_number("12", "341a6722", r"most weight on \[SEP\]\s+\(layer, head\): \(\d+, \d+\): ([\d.]+)")
    assert largest > 0.5, f"notebook 12's largest mean share on [SEP] is {largest}: no head parks there"


@claim("15", "15-034", "From the first token of the second copy on it drops close to zero")
def second_copy_close_to_zero():
    assert induction()["loss_second"] < 0.5, induction()["loss_second"]


# ---------------------------------------------------------------- notebook 03: the lecture notes' slip
#: The lecture notes' table of scores (keys as rows, queries 1-4 as columns), as far as the notes print it: the row of
#: key a, and the column of query 1 that their picture (one query against every key) needs. The row is NOTES_SCORES.
NOTES_ROW_KEY_A = (0.7, -0.93, -0.24, -5.0)
NOTES_COLUMN_QUERY_1 = (0.7, -0.73, -0.53, -0.4)


@claim("03", "03-new-05", "The slip is not the axis")
def notes_took_a_column():
    from attn_helpers.checks import NOTES_SCORES
    assert np.allclose(NOTES_SCORES, NOTES_COLUMN_QUERY_1), (
        f"the notes' four scores {NOTES_SCORES} are the ROW of key a, {NOTES_ROW_KEY_A}; "
        f"their picture needs the column of query 1, {NOTES_COLUMN_QUERY_1}: the axis slipped too")


#: Sentences with a claim word that state no finding of a run, by notebook: (cell id, piece of the sentence, reason).
ALLOWED: dict[str, list[tuple[str, str]]] = {}
