"""Notebook 00: the first explorer, one token per row of X."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..plotting import OUTLINE_COLOUR, heatmap, token_colour
from . import Explorer, dropdown, pick, set_bars, value_bars

__all__ = ["row_explorer", "draw_row", "update_row", "EXPLORERS"]


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
