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
    """The source of a notebook's cell (by id), and the text its code printed; for ``"answers"`` and ``"guide"``,
    the notebook's answer key and its section of the teaching guide."""
    if cell_id == "answers":
        return (ROOT / "docs" / "answers" / f"{notebook}.md").read_text(encoding="utf-8"), ""
    if cell_id == "guide":
        guide = (ROOT / "docs" / "teaching-guide.md").read_text(encoding="utf-8")
        return re.search(rf"^### {notebook} · .*?(?=^##)", guide, flags=re.MULTILINE | re.DOTALL).group(0), ""
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


# ---------------------------------------------------------------- notebook 16: SmolLM2's heads
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


@claim("16", "16-028", "an even spread would give 0.15")
def even_spread_is_015():
    from attn_helpers.llm_measures import SINK_PROMPTS
    even = np.mean([np.mean(1 / np.arange(2, len(smollm2().encode(p)) + 1)) for p in SINK_PROMPTS])
    assert abs(even - EVEN_SPREAD) < 0.005, even


def sink_shares():
    from attn_helpers.llm_measures import sink_head_shares
    return sink_head_shares(sinks())  # (prompts, layers): the share of the 9 heads above 0.5


@claim("16", "16-029", "From layer 3 on, the heads send on average more than half of their weight to the first token")
@claim("16", "16-029x", "Layers 10 and 11 park little: their means (0.21 and 0.06) are near or below an even spread, "
       "and layer 16 is just under one half (0.47)")
@claim("16", "16-054", "from layer 3 on, the heads park on average more than half of their weight on the first "
       "position", "except in layers 10 and 11 (far below) and 16 (0.47)")
@claim("16", "guide", "but layers 10 and 11 park little (0.21 and 0.06)")
def sink_from_layer_3_on_except_10_11_16():
    layer_mean = sinks().mean(axis=(0, 2))
    below = [layer for layer in range(3, len(layer_mean)) if layer_mean[layer] <= 0.5]
    assert below == [10, 11, 16], below
    assert layer_mean[10] < EVEN_SPREAD + 0.1 and layer_mean[11] < EVEN_SPREAD, layer_mean[10:12]
    np.testing.assert_allclose(layer_mean[[10, 11, 16]], [0.21, 0.06, 0.47], atol=0.006)
    assert layer_mean[16] > 0.45


@claim("16", "16-029x", "Prompt by prompt the rule is weaker: more than half of a layer's heads exceed 0.5 on all 12 "
       "prompts only in layers 14, 15, 17-19 and 21-29")
@claim("16", "guide", "more than half of a layer's heads park on all 12 prompts only in layers 14, 15, 17-19 and 21-29")
def most_heads_on_every_prompt_only_in_listed_layers():
    every_prompt = [layer for layer in range(3, 30) if (sink_shares()[:, layer] > 0.5).all()]
    assert every_prompt == [14, 15, 17, 18, 19, *range(21, 30)], every_prompt


@claim("16", "16-029x", "The list of numbers parks least (0.47 over layers 3-29)")
def numbers_prompt_parks_least():
    from attn_helpers.llm_measures import SINK_PROMPTS
    by_prompt = sinks()[:, 3:].mean(axis=(1, 2))
    assert SINK_PROMPTS[int(by_prompt.argmin())].startswith("1, 2, 3"), by_prompt
    assert abs(by_prompt.min() - 0.47) < 0.006, by_prompt.min()


@claim("16", "16-028", "12 prompts; layers 15-29, first-token weight: mean 0.70, lowest prompt 0.61, highest 0.75")
@claim("16", "answers", "the model parks most of the weight on one position")
@claim("16", "guide", "the first token gets 0.70 of the weight in layers 15-29 (an even spread: 0.15)")
def late_layers_pooled():
    late = sinks()[:, 15:].mean(axis=(1, 2))
    np.testing.assert_allclose([sinks()[:, 15:].mean(), late.min(), late.max()], [0.70, 0.61, 0.75], atol=0.006)


@claim("16", "16-031", "On every one of the 12 prompts, in SmolLM2's layers 3 to 29 the first token's values are about "
       "a third of the length of the others' (right column: 0.28 to 0.36)")
@claim("16", "16-054", "Its values are about a third as long")
@claim("16", "answers", "in layers 3 to 29 the first token's values are about a third of the others' length on every "
       "one of the 12 prompts (0.28 to 0.36)")
@claim("16", "guide", "the first token's values are about a third as long as the others' on every one of the 12 "
       "prompts "
       "(0.28 to 0.36)")
def first_token_values_a_third_on_every_prompt():
    from attn_helpers.llm_measures import parking_over_prompts
    ratio = parking_over_prompts(smollm2())["length_ratio"][:, 3:].mean(axis=1)  # (prompts,)
    assert len(ratio) == 12 and ((ratio > 0.25) & (ratio < 0.4)).all(), ratio
    np.testing.assert_allclose([ratio.min(), ratio.max()], [0.28, 0.36], atol=0.006)


@claim("16", "16-031", "when the first word is removed, whatever token comes first becomes the sink, at about the same "
       "weight")
