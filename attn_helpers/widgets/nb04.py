"""Notebook 04: context vectors as weighted sums, drawn as arrows inside the hull of the inputs."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Polygon
from matplotlib.ticker import MaxNLocator

from ..core import softmax
from ..examples import JOURNEY_TOKENS, journey_embeddings
from . import Explorer, FullRedraw, dropdown, redraw_dynamic, slider

__all__ = ["convex_hull_2d", "simple_attention", "draw_sum_panel", "draw_tip_to_tail", "draw_context",
           "update_context", "context_explorer", "EXPLORERS"]

#: Colours (colour-blind safe): inputs in blue, the context vector in orange.
INPUT_COLOUR = "#2166ac"
CONTEXT_COLOUR = "#e66101"
HULL_COLOUR = "#92c5de"
MOVED_COLOUR = "#5e3c99"


def convex_hull_2d(points):
    """Indices of the convex hull's corners, counter-clockwise (Andrew's monotone chain).

    Parameters
    ----------
    points : array_like, shape (n, 2)

    Returns
    -------
    corners : list of int
        Indices into ``points``; collinear points on an edge are left out. Fewer than
        three distinct points give the distinct ones (a point or a segment).

    Examples
    --------
    >>> convex_hull_2d([[0, 0], [1, 0], [1, 1], [0, 1], [0.5, 0.5]])
    [0, 1, 2, 3]
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    order = sorted(range(len(pts)), key=lambda k: (pts[k, 0], pts[k, 1]))
    unique = []
    for k in order:  # drop duplicates, keeping the first index
        if not unique or not np.array_equal(pts[k], pts[unique[-1]]):
            unique.append(k)
    if len(unique) < 3:
        return unique

    def cross(o, a, b):
        return (pts[a, 0] - pts[o, 0]) * (pts[b, 1] - pts[o, 1]) - (pts[a, 1] - pts[o, 1]) * (pts[b, 0] - pts[o, 0])

    lower, upper = [], []
    for k in unique:
        while len(lower) >= 2 and cross(lower[-2], lower[-1], k) <= 0:
            lower.pop()
        lower.append(k)
    for k in reversed(unique):
        while len(upper) >= 2 and cross(upper[-2], upper[-1], k) <= 0:
            upper.pop()
        upper.append(k)
    return lower[:-1] + upper[:-1]


def simple_attention(X):
    """Weight-free self-attention of notebook 04: ``(context, weights)`` with ``weights = softmax(X X^T)``.

    Examples
    --------
    >>> context, weights = simple_attention(np.eye(2))
    >>> weights.round(4)
    array([[0.7311, 0.2689],
           [0.2689, 0.7311]])
    """
    X = np.asarray(X, dtype=float)
    scores = X @ X.T  # (T, d_model) @ (d_model, T) -> (T, T)
    weights = softmax(scores, axis=-1)
    return weights @ X, weights  # (T, T) @ (T, d_model) -> (T, d_model)


def _label_groups(points, tokens, radius):
    """Tokens whose points nearly coincide share one label ("journey / starts")."""
    groups = []
    for k, p in enumerate(points):
        for group in groups:
            if np.hypot(*(points[group[0]] - p)) < radius:
                group.append(k)
                break
        else:
            groups.append([k])
    return [(points[g].mean(axis=0), " / ".join(tokens[k] for k in g)) for g in groups]


