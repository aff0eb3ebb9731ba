"""Notebook 03: softmax temperature, its weights and the entropy of the distribution."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import NullLocator

from ..core import entropy, softmax
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..measures import entropy_curve
from ..plotting import GUIDE_COLOUR, OKABE_ITO, token_colours
from . import LABEL_STYLE, pick, query_dropdown, sentence_explorer, set_bars, value_bars

__all__ = ["TEMPERATURES", "temperature_slider", "draw_temperature", "update_temperature",
           "temperature_explorer", "EXPLORERS"]

#: Roughly log-spaced temperatures: equal slider steps multiply the temperature by about 1.5.
TEMPERATURES = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0)

#: The entropy curve and the marks of the weights at τ = 1 (the bars take their tokens' colours).
CURVE_COLOUR = OKABE_ITO["black"]


#: How far above a bar (in weight) a τ = 1 mark would cover the bar's label: the label then sits on the mark.
MARK_CLEARANCE = 0.09


def temperature_slider(value=1.0, options=TEMPERATURES):
    """A log-spaced temperature slider (a SelectionSlider whose values are the temperatures themselves)."""
    options = tuple(float(t) for t in options)
    value = min(options, key=lambda t: abs(np.log(t) - np.log(value)))  # the nearest option on a log scale
    return widgets.SelectionSlider(options=[(f"{t:g}", t) for t in options], value=value,
                                   description="temperature τ", continuous_update=False, style=LABEL_STYLE,
                                   layout=widgets.Layout(width="420px"))


def _as_temperature(value):
    """A usable temperature: ``value`` if it is a finite number > 0, else 1."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        return 1.0
    return value if np.isfinite(value) and value > 0 else 1.0


def draw_temperature(fig, query="journey", temperature=1.0, tokens=JOURNEY_TOKENS, X=None):
    """Left: the query's weights at temperature τ (black marks: τ = 1); right: entropy against τ."""
    X = journey_embeddings() if X is None else np.asarray(X)
    tokens = list(tokens)
    T = len(tokens)
    positions = np.arange(T)
    H_max = float(np.log(T))

    left, right = fig.subplots(1, 2, width_ratios=[1.2, 1])
    bars, labels = value_bars(left, T, token_colours(tokens))
    reference = left.hlines(np.zeros(T), positions - 0.4, positions + 0.4, colors=CURVE_COLOUR, linewidth=2.5,
                            label="τ = 1")
    left.axhline(1 / T, color=GUIDE_COLOUR, linestyle=":", linewidth=1.5, label=f"uniform 1/{T}")
    left.legend(loc="upper right", frameon=False, fontsize=12)
    left.set_xticks(positions, labels=tokens)
    left.set_ylim(0, 1.08)
    left.set_ylabel("attention weight")
    left.set_xlabel("key")
    left.set_title(" ")

    grid = np.geomspace(0.03, 40.0, 80)
    curve, = right.plot(grid, np.zeros_like(grid), color=CURVE_COLOUR, linewidth=2)
    point, = right.plot([1.0], [0.0], "o", color=CURVE_COLOUR, markersize=10)
    right.axhline(H_max, color=GUIDE_COLOUR, linestyle="--", linewidth=1.2)
    right.text(0.035, H_max * 0.96, f"uniform: ln {T} = {H_max:.2f}", va="top", fontsize=11, color=GUIDE_COLOUR)
    right.axhline(0, color=GUIDE_COLOUR, linestyle="--", linewidth=1.2)
    right.text(0.035, 0.04 * H_max, "one-hot: 0", va="bottom", fontsize=11, color=GUIDE_COLOUR)
    right.set_xscale("log")
    right.set_xticks([0.1, 1.0, 10.0], labels=["0.1", "1", "10"])
    right.xaxis.set_minor_locator(NullLocator())  # the default log minor ticks cost more than the rest of the figure
    right.set_xlim(grid[0], grid[-1])
    right.set_ylim(-0.05 * H_max, H_max * 1.1)
    right.set_xlabel("temperature τ (log scale)")
    right.set_ylabel("entropy H (nats)")
    right.set_title(" ")

    fig.handles = {"scores": X @ X.T, "tokens": tokens, "positions": positions, "grid": grid, "H_max": H_max,
                   "bars": bars, "labels": labels, "reference": reference, "curve": curve, "point": point,
                   "left": left, "right": right, "query": None}
    fig.dynamic = [*bars, *labels, reference, curve, point, left.title, right.title]
    return update_temperature(fig, query=query, temperature=temperature)


def update_temperature(fig, query="journey", temperature=1.0, **_):
    """Show ``query``'s weights at ``temperature``: bars, τ = 1 marks, entropy curve and point, titles."""
    parts = fig.handles
    tokens = parts["tokens"]
    i, query = pick(tokens, query)
    temperature = _as_temperature(temperature)
    scores = parts["scores"][i]  # (T,): the query's scores over the keys
    if parts["query"] != query:  # the τ = 1 marks and the entropy curve depend on the query only
        plain = parts["plain"] = softmax(scores)
        parts["reference"].set_segments([[(p - 0.4, w), (p + 0.4, w)]
                                         for p, w in zip(parts["positions"], plain, strict=True)])
        parts["curve"].set_ydata(entropy_curve(scores, parts["grid"]))
        parts["query"] = query
    weights = softmax(scores, temperature=temperature)
    H = float(entropy(weights))
    j = int(np.argmax(weights))
    set_bars(parts["bars"], weights, parts["labels"], highlight=j)
    for label, weight, mark in zip(parts["labels"], weights, parts["plain"], strict=True):
        if -0.01 <= mark - weight < MARK_CLEARANCE:  # a τ = 1 mark at or just above the bar: label above the mark
            label.xy = (label.xy[0], mark + 0.015)
    parts["point"].set_data([temperature], [H])
    parts["left"].set_title(f"softmax(scores / τ) for query {query!r}, τ = {temperature:g}")
    parts["right"].set_title(f"entropy H = {H:.2f} nats")
    n = len(tokens)
    return (f"τ = {temperature:g}: entropy H = {H:.4f} nats (uniform would be ln {n} = {parts['H_max']:.4f}); "
            f"the largest weight, {weights[j]:.4f}, goes to {tokens[j]!r}.")


def temperature_explorer(X=None, tokens=JOURNEY_TOKENS):
    """Choose a query and a temperature: see the weights sharpen (τ < 1) or flatten (τ > 1)."""
    controls = {"query": query_dropdown(tokens), "temperature": temperature_slider(1.0)}
    return sentence_explorer(draw_temperature, update_temperature, controls, figsize=(10.2, 4.2), tokens=tokens, X=X)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"temperature_explorer": temperature_explorer}