def sink_moves_with_the_position():
    from attn_helpers.llm_measures import SINK_PROMPTS, sink_study
    shifted = sink_study(smollm2(), tuple(p.split(" ", 1)[1] for p in SINK_PROMPTS))
    assert abs(shifted[:, 15:].mean() - sinks()[:, 15:].mean()) < 0.05


@claim("16", "16-031t", "The tiny GPT has none of it: its heads give the first token *less* than an even spread would, "
       "and the first token's values are as long as any other's")
def tiny_gpt_parks_nothing():
    weight = printed_number("16", "16-030", r"tiny GPT \(15\), 8 windows\s+([\d.]+)")
    even = printed_number("16", "16-030", r"an even spread over 64 tokens gives the first one ([\d.]+)")
    ratio = printed_number("16", "16-030", r"tiny GPT \(15\), 8 windows\s+[\d.]+\s+[\d.]+\s+([\d.]+)")
    assert weight < even and ratio > 0.9, (weight, even, ratio)


def notebook_12_top(habit):
    return printed_number("12", "341a6722", rf"most weight on {habit}\s+\(layer, head\): \(\d+, \d+\): ([\d.]+)")


@claim("16", "16-031t", "Notebook 12's encoder parked on `[CLS]`, its first token, and not on `[SEP]`: no head gave "
       "`[SEP]` more than 0.15 of its weight on average",
       stored="notebook 12's printed fingerprints (nbval recomputes)")
def encoder_parked_on_cls_not_sep():
    assert notebook_12_top(r"\[CLS\]") > 0.5 and notebook_12_top(r"\[SEP\]") <= 0.15


@claim("16", "16-034", "On the second copy it falls to 2.85 nats per token, far from zero (a perplexity of 17",
       "the loss stays high for the first tokens of the repeat")
def second_copy_loss_not_zero():
    from attn_helpers.llm_measures import next_token_losses, repeated_random_tokens
    loss = induction()["loss_second"]
    assert abs(loss - 2.85) < 0.006 and round(float(np.exp(loss))) == 17, loss
    ids = repeated_random_tokens(40, np.random.default_rng(0))
    losses = next_token_losses(smollm2().logits(ids), ids)
    assert (losses[39:41] > 10).all() and losses[45:].mean() < 5, losses[39:45]


@claim("16", "16-034", "The heads that do it sit together in a few layers past the middle of the model")
def induction_heads_past_the_middle():
    layers = sorted({layer for layer, _ in induction()["top"]})
    assert all(15 <= layer < 25 for layer in layers) and len(layers) <= 4, layers


def stored_checks():
    from attn_helpers.llm_measures import stored_induction_checks
    return stored_induction_checks()


@claim("16", "16-036", "Six heads out of 270 carry most of the copying: without them the second copy is again "
       "nearly as "
       "hard as the first", stored="attn_helpers/data/nb16_induction_checks.json (test_stored_induction_checks)")
def six_heads_carry_most():
    study = induction()
    gap = study["loss_first"] - study["loss_second"]
    assert study["ablated_second"] - study["loss_second"] > 0.5 * gap, study


@claim("16", "16-036", "Removing six other heads of the same layers changes the loss by less than a nat in each of the "
       "five draws, and neither changes the first copy much")
@claim("16", "answers", "six other heads of the same layers: 2.74 to 3.73 nats in five draws")
@claim("16", "guide", "2.74 to 3.73 without 6 other heads of the same layers, in five draws")
def control_draws_change_little():
    study, checks = induction(), stored_checks()
    assert len(checks["control_second"]) == 5 and checks["control_second"][0] == round(study["control_second"], 4)
    assert (np.abs(checks["control_second"] - study["loss_second"]) < 1).all(), checks["control_second"]
    assert abs(study["ablated_first"] - study["loss_first"]) < 0.5 and abs(study["control_first"] -
                                                                           study["loss_first"]) < 0.5


@claim("16", "16-036", "On the three new sequences the six heads matter as much: without them every second copy costs "
       "more than 10 nats per token")
@claim("16", "16-054", "removing the 6 strongest brings back most of the loss, on new sequences too, removing 6 others "
       "(five draws) does not")
@claim("16", "answers", "on three sequences the heads were not chosen on the loss without them is 10.68 to 11.21")
@claim("16", "guide", "on three sequences the heads were not chosen on, 10.68 to 11.21 without the six")
def held_out_sequences():
    checks = stored_checks()
    assert len(checks["held_ablated"]) == 3 and (checks["held_ablated"] > 10).all(), checks
    assert (checks["held_intact"] < 4).all(), checks


@claim("16", "16-038", "The strongest previous-token head sits in layer 16, just before the layers of the strongest "
       "induction heads (17 and 18)", "Other previous-token heads are spread from layer 1 to 22")
@claim("16", "16-054", "**Previous-token heads** are spread from layer 1 to 22; the strongest sits just before the "
       "induction heads")
@claim("16", "answers", "the other previous-token heads are spread from layer 1 to 22, so the order alone proves "
       "little")