def draw_sum_panel(ax, X, weights_row, context, dims=(0, 1), tokens=JOURNEY_TOKENS, query=None, chain=False,
                   limits=None, moved=None, frame=True, colours=None, labels=True):
    """One 2-D view of the weighted sum: input arrows, their hull, the context arrow.

    The view keeps two features of the vectors (a projection), so the hull drawn is the
    hull of the projected inputs, and the projected context vector is the same weighted
    average of the projected inputs: it lies inside. Arrow width grows with the weight.
    With ``chain=True`` the scaled vectors ``weights[j] * x(j)`` are laid tip to tail:
    the chain ends exactly at the context vector. ``moved`` (a token index) is drawn in purple.
    ``colours`` gives each input arrow its own colour (then ``moved`` is marked in its label
    only); ``labels=False`` leaves the token names out (a second view, read by colour).
    """
    a, b = dims
    P = np.asarray(X, dtype=float)[:, [a, b]]
    z = np.asarray(context, dtype=float)[[a, b]]
    w = np.asarray(weights_row, dtype=float)
    if limits is None:
        low, high = _panel_limits(X, context, dims)
    else:
        low, high = np.array(limits[0], float), np.array(limits[1], float)
    span = float(np.max(high - low))
    head = 0.045 * span
    hull = convex_hull_2d(P)
    if len(hull) >= 3:
        ax.add_patch(Polygon(P[hull], closed=True, facecolor=HULL_COLOUR, alpha=0.35, edgecolor=HULL_COLOUR,
                             linewidth=1.5))
    top = float(w.max()) if w.size and w.max() > 0 else 1.0
    for j, p in enumerate(P):
        if np.hypot(*p) > 1e-9:
            colour = colours[j % len(colours)] if colours else MOVED_COLOUR if j == moved else INPUT_COLOUR
            ax.arrow(0, 0, p[0], p[1], width=0.004 * span * (0.5 + 2.5 * w[j] / top), head_width=head,
                     head_length=head, length_includes_head=True, color=colour, alpha=0.8, linewidth=0)
    if chain:
        start = np.zeros(2)
        for j in np.argsort(-w):
            end = start + w[j] * P[j]
            ax.plot([start[0], end[0]], [start[1], end[1]], color="#4d4d4d", lw=1.4, ls="--")
            start = end
    if np.hypot(*z) > 1e-9:
        ax.arrow(0, 0, z[0], z[1], width=0.014 * span, head_width=1.5 * head, head_length=1.5 * head,
                 length_includes_head=True, color=CONTEXT_COLOUR, linewidth=0, zorder=4)
    ax.plot(*z, "o", color=CONTEXT_COLOUR, ms=6, zorder=5)
    pad = 0.02 * span
    for where, text in (_label_groups(P, list(tokens), radius=0.06 * span) if labels else ()):
        names = text.split(" / ")
        if colours:
            colour = colours[list(tokens).index(names[0]) % len(colours)] if len(names) == 1 else "#333333"
            text = " / ".join(f"{n} (moved)" if moved is not None and n == tokens[moved] else n for n in names)
        else:
            colour = MOVED_COLOUR if moved is not None and tokens[moved] in names else INPUT_COLOUR
        right = where[0] > high[0] - 0.25 * span  # near the right edge: put the name to the left of the tip
        ax.text(where[0] - pad if right else where[0] + pad, where[1] + pad, text, fontsize=11, color=colour,
                ha="right" if right else "left", in_layout=False, clip_on=True)
    name = "z" if query is None else f"z({query})"
    ax.text(z[0] + pad, z[1] - 2 * pad, name, fontsize=12, color=CONTEXT_COLOUR, fontweight="bold", va="top",
            in_layout=False, clip_on=True)
    if frame:
        _draw_frame(ax, dims, low, high)


def _panel_limits(X, context, dims):
    P = np.asarray(X, dtype=float)[:, list(dims)]
    z = np.asarray(context, dtype=float)[list(dims)]
    everything = np.vstack([P, z[None], np.zeros((1, 2))])
    low = np.minimum(everything.min(axis=0), 0.0) - 0.12
    high = np.maximum(everything.max(axis=0), 1.0) + np.array([0.25, 0.15])
    return low, high


