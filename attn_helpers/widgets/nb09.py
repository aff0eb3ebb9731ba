"""Notebook 09: word order: reordered sentences, the sinusoidal encoding, RoPE's rotation (numbers from the core)."""

from __future__ import annotations

import itertools
from functools import partial

import numpy as np

from ..examples import DOG_BITES_MAN_TOKENS, dog_bites_man, reorder_outputs
from ..plotting import OKABE_ITO, heatmap, token_colours
from ..positions import positional_encoding, rope
from . import Explorer, FullRedraw, dropdown, redraw_dynamic, set_bars, slider, toggle, value_bars

__all__ = ["ORDERS", "NUM_FEATURES_SHOWN", "draw_order", "update_order", "order_explorer", "ENCODING_POSITIONS",
           "D_MODEL_CHOICES", "draw_encoding", "update_encoding", "encoding_explorer", "ROPE_QUERY", "ROPE_KEY",
           "rotated_pair", "draw_rotation", "update_rotation", "rotation_explorer", "EXPLORERS"]

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
    words = DOG_BITES_MAN_TOKENS
    T = len(words)
    left, right = fig.subplots(1, 2, width_ratios=[2.2, 1])
    image = heatmap(np.zeros((T, NUM_FEATURES_SHOWN)), [""] * T, range(NUM_FEATURES_SHOWN), ax=left, vmin=-1,
                    vmax=1, cmap="PuOr_r", annotate=False, xlabel=f"feature (first {NUM_FEATURES_SHOWN} of 50)",
                    ylabel="word (new order)", cbar_label="context value", title=" ")
    row_labels = [left.text(-0.7, i, "", ha="right", va="center", fontsize=11) for i in range(T)]  # the words
    left.set_ylabel("word (new order)", labelpad=48)  # room for the word labels, which are texts, not ticks
    bars, labels = value_bars(right, T, [_WORD_COLOURS[w] for w in words])
    right.set_xticks(range(T), labels=words)
    right.set_ylim(0, 1.2 * (_largest_change() if y_max is None else y_max))
    right.set_ylabel("distance to the original output")
    right.set_title("how far each output moved")
    example = dog_bites_man()  # built once per figure: every update reuses it
    limits = {flag: float(np.abs(reorder_outputs((0, 1, 2), flag, example)["context"][:, :NUM_FEATURES_SHOWN]).max())
              for flag in (False, True)}  # one colour scale per setting, from the original order
    fig.handles = {"image": image, "row_labels": row_labels, "bars": bars, "labels": labels, "left": left,
                   "example": example, "limits": limits}
    fig.dynamic = [image, *row_labels, *bars, *labels, left.title]
    return update_order(fig, sentence=sentence, positions=positions)


def update_order(fig, sentence="man bites dog", positions=False, **_):
    """Refill the heatmap, the word labels, the bars and the title for another order or positions setting."""
    h = fig.handles
    if sentence not in ORDERS:
        sentence = " ".join(DOG_BITES_MAN_TOKENS)  # an unknown order: the original sentence
    result = reorder_outputs(ORDERS[sentence], with_positions=bool(positions), example=h["example"])
    limit = h["limits"][bool(positions)]
    if h["image"].get_clim() != (-limit, limit):
        h["image"].set_clim(-limit, limit)
        fig.background_changed = True  # the colorbar follows the new limits
    h["image"].set_data(result["context"][:, :NUM_FEATURES_SHOWN])
    for text, word in zip(h["row_labels"], result["tokens"], strict=True):
        text.set_text(word)
    change = result["change"]
    set_bars(h["bars"], change, h["labels"])
    h["left"].set_title(f"context vectors of {sentence!r}" + (" + positions" if positions else ""))
    words = DOG_BITES_MAN_TOKENS
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
    return Explorer(partial(draw_order, y_max=y_max), controls, figsize=(10.2, 3.9), update=update_order)


#: Positions the encoding explorer draws (rows of its heatmap).
ENCODING_POSITIONS = 50

#: The ``d_model`` values the encoding explorer offers.
D_MODEL_CHOICES = (16, 32, 64, 128)


def draw_encoding(fig, position=10, d_model=64):
    """Left: ``positional_encoding(50, d_model)`` as a heatmap, one position marked; right: its dot products."""
    T = ENCODING_POSITIONS
    d_model = int(d_model)
    pe = positional_encoding(T, d_model, dtype=np.float64)  # (T, d_model)
    left, right = fig.subplots(1, 2, width_ratios=[1.3, 1], gridspec_kw={"wspace": 0.12})
    image = left.imshow(pe, cmap="PuOr_r", vmin=-1, vmax=1, aspect="auto", interpolation="nearest")
    fig.colorbar(image, ax=left, label="PE value", fraction=0.046, pad=0.03)
    left.set_xlabel("feature (even: sin, odd: cos)")
    left.set_ylabel("position p")
    left.set_title(f"sinusoidal encoding, d_model = {d_model}")
    marker = left.axhline(0, color=OKABE_ITO["black"], linewidth=2.5)
    (curve,) = right.plot(range(T), np.zeros(T), color=OKABE_ITO["blue"], linewidth=2, marker="o", markersize=3)
    cursor = right.axvline(0, color=OKABE_ITO["black"], linewidth=1.5, linestyle="--")
    right.set_xlim(-1, T)
    right.set_ylim(-0.15 * d_model / 2, 1.1 * d_model / 2)
    right.set_xlabel("position q")
    right.set_ylabel("PE[q] · PE[p]")
    right.set_title(" ")
    fig.handles = {"pe": pe, "d_model": d_model, "marker": marker, "curve": curve, "cursor": cursor, "right": right}
    fig.dynamic = [marker, curve, cursor, right.title]
    return update_encoding(fig, position=position, d_model=d_model)