@claim("16", "guide", "the strongest previous-token head is in layer 16, the others spread from layer 1 to 22")
def previous_token_heads_spread():
    previous, top = induction()["previous"], induction()["top"]
    strongest = np.unravel_index(np.argmax(previous), previous.shape)[0]
    layers = sorted(set(np.nonzero(previous > 0.5)[0].tolist()))
    assert strongest == 16 and min(layer for layer, _ in top) == 17 and top[0][0] == 18, (strongest, top)
    assert layers[0] == 1 and layers[-1] == 22 and len(layers) > 3, layers


@claim("16", "16-038b", "as the answer says *red*, *blue* and *green* again, the head looks at the token that followed "
       "each word in the message, *fox*, *owl*, *frog*", "It copies the list right")
def explorer_head_induces_in_the_window():
    from attn_helpers.widgets.nb16 import chat_view
    view = chat_view(smollm2(), "Repeat: red fox, blue owl, green frog.", layer=18, head=6)
    assert "red fox, blue owl, green frog" in view["answer"], view["answer"]
    keys = view["keys"]
    for word, after in (("·red", "·fox"), ("·blue", "·owl"), ("·green", "·frog")):
        n = view["queries"].index(word)  # the answer's copy
        first = keys.index(word)
        assert first < view["answer_column"] and keys[first + 1] == after and view["weights"][n, first + 1] > 0.9