def _draw_frame(ax, dims, low, high):
    """The static part of a panel: limits, labels, ticks, the zero lines."""
    ax.set_xlim(low[0], high[0])
    ax.set_ylim(low[1], high[1])
    ax.set_xlabel(f"feature {dims[0]}")
    ax.set_ylabel(f"feature {dims[1]}")
    ax.set_aspect("equal", adjustable="box")
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.axhline(0, color="#bdbdbd", lw=0.6, zorder=0)
    ax.axvline(0, color="#bdbdbd", lw=0.6, zorder=0)


#: Okabe-Ito colours (colour-blind safe), one per token of the tip-to-tail picture.
TOKEN_COLOURS = ("#0072B2", "#56B4E9", "#009E73", "#CC79A7", "#7f7f7f", "#000000", "#D55E00", "#F0E442")


def draw_tip_to_tail(ax, X, weights_row, dims=(0, 1), tokens=JOURNEY_TOKENS, query=None):
    """The weighted sum as a path: the arrows ``weights[j] * x(j)`` laid tip to tail end at the context vector."""
    a, b = dims
    P = np.asarray(X, dtype=float)[:, [a, b]]
    w = np.asarray(weights_row, dtype=float)
    steps = w[:, None] * P
    z = steps.sum(axis=0)
    path = np.vstack([np.zeros((1, 2)), np.cumsum(steps, axis=0)])
    span = float(np.max(np.ptp(np.vstack([path, np.zeros((1, 2))]), axis=0))) or 1.0
    head = 0.04 * span
    for j, step in enumerate(steps):
        if np.hypot(*step) > 1e-12:
            ax.arrow(*path[j], *step, width=0.008 * span, head_width=head, head_length=head, length_includes_head=True,
                     color=TOKEN_COLOURS[j % len(TOKEN_COLOURS)], linewidth=0,
                     label=f"{w[j]:.2f} · x({tokens[j]})")
    if np.hypot(*z) > 1e-12:
        ax.arrow(0, 0, *z, width=0.012 * span, head_width=1.4 * head, head_length=1.4 * head,
                 length_includes_head=True, color=CONTEXT_COLOUR, alpha=0.45, linewidth=0, zorder=0,
                 label="z" if query is None else f"z({query})")
    ax.plot(*z, "o", color=CONTEXT_COLOUR, ms=6)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"feature {a}")
    ax.set_ylabel(f"feature {b}")
    ax.legend(loc="upper left", fontsize=10, frameon=False, handlelength=1.2)
    ax.margins(0.08)


def draw_context(fig, query="journey", token="with", delta_0=0.0, delta_1=0.0, delta_2=0.0, tokens=JOURNEY_TOKENS,
                 X=None):
    """Weights of one query (bars) and its context vector in two views, after nudging one token.

    The axes are drawn here once; :func:`update_context` draws what moves (bars, arrows,
    hull, labels), so the live widget redraws only those.
    """
    tokens = list(tokens)
    base = (journey_embeddings() if X is None else np.asarray(X)).astype(float)
    bars_ax, front, side = fig.subplots(1, 3, width_ratios=[1.25, 1, 1])
    context, weights = simple_attention(_nudged(base, tokens, token, delta_0, delta_1, delta_2))
    # bars without printed values (texts are what a redraw costs most); the note lists the weights
    bars = bars_ax.bar(range(len(tokens)), np.zeros(len(tokens)), color="#5ab4ac")
    top = max(0.5, np.ceil(10 * float(weights[tokens.index(query)].max())) / 10 + 0.1)
    bars_ax.set_ylim(0, top)
    bars_ax.set_xticks(range(len(tokens)), labels=tokens, rotation=45)
    for k, label in enumerate(bars_ax.get_xticklabels()):  # each token in the colour of its arrows
        label.set_color(TOKEN_COLOURS[k % len(TOKEN_COLOURS)])
    bars_ax.set_ylabel("attention weight")
    bars_ax.set_xlabel("key (attended to)")
    bars_ax.set_title(" ")
    limits = {}
    for ax, dims, title in ((front, (0, 1), "front view"), (side, (0, 2), "side view")):
        low, high = _panel_limits(np.vstack([base, _nudged(base, tokens, token, delta_0, delta_1, delta_2)]),
                                  context[tokens.index(query)], dims)
        _draw_frame(ax, dims, low, high)
        limits[dims] = (low, high)
        ax.set_title(f"{title}: features {dims[0]} and {dims[1]}")
    fig.handles.update(base=base, tokens=tokens, bars=bars, bars_ax=bars_ax, panels=((front, (0, 1)), (side, (0, 2))),
                       limits=limits, bars_top=top)
    fig.dynamic.extend([*bars, bars_ax.title])
    return update_context(fig, query, token, delta_0, delta_1, delta_2)


