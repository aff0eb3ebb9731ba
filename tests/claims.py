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


def sink_shares():
    from attn_helpers.llm_measures import sink_head_shares
    return sink_head_shares(sinks())  # (prompts, layers): the share of the 9 heads above 0.5


@claim("15", "15-029", "From layer 3 on, the heads send on average more than half of their weight to the first token",
       "Layers 10 and 11 park little: their means (0.21 and 0.06) are near or below an even spread, and layer 16 is "
       "just under one half (0.47)")
@claim("15", "15-054", "from layer 3 on, the heads park on average more than half of their weight on the first "
       "position", "except in layers 10 and 11")
def sink_from_layer_3_on_except_10_11_16():
    layer_mean = sinks().mean(axis=(0, 2))
    below = [layer for layer in range(3, len(layer_mean)) if layer_mean[layer] <= 0.5]
    assert below == [10, 11, 16], below
    assert layer_mean[10] < EVEN_SPREAD + 0.1 and layer_mean[11] < EVEN_SPREAD, layer_mean[10:12]
    np.testing.assert_allclose(layer_mean[[10, 11, 16]], [0.21, 0.06, 0.47], atol=0.006)
    assert layer_mean[16] > 0.45


@claim("15", "15-029", "Prompt by prompt the rule is weaker: more than half of a layer's heads exceed 0.5 on all 12 "
       "prompts only in layers 14, 15, 17-19 and 21-29")
@claim("15", "15-054", "most heads of a layer park on all 12 prompts only from layer 14 on, with gaps")
def most_heads_on_every_prompt_only_in_listed_layers():
    every_prompt = [layer for layer in range(3, 30) if (sink_shares()[:, layer] > 0.5).all()]
    assert every_prompt == [14, 15, 17, 18, 19, *range(21, 30)], every_prompt


@claim("15", "15-029", "The list of numbers parks least (0.47 over layers 3-29)")
def numbers_prompt_parks_least():
    from attn_helpers.llm_measures import SINK_PROMPTS
    by_prompt = sinks()[:, 3:].mean(axis=(1, 2))
    assert SINK_PROMPTS[int(by_prompt.argmin())].startswith("1, 2, 3"), by_prompt
    assert abs(by_prompt.min() - 0.47) < 0.006, by_prompt.min()


@claim("15", "15-028", "12 prompts; layers 15-29, first-token weight: mean 0.70, lowest prompt 0.61, highest 0.75")
def late_layers_pooled():
    late = sinks()[:, 15:].mean(axis=(1, 2))
    np.testing.assert_allclose([sinks()[:, 15:].mean(), late.min(), late.max()], [0.70, 0.61, 0.75], atol=0.006)


@claim("15", "15-031", "On every one of the 12 prompts, in SmolLM2's layers 3 to 29 the first token's values are about "
       "a third of the length of the others' (right column: 0.28 to 0.36)")
@claim("15", "15-054", "whose values are about a third as long")
def first_token_values_a_third_on_every_prompt():
    from attn_helpers.llm_measures import parking_over_prompts
    ratio = parking_over_prompts(smollm2())["length_ratio"][:, 3:].mean(axis=1)  # (prompts,)
    assert len(ratio) == 12 and ((ratio > 0.25) & (ratio < 0.4)).all(), ratio
    np.testing.assert_allclose([ratio.min(), ratio.max()], [0.28, 0.36], atol=0.006)


@claim("15", "15-031", "when the first word is removed, whatever token comes first becomes the sink, at about the same "
       "weight")
def sink_moves_with_the_position():
    from attn_helpers.llm_measures import SINK_PROMPTS, sink_study
    shifted = sink_study(smollm2(), tuple(p.split(" ", 1)[1] for p in SINK_PROMPTS))
    assert abs(shifted[:, 15:].mean() - sinks()[:, 15:].mean()) < 0.05


@claim("15", "15-031", "The tiny GPT has none of it: its heads give the first token *less* than an even spread would, "
       "and the first token's values are as long as any other's")
def tiny_gpt_parks_nothing():
    weight = printed_number("15", "15-030", r"tiny GPT \(14\), 8 windows\s+([\d.]+)")
    even = printed_number("15", "15-030", r"an even spread over 64 tokens gives the first one ([\d.]+)")
    ratio = printed_number("15", "15-030", r"tiny GPT \(14\), 8 windows\s+[\d.]+\s+[\d.]+\s+([\d.]+)")
    assert weight < even and ratio > 0.9, (weight, even, ratio)


