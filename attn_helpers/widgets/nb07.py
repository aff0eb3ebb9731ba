"""Notebook 07: causal and padding masks on "a fluffy blue creature roamed the verdant forest"."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path
from matplotlib.ticker import FixedFormatter

from ..core import scaled_dot_product_attention
from ..examples import CREATURE_TOKENS, combined_mask, creature_example
from ..plotting import HATCH_COLOUR, MASKED_COLOUR, OUTLINE_COLOUR, SERIES_COLOURS, heatmap
from . import dropdown, pick, sentence_explorer, set_bars, slider, toggle, value_bars

#: Bar colours: a key the query may see (itself or earlier), a later key (visible only without the mask).
EARLIER_COLOUR, LATER_COLOUR = SERIES_COLOURS[0], SERIES_COLOURS[1]
#: How a padding position is labelled on the axes.
PAD = "<pad>"
#: Height of the hatched strip that marks a masked key in the bar chart: its weight is 0, not a bar of 1.
MASKED_STRIP = 0.05

__all__ = ["draw_masking", "update_masking", "mask_explorer", "EXPLORERS"]


def _hatch_path(x0, y0, width, height):
    """The rectangles with lower-left corners (x0, y0) as ONE path: one draw call, however many cells."""
    x0, y0 = np.asarray(x0, dtype=float), np.asarray(y0, dtype=float)
    if len(x0) == 0:
        return Path(np.zeros((1, 2)), [Path.MOVETO])
    corners = np.array([(0, 0), (width, 0), (width, height), (0, height), (0, 0)])  # (5, 2) around one rectangle
    vertices = (np.stack([x0, y0], axis=-1)[:, None, :] + corners).reshape(-1, 2)  # (n, 1, 2) + (5, 2) -> (5n, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(x0))
    return Path(vertices, codes)


def _hatch(ax, facecolor):
    """An (empty) hatched path patch, as plotting.heatmap draws masked cells; filled by :func:`_hatch_path`."""
    return ax.add_patch(PathPatch(_hatch_path([], [], 1, 1), facecolor=facecolor, hatch="///",
                                  edgecolor=HATCH_COLOUR, linewidth=0))


def draw_masking(fig, causal=True, query="creature", length=8, example=None, tokens=CREATURE_TOKENS):
    """Left: the weights heatmap (masked cells hatched), the query's row outlined; right: that row as bars."""
    example = creature_example() if example is None else example
    tokens = list(tokens)
    T = len(tokens)
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    left, right = fig.subplots(1, 2, width_ratios=[1.25, 1], gridspec_kw={"left": 0.1, "right": 0.98, "top": 0.9,
                                                                          "bottom": 0.22, "wspace": 0.5})
    # Masked cells: NaN, which the heatmap paints in its masked grey, plus ONE hatched path over all of them
    # (the same look as heatmap(..., mask=mask), which draws one hatched patch per cell: too slow for a slider).
    # No numbers in the cells either (64 texts would double the render time): the bars on the right carry them.
    image = heatmap(np.full((T, T), np.nan), tokens, tokens, ax=left, vmin=0, vmax=1, title=" ",
                    cbar_label="attention weight", annotate=False)
    cells = _hatch(left, facecolor="none")
    outline = left.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False, edgecolor=OUTLINE_COLOUR, linewidth=3))
    row_hatch = _hatch(right, facecolor=MASKED_COLOUR)
    bars, labels = value_bars(right, T, EARLIER_COLOUR, fontsize=11)
    right.set_xticks(range(T), labels=tokens, rotation=45, ha="right", rotation_mode="anchor")
    right.set_ylim(0, 1.3)
    right.set_ylabel("attention weight")
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_title(" ")
    legend = [Patch(color=EARLIER_COLOUR, label="itself or earlier"), Patch(color=LATER_COLOUR, label="later token"),
              Patch(facecolor=MASKED_COLOUR, hatch="///", edgecolor=HATCH_COLOUR, label="masked: weight 0")]
    right.legend(handles=legend, loc="upper left", fontsize=11, frameon=False)
    fig.handles = {"example": example, "tokens": tokens, "image": image, "cells": cells, "outline": outline,
                   "row_hatch": row_hatch, "bars": bars, "labels": labels, "left": left, "right": right,
                   "names": tokens}
    fig.dynamic = [image, cells, outline, left.title, row_hatch, *bars, *labels, right.title]
    fig.middle = [left.xaxis, left.yaxis, right.xaxis]  # their tick labels name padding keys <pad>
    return update_masking(fig, causal=causal, query=query, length=length)


