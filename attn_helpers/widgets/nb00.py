"""Notebook 00: the first explorer, one token per row of X."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..plotting import heatmap
from . import Explorer, dropdown

__all__ = ["row_explorer", "draw_row", "EXPLORERS"]


def draw_row(fig, token="journey", tokens=JOURNEY_TOKENS, X=None):
    """Left: the matrix X with the chosen token's row outlined; right: that row as a bar chart."""
    X = journey_embeddings() if X is None else np.asarray(X)
    i = list(tokens).index(token)
    left, right = fig.subplots(1, 2, width_ratios=[1.1, 1])
    features = [f"feature {j}" for j in range(X.shape[1])]
    heatmap(X, tokens, features, ax=left, xlabel="feature (column)", ylabel="token (row)", vmin=0, vmax=1,
            title=f"X, shape {X.shape}", cbar_label="value")
    left.add_patch(Rectangle((-0.5, i - 0.5), X.shape[1], 1, fill=False, edgecolor="#e66101", linewidth=3))
    bars = right.bar(features, X[i], color="#e66101")
    right.bar_label(bars, labels=[f"{v:.2f}" for v in X[i]])
    right.set_ylim(0, 1.05)
    right.set_title(f"X[{i}]: the vector of {token!r}")
    right.set_ylabel("value")
    return f"<code>X[{i}]</code> = <code>{np.array2string(X[i], precision=2)}</code>: row {i} is the token {token!r}"


def row_explorer():
    """Pick a token, see its row of X."""
    return Explorer(draw_row, {"token": dropdown("token", JOURNEY_TOKENS, "journey")}, figsize=(9, 3.6))


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"row_explorer": row_explorer}