@claim("16", "16-038b", "asked \"My cat is called Tom. What is my cat called?\", it writes a story about a cat named "
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


#: Why a sentence with a claim word is no claim of a run (the lint's reasons, by kind).
DEFINITION = "a definition, or a property of the computation or of its mathematics that the sentence or its cell proves"
DESIGN = "a property of a design (an architecture, a helper, a configuration), not a behaviour measured on runs"
CITED = "a statement about the literature or the field, with its source named in the sentence or its section"
HEADING = "a heading, an instruction or an exercise's wording"
PRINTED = "describes the run printed right there (its own numbers, or the figure above), at their strength"
GUARANTEE = "a guarantee of the code, tested by the helpers' and checkers' tests (tests/test_checks*.py, test_core.py)"

#: Sentences with a claim word that state no finding of a run, by notebook: (cell id, piece of the sentence, reason).
ALLOWED: dict[str, list[tuple[str, str, str]]] = {
    "00": [("00-000", "The map below lists them all.", HEADING),
           ("00-001b", "Every widget has a static figure just above it, drawn by the same code.", GUARANTEE),
           ("00-new-01", "However long the text, it all has to fit into that one vector", DEFINITION),
           ("00-new-06", "every token looks at every other token directly, in one step, and all tokens do it", DESIGN),
           ("00-001", "**Read-only.** On GitHub, or in the static export, widgets cannot run", DESIGN),
           ("00-new-06", "Real RNNs learn what to keep, which helps, but the summary is still on", CITED),
           ("00-008", "Row X of X is X, a vector of X numbers; column X, X, is one feature ac", DEFINITION),
           ("00-013", "A wrong answer gets a hint, never a traceback.", GUARANTEE),
           ("00-021", "Every number printed in these notebooks is recomputed automatically", GUARANTEE),
           ("00-021", "The helper package X is tested against independent reference code, and", GUARANTEE)],
    "01": [("01-000", "explain why one vector per word cannot hold every meaning of a word", HEADING),
           ("01-032", "Most answers land; some miss", PRINTED),
           ("01-034", "We cannot look at 50 dimensions, but we can look at the two directions", DEFINITION),
           ("01-new-06", "## 8 · One vector per word cannot hold every meaning", HEADING),
           ("01-new-06", "Score some words against each whole group: the mean cosine with its me", PRINTED),
           ("01-new-06", "The code compares every word with every group member at once", DEFINITION),
           ("01-057", "Pretrained **GloVe** vectors place words used in similar contexts clos", CITED),
           ("01-057", "One vector per word is one vector for all meanings:", DEFINITION)],
    "02": [("02-006", "## All scores of one query, with a loop", HEADING),
           ("02-016b", "Row X of the heatmap is query X's scores over all keys", DEFINITION),
           ("02-027", "All scores at once:", HEADING)],
    "03": [("03-000", "Notebook 02 gave every (query, key) pair a score.", DEFINITION),
           ("03-010", "Multiplying every score by 10 (row X) multiplies every difference by 10", PRINTED),
           ("03-010", "**Always positive.** X for every X, so every weight is positive", DEFINITION),
           ("03-010", "**Order-preserving.** X grows with X: a larger score always gets a lar", DEFINITION),
           ("03-016", "For X, every X is X and X is X.", DEFINITION),
           ("03-016", "For X every X underflows to 0 and X is X too.", DEFINITION),
           ("03-016", "Then the largest exponent is X, so every X lies in X (no overflow)", DEFINITION),
           ("03-new-05b", "X, what the printed weights add up to (the test every softmax must pas", HEADING)],
    "04": [("04-004", "The **context vector** of token X is the sum of **all** input vectors", DEFINITION),
           ("04-006", "An average cannot be larger than the largest value it averages", DEFINITION),
           ("04-008", "With two features, each input is a point (the tip of its arrow)", DEFINITION),
           ("04-008", "left and middle: the inputs as arrows in their tokens' colours, thicke", HEADING),
           ("04-010", "So all context vectors come out of one matrix product:", DEFINITION),
           ("04-024", "If all embeddings had the same length, the Cauchy-Schwarz inequality", DEFINITION),
           ("04-new-01", "Double every embedding, X.", HEADING),
           ("04-031", "## Exercise 04.1: all context vectors", HEADING),
           ("04-037", "The context vector of token X is the weighted sum X; all of them at on", DEFINITION)],
    "05": [("05-003", "parameters that training could change: none", PRINTED),
           ("05-004", "With one token per row, for all tokens at once:", DEFINITION),
           ("05-037", "The random matrices mean nothing yet; training would shape X and X so", DESIGN),
           ("05-040", "The checker runs it on \"I love AI\" and on inputs where X, X and X all", GUARANTEE)],
    "06": [("06-006", "As histograms: on the top row the three unscaled distributions share o", PRINTED),
           ("06-026", "X scales the **scores** in every head of every layer.", DESIGN)],
    "07": [("07-000", "build a causal mask, in which no token may attend to a later one", DEFINITION),
           ("07-012o", "Of the two keys it may still see, its own answers part of the question", PRINTED),
           ("07-012o", "The softmax of those two scores, printed below, gives \"fluffy\" the lar", PRINTED),
           ("9406bce0", "Some code zeroes the future weights **after** a softmax over all keys.", DEFINITION),
           ("07-014b", "**Optional: masking the scores is also safer in floating point.** When", DEFINITION),
           ("07-019b", "For a batch, X is a trap: it reverses **every** axis of an array", DEFINITION),
           ("07-022", "The next cell plays the next layer with the padding section's X", DEFINITION)],
    "08": [("08-004", "X has shape X: it reads **all** X features of **every** token", DEFINITION),
           ("08-008", "### All heads: a loop", HEADING),
           ("08-008", "A mask (boolean, X = may attend) is shared by all heads.", DESIGN),
           ("08-015", "## All heads at once: split, attend, merge", HEADING),
           ("08-020", "With X every split agrees, which is why a test with a single head cann", DEFINITION),
           ("08-023", "The length of head X's contribution for token X, as a fraction of all", DEFINITION),
           ("08-025", "Changing X keeps the **same four matrices**: only the way their column", DEFINITION),
           ("08-032", "Each extra head gets a thinner slice (X shrinks), so the heads trade d", DEFINITION),
           ("08-043", "X heads give X, each from its own X (a block of X columns that reads", DEFINITION)],
    "09": [("09-027", "Concatenating them would keep them apart, but would cost extra feature", DESIGN),
           ("09-041", "(Rotations are written for column vectors, X, as in most texts.", CITED),
           ("09-052a", "RoPE is what most open large language models use today", CITED),
           ("09-052", "Because a distance never seen in training is just a larger penalty", CITED),
           ("new", "Every model has 4 heads, because ALiBi's slopes are a sequence", DESIGN)],
    "10": [("10-007b", "The X is a direct path, the identity, that no layer can block.", DEFINITION),
           ("10-010", "X and X have shape X, start at 1 and 0, and are learned: the model can", DESIGN),
           ("10-023", "All communication between tokens happens in attention", DEFINITION),
           ("10-029", "Middle: the mean cosine similarity of each token with **its own input*", DEFINITION),
           ("10-047", "The larger GPT-2 models keep the same vocabulary", CITED),
           ("10-dropout-4", "Dividing by X keeps each number's **expected value**", DEFINITION),
           ("10-032", "Without residual connections, one or two random blocks are enough to m", PRINTED),
           ("10-058", "Residuals give the gradient a direct path, X instead of X", PRINTED)],
    "11": [("11-000", "Every attention pattern so far came from weights set by hand", DEFINITION),
           ("11-002b", "For X, one row of scores, every score X moves **every** weight X", DEFINITION),
           ("11-015", "Every backward pass agrees with the finite differences to better than", PRINTED),
           ("11-027", "At step 0 there is no pattern: each row puts its weight wherever the r", PRINTED),
           ("11-034g", "On the last three rows it does something else: layer 1 reads every pos", PRINTED),
           ("11-035c", "Neither head is useful alone: the previous-token head helps only once", DESIGN),
           ("11-039e", "*Optional: every shipped run, the ablations included, in the explorer.", HEADING)],
    "12": [("e52ce16f", "X does three things: it checks the weights file's **SHA-256** against", GUARANTEE),
           ("12-tok-3", "A single sentence is all \"sentence A\"", DEFINITION),
           ("b6f1eae1", "Trained models learn a cheap place: a token that is always there", CITED),
           ("12-ab-8", "**Right after its block**, zeroing the previous-token head moves the t", PRINTED),
           ("12-ab-8", "(2, 11) and (1, 9) in the fingerprint table.) The heads of layer 5 cha", PRINTED),
           ("12-ab-8", "**The sentence embeddings move little, but not nothing.** For our thre", PRINTED),
           ("12-ab-8", "Over all 72 heads, removing one head of layers 0 to 4 keeps every embe", PRINTED),
           ("12-ab-8", "Yet zeroing any one of 30 heads gives some sentence another nearest ne", PRINTED),
           ("12-ab-8", "Not always: for the previous-token head, mean ablation changes the las", PRINTED),
           ("12-ctx-0", "*apple* in a fruit sentence and in a phone sentence, compared with eac", HEADING),
           ("12-ctx-opt", "Sentences about the same thing get the larger cosine:", PRINTED),
           ("421ad020", "## 9 · Exercise 12.3: measure a habit of every head yourself", HEADING),
           ("d7c7c3e8", "On four sentence pairs with a clear referent, no head's weights from", PRINTED)],
    "13": [("13-000", "For X tokens that is a X matrix of weights per head, and everything th", DEFINITION),
           ("13-002", "The same for X (section 3), which never builds the X weights.", DESIGN),
           ("13-009", "**It is not a faster way to compute attention in numpy**", PRINTED),
           ("13-009", "While the X arrays fit in the processor's cache (its small, fast memor", PRINTED),
           ("13-009", "That effect is the whole point of FlashAttention (section 3) on a GPU", CITED),
           ("13-011", "They never build the weights: the next two sections show how.", DESIGN),
           ("13-016", "Check it on 8 positions with seeded random X (X), with tiles of 3", DEFINITION),
           ("13-024", "X is the loop above, for any batch of heads at once: each tile is a bl", DESIGN),
           ("13-025", "r\"\"\"Attention tile by tile with the online softmax", DESIGN),
           ("13-055", "(Notebook 11's trained models would write something sensible, but they", DESIGN),
           ("13-055", "X always picks the highest-scoring token (*greedy decoding*)", DEFINITION),
           ("13-028", "The scores (float32) agree to about a millionth, but not always bit fo", PRINTED),
           ("13-032b", "Measured on a larger random decoder (X, 8 heads, 2 blocks, X)", PRINTED),
           ("13-051", "Counting multiply-adds instead of timing them says why, and what large", DEFINITION),
           ("13-035", "The recomputation's time can grow faster than its count at the longest", PRINTED),
           ("13-035", "In a real model (X in the thousands, on a GPU) the arithmetic is a far", CITED),
           ("13-035", "**Predict, then run.** Llama 2 7B has 32 layers of 32 heads, all with", DESIGN),
           ("13-038", "None of the models in the table reads 128k tokens", PRINTED),
           ("13-042", "The checker tries the larger max in either half", GUARANTEE),
           ("13-050", "**Tiled attention** adds a running weighted sum of the values, rescale", DESIGN),
           ("13-050", "The sentence is the running example of notebooks 07 and 08; all other", DEFINITION)],
    "14": [("14-002", "Frequent words end up as one token; rare ones stay split into pieces", DESIGN),
           ("14-004", "As in GPT-2, the text is first cut into **chunks**", DESIGN),
           ("14-008", "**One merge, by hand.** Count every pair in every chunk", HEADING),
           ("14-015", "Notebook 12's model used **WordPiece**, a close cousin", DESIGN),
           ("14-017", "So each token's gradient sums to zero: shifting all of a token's featu", DEFINITION),
           ("14-021", "**multi-head attention**: the output projection, then the gradient is", DEFINITION),
           ("14-021", "This is why deep residual networks train: the gradient always has a di", DEFINITION),
           ("14-024", "The key bias X gets exactly zero gradient: adding the same vector to e", DEFINITION),
           ("14-064", "The **backward pass** of a GPT is the chain rule through pieces you ca", DEFINITION)],
    "15": [("15-026", "Watch a fresh model for a few seconds (a smaller batch than the real r", HEADING),
           ("15-dropout-3", "One pair of runs shows no direction", PRINTED),
           ("15-dropout-3", "What is known more widely: dropout is meant for a model that fits its", CITED),
           ("15-037", "Under the figure, 12 tokens sampled with these settings and a fixed se", GUARANTEE),
           ("15-043", "With a window of at most 64 tokens that recomputation is short", PRINTED),
           ("15-043", "In two lines: all-MiniLM-L6-v2's head (0, 2) puts practically all of e", PRINTED),
           ("15-047", "**grouped-query** (notebook 13) at 70B | a smaller KV cache", DESIGN),
           ("15-047", "X is the *gate*, which decides, feature by feature, how much of X pass", DEFINITION),
           ("15-051", "Almost all of Llama's parameters are in the blocks", PRINTED),
           ("15-047", "In every panel the top-left square is bright for another reason", DEFINITION),
           ("15-064", "**Trained** with Adam on one CPU core, the two-block model beats the u", PRINTED),
           ("15-064", "Its heads look back one token more than an even spread would, none as", PRINTED),
           ("15-064", "Scale it up: more blocks, a wider X, a longer context, a larger vocabu", HEADING),
           ("15-064", "X is the recipe; every change costs minutes of CPU and shows in the va", DESIGN)],
}


MISCONCEPTION = "takes a misconception or a wrong answer apart (its own evidence is the notebook's, cited there)"

#: The same for the answer keys ("answers") and the guide's sections ("guide").
for _number, _entries in {
    "00": [("guide", "**Misconceptions addressed:** rows vs columns: in this series (and in", CITED)],
    "02": [("guide", "**Objectives:** compute one score by hand, all scores for a query with", HEADING),
           ("guide", "\"a score is only about direction\" (the core text after the geometry ta", MISCONCEPTION)],
    "03": [("answers", "believes a token attends to itself when the softmax gets sharp; a temp", MISCONCEPTION),
           ("answers", "Every score divided by a huge X is close to 0, every X, and the weight", DEFINITION)],
    "04": [("answers", "**Question.** Double every embedding, X.", HEADING),
           ("answers", "thinks larger scores make the weights flatter; larger differences make", MISCONCEPTION)],
    "06": [("06-004", "With X the scores lie tens of units apart, and the softmax gives nearl", PRINTED),
           ("guide", "**Objectives:** derive that the variance of a dot product of random un", HEADING),
           ("guide", "\"Length\" in this notebook means the dimension X, never the norm.", DEFINITION)],
    "08": [("answers", "A score is the sum over *all* the query and key features of a head", DEFINITION)],
    "09": [("answers", "ALiBi's penalty X prefers near keys but excludes none", DEFINITION),
           ("answers", "(Reverse has no causal mask, so a model could count the keys, but none", DESIGN),
           ("guide", "\"RoPE is added to X\" (it rotates the queries and keys, never the value", MISCONCEPTION),
           ("guide", "\"a learned table with spare rows can use them\" (rows 8 to 15 were neve", MISCONCEPTION),
           ("guide", "X alone (ALiBi slides but stays above 80 %: its penalty depends only o", PRINTED)],
    "10": [("answers", "forgets the division by X: that is dropout without the rescaling, whic", MISCONCEPTION),
           ("guide", "\"the residual is a detail\" (without it the gradient printout drops to", MISCONCEPTION)],
    "11": [("11-039", "**Positions.** Without them the reverse loss stays high and the accura", PRINTED),
           ("answers", "Layer 1 uses positions 9 to 11 only as *queries* (they need their own", PRINTED),
           ("answers", "A second head can attend to a second useful position (say the previous", DESIGN),
           ("answers", "In one layer every head reads only the original embeddings, so no numb", DESIGN),
           ("guide", "**Optional cells:** the X source, the table of the linear, embedding a", HEADING),
           ("guide", "The reverse task without positions trains in a second or two; the slow", HEADING),
           ("guide", "Every number of §6 and §7 comes from runs shipped in X, built by X wit", GUARANTEE),
           ("answers", "forgets notebook 06: unscaled scores spread about X times wider, and a one-hot", DEFINITION)],
    "12": [("answers", "expects every head of a layer to matter alike; a broad head adds much", MISCONCEPTION),
           ("answers", "**Answer.** (b): the largest move of a cosine is 0.019 (zero) and 0.02", PRINTED),
           ("answers", "A good sink is a token that is always present at the same place (X at", DESIGN),
           ("guide", "\"this head resolves pronouns\" (on four pairs with a clear referent no", MISCONCEPTION),
           ("guide", "\"the head with the sharpest pattern matters most\" (removing (0, 2) mov", MISCONCEPTION),
           ("guide", "(2) (b) a little, every nearest neighbour stays); exercise 12.3 (b) as", HEADING)],
    "13": [("answers", "counts one layer; every layer has its own keys and values.", MISCONCEPTION),
           ("answers", "\"four arrays\" (true of a softmax that keeps every intermediate alive t", MISCONCEPTION),
           ("answers", "The gap is far below 512 because the cached step does only 0.1 to 0.2", PRINTED),
           ("answers", "The count gives the shape, not the time: the growth factors the notebo", PRINTED),
           ("answers", "In a real model (X in the thousands, on a GPU) the arithmetic is a far", CITED),
           ("guide", "**\"tiling makes attention faster\"**: in numpy it saves memory, not tim", MISCONCEPTION),
           ("guide", "**\"the cache changes the result\"**: the generated tokens are identical", MISCONCEPTION)],
    "14": [("answers", "Every chunk is a word with the space before it, and the words starting", DESIGN),
           ("answers", "The chunking cuts the text into words *with the space before them*", DESIGN),
           ("answers", "counts pairs across the chunking: the space belongs to the start of th", MISCONCEPTION),
           ("guide", "**What the class will see (numbers printed by the notebook):** the fir", PRINTED),
           ("guide", "**Misconceptions:** **\"BPE is a fixed dictionary of words\"**: it is an", MISCONCEPTION)],
    "15": [("answers", "Every head still gives the previous token more than chance (0.12, the", PRINTED),
           ("answers", "reads \"more than chance\" as \"more than half\": every head does look bac", PRINTED),
           ("answers", "Greedy always takes the most probable token, so the same context alway", DEFINITION),
           ("answers", "\"top-p alone breaks the loop\" (with temperature 0 the most probable to", MISCONCEPTION),
           ("answers", "More training and a larger model give the heads room to specialise: a", CITED),
           ("answers", "With a previous-token head in one block, a head in a later block can s", PRINTED),
           ("answers", "Llama 2 7B's feed-forward share (64.2 % in the notebook's table) is la", PRINTED),
           ("answers", "Not as a regulariser should succeed: the gap is smaller only because t", PRINTED),
           ("guide", "With and without the cache the text is identical; the cache is faster", PRINTED),
           ("guide", "On a validation sentence no head puts more than half its weight on the", PRINTED),
           ("guide", "Darcy\") and after an open one (\"she said\"); the seeded sample under th", GUARANTEE),
           ("guide", "**Where next:** Karpathy's nanoGPT and his lecture *Let's build GPT* (", HEADING)],
    "01": [("01-010", "Deep-learning libraries do not build it either: their embedding layers index", PRINTED)],
    "05": [("09c4c179", "*creature* puts almost all its weight on *fluffy* and *blue*", PRINTED)],
    "16": [("answers", "With a scale alone (Q4_0) the 16 levels are centred on zero, X, so a b", DEFINITION),
           ("answers", "*Wrong:* \"the ablation failed because the loss is not back to the firs", MISCONCEPTION),
           ("answers", "Within one layer all heads read the same input, so the two steps need", DESIGN)],
    "17": [("17-000", "In notebook 16 every query read every earlier key, and the cache kept them all.", DESIGN),
           ("17-010", "every setting was computed once and ships with the series", DESIGN),
           ("17-021", "adds a small **decoupled RoPE key**, shared by all heads and cached beside X", DESIGN),
           ("17-025", "Gemma 3 has five windowed layers (1,024 tokens) per full one", CITED),
           ("17-025", "MLA shrinks every layer instead.", DESIGN),
           ("17-027", "model window full every cache, all full with windows saved", HEADING),
           ("17-028", "MLA is small on every layer.", DESIGN),
           ("answers", "expects a window to help by removing distant noise", MISCONCEPTION),
           ("answers", "gives each head its own latent: the latent is shared by all heads", MISCONCEPTION),
           ("answers", "MLA never stores keys or values.", DESIGN),
           ("answers", "expects the plain sum to separate the pairs: every read-out picks up every other pair",
            MISCONCEPTION),
           ("answers", "Most of a row's weight sits on a few keys, and they are not only the nearest ones", PRINTED),
           ("guide", "DeepSeek-V3 caches 576 numbers per token and layer against 40,960 for multi-head attention",
            PRINTED)],
}.items():
    ALLOWED.setdefault(_number, []).extend(_entries)


def allowed_fragments(notebook):
    return [(cell, piece) for cell, piece, _ in ALLOWED.get(notebook, ())]


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
       "Yet the mean is *larger* than with scaling", "nothing for most queries and a push for a few",
       "With scaling every query gets a moderate slope")
