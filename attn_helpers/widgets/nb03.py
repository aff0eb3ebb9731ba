"""Notebook 03: softmax temperature, its weights and the entropy of the distribution."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.ticker import NullLocator

from ..core import entropy, softmax
from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..plotting import bar_weights
from . import LABEL_STYLE, Explorer, dropdown

__all__ = ["TEMPERATURES", "temperature_slider", "entropy_curve", "draw_temperature", "temperature_explorer",
           "EXPLORERS"]

#: Roughly log-spaced temperatures: equal slider steps multiply the temperature by about 1.5.
TEMPERATURES = (0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0)

ENTROPY_COLOUR = "#5e3c99"
REFERENCE_COLOUR = "#000000"


def temperature_slider(value=1.0, options=TEMPERATURES):
    """A log-spaced temperature slider (a SelectionSlider whose values are the temperatures themselves)."""
    options = tuple(float(t) for t in options)
    value = min(options, key=lambda t: abs(np.log(t) - np.log(value)))  # the nearest option on a log scale
    return widgets.SelectionSlider(options=[(f"{t:g}", t) for t in options], value=value,
                                   description="temperature τ", continuous_update=False, style=LABEL_STYLE,
                                   layout=widgets.Layout(width="420px"))


def entropy_curve(scores, temperatures):
    """Entropy (nats) of ``softmax(scores / τ)`` for each temperature τ.

    Parameters
    ----------
    scores : array_like, shape (T,)
    temperatures : array_like, shape (n,)

    Returns
    -------
    entropies : ndarray, shape (n,)

    Examples
    --------
    >>> entropy_curve([0.0, 0.0], [0.5, 1.0, 2.0]).round(4)
    array([0.6931, 0.6931, 0.6931])
    """
    scores = np.asarray(scores, dtype=float)
    temperatures = np.asarray(temperatures, dtype=float)
    weights = softmax(scores[None, :] / temperatures[:, None], axis=-1)  # (n, T): one distribution per temperature
    return entropy(weights, axis=-1)


def draw_temperature(fig, query="journey", temperature=1.0, tokens=JOURNEY_TOKENS, X=None):
    """Left: the query's weights at temperature τ (dots: τ = 1); right: entropy against τ."""
    X = journey_embeddings() if X is None else np.asarray(X)
    tokens = list(tokens)
    i = tokens.index(query) if query in tokens else 0
    query = tokens[i]
    try:
        temperature = float(temperature)
    except (TypeError, ValueError):
        temperature = 1.0
    if not np.isfinite(temperature) or temperature <= 0:
        temperature = 1.0
    scores = X[i] @ X.T  # (d_model,) @ (d_model, T) -> (T,)
    weights = softmax(scores, temperature=temperature)
    plain = softmax(scores)
    H, H_max = float(entropy(weights)), float(np.log(len(tokens)))

    left, right = fig.subplots(1, 2, width_ratios=[1.2, 1])
    bar_weights(weights, tokens, ax=left, highlight=int(np.argmax(weights)), ylim=(0, 1.08),
                title=f"softmax(scores / τ) for query {query!r}, τ = {temperature:g}")
    positions = np.arange(len(tokens))
    left.hlines(plain, positions - 0.4, positions + 0.4, colors=REFERENCE_COLOUR, linewidth=2, label="τ = 1")
    left.axhline(1 / len(tokens), color="#777777", linestyle=":", linewidth=1.2, label=f"uniform 1/{len(tokens)}")
    left.legend(loc="upper right", frameon=False)
    left.set_xlabel("key")

    grid = np.geomspace(0.03, 40.0, 80)
    right.plot(grid, entropy_curve(scores, grid), color=ENTROPY_COLOUR, linewidth=2)
    right.plot([temperature], [H], "o", color=ENTROPY_COLOUR, markersize=10)
    right.axhline(H_max, color="#777777", linestyle="--", linewidth=1.2)
    right.text(0.035, H_max * 0.96, f"uniform: ln {len(tokens)} = {H_max:.2f}", va="top", fontsize=10)
    right.axhline(0, color="#777777", linestyle="--", linewidth=1.2)
    right.text(0.035, 0.04 * H_max, "one-hot: 0", va="bottom", fontsize=10)
    right.set_xscale("log")
    right.set_xticks([0.1, 1.0, 10.0], labels=["0.1", "1", "10"])
    right.xaxis.set_minor_locator(NullLocator())  # the default log minor ticks cost more than the rest of the figure
    right.set_ylim(-0.05 * H_max, H_max * 1.1)
    right.set_xlabel("temperature τ (log scale)")
    right.set_ylabel("entropy H (nats)")
    right.set_title(f"entropy H = {H:.2f} nats")
    j = int(np.argmax(weights))
    return (f"τ = {temperature:g}: entropy H = {H:.4f} nats (uniform would be ln {len(tokens)} = {H_max:.4f}); "
            f"the largest weight, {weights[j]:.4f}, goes to {tokens[j]!r}.")


def temperature_explorer(X=None, tokens=JOURNEY_TOKENS):
    """Choose a query and a temperature: see the weights sharpen (τ < 1) or flatten (τ > 1)."""
    controls = {"query": dropdown("query token", tokens, "journey" if "journey" in tokens else None),
                "temperature": temperature_slider(1.0)}
    return Explorer(lambda fig, **values: draw_temperature(fig, tokens=tokens, X=X, **values), controls,
                    figsize=(11, 4.2), layout="row")


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"temperature_explorer": temperature_explorer}
