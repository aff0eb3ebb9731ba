r"""What SmolLM2's heads do, measured (notebook 16): attention sinks, induction heads, previous-token heads.

Each measure is a plain function of attention weights ``(..., T, T)`` (tested on hand-made patterns) and a
``*_study`` function that runs the model over many inputs and keeps the numbers (cached: the notebook's checkers
ask for the same numbers as its cells).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import numpy as np

from ._validate import as_float_array, as_positive_int
from .core import log_softmax
from .heads import head_value_lengths
from .pretrained import head_fingerprints

__all__ = ["SINK_PROMPTS", "first_token_weight", "previous_token_score", "induction_score", "repeated_random_tokens",
           "next_token_losses", "right_padded", "sink_study", "induction_study", "head_value_lengths",
           "first_token_parking", "smollm2_parking", "tiny_gpt_parking", "sink_head_shares", "induction_checks",
           "parking_over_prompts", "INDUCTION_CHECKS_PATH", "stored_induction_checks"]

#: :func:`induction_checks` on SmolLM2, stored by ``tools/build_induction_checks.py`` (8 s to recompute: notebook 16
#: reads it; tests/test_claims.py recomputes it).
INDUCTION_CHECKS_PATH = Path(__file__).resolve().parent / "data" / "nb16_induction_checks.json"

#: Prompts of several kinds over which the first token's weight is measured (chat, prose, code, lists, numbers).
SINK_PROMPTS = (
    "The capital of France is Paris, and the capital of Italy is Rome.",
    "Once upon a time, a small robot found a flower growing between two stones.",
    "def add(a, b):\n    return a + b\n\nprint(add(2, 3))",
    "Ingredients: flour, sugar, three eggs, butter and a pinch of salt.",
    "<|im_start|>user\nWhat is the boiling point of water?<|im_end|>\n<|im_start|>assistant\n",
    "In 1969, Neil Armstrong became the first person to walk on the Moon.",
    "Attention lets every token look at every other token before it.",
    "She said that the report would be finished by Friday, but it was not.",
    "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15",
    "The quick brown fox jumps over the lazy dog while the cat sleeps.",
    "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
    "Dear Sir or Madam, I am writing to ask about the opening hours of the library.",
)


def _weights(weights, min_T=2):
    weights = as_float_array(weights, "weights", min_ndim=2)
    T = weights.shape[-1]
    if weights.shape[-2] != T or T < min_T:
        raise ValueError(f"weights must have shape (..., T, T) with T >= {min_T}; got {weights.shape}")
    return weights


def first_token_weight(weights):
    """The mean weight the queries ``1 .. T-1`` put on the first token (query 0 can see nothing else).

    ``weights (..., T, T)``. Returns ``(...)``: one number per head.

    >>> sink = np.tril(np.ones((4, 4))); sink[1:, 1:] = 0; sink[1:, 0] = 1      # every row on token 0
    >>> float(first_token_weight(sink))
    1.0
    """
    weights = _weights(weights)
    return weights[..., 1:, 0].mean(axis=-1)


def previous_token_score(weights):
    """The mean weight on the token just before (queries ``1 .. T-1``): notebook 12's ``"previous"`` fingerprint.

    >>> previous = np.eye(4, k=-1); previous[0, 0] = 1
    >>> float(previous_token_score(previous))
    1.0
    """
    weights = _weights(weights)
    flat = weights.reshape(-1, 1, *weights.shape[-2:])  # (heads, 1, T, T): head_fingerprints wants 4 axes
    return head_fingerprints(flat)["previous"].reshape(weights.shape[:-2])


def induction_score(weights, period):
    r"""How an induction head attends on a sequence that repeats itself after ``period`` tokens.

    At query :math:`i \ge` ``period``, token :math:`i` occurred before at :math:`i - \text{period}`; an induction head
    looks at what came *next* then, key :math:`i - \text{period} + 1`, to predict it again. The score is the mean
    weight on that key over the queries of the repeat, ``period .. 2 period - 1``.

    ``weights (..., T, T)`` with ``T >= 2 period``. Returns ``(...)``.

    >>> L = 3; w = np.zeros((6, 6)); w[:L, 0] = 1
    >>> for i in range(L, 6): w[i, i - L + 1] = 1
    >>> float(induction_score(w, L))
    1.0
    """
    period = as_positive_int(period, "period")
    weights = _weights(weights, 2 * period)
    queries = np.arange(period, 2 * period)
    return weights[..., queries, queries - period + 1].mean(axis=-1)


def repeated_random_tokens(period, rng, low=1000, high=40000):
    """``period`` random token ids, then the same ids again: ``(2 period,)``. Drawn from ``low .. high-1`` (ordinary
    words and pieces, no special tokens)."""
    first = np.asarray(rng.integers(low, high, size=as_positive_int(period, "period")))
    return np.concatenate([first, first])


def next_token_losses(logits, ids):
    """Cross-entropy of each next token: ``-log p(ids[t + 1] | ids[:t + 1])`` for ``t = 0 .. T-2``, in nats.

    >>> next_token_losses(np.zeros((3, 4)), [0, 1, 2]).round(4)      # uniform over 4 tokens: log 4
    array([1.3863, 1.3863])
    """
    logits = as_float_array(logits, "logits", min_ndim=2).astype(np.float64)
    ids = np.asarray(ids)
    log_probs = log_softmax(logits[:-1])  # (T-1, vocab)
    return -log_probs[np.arange(len(ids) - 1), ids[1:]]


def first_token_parking(weights, lengths):
    """Does a head park weight on the first token? ``weights (..., h, T, T)``, ``lengths (..., h, T)``
    (:func:`head_value_lengths`). Returns dict of ``(..., h)`` arrays, means over the queries ``1 .. T-1``:
    ``weight`` (on the first token), ``share`` (the first token's share of what the head writes, weight times
    length), ``length_ratio`` (the first token's value length over the mean of the others').

    >>> w = np.tril(np.ones((3, 3))); w[1:, 1:] = 0; w[1:, 0] = 1                 # all weight on token 0
    >>> parked = first_token_parking(w[None], np.array([[0.1, 1.0, 1.0]]))
    >>> float(parked["weight"][0]), float(parked["share"][0]), float(parked["length_ratio"][0])
    (1.0, 1.0, 0.1)
    """
    weights, lengths = _weights(weights), as_float_array(lengths, "lengths")
    moved = weights * lengths[..., None, :]  # (..., h, T, T): ||w_ij v_j W_o||
    share = (moved[..., 1:, 0] / moved[..., 1:, :].sum(axis=-1)).mean(axis=-1)
    return {"weight": first_token_weight(weights), "share": share,
            "length_ratio": lengths[..., 0] / lengths[..., 1:].mean(axis=-1)}


def smollm2_parking(model, ids):
    """:func:`first_token_parking` for every block of SmolLM2 on ``ids``: dict of ``(layers, h)`` arrays."""
    records = []
    weights = model.forward(ids, records=records)[1]  # (layers, h, T, T)
    lengths = np.stack([head_value_lengths(b, r["normed_1"]) for b, r in zip(model.blocks, records)])
    return first_token_parking(weights, lengths)


def tiny_gpt_parking(decoder, ids):
    """:func:`first_token_parking` for every block of notebook 15's tiny GPT (its ``decoder``) on ``ids``."""
    from .block import residual_stream
    from .gpt import attention_weights
    from .positions import positional_encoding

    ids = np.asarray(ids)
    x = decoder.embeddings[ids] + positional_encoding(len(ids), decoder.d_model)  # as the decoder embeds its input
    states = residual_stream(x, decoder.blocks, np.tri(len(ids), dtype=bool))  # (blocks + 1, T, d): each block's input
    lengths = np.stack([head_value_lengths(b, b.norm_1(state)) for b, state in zip(decoder.blocks, states)])
    return first_token_parking(attention_weights(decoder, ids), lengths)