@claim("06", "06-034", "at $d_k = 1024$ unscaled, most of 2,000 random queries get none and a few get a large one")
@claim("06", "answers", "with nearly one-hot weights it is small for most rows, and the slope that reaches the "
       "query is "
       "heavy-tailed (the notebook measures it on 2,000 queries at $d_k = 1024$: none for most, large for a few)")
@claim("06", "guide", "the slope that reaches a query turn heavy-tailed (none for most queries, large for a few)")
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


def runs():
    from attn_helpers.training import load_runs
    return load_runs()


@claim("11", "11-039", "training is **slower, not stalled**: the loss after 10 steps is 2.228 against 0.342, and it "
       "first gets below 0.1 at step 65 against step 12")
@claim("11", "11-042", "training is slower, not stalled, in one run of each: 65 steps against 12 to a loss below 0.1 "
       "with Adam, 19 against 13 with plain gradient descent")
@claim("06", "06-014d", "Notebook 11 trains an unscaled model and finds what this predicts: slower, not stalled")
@claim("11", "answers", "(b), slower, not stalled: the rows start almost one-hot (mean largest weight 0.99 against "
       "0.57 "
       "scaled), the loss at step 10 is 2.228 against 0.342, and it first gets below 0.1 at step 65 against step 12")
@claim("11", "guide", "training is slower, not stalled: the loss first gets below 0.1 at step 65 against 12 with "
       "Adam, at "
       "step 19 against 13 with plain gradient descent")