def _nudged(base, tokens, token, delta_0, delta_1, delta_2):
    X = base.copy()
    X[tokens.index(token)] += [delta_0, delta_1, delta_2]
    return X


def update_context(fig, query="journey", token="with", delta_0=0.0, delta_1=0.0, delta_2=0.0, **_):
    """Redraw only what moves: the query's weights, the arrows, the hull and the labels."""
    h = fig.handles
    tokens = h["tokens"]
    X = _nudged(h["base"], tokens, token, delta_0, delta_1, delta_2)
    i = tokens.index(query)
    context, weights = simple_attention(X)
    for _ax, dims in h["panels"]:  # a point outside the frozen axes needs a new frame
        low, high = h["limits"][dims]
        points = np.vstack([X[:, list(dims)], context[i][list(dims)]])
        if (points < low).any() or (points > high).any():
            raise FullRedraw
    if weights[i].max() > h["bars_top"]:
        raise FullRedraw  # a bar taller than the frozen axis
    for k, bar in enumerate(h["bars"]):
        bar.set_height(weights[i, k])
        bar.set_color("#d8b365" if k == i else "#5ab4ac")
    h["bars_ax"].set_title(f"weights of the query {query!r}")
    nudged = bool(delta_0 or delta_1 or delta_2)

    def panels():
        for ax, dims in h["panels"]:
            draw_sum_panel(ax, X, weights[i], context[i], dims=dims, tokens=tokens, query=query,
                           limits=h["limits"][dims], moved=tokens.index(token) if nudged else None, frame=False,
                           colours=TOKEN_COLOURS, labels=dims == (0, 1))  # the side view is read by colour

    redraw_dynamic(fig, "panels", panels)
    top = int(np.argmax(weights[i]))
    moved = "" if not nudged else (
        f" {token!r} moved to <code>{np.array2string(X[tokens.index(token)], precision=2)}</code>.")
    return (f"<code>z({query})</code> = <code>{np.array2string(context[i], precision=3)}</code>; "
            + (f"{query!r} attends most to itself ({weights[i, i]:.3f})." if top == i else
               f"{query!r} attends most to {tokens[top]!r} ({weights[i, top]:.3f}), to itself {weights[i, i]:.3f}.")
            + moved + "<br>weights: " + " | ".join(f"{t} {w:.3f}" for t, w in zip(tokens, weights[i], strict=True)))


def context_explorer():
    """Choose the query, nudge one token's embedding, watch the weights and the context vector move together."""
    controls = {
        "query": dropdown("query", JOURNEY_TOKENS, "journey"),
        "token": dropdown("nudge token", JOURNEY_TOKENS, "with"),
        "delta_0": slider("Δ feature 0", 0.0, -1.0, 1.0, 0.1, readout_format=".1f"),
        "delta_1": slider("Δ feature 1", 0.0, -1.0, 1.0, 0.1, readout_format=".1f"),
        "delta_2": slider("Δ feature 2", 0.0, -1.0, 1.0, 0.1, readout_format=".1f"),
    }
    return Explorer(draw_context, controls, figsize=(13, 4.4), update=update_context)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"context_explorer": context_explorer}
