"""Notebook 00: the first explorer, one token per row of X."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle

from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..measures import summary_shares
from ..plotting import CONTEXT_COLOUR, GUIDE_COLOUR, OUTLINE_COLOUR, PAPER_COLOUR, heatmap, token_colour, token_colours
from . import Explorer, dropdown, pick, set_bars, value_bars

__all__ = ["draw_bottleneck", "row_explorer", "draw_row", "update_row", "EXPLORERS"]


def _token_row(ax, tokens, y):
    """The sentence's tokens in a row at height ``y``, each in its series colour."""
    for t, (token, colour) in enumerate(zip(tokens, token_colours(tokens), strict=True)):
        ax.text(t, y, token, ha="center", va="center", fontsize=13, fontweight="bold", color=colour,
                bbox={"facecolor": PAPER_COLOUR, "edgecolor": colour, "boxstyle": "round,pad=0.3", "linewidth": 1.5})


def _arrow(ax, start, end, colour, width=1.5, bend=0.0):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=16, linewidth=width, color=colour,
                                 connectionstyle=f"arc3,rad={bend}", shrinkA=14, shrinkB=14))


def draw_bottleneck(fig, tokens=JOURNEY_TOKENS, keep=0.5, show_shares=True):
    """Top: a recurrent summary, one vector passed from token to token; bottom: attention's direct connections.

    The numbers under the top row are :func:`attn_helpers.measures.summary_shares`: how much of
    each token is left in the final summary ``s`` (with ``show_shares=False``, a question mark each: the
    setting of the question, before its answer). Every arc of the bottom row is one step long.
    """
    tokens = list(tokens)
    T = len(tokens)
    shares = summary_shares(T, keep)
    top, bottom = fig.subplots(2, 1)
    for ax in (top, bottom):
        ax.set_xlim(-0.7, T - 0.3)
        ax.set_axis_off()
    top.set_ylim(-1.0, 1.6)
    _token_row(top, tokens, 0)
    for t in range(T):
        top.plot(t, 1.0, "o", markersize=34, markerfacecolor=PAPER_COLOUR, markeredgecolor=CONTEXT_COLOUR,
                 markeredgewidth=2)  # a marker stays round whatever the axes' aspect
        top.text(t, 1.0, f"s{t + 1}", ha="center", va="center", fontsize=12)
        _arrow(top, (t, 0.12), (t, 0.85), GUIDE_COLOUR)
        if t:
            _arrow(top, (t - 0.8, 1.0), (t - 0.2, 1.0), CONTEXT_COLOUR, width=2)
        top.text(t, -0.55, f"{100 * shares[t]:.3g} %" if show_shares else "?", ha="center", va="center", fontsize=12,
                 color=GUIDE_COLOUR)
    top.text(-0.65, -0.9, f"share of each token in s{T}, the one vector passed on"
             + ("" if show_shares else ": how much is left of each?"), fontsize=12, color=GUIDE_COLOUR)
    top.set_title(f"a recurrent network: one fixed-size summary, updated token by token (s = {keep:g}·s + "
                  f"{1 - keep:g}·x)", fontsize=13)
    bottom.set_ylim(-0.6, 1.6)
    _token_row(bottom, tokens, 0)
    colours = token_colours(tokens)
    for t in range(T - 1):  # every earlier token straight into the last one, one step each
        _arrow(bottom, (t, 0.1), (T - 1, 0.1), colours[t], width=2, bend=-0.35 + 0.04 * t)
    bottom.text(-0.65, -0.5, f"every token reaches {tokens[-1]!r} in one step, with a weight chosen by content, "
                "and every token does the same at the same time", fontsize=12, color=GUIDE_COLOUR)
    bottom.set_title("attention: direct connections, all computed at once", fontsize=13)
    return shares


def draw_row(fig, token="journey", tokens=JOURNEY_TOKENS, X=None):
    """Left: the matrix X with the chosen token's row outlined; right: that row as a bar chart."""
    X = journey_embeddings() if X is None else np.asarray(X)
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    features = [f"feature {j}" for j in range(X.shape[1])]
    heatmap(X, tokens, features, ax=left, xlabel="feature (column)", ylabel="token (row)", vmin=0, vmax=1,
            title=f"X, shape {X.shape}", cbar_label="value")
    outline = left.add_patch(Rectangle((-0.5, -0.5), X.shape[1], 1, fill=False, edgecolor=OUTLINE_COLOUR,
                                       linewidth=3.5))
    bars, values = value_bars(right, X.shape[1], token_colour(token))
    right.set_xticks(range(X.shape[1]), labels=features)
    right.set_ylim(0, 1.05)
    right.set_ylabel("value")
    right.set_title(" ")
    fig.handles = {"X": X, "tokens": list(tokens), "outline": outline, "bars": bars, "values": values, "ax": right}
    fig.dynamic = [outline, *bars, *values, right.title]
    return update_row(fig, token)


def update_row(fig, token="journey", **_):
    """Move the outline to ``token``'s row; draw the row as bars in the token's colour (the live widget's fast path)."""
    parts = fig.handles
    i, token = pick(parts["tokens"], token)
    row = parts["X"][i]
    colour = token_colour(token, i)
    parts["outline"].set_y(i - 0.5)
    set_bars(parts["bars"], row, parts["values"], colours=[colour] * len(row))
    parts["ax"].set_title(f"X[{i}]: the vector of {token!r}")
    return f"<code>X[{i}]</code> = <code>{np.array2string(row, precision=2)}</code>: row {i} is the token {token!r}"


def row_explorer():
    """Pick a token, see its row of X."""
    return Explorer(draw_row, {"token": dropdown("token", JOURNEY_TOKENS, "journey")}, figsize=(9, 3.6),
                    update=update_row)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"row_explorer": row_explorer}