def unscaled_slower_not_stalled():
    def first_below(losses):
        return int(np.argmax(np.asarray(losses) < 0.1)) + 1
    scaled, unscaled = runs()["reverse, d_model 128, scaled"], runs()["reverse, d_model 128, unscaled"]
    assert first_below(scaled.losses) == 12 and first_below(unscaled.losses) == 65
    np.testing.assert_allclose([unscaled.losses[9], scaled.losses[9]], [2.228, 0.342], atol=0.0006)
    sgd = [printed_number("11", "11-039a", rf"{name}\s+loss at step 10 [\d.]+;  first step < 0.1: (\d+)")
           for name in ("scaled", "unscaled")]
    assert sgd == [13, 19], sgd  # notebook 11 trains these two in the cell (nbval recomputes them)


@claim("11", "11-039b", "the gap is *smaller* than with Adam: 19 steps against 13")
def sgd_gap_smaller():
    sgd = [printed_number("11", "11-039a", rf"{name}\s+loss at step 10 [\d.]+;  first step < 0.1: (\d+)")
           for name in ("scaled", "unscaled")]
    assert sgd[1] - sgd[0] < 65 - 12


@claim("11", "11-039", "One layer did not solve induction, with one head or with two",
       "Two heads side by side help a little, far from 99 %")