def right_padded(sequences, pad=0):
    """Sequences of different lengths as one batch ``(B, T_max)``, filled up on the right with ``pad``.

    Under a causal mask a token never sees the tokens after it, so the padding changes nothing at the real
    positions: sequence ``b``'s numbers are the batch's ``[b, :len(b)]``.

    >>> right_padded([[5, 6, 7], [8]])
    array([[5, 6, 7],
           [8, 0, 0]])
    """
    T = max(len(s) for s in sequences)
    return np.array([list(s) + [pad] * (T - len(s)) for s in sequences])


@functools.lru_cache(maxsize=2)
def sink_study(model, prompts=SINK_PROMPTS):
    """The first token's weight for every head over ``prompts``: ``(prompts, layers, h)``. One batched forward."""
    encoded = [model.encode(p) for p in prompts]
    weights = model.forward(right_padded(encoded))[1]  # (B, layers, h, T_max, T_max)
    return np.stack([first_token_weight(w[..., :len(ids), :len(ids)]) for w, ids in zip(weights, encoded)])


@functools.lru_cache(maxsize=4)
def induction_study(model, period=40, seeds=(0, 1, 2), top=6):
    """The repeated-random-tokens test over ``seeds``: dict of ``scores (layers, h)`` (mean over seeds),
    ``previous (layers, h)``, ``top`` (the ``top`` heads by score, ``(layer, head)``), ``loss_first``, ``loss_second``
    (mean next-token loss on each half), and the same two losses with the top heads ablated, and with ``top``
    other heads ablated (the control: heads of the same layers chosen at random)."""
    batch = np.stack([repeated_random_tokens(period, np.random.default_rng(seed)) for seed in seeds])  # (B, 2 period)
    logits, weights = model.forward(batch)  # one forward for all the seeds: (B, T, vocab), (B, layers, h, T, T)
    scores = induction_score(weights, period).mean(axis=0)  # (layers, h): mean over the seeds
    previous = previous_token_score(weights).mean(axis=0)
    order = np.argsort(-scores, axis=None, kind="stable")[:top]
    top_heads = [tuple(int(v) for v in np.unravel_index(i, scores.shape)) for i in order]
    rng = np.random.default_rng(15)
    control = []
    for layer, _ in top_heads:  # another head of the same layer, not a top one
        options = [h for h in range(scores.shape[1]) if (layer, h) not in top_heads and (layer, h) not in control]
        control.append((layer, int(rng.choice(options))))

    def halves(ablate):
        out = model.forward(batch, ablate=ablate)[0] if ablate else logits
        losses = np.stack([next_token_losses(lg, ids) for lg, ids in zip(out, batch)])  # (B, 2 period - 1)
        return float(losses[:, :period - 1].mean()), float(losses[:, period:].mean())  # second: seen before

    (loss_first, loss_second), ablated, controlled = halves(()), halves(tuple(top_heads)), halves(tuple(control))
    return {"scores": scores, "previous": previous, "top": top_heads, "control": control, "loss_first": loss_first,
            "loss_second": loss_second, "ablated_first": ablated[0], "ablated_second": ablated[1],
            "control_first": controlled[0], "control_second": controlled[1]}


