"""Notebook 09: word order. Three explorers, each drawing numbers the numpy core computes.

- :func:`order_explorer`: put "dog bites man" in any order, with or without positions added; see the
  context vectors and how far each word's output moved (:func:`~attn_helpers.examples.reorder_outputs`).
- :func:`encoding_explorer`: the sinusoidal encoding as a heatmap for a chosen ``d_model``, and the dot
  product of one position's vector with every other (:func:`~attn_helpers.positions.positional_encoding`).
- :func:`rotation_explorer`: one query pair and one key pair rotated by RoPE in the plane; shift both
  positions and the score stays (:func:`~attn_helpers.positions.rope`).
"""

from __future__ import annotations

import itertools

import numpy as np

from ..examples import DOG_BITES_MAN_TOKENS, reorder_outputs
from ..plotting import OKABE_ITO, heatmap, token_colours
from ..positions import positional_encoding, rope
from . import Explorer, dropdown, slider, toggle

__all__ = ["ORDERS", "NUM_FEATURES_SHOWN", "draw_order", "order_explorer", "ENCODING_POSITIONS", "D_MODEL_CHOICES",
           "draw_encoding", "encoding_explorer", "ROPE_QUERY", "ROPE_KEY", "rotated_pair", "draw_rotation",
           "rotation_explorer", "EXPLORERS"]

#: Every order of the three words, by its sentence ("man bites dog" -> (2, 1, 0)).
ORDERS = {" ".join(DOG_BITES_MAN_TOKENS[i] for i in order): order
          for order in itertools.permutations(range(len(DOG_BITES_MAN_TOKENS)))}

#: How many of the 50 features of each context vector the order explorer draws.
NUM_FEATURES_SHOWN = 12

_WORD_COLOURS = dict(zip(DOG_BITES_MAN_TOKENS, token_colours(DOG_BITES_MAN_TOKENS), strict=True))


def _largest_change():
    """The largest change any reordering causes (with positions): a fixed y-axis for every setting."""
    return max(float(reorder_outputs(order, with_positions=True)["change"].max()) for order in ORDERS.values())


def draw_order(fig, sentence="man bites dog", positions=False, y_max=None):
    """Left: the context vectors of the reordered sentence; right: how far each word's output moved."""
    if sentence not in ORDERS:
        sentence = " ".join(DOG_BITES_MAN_TOKENS)  # an unknown order: the original sentence
    order = ORDERS[sentence]
    result = reorder_outputs(order, with_positions=bool(positions))
    reference = reorder_outputs((0, 1, 2), with_positions=bool(positions))
    left, right = fig.subplots(1, 2, width_ratios=[2.2, 1])
    shown = result["context"][:, :NUM_FEATURES_SHOWN]
    limit = float(np.abs(reference["context"][:, :NUM_FEATURES_SHOWN]).max())
    heatmap(shown, result["tokens"], range(NUM_FEATURES_SHOWN), ax=left, vmin=-limit, vmax=limit, cmap="PuOr_r",
            annotate=False, xlabel=f"feature (first {NUM_FEATURES_SHOWN} of {result['context'].shape[1]})",
            ylabel="word (new order)", cbar_label="context value",
            title=f"context vectors of {sentence!r}" + (" + positions" if positions else ""))
    words = DOG_BITES_MAN_TOKENS
    change = result["change"]
    bars = right.bar(range(len(words)), change, color=[_WORD_COLOURS[w] for w in words])
    right.bar_label(bars, labels=[f"{c:.2f}" for c in change], fontsize=11)
    right.set_xticks(range(len(words)), labels=words)
    right.set_ylim(0, 1.2 * (_largest_change() if y_max is None else y_max))
    right.set_ylabel("distance to the original output")
    right.set_title("how far each output moved")
    moved = [w for w, c in zip(words, change, strict=True) if c > 1e-4]
    if not positions:
        return (f"{sentence!r} without positions: every word keeps exactly its context vector (largest distance "
                f"{change.max():.1e}); the rows are only reordered.")
    if not moved:
        return f"{sentence!r} with positions: the original order, so nothing moved."
    return (f"{sentence!r} with positions: {len(moved)} of {len(words)} words have a new context vector "
            f"({', '.join(moved)}); the largest distance is {change.max():.2f}.")


def order_explorer():
    """Pick an order of "dog bites man", toggle the positions: which outputs change?"""
    y_max = _largest_change()
    controls = {"sentence": dropdown("word order", list(ORDERS), "man bites dog"),
                "positions": toggle("add sinusoidal positions", False)}

    def draw(fig, sentence, positions):
        return draw_order(fig, sentence=sentence, positions=positions, y_max=y_max)

    return Explorer(draw, controls, figsize=(11, 3.9))


#: Positions the encoding explorer draws (rows of its heatmap).
ENCODING_POSITIONS = 50

#: The ``d_model`` values the encoding explorer offers.
D_MODEL_CHOICES = (16, 32, 64, 128)