def one_layer_does_not_solve_induction():
    accuracy = {name: runs()[name].held_out_accuracy for name in
                ("induction", "induction, 1 layer, 1 head", "induction, 1 layer, 2 heads")}
    assert accuracy["induction"] > 0.99 and accuracy["induction, 1 layer, 1 head"] < accuracy[
        "induction, 1 layer, 2 heads"] < 0.7, accuracy


@claim("11", "11-036", "so most rows of the softmax start almost one-hot")
def unscaled_rows_start_one_hot():
    start = runs()["reverse, d_model 128, unscaled"].snapshots[0][0, 0].max(axis=-1)  # (T,): each row's largest
    assert np.mean(start > 0.9) > 0.5, start


# ---------------------------------------------------------------- notebook 12: the encoder's habits (printed)
@claim("12", "guide", "while no head gives `[SEP]` more than 0.15 on average")
@claim("12", "b6f1eae1", "No head does it with `[SEP]`, whose largest mean share is 0.15",
       stored="notebook 12's printed fingerprints (nbval recomputes)")
def no_head_parks_on_sep():
    assert notebook_12_top(r"\[SEP\]") <= 0.15
    assert "[SEP], on the mean over the sentences           0        0        0        0        0        0" in \
        cell_text("12", "341a6722")[1]