def notebook_12_top(habit):
    return printed_number("12", "341a6722", rf"most weight on {habit}\s+\(layer, head\): \(\d+, \d+\): ([\d.]+)")


@claim("15", "15-031", "Notebook 12's encoder parked on `[CLS]`, its first token, and not on `[SEP]`: no head gave "
       "`[SEP]` more than 0.15 of its weight on average", stored="notebook 12's printed fingerprints (nbval recomputes)")
def encoder_parked_on_cls_not_sep():
    assert notebook_12_top(r"\[CLS\]") > 0.5 and notebook_12_top(r"\[SEP\]") <= 0.15


@claim("15", "15-034", "On the second copy it falls to 2.85 nats per token, far from zero (a perplexity of 17",
       "the loss stays high for the first tokens of the repeat")
def second_copy_loss_not_zero():
    from attn_helpers.llm_measures import next_token_losses, repeated_random_tokens
    loss = induction()["loss_second"]
    assert abs(loss - 2.85) < 0.006 and round(float(np.exp(loss))) == 17, loss
    ids = repeated_random_tokens(40, np.random.default_rng(0))
    losses = next_token_losses(smollm2().logits(ids), ids)
    assert (losses[39:41] > 10).all() and losses[45:].mean() < 5, losses[39:45]


@claim("15", "15-034", "The heads that do it sit together in a few layers past the middle of the model")
def induction_heads_past_the_middle():
    layers = sorted({layer for layer, _ in induction()["top"]})
    assert all(15 <= layer < 25 for layer in layers) and len(layers) <= 4, layers


def stored_checks():
    from attn_helpers.llm_measures import stored_induction_checks
    return stored_induction_checks()


@claim("15", "15-036", "Six heads out of 270 carry most of the copying: without them the second copy is again nearly as "
       "hard as the first", stored="attn_helpers/data/nb15_induction_checks.json (test_stored_induction_checks)")
def six_heads_carry_most():
    study = induction()
    gap = study["loss_first"] - study["loss_second"]
    assert study["ablated_second"] - study["loss_second"] > 0.5 * gap, study


@claim("15", "15-036", "Removing six other heads of the same layers changes the loss by less than a nat in each of the "
       "five draws, and neither changes the first copy much")
def control_draws_change_little():
    study, checks = induction(), stored_checks()
    assert len(checks["control_second"]) == 5 and checks["control_second"][0] == round(study["control_second"], 4)
    assert (np.abs(checks["control_second"] - study["loss_second"]) < 1).all(), checks["control_second"]
    assert abs(study["ablated_first"] - study["loss_first"]) < 0.5 and abs(study["control_first"] -
                                                                           study["loss_first"]) < 0.5


@claim("15", "15-036", "On the three new sequences the six heads matter as much: without them every second copy costs "
       "more than 10 nats per token")
@claim("15", "15-054", "removing the 6 strongest brings back most of the loss, on new sequences too, removing 6 others "
       "(five draws) does not")
def held_out_sequences():
    checks = stored_checks()
    assert len(checks["held_ablated"]) == 3 and (checks["held_ablated"] > 10).all(), checks
    assert (checks["held_intact"] < 4).all(), checks


@claim("15", "15-038", "The strongest previous-token head sits in layer 16, just before the layers of the strongest "
       "induction heads (17 and 18)", "Other previous-token heads are spread from layer 1 to 22")
@claim("15", "15-054", "**Previous-token heads** are spread from layer 1 to 22; the strongest sits just before the "
       "induction heads")
def previous_token_heads_spread():
    previous, top = induction()["previous"], induction()["top"]
    strongest = np.unravel_index(np.argmax(previous), previous.shape)[0]
    layers = sorted(set(np.nonzero(previous > 0.5)[0].tolist()))
    assert strongest == 16 and min(layer for layer, _ in top) == 17 and top[0][0] == 18, (strongest, top)
    assert layers[0] == 1 and layers[-1] == 22 and len(layers) > 3, layers


@claim("15", "15-038", "as the answer says *red*, *blue* and *green* again, the head looks at the token that followed "
       "each word in the message, *fox*, *owl*, *frog*", "It copies the list right")
