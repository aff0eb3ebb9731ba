"""Notebook 04: context vectors as weighted sums, drawn as arrows inside the hull of the inputs."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Polygon
from matplotlib.ticker import MaxNLocator

from ..core import scaled_dot_product_attention
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..measures import convex_hull_2d
from ..plotting import CONTEXT_COLOUR, FAINT_COLOUR, LABEL_BOX, OKABE_ITO, PAPER_COLOUR, token_colours
from . import Explorer, FullRedraw, dropdown, redraw_dynamic, set_bars, slider

__all__ = ["draw_sum_panel", "draw_tip_to_tail", "draw_context", "update_context", "context_explorer", "EXPLORERS"]

#: The shaded convex hull of the inputs (drawn at 25 % opacity).
HULL_COLOUR = OKABE_ITO["sky blue"]


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


def draw_sum_panel(ax, X, weights_row, context, dims=(0, 1), tokens=JOURNEY_TOKENS, query=None, limits=None,
                   moved=None, frame=True, labels=True):
    """One 2-D view (two features) of the weighted sum: input arrows as wide as their weights, hull, context.

    ``moved`` (a token index) adds "(moved)" to that token's name; ``labels=False`` leaves names out.
    """
    a, b = dims
    tokens = list(tokens)
    colours = token_colours(tokens)
    P = np.asarray(X, dtype=float)[:, [a, b]]
    z = np.asarray(context, dtype=float)[[a, b]]
    w = np.asarray(weights_row, dtype=float)
    if limits is None:
        low, high = _panel_limits(X, context, dims)
    else:
        low, high = np.array(limits[0], float), np.array(limits[1], float)
    span = float(np.max(high - low))
    head = 0.04 * span
    hull = convex_hull_2d(P)
    if len(hull) >= 3:
        ax.add_patch(Polygon(P[hull], closed=True, facecolor=HULL_COLOUR, alpha=0.25, edgecolor=HULL_COLOUR,
                             linewidth=1.5))
    top = float(w.max()) if w.size and w.max() > 0 else 1.0
    for j, p in enumerate(P):
        if np.hypot(*p) > 1e-9:
            ax.arrow(0, 0, p[0], p[1], width=0.004 * span * (0.5 + 2.5 * w[j] / top), head_width=head,
                     head_length=head, length_includes_head=True, color=colours[j], alpha=0.9, linewidth=0)
    if np.hypot(*z) > 1e-9:  # the white ring on top marks where the sum ends (a bare head would hide it)
        ax.arrow(0, 0, z[0], z[1], width=0.012 * span, head_width=1.3 * head, head_length=1.3 * head,
                 length_includes_head=True, color=CONTEXT_COLOUR, linewidth=0, zorder=4)
    ax.plot(*z, "o", markerfacecolor=PAPER_COLOUR, markeredgecolor=CONTEXT_COLOUR, markeredgewidth=2, ms=9, zorder=5)
    pad = 0.02 * span
    for where, text in (_label_groups(P, tokens, radius=0.06 * span) if labels else ()):
        names = text.split(" / ")
        colour = colours[tokens.index(names[0])] if len(names) == 1 else CONTEXT_COLOUR
        # names that share a point go on lines of their own ("journey /" over "starts"): one long line would run
        # out of a small panel
        text = " /\n".join(f"{n} (moved)" if moved is not None and n == tokens[moved] else n for n in names)
        # near the right edge, or just left of the ring that marks z (with room on the left): name left of the tip
        right = where[0] > high[0] - 0.25 * span or (0 < z[0] - where[0] < 0.3 * span and abs(z[1] - where[1])
                                                      < 0.1 * span and where[0] - low[0] > 0.2 * span)
        ax.text(where[0] - pad if right else where[0] + pad, where[1] + pad, text, fontsize=12, color=colour,
                fontweight="bold", ha="right" if right else "left", in_layout=False, clip_on=True, zorder=6,
                bbox=LABEL_BOX)
    name = "z" if query is None else f"z({query})"
    ax.text(z[0] + pad, z[1] - 2 * pad, name, fontsize=12, color=CONTEXT_COLOUR, fontweight="bold", va="top",
            in_layout=False, clip_on=True, zorder=6, bbox=LABEL_BOX)
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
    ax.axhline(0, color=FAINT_COLOUR, lw=0.6, zorder=0)
    ax.axvline(0, color=FAINT_COLOUR, lw=0.6, zorder=0)


def draw_tip_to_tail(ax, X, weights_row, dims=(0, 1), tokens=JOURNEY_TOKENS, query=None):
    """The weighted sum as a path: the arrows ``weights[j] * x(j)`` laid tip to tail end at the context vector."""
    a, b = dims
    colours = token_colours(tokens)
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
                     color=colours[j], linewidth=0,
                     label=f"{w[j]:.2f} · x({tokens[j]})")
    if np.hypot(*z) > 1e-12:
        ax.arrow(0, 0, *z, width=0.012 * span, head_width=1.4 * head, head_length=1.4 * head,
                 length_includes_head=True, color=CONTEXT_COLOUR, alpha=0.45, linewidth=0, zorder=0,
                 label="z" if query is None else f"z({query})")
    ax.plot(*z, "o", markerfacecolor=PAPER_COLOUR, markeredgecolor=CONTEXT_COLOUR, markeredgewidth=2, ms=9, zorder=5)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel(f"feature {a}")
    ax.set_ylabel(f"feature {b}")
    ax.legend(loc="upper left", fontsize=11, frameon=False, handlelength=1.2)
    ax.margins(0.08)


def draw_context(fig, query="journey", token="with", delta_0=0.0, delta_1=0.0, delta_2=0.0, tokens=JOURNEY_TOKENS,
                 X=None):
    """Weights of one query (bars) and its context vector in two views, after nudging one token."""
    tokens = list(tokens)
    base = (journey_embeddings() if X is None else np.asarray(X)).astype(float)
    bars_ax, front, side = fig.subplots(1, 3, width_ratios=[1.25, 1, 1])
    context, weights = _attend(_nudged(base, tokens, token, delta_0, delta_1, delta_2))
    # bars without printed values (texts are what a redraw costs most); the note lists the weights
    bars = bars_ax.bar(range(len(tokens)), np.zeros(len(tokens)), color=token_colours(tokens))
    top = max(0.5, np.ceil(10 * float(weights[tokens.index(query)].max())) / 10 + 0.1)
    bars_ax.set_ylim(0, top)
    bars_ax.set_xticks(range(len(tokens)), labels=tokens, rotation=45)  # black names; the bars carry the colours
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


def _attend(X):
    """Notebook 04's weight-free self-attention: X is the queries, the keys and the values, and no scaling."""
    return scaled_dot_product_attention(X, X, X, scale=1.0)