def draw_encoding(fig, position=10, d_model=64):
    """Left: ``positional_encoding(50, d_model)`` as a heatmap, one position outlined; right: its dot products."""
    T = ENCODING_POSITIONS
    position = int(min(max(position, 0), T - 1))
    pe = positional_encoding(T, int(d_model), dtype=np.float64)  # (T, d_model)
    left, right = fig.subplots(1, 2, width_ratios=[1.3, 1])
    image = left.imshow(pe, cmap="PuOr_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=left, label="PE value", fraction=0.046, pad=0.03)
    left.axhline(position, color=OKABE_ITO["black"], linewidth=2.5)
    left.set_xlabel("feature (even: sin, odd: cos)")
    left.set_ylabel("position p")
    left.set_title(f"sinusoidal encoding, d_model = {d_model}")
    dots = pe @ pe[position]  # (T, d_model) @ (d_model,) -> (T,): PE[q] . PE[p] for every q
    right.plot(range(T), dots, color=OKABE_ITO["blue"], linewidth=2, marker="o", markersize=3)
    right.axvline(position, color=OKABE_ITO["black"], linewidth=1.5, linestyle="--")
    right.set_ylim(-0.15 * d_model / 2, 1.1 * d_model / 2)
    right.set_xlabel("position q")
    right.set_ylabel(f"PE[q] · PE[{position}]")
    right.set_title(f"how similar position {position} is to the others")
    neighbour = position + 1 if position + 1 < T else position - 1
    return (f"|PE[p]|² = d_model / 2 = {dots[position]:.0f} at every position; PE[{position}] · PE[{neighbour}] = "
            f"{dots[neighbour]:.2f}, the same for any two neighbours. The dot product falls off with the distance.")


def encoding_explorer():
    """Move the position, change d_model: the encoding's heatmap and one position's similarities."""
    controls = {"position": slider("position p", 10, 0, ENCODING_POSITIONS - 1, 1, integer=True),
                "d_model": dropdown("d_model", D_MODEL_CHOICES, 64)}
    return Explorer(draw_encoding, controls, figsize=(11, 4.2))


#: The query and key pair the rotation explorer rotates (features 0 and 1 of a query and a key).
ROPE_QUERY = (1.0, 0.4)
ROPE_KEY = (0.3, 1.1)


def rotated_pair(query_position, key_position, shift=0):
    """The RoPE-rotated query and key pairs (d = 2: one radian per position) and their score.

    Examples
    --------
    >>> q, k, score = rotated_pair(3, 1)
    >>> round(score, 4) == round(rotated_pair(7, 5)[2], 4)  # same offset, same score
    True
    """
    q = rope(np.array([ROPE_QUERY]), positions=[query_position + shift])[0]  # (1, 2) -> (2,)
    k = rope(np.array([ROPE_KEY]), positions=[key_position + shift])[0]
    return q, k, float(q @ k)


def draw_rotation(fig, query_position=2, key_position=0, shift=0):
    """The query and key pairs before (faint) and after the rotation, with the score and the offset."""
    ax = fig.subplots()
    circle = np.linspace(0, 2 * np.pi, 200)
    radius = max(np.hypot(*ROPE_QUERY), np.hypot(*ROPE_KEY))
    ax.plot(radius * np.cos(circle), radius * np.sin(circle), color=OKABE_ITO["black"], linewidth=0.6, alpha=0.3)
    q, k, score = rotated_pair(query_position, key_position, shift)
    for vector, original, colour, name in [(q, ROPE_QUERY, OKABE_ITO["blue"], "query"),
                                           (k, ROPE_KEY, OKABE_ITO["orange"], "key")]:
        ax.annotate("", xy=original, xytext=(0, 0),
                    arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.35, "linestyle": "--", "lw": 1.5})
        ax.annotate("", xy=vector, xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2.5})
        ax.text(*(1.12 * vector), f"{name}", color=colour, fontsize=12, ha="center", va="center")
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_aspect("equal")
    ax.axhline(0, color=OKABE_ITO["black"], linewidth=0.5, alpha=0.4)
    ax.axvline(0, color=OKABE_ITO["black"], linewidth=0.5, alpha=0.4)
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    m, n = query_position + shift, key_position + shift
    ax.set_title(f"query at {m}, key at {n}: offset {m - n}, score {score:.3f}")
    return (f"Each position turns a pair by 1 radian (dashed: before the rotation). Offset m − n = {m - n}; "
            f"score = {score:.3f}. Shift both positions and the score stays {score:.3f}.")


def rotation_explorer():
    """Rotate one query pair and one key pair by their positions; shift both and watch the score."""
    controls = {"query_position": slider("query position m", 2, 0, 8, 1, integer=True),
                "key_position": slider("key position n", 0, 0, 8, 1, integer=True),
                "shift": slider("shift both by", 0, 0, 20, 1, integer=True)}
    return Explorer(draw_rotation, controls, figsize=(5.6, 5.4))


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"order_explorer": order_explorer, "encoding_explorer": encoding_explorer,
             "rotation_explorer": rotation_explorer}