def explorer_head_induces_in_the_window():
    from attn_helpers.widgets.nb15 import chat_view
    view = chat_view(smollm2(), "Repeat: red fox, blue owl, green frog.", layer=18, head=6)
    assert "red fox, blue owl, green frog" in view["answer"], view["answer"]
    labels = view["labels"]
    for word, after in (("·red", "·fox"), ("·blue", "·owl"), ("·green", "·frog")):
        n = labels.index(word, view["answer_start"])  # the answer's copy
        first = labels.index(word)
        assert first < view["answer_start"] and labels[first + 1] == after and view["weights"][n, first + 1] > 0.9


@claim("15", "15-038", "asked \"My cat is called Tom. What is my cat called?\", it writes a story about a cat named "
       "Luna")
def wrong_answer_about_tom():
    assert "Luna" in smollm2().chat("My cat is called Tom. What is my cat called?", max_new_tokens=12)


# ---------------------------------------------------------------- notebook 03: the lecture notes' slip
#: The lecture notes' table of scores (keys as rows, queries 1-4 as columns), as far as the notes print it: the row of
#: key a, and the column of query 1 that their picture (one query against every key) needs. The row is NOTES_SCORES.
NOTES_ROW_KEY_A = (0.7, -0.93, -0.24, -5.0)
NOTES_COLUMN_QUERY_1 = (0.7, -0.73, -0.53, -0.4)


@claim("03", "03-new-05", "The notes slipped twice")
def notes_slipped_on_the_axis_and_the_arithmetic():
    from attn_helpers.checks import NOTES_SCORES, NOTES_WEIGHTS
    from attn_helpers.core import softmax
    assert NOTES_SCORES == NOTES_ROW_KEY_A and not np.allclose(NOTES_SCORES, NOTES_COLUMN_QUERY_1)  # the axis
    assert NOTES_COLUMN_QUERY_1[0] == NOTES_ROW_KEY_A[0]  # "starting with the same 0.7"
    assert abs(sum(NOTES_WEIGHTS) - 1) > 0.5  # the arithmetic: no softmax sums to 1.83
    assert not np.allclose(softmax(np.array(NOTES_SCORES)), NOTES_WEIGHTS, atol=0.01)


#: Sentences with a claim word that state no finding of a run, by notebook: (cell id, piece of the sentence, reason).
ALLOWED: dict[str, list[tuple[str, str]]] = {}


# ---------------------------------------------------------------- notebook 06: the gradient that reaches the query
def query_gradient_sizes(num_queries=2000, T=8, d_k=1024):
    """``||dL/dq||`` for random queries, keys and slopes on the weights, without and with scaling (notebook 06's
    measurement, recomputed with the helpers' softmax and an independent Jacobian)."""
    from attn_helpers.config import SEED
    from attn_helpers.core import softmax
    rng = np.random.default_rng(SEED)
    queries, keys = rng.standard_normal((num_queries, d_k)), rng.standard_normal((num_queries, T, d_k))
    slopes = rng.standard_normal((num_queries, T))
    sizes = {}
    for name, scale in (("without", 1.0), ("with", 1 / np.sqrt(d_k))):
        p = softmax(np.einsum("ntd,nd->nt", keys, queries) * scale)
        grad_scores = p * (slopes - (p * slopes).sum(axis=-1, keepdims=True))  # J g with J = diag(p) - p p^T
        sizes[name] = np.linalg.norm(np.einsum("nt,ntd->nd", grad_scores, keys) * scale, axis=-1)
    return sizes


@claim("06", "06-014d", "Without scaling, the median query gets no slope at all: most rows are one-hot",
       "Yet the mean is *larger* than with scaling", "With scaling every query gets a moderate slope")
@claim("06", "06-034", "at $d_k = 1024$ unscaled, most of 2,000 random queries get none and a few get a large one")
def query_gradient_heavy_tailed():
    sizes = query_gradient_sizes()
    assert np.median(sizes["without"]) < 1e-3 and np.mean(sizes["without"] < 1e-3) > 0.5
    assert sizes["without"].mean() > 2 * sizes["with"].mean() and sizes["without"].max() > 10
    assert sizes["with"].min() > 1e-3 and sizes["with"].max() < 3


# ---------------------------------------------------------------- notebook 11: the induction run's plateau
@claim("11", "11-035c", "In this run, a plateau, then a drop while the two heads form at once")
def induction_run_plateau_then_drop():
    from attn_helpers.training import load_runs
    losses = load_runs()["induction"].losses
    early, plateau, late = losses[15:25].mean(), losses[65:75].mean(), losses[290:300].mean()
    assert early - plateau < 0.6 and plateau - late > 2, (early, plateau, late)