def sink_head_shares(sinks, threshold=0.5):
    """The share of heads that give the first token more than ``threshold``, per prompt and layer.

    ``sinks (prompts, layers, h)`` (:func:`sink_study`). Returns ``(prompts, layers)``: "most heads of this layer
    park on this prompt" is a share above one half.

    >>> sink_head_shares(np.array([[[0.9, 0.8, 0.1]]])).round(2)
    array([[0.67]])
    """
    return (np.asarray(sinks) > threshold).mean(axis=-1)


def _control_heads(top_heads, num_heads, rng):
    """For each top head, another head of its layer, not a top head and not drawn already."""
    control = []
    for layer, _ in top_heads:
        options = [h for h in range(num_heads) if (layer, h) not in top_heads and (layer, h) not in control]
        control.append((layer, int(rng.choice(options))))
    return control


@functools.lru_cache(maxsize=2)
def induction_checks(model, period=40, seeds=(0, 1, 2), held_out=(3, 4, 5), draws=5, top=6):
    """Is :func:`induction_study`'s ablation more than luck? Two checks of the same top heads: ``draws`` control
    draws (other heads of the same layers, the first draw is the study's own), and sequences the heads were
    not chosen on (``held_out`` seeds). Returns dict: ``control_second (draws,)``, the mean loss on the second copy
    without each control draw; ``held_intact``, ``held_ablated (len(held_out),)``, each held-out sequence's loss on
    its second copy with all heads and without the top heads."""
    study = induction_study(model, period, seeds, top)
    batch = np.stack([repeated_random_tokens(period, np.random.default_rng(seed)) for seed in seeds])
    rng = np.random.default_rng(15)  # the study's generator: draw 0 is its control
    num_heads = study["scores"].shape[1]

    def second(logits, ids):  # (B,): each sequence's mean loss on the tokens of its second copy
        return np.array([next_token_losses(lg, s)[period:].mean() for lg, s in zip(logits, ids)])

    controls = [second(model.forward(batch, ablate=tuple(_control_heads(study["top"], num_heads, rng)))[0],
                       batch).mean() for _ in range(draws)]
    fresh = np.stack([repeated_random_tokens(period, np.random.default_rng(seed)) for seed in held_out])
    return {"control_second": np.array(controls), "held_intact": second(model.forward(fresh)[0], fresh),
            "held_ablated": second(model.forward(fresh, ablate=tuple(study["top"]))[0], fresh)}


@functools.lru_cache(maxsize=2)
def parking_over_prompts(model, prompts=SINK_PROMPTS):
    """:func:`smollm2_parking` on each prompt, averaged over the heads: dict of ``(prompts, layers)`` arrays
    (``weight``, ``share``, ``length_ratio``)."""
    runs = [smollm2_parking(model, model.encode(p)) for p in prompts]
    return {key: np.stack([run[key].mean(axis=-1) for run in runs]) for key in runs[0]}


def stored_induction_checks(path=INDUCTION_CHECKS_PATH):
    """:func:`induction_checks` as stored: dict of arrays (the same keys)."""
    return {key: np.array(value) for key, value in json.loads(Path(path).read_text(encoding="utf-8")).items()}