@claim("12", "b6f1eae1", "layer 0, head 2 puts practically all of every token's weight on the token before it")
def previous_token_head_all_weight():
    assert notebook_12_top("previous") >= 0.99


@claim("12", "b6f1eae1", "no layer spreads its weight evenly")
def no_layer_spreads_evenly():
    text = cell_text("12", "341a6722")[1]
    uniform = float(re.search(r"uniform entropy log T = ([\d.]+)", text).group(1))
    means = [float(v) for v in re.findall(r"layer \d: ([\d.]+) \(", text)]
    assert len(means) == 6 and max(means) < uniform - 0.5, means


@claim("12", "7033f43b", "most of the summed lengths of what it passes on come from the other tokens")
def cls_supplies_a_minority():
    share = float(re.search(r"and supplies ([\d.]+) of the summed lengths", " ".join(
        cell_text("12", c)[1] for c in _cells_of("12"))).group(1))
    assert share < 0.5, share


def _cells_of(notebook):
    (path,) = (ROOT / "notebooks").glob(f"{notebook}_*.ipynb")
    return [c["id"] for c in json.loads(path.read_text(encoding="utf-8"))["cells"]]


# ---------------------------------------------------------------- notebook 16: the vocabulary
@claim("16", "16-012", "this vocabulary has no token that joins a space and a digit")
def no_space_digit_token():
    tokenizer = smollm2().tokenizer
    pieces = [smollm2().decode([i]) for i in range(tokenizer.vocab_size)]
    assert not [p for p in pieces if re.match(r" \d", p)]


# ---------------------------------------------------------------- notebook 09: positions past the training length
@claim("09", "589f694f", "**RoPE**: right at every position, although offsets larger than 7 never occurred in training")
@claim("09", "answers", "at 16 tokens RoPE gets 1.000 (every seed)")
def rope_right_at_every_position():
    from attn_helpers.position_runs import KINDS, shipped_accuracy_by_position
    by_position = shipped_accuracy_by_position()  # (kinds, seeds, T): every seed, every position of 16 tokens
    assert (by_position[KINDS.index("rope"), :, 1:] > 0.99).all()


# ---------------------------------------------------------------- notebook 04: the running example
@claim("04", "04-024", "The longest vector, \"journey\", wins most rows.")
def journey_wins_most_rows():
    from attn_helpers.core import softmax
    from attn_helpers.examples import JOURNEY_TOKENS, journey_embeddings
    X = journey_embeddings(np.float64)
    weights = softmax(X @ X.T)  # (T, d) @ (d, T) -> (T, T)
    journey = JOURNEY_TOKENS.index("journey")
    assert np.argmax(np.linalg.norm(X, axis=-1)) == journey
    assert np.mean(weights.argmax(axis=-1) == journey) > 0.5


@claim("16", "answers", "the early layers do hold strong previous-token heads ((2, 1) at 0.74, (1, 2) at 0.69)",
       "the measurement does: no head of layers 0-9 scores above 0.3")
def early_previous_token_heads_no_early_induction():
    study = induction()
    np.testing.assert_allclose([study["previous"][2, 1], study["previous"][1, 2]], [0.74, 0.69], atol=0.006)
    assert (study["scores"][:10] <= 0.3).all()


@claim("16", "answers", "expects every head to be idle: the heads still read other tokens")
@claim("16", "answers", "in layers 15 to 29 most heads park more than half of their weight, on the mean over the 12 "
       "prompts")
def late_heads_park_but_not_all():
    late = sinks()[:, 15:]  # (prompts, 15, heads)
    assert (late.mean(axis=0) > 0.5).mean() > 0.5 and late.mean() < 0.9