def _nudged(base, tokens, token, delta_0, delta_1, delta_2):
    X = base.copy()
    X[tokens.index(token)] += [delta_0, delta_1, delta_2]
    return X


def update_context(fig, query="journey", token="with", delta_0=0.0, delta_1=0.0, delta_2=0.0, **_):
    """Redraw only what moves: the query's weights, the arrows, the hull and the labels."""
    parts = fig.handles
    tokens = parts["tokens"]
    X = _nudged(parts["base"], tokens, token, delta_0, delta_1, delta_2)
    i = tokens.index(query)
    context, weights = _attend(X)
    for _ax, dims in parts["panels"]:  # a point outside the frozen axes needs a new frame
        low, high = parts["limits"][dims]
        points = np.vstack([X[:, list(dims)], context[i][list(dims)]])
        if (points < low).any() or (points > high).any():
            raise FullRedraw
    if weights[i].max() > parts["bars_top"]:
        raise FullRedraw  # a bar taller than the frozen axis
    set_bars(parts["bars"], weights[i], highlight=i)
    parts["bars_ax"].set_title(f"weights of the query {query!r}")
    nudged = bool(delta_0 or delta_1 or delta_2)

    def panels():
        for ax, dims in parts["panels"]:
            draw_sum_panel(ax, X, weights[i], context[i], dims=dims, tokens=tokens, query=query,
                           limits=parts["limits"][dims], moved=tokens.index(token) if nudged else None, frame=False,
                           labels=dims == (0, 1))  # the side view is read by colour

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
    return Explorer(draw_context, controls, figsize=(10.4, 4.2), update=update_context)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"context_explorer": context_explorer}
