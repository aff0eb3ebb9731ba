"""Notebook 02: dot-product scores as lengths and angles, and the score matrix row by row."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Rectangle

from ..core import cosine_similarity
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..measures import angles_degrees
from ..plotting import LABEL_BOX, OUTLINE_COLOUR, heatmap, text_colour_on, token_colours
from . import FullRedraw, dropdown, pick, query_dropdown, sentence_explorer, set_bars, value_bars

__all__ = ["draw_arrows_3d", "draw_geometry", "draw_scores", "update_scores", "score_explorer",
           "EXPLORERS"]

METRICS = ("dot product", "cosine similarity")


def draw_arrows_3d(ax, X, tokens, query=None):
    """The rows of ``X`` (shape (T, 3)) as arrows from the origin on a 3-D Axes; the query's arrow is thicker."""
    X = np.asarray(X, dtype=float)
    lim = max(1.0, float(np.abs(X).max()) * 1.05)
    placed = []
    tokens = list(tokens)[:len(X)]  # extra labels are ignored
    colours = token_colours(tokens)
    for j, (token, row) in enumerate(zip(tokens, X, strict=False)):
        is_query = token == query
        ax.quiver(0, 0, 0, *row, color=colours[j], linewidth=3.5 if is_query else 1.8, arrow_length_ratio=0.08)
        tip = row * 1.06
        if any(np.linalg.norm(tip - other) < 0.15 for other in placed):  # a near-twin: put its label below and aside
            tip = tip + np.array([0.12, 0.0, -0.2])
        placed.append(tip)
        ax.text(*tip, token, color=colours[j], fontsize=11, fontweight="bold" if is_query else "normal",
                bbox=LABEL_BOX)
    ax.set(xlim=(0, lim), ylim=(0, lim), zlim=(0, lim), xlabel="feature 0", ylabel="feature 1", zlabel="feature 2")
    ax.view_init(elev=20, azim=-140)


def draw_geometry(fig, X=None, tokens=JOURNEY_TOKENS, query="journey"):
    """Left: the token vectors as 3-D arrows; right: the angle between the query and every key."""
    X = journey_embeddings() if X is None else np.asarray(X)
    q = list(tokens).index(query)
    arrows = fig.add_subplot(1, 2, 1, projection="3d")
    draw_arrows_3d(arrows, X, tokens, query=query)
    arrows.set_title("one arrow per token")
    bars_ax = fig.add_subplot(1, 2, 2)
    angles = angles_degrees(X[q], X)
    bars = bars_ax.bar(range(len(tokens)), angles, color=token_colours(tokens))
    bars_ax.bar_label(bars, labels=[f"{a:.1f}°" for a in angles], fontsize=11)
    bars_ax.set_xticks(range(len(tokens)), labels=list(tokens), rotation=30, ha="right", rotation_mode="anchor")
    bars_ax.set_ylim(0, max(10.0, float(angles.max()) * 1.15))
    bars_ax.set_xlabel("key")
    bars_ax.set_ylabel("angle to the query (degrees)")
    bars_ax.set_title(f"angle between {query!r} and each key")
    return angles


def draw_scores(fig, query="journey", metric="dot product", tokens=JOURNEY_TOKENS, X=None):
    """Left: the score matrix with the query's row outlined; right: that row as bars."""
    X = journey_embeddings() if X is None else np.asarray(X)
    tokens = list(tokens)
    T = len(tokens)
    cosine = metric == "cosine similarity"
    if cosine:
        matrix = cosine_similarity(X[:, None, :], X[None, :, :])  # (T, 1, d) with (1, T, d) -> (T, T)
        vmin, vmax, name = min(0.0, float(matrix.min())), 1.0, "cosine"
    else:
        matrix = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
        vmin, vmax, name = min(0.0, float(matrix.min())), float(matrix.max()), "score"
    left, right = fig.subplots(1, 2, width_ratios=[1.15, 1])
    image = heatmap(matrix, tokens, tokens, ax=left, vmin=vmin, vmax=vmax, cmap="viridis", annotate=False,
                    title="cosine similarities" if cosine else "scores = X @ X.T", cbar_label=name)
    outline = left.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False, edgecolor=OUTLINE_COLOUR, linewidth=3.5))
    # numbers on the chosen row only: 36 numbers would double the cost of a redraw
    numbers = [left.text(j, 0, "", ha="center", va="center", fontsize=11) for j in range(T)]
    bars, labels = value_bars(right, T, token_colours(tokens))
    right.set_xticks(range(T), labels=tokens)
    top = float(np.abs(matrix).max()) or 1.0
    right.set_ylim(min(0.0, float(matrix.min())) * 1.15, top * 1.15)  # the same scale for every query
    right.set_ylabel(name)
    right.set_xlabel("key")
    right.set_title(" ")
    fig.handles = {"matrix": matrix, "tokens": tokens, "metric": metric, "name": name, "image": image,
                   "outline": outline, "numbers": numbers, "bars": bars, "labels": labels, "ax": right}
    fig.dynamic = [outline, *numbers, *bars, *labels, right.title]
    return update_scores(fig, query=query, metric=metric)


def update_scores(fig, query="journey", metric="dot product", **_):
    """Show ``query``'s row: move the outline, write its numbers, set the bars. A new metric needs a full redraw."""
    parts = fig.handles
    if metric != parts["metric"]:
        raise FullRedraw
    tokens, name = parts["tokens"], parts["name"]
    i, query = pick(tokens, query)
    row = parts["matrix"][i]
    parts["outline"].set_y(i - 0.5)
    norm = parts["image"].norm
    for j, (text, value) in enumerate(zip(parts["numbers"], row, strict=True)):
        text.set_position((j, i))
        text.set_text(f"{value:.2f}")
        text.set_color(text_colour_on(norm(value)))
    set_bars(parts["bars"], row, parts["labels"], highlight=i)
    parts["ax"].set_title(f"row {i}: query {query!r}")
    order = np.argsort(-row, kind="stable")
    ranking = ", ".join(f"{tokens[j]!r}" for j in order)
    best, worst = order[0], order[-1]
    return (f"Query {query!r}: highest {name} with {tokens[best]!r} ({row[best]:.4f}), lowest with "
            f"{tokens[worst]!r} ({row[worst]:.4f}).<br>Ranking: {ranking}.")


def score_explorer(X=None, tokens=JOURNEY_TOKENS):
    """Choose a query token (and dot product or cosine): see its row of the score matrix."""
    controls = {"query": query_dropdown(tokens), "metric": dropdown("measure", METRICS, "dot product")}
    return sentence_explorer(draw_scores, update_scores, controls, figsize=(10.2, 4.2), tokens=tokens, X=X)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"score_explorer": score_explorer}