def update_masking(fig, causal=True, query="creature", length=8, **_):
    """Refill the heatmap, the hatching, the outline, the bars and the titles (the live widget's fast path)."""
    handles = fig.handles
    example, tokens = handles["example"], handles["tokens"]
    T = len(tokens)
    i, query = pick(tokens, query)
    mask = combined_mask(T, causal=bool(causal), length=length)
    X = example["X"]
    queries, keys, values = X @ example["W_q"], X @ example["W_k"], X @ example["W_v"]  # (T, d_model) @ (d_model, d)
    _, weights = scaled_dot_product_attention(queries, keys, values, mask=mask)
    handles["image"].set_data(np.where(mask, weights, np.nan))
    rows, cols = np.nonzero(~mask)
    handles["cells"].set_path(_hatch_path(cols - 0.5, rows - 0.5, 1.0, 1.0))
    handles["outline"].set_y(i - 0.5)
    title = ("causal mask" if causal else "no causal mask") + ("" if length >= T else f", padding after {length}")
    handles["left"].set_title(title)
    row = weights[i]
    blocked = np.flatnonzero(~mask[i])  # the keys this query may not see
    handles["row_hatch"].set_path(_hatch_path(blocked - 0.4, np.zeros(len(blocked)), 0.8, MASKED_STRIP))
    padding = ~combined_mask(T, causal=False, length=length)[0]  # (T,): True for the keys after ``length``
    names = [PAD if pad else token for token, pad in zip(tokens, padding, strict=True)]
    if names != handles["names"]:  # new tick labels: redraw the middle layer, where the axes are
        handles["names"] = names
        for axis in (handles["left"].xaxis, handles["left"].yaxis, handles["right"].xaxis):
            axis.set_major_formatter(FixedFormatter(names))
        fig.middle_changed = True
    future = np.arange(T) > i
    colours = [LATER_COLOUR if later else EARLIER_COLOUR for later in future]
    set_bars(handles["bars"], row, handles["labels"], colours=colours,
             texts=[f"{weight:.2f}" if allowed else "" for weight, allowed in zip(row, mask[i], strict=True)])
    query = names[i]  # a padded query is named <pad> here too, as on the heatmap's axes
    handles["right"].set_title(f"query {query!r}: its row of weights")
    future_weight = float(row[future].sum())
    allowed = int(mask[i].sum())
    if allowed == 0:
        return f"{query!r} may attend to no key at all: its weights are all 0 (not NaN)."
    note = (f"{query!r} (query {i}) may attend to {allowed} of {T} keys; its weights sum to {row.sum():.2f}; "
            f"weight on later tokens: {future_weight:.2f}.")
    if not causal and future_weight > 0:
        note += " Without the mask a text generator could copy the word it is supposed to predict."
    return note


def mask_explorer(example=None, tokens=CREATURE_TOKENS):
    """Toggle the causal mask, pad the sequence, pick a query: see its row of weights."""
    controls = {
        "causal": toggle("causal mask", True),
        "query": dropdown("query token", tokens, "creature"),
        "length": slider("real tokens (the rest is padding)", len(tokens), 1, len(tokens), 1, integer=True),
    }
    return sentence_explorer(draw_masking, update_masking, controls, figsize=(10.5, 4.6), layout="column",
                             example=creature_example() if example is None else example, tokens=tokens)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"mask_explorer": mask_explorer}
