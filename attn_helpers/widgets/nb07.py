"""Notebook 07: causal and padding masks on "a fluffy blue creature roamed the verdant forest"."""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.patches import Patch, PathPatch, Rectangle
from matplotlib.path import Path

from ..core import causal_mask, padding_mask, scaled_dot_product_attention
from ..examples import CREATURE_TOKENS, SEED
from ..plotting import MASKED_COLOUR, heatmap
from . import Explorer, dropdown, slider, toggle

_HATCH_COLOUR = "#969696"  # as in plotting.heatmap

__all__ = ["creature_example", "combined_mask", "draw_masking", "mask_explorer", "EXPLORERS"]


def creature_example(d_model=16, seed=SEED):
    """Seeded random embeddings and projections for the 8 creature tokens (the recipe notebook 07 shows).

    ``rng = np.random.default_rng(seed)``, then ``X`` (8, d_model) standard normal, then ``W_q``, ``W_k``,
    ``W_v`` (d_model, d_model), each standard normal divided by ``sqrt(d_model)`` (so that ``X @ W`` keeps
    unit-variance features).

    Examples
    --------
    >>> example = creature_example()
    >>> example["X"].shape, example["W_q"].shape
    ((8, 16), (16, 16))
    """
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((len(CREATURE_TOKENS), d_model))
    W_q, W_k, W_v = (rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(3))
    return {"X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v}


def combined_mask(T, causal=True, length=None):
    """The (T, T) boolean mask for one sequence: causal (optional) AND key padding beyond ``length``.

    Examples
    --------
    >>> combined_mask(3, causal=True, length=2).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    """
    length = T if length is None else int(min(max(length, 0), T))
    mask = padding_mask([length], T)[0]  # (1, T): the real keys
    if causal:
        mask = mask & causal_mask(T)  # (1, T) & (T, T) -> (T, T)
    return np.broadcast_to(mask, (T, T)).copy()


def _hatch(ax, x0, y0, width, height, facecolor):
    """Hatch the rectangles with lower-left corners (x0, y0) as ONE path: one draw call, however many cells."""
    if len(x0) == 0:
        return
    corners = np.array([(0, 0), (width, 0), (width, height), (0, height), (0, 0)])  # (5, 2) around one rectangle
    vertices = (np.stack([x0, y0], axis=-1)[:, None, :] + corners).reshape(-1, 2)  # (n, 1, 2) + (5, 2) -> (5n, 2)
    codes = np.tile([Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY], len(x0))
    ax.add_patch(PathPatch(Path(vertices, codes), facecolor=facecolor, hatch="///", edgecolor=_HATCH_COLOUR,
                           linewidth=0))


def draw_masking(fig, causal=True, query="creature", length=8, example=None, tokens=CREATURE_TOKENS):
    """Left: the weights heatmap (masked cells hatched), the query's row outlined; right: that row as bars."""
    example = creature_example() if example is None else example
    T = len(tokens)
    i = list(tokens).index(query) if query in tokens else 0
    mask = combined_mask(T, causal=bool(causal), length=length)
    X = example["X"]
    queries, keys, values = X @ example["W_q"], X @ example["W_k"], X @ example["W_v"]  # (T, d_model) @ (d_model, d_k)
    _, weights = scaled_dot_product_attention(queries, keys, values, mask=mask)
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    left, right = fig.subplots(1, 2, width_ratios=[1.25, 1], gridspec_kw={"left": 0.1, "right": 0.98, "top": 0.9,
                                                                          "bottom": 0.22, "wspace": 0.5})
    title = ("causal mask" if causal else "no causal mask") + ("" if length >= T else f", padding after {length}")
    # Masked cells: NaN, which the heatmap paints in its masked grey, plus ONE hatched path over all of them
    # (the same look as heatmap(..., mask=mask), which draws one hatched patch per cell: too slow for a slider).
    # No numbers in the cells either (64 texts would double the render time): the bars on the right carry them.
    heatmap(np.where(mask, weights, np.nan), tokens, tokens, ax=left, vmin=0, vmax=1, title=title,
            cbar_label="attention weight", annotate=False)
    rows, cols = np.nonzero(~mask)
    _hatch(left, cols - 0.5, rows - 0.5, 1.0, 1.0, facecolor="none")
    left.add_patch(Rectangle((-0.5, i - 0.5), T, 1, fill=False, edgecolor="#e66101", linewidth=3))
    row = weights[i]
    _hatch(right, np.flatnonzero(~mask[i]) - 0.4, np.zeros(int((~mask[i]).sum())), 0.8, 1.0, facecolor=MASKED_COLOUR)
    future = np.arange(T) > i
    colours = np.where(future, "#d8b365", "#5ab4ac")
    bars = right.bar(range(T), row, color=colours)
    right.bar_label(bars, labels=["" if not mask[i, j] else f"{w:.2f}" for j, w in enumerate(row)], fontsize=9)
    right.set_xticks(range(T), labels=list(tokens), rotation=45, ha="right", rotation_mode="anchor")
    right.set_ylim(0, 1.3)
    right.set_ylabel("attention weight")
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_title(f"query {query!r}: its row of weights")
    legend = [Patch(color="#5ab4ac", label="itself or earlier"), Patch(color="#d8b365", label="later token"),
              Patch(facecolor=MASKED_COLOUR, hatch="///", edgecolor=_HATCH_COLOUR, label="masked")]
    right.legend(handles=legend, loc="upper left", fontsize=9, frameon=False)
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
    draw = partial(draw_masking, example=creature_example() if example is None else example, tokens=tokens)
    controls = {
        "causal": toggle("causal mask", True),
        "query": dropdown("query token", tokens, "creature"),
        "length": slider("real tokens (the rest is padding)", len(tokens), 1, len(tokens), 1, integer=True),
    }
    return Explorer(draw, controls, figsize=(10.5, 4.6))


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"mask_explorer": mask_explorer}