def update_encoding(fig, position=10, d_model=64, **_):
    """Move the marked position: the line on the heatmap, the dot-product curve, the title and the note."""
    h = fig.handles
    if int(d_model) != h["d_model"]:
        raise FullRedraw  # another d_model: new heatmap, new axes limits
    pe = h["pe"]
    T = len(pe)
    position = int(min(max(position, 0), T - 1))
    dots = pe @ pe[position]  # (T, d_model) @ (d_model,) -> (T,): PE[q] . PE[p] for every q
    h["marker"].set_ydata([position, position])
    h["curve"].set_ydata(dots)
    h["cursor"].set_xdata([position, position])
    h["right"].set_title(f"how similar position {position} is to the others")
    neighbour = position + 1 if position + 1 < T else position - 1
    return (f"|PE[p]|² = d_model / 2 = {dots[position]:.0f} at every position; PE[{position}] · PE[{neighbour}] = "
            f"{dots[neighbour]:.2f}, the same for any two neighbours. Farther away it falls off, with ripples.")


def encoding_explorer():
    """Move the position, change d_model: the encoding's heatmap and one position's similarities."""
    controls = {"position": slider("position p", 10, 0, ENCODING_POSITIONS - 1, 1, integer=True),
                "d_model": dropdown("d_model", D_MODEL_CHOICES, 64)}
    return Explorer(draw_encoding, controls, figsize=(10.2, 4.2), update=update_encoding)


#: The query and key pair the rotation explorer rotates (features 0 and 1 of a query and a key).
ROPE_QUERY = (1.0, 0.4)
ROPE_KEY = (0.3, 1.1)


def rotated_pair(query_position, key_position, shift=0):
    """The RoPE-rotated query and key pairs (d = 2: one radian per position) and their score.

    >>> q, k, score = rotated_pair(3, 1)
    >>> round(score, 4) == round(rotated_pair(7, 5)[2], 4)  # same offset, same score
    True
    """
    q = rope(np.array([ROPE_QUERY]), positions=[query_position + shift])[0]  # (1, 2) -> (2,)
    k = rope(np.array([ROPE_KEY]), positions=[key_position + shift])[0]
    return q, k, float(q @ k)


def draw_rotation(fig, query_position=3, key_position=1, shift=0):
    """The query and key pairs before (faint) and after the rotation, with the score and the offset."""
    ax = fig.subplots()
    circle = np.linspace(0, 2 * np.pi, 200)
    radius = max(np.hypot(*ROPE_QUERY), np.hypot(*ROPE_KEY))
    ax.plot(radius * np.cos(circle), radius * np.sin(circle), color=OKABE_ITO["black"], linewidth=0.6, alpha=0.3)
    for original, colour in [(ROPE_QUERY, OKABE_ITO["blue"]), (ROPE_KEY, OKABE_ITO["orange"])]:
        ax.annotate("", xy=original, xytext=(0, 0),
                    arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.35, "linestyle": "--", "lw": 1.5})
    ax.set_xlim(-1.5, 1.5)
    ax.set_ylim(-1.5, 1.5)
    ax.set_aspect("equal")
    ax.axhline(0, color=OKABE_ITO["black"], linewidth=0.5, alpha=0.4)
    ax.axvline(0, color=OKABE_ITO["black"], linewidth=0.5, alpha=0.4)
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    ax.set_title(" ")
    fig.handles = {"ax": ax}
    fig.dynamic = [ax.title]
    return update_rotation(fig, query_position=query_position, key_position=key_position, shift=shift)


def update_rotation(fig, query_position=3, key_position=1, shift=0, **_):
    """Draw the rotated query and key pairs again, and the title with the offset and the score."""
    ax = fig.handles["ax"]
    q, k, score = rotated_pair(query_position, key_position, shift)

    def arrows():
        for vector, colour, name in [(q, OKABE_ITO["blue"], "query"), (k, OKABE_ITO["orange"], "key")]:
            ax.annotate("", xy=vector, xytext=(0, 0), arrowprops={"arrowstyle": "-|>", "color": colour, "lw": 2.5})
            ax.text(*(1.12 * vector), name, color=colour, fontsize=12, ha="center", va="center")

    redraw_dynamic(fig, "pairs", arrows)
    m, n = query_position + shift, key_position + shift
    ax.set_title(f"query at {m}, key at {n}: offset {m - n}, score {score:.3f}")
    unturned = [name for name, p in (("query", m), ("key", n)) if p == 0]
    hidden = (f" The {' and the '.join(unturned)} at position 0 {'is' if len(unturned) == 1 else 'are'} not turned: "
              f"the dashed arrow lies under the solid one." if unturned else "")
    return (f"Each position turns a pair by 1 radian (dashed: before the rotation). Offset m − n = {m - n}; "
            f"score = {score:.3f}. Shift both positions and the score stays {score:.3f}.{hidden}")


def rotation_explorer():
    """Rotate one query pair and one key pair by their positions; shift both and watch the score."""
    controls = {"query_position": slider("query position m", 3, 0, 8, 1, integer=True),
                "key_position": slider("key position n", 1, 0, 8, 1, integer=True),
                "shift": slider("shift both by", 0, 0, 20, 1, integer=True)}
    return Explorer(draw_rotation, controls, figsize=(5.4, 5.2), update=update_rotation)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"order_explorer": order_explorer, "encoding_explorer": encoding_explorer,
             "rotation_explorer": rotation_explorer}
