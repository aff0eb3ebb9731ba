"""Notebook 12: a head view of all-MiniLM-L6-v2 for any sentence the learner types.

:func:`head_view` joins a text box and two sliders (layer, head) to one figure: left, all 72
attention matrices of the sentence as a 6 x 12 grid (one small ``T x T`` map per head, the
chosen one framed); right, the chosen head enlarged with its tokens as labels. The numbers come
from :mod:`attn_helpers.pretrained` (``model.run`` and ``head_fingerprints``); this module draws.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Rectangle

from ..plotting import OKABE_ITO
from ..pretrained import head_fingerprints, load_minilm
from . import LABEL_STYLE, Explorer, slider

__all__ = ["EXAMPLE_TEXT", "head_mosaic", "head_summary", "draw_head_view", "update_head_view", "head_view",
           "EXPLORERS"]

#: The sentence the head view opens with.
EXAMPLE_TEXT = "The cat sat on the mat because it was tired."
#: Colour of the frame around the chosen head.
FRAME_COLOUR = OKABE_ITO["vermillion"]
#: Above this many tokens the enlarged map labels every other token (or fewer), so labels stay legible.
MAX_LABELS = 16


def head_mosaic(attentions, gap=0):
    """All heads' weight matrices side by side: one image, heads across, layers down.

    Parameters
    ----------
    attentions : array_like, shape (layers, heads, T, T)
    gap : int
        Empty cells (NaN) between neighbouring maps.

    Returns
    -------
    mosaic : ndarray, shape (layers * (T + gap) - gap, heads * (T + gap) - gap)
        The map of head ``h`` in layer ``l`` starts at row ``l * (T + gap)``, column ``h * (T + gap)``.

    Examples
    --------
    >>> head_mosaic(np.ones((2, 3, 2, 2))).shape
    (4, 6)
    >>> head_mosaic(np.arange(8.0).reshape(1, 2, 2, 2), gap=1)
    array([[ 0.,  1., nan,  4.,  5.],
           [ 2.,  3., nan,  6.,  7.]])
    """
    attentions = np.asarray(attentions, dtype=float)
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attentions must have shape (layers, heads, T, T); got {attentions.shape}")
    layers, heads, T, _ = attentions.shape
    step = T + gap
    mosaic = np.full((layers * step - gap, heads * step - gap), np.nan)
    for layer in range(layers):
        for head in range(heads):
            mosaic[layer * step:layer * step + T, head * step:head * step + T] = attentions[layer, head]
    return mosaic


def head_summary(result, layer, head):
    """One line about a head on this sentence: its fingerprint numbers (from ``head_fingerprints``)."""
    fingerprint = head_fingerprints(result.attentions)
    numbers = ", ".join(f"{name} {fingerprint[name][layer, head]:.2f}" for name in
                        ("previous", "next", "self", "[CLS]", "[SEP]"))
    return (f"layer {layer}, head {head}, mean weight on: {numbers}; entropy {fingerprint['entropy'][layer, head]:.2f} "
            f"nats (uniform: {np.log(len(result.tokens)):.2f})")


def _choice(layer, head, result):
    layers, heads = result.attentions.shape[:2]
    return min(max(int(layer), 0), layers - 1), min(max(int(head), 0), heads - 1)


def draw_head_view(fig, text=EXAMPLE_TEXT, layer=0, head=0, model=None):
    """Left: the 6 x 12 grid of every head's weights; right: the chosen head with its tokens.

    Only the axes are drawn here; the images, the token labels and the frame around the chosen
    head are set by :func:`update_head_view`, which the live widget calls alone on every change.
    The grid is drawn in head units (each head a unit square, whatever the number of tokens)
    and the tokens are text, not tick labels, so a new sentence changes no axis.
    """
    model = load_minilm() if model is None else model
    layers, heads = model.num_layers, model.num_heads
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    grid_ax = fig.add_axes((0.04, 0.1, 0.55, 0.8))
    big_ax = fig.add_axes((0.7, 0.27, 0.2, 0.6))
    bar_ax = fig.add_axes((0.915, 0.27, 0.012, 0.6))
    grid = grid_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, interpolation="nearest",
                          extent=(0, heads, layers, 0), aspect="equal")
    background = grid_ax.get_facecolor()  # lines between the heads in the axes' own colour
    grid_ax.hlines(range(1, layers), 0, heads, colors=[background], linewidth=2.5)
    grid_ax.vlines(range(1, heads), 0, layers, colors=[background], linewidth=2.5)
    grid_ax.set_xticks([h + 0.5 for h in range(heads)], labels=[str(h) for h in range(heads)])
    grid_ax.set_yticks([layer_ + 0.5 for layer_ in range(layers)], labels=[str(layer_) for layer_ in range(layers)])
    grid_ax.set_xlabel("head")
    grid_ax.set_ylabel("layer")
    grid_ax.tick_params(length=0)
    grid_ax.spines[:].set_visible(False)
    grid_ax.set_title(" ", fontsize=12)
    frame = grid_ax.add_patch(Rectangle((0, 0), 1, 1, fill=False, edgecolor=FRAME_COLOUR, linewidth=3, zorder=3))
    big = big_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    big_ax.set_xticks([])
    big_ax.set_yticks([])
    big_ax.spines[:].set_visible(False)
    big_ax.set_xlabel("key (attended to)")
    big_ax.set_ylabel("query")
    big_ax.set_title(" ", fontsize=13)
    fig.colorbar(big, cax=bar_ax, label="attention weight", ticks=[0, 0.5, 1])
    fig.handles.update(model=model, text=None, result=None, grid=grid, grid_ax=grid_ax, frame=frame, big=big,
                       big_ax=big_ax, labels=[])
    fig.dynamic.extend([frame, big, big_ax.title])
    note = update_head_view(fig, text, layer, head)
    fig.background_changed = False  # the first frame is drawn in full anyway
    return note


def _token_labels(ax, tokens):
    """The tokens along both edges of the enlarged map (every k-th one beyond MAX_LABELS tokens)."""
    T = len(tokens)
    every = max(1, -(-T // MAX_LABELS))
    size = 11 if every == 1 else 9
    labels = []
    for i in range(0, T, every):
        labels.append(ax.text(-0.7, i, tokens[i], ha="right", va="center", fontsize=size))
        labels.append(ax.text(i, T - 0.3, tokens[i], ha="right", va="top", rotation=60, rotation_mode="anchor",
                              fontsize=size))
    return labels


def update_head_view(fig, text=EXAMPLE_TEXT, layer=0, head=0, **_):
    """Show another sentence, layer or head (the live widget's fast path).

    A new layer or head redraws only the frame and the enlarged map. A new sentence also
    refills the grid and the token labels and asks for the background to be drawn again
    (``fig.background_changed``); no axis, tick or layout changes.
    """
    h = fig.handles
    if text != h["text"]:  # a new sentence: run the model, refill the grid, relabel (drawn as a new background)
        result = h["model"].run(text)
        T = len(result.tokens)
        h["grid"].set_data(head_mosaic(result.attentions))
        h["big"].set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
        h["big_ax"].set_xlim(-0.5, T - 0.5)
        h["big_ax"].set_ylim(T - 0.5, -0.5)
        for label in h["labels"]:
            label.remove()
        h["labels"] = _token_labels(h["big_ax"], result.tokens)
        longest = max(map(len, result.tokens))  # the axis titles go just outside the longest label
        h["big_ax"].xaxis.set_label_coords(0.5, -0.05 - 0.028 * longest)
        h["big_ax"].yaxis.set_label_coords(-0.06 - 0.036 * longest, 0.5)
        fig.background_changed = True
        h["grid_ax"].set_title(f"all {result.attentions.shape[0] * result.attentions.shape[1]} heads, {T} tokens "
                               "(in each square: rows = queries, columns = keys)", fontsize=12)
        h.update(text=text, result=result)
    result = h["result"]
    layer, head = _choice(layer, head, result)
    h["frame"].set_xy((head, layer))
    h["big"].set_data(result.attentions[layer, head])
    h["big_ax"].set_title(f"layer {layer}, head {head}", fontsize=13)
    tokens = " ".join(result.tokens)
    return f"<b>tokens:</b> {tokens}<br>{head_summary(result, layer, head)}"


def head_view(text=EXAMPLE_TEXT, layer=0, head=0, model=None):
    """Type a sentence; pick a layer and a head. Returns an :class:`Explorer` (``.show()``, ``.static()``)."""
    model = load_minilm() if model is None else model
    text_box = widgets.Text(value=text, description="sentence (press Enter)", continuous_update=False,
                            style=LABEL_STYLE, layout=widgets.Layout(width="640px"))
    # Layer and head first: moving them only redraws the frame and the enlarged map; a new sentence runs the model.
    controls = {"layer": slider("layer", layer, 0, model.num_layers - 1, 1, integer=True),
                "head": slider("head", head, 0, model.num_heads - 1, 1, integer=True),
                "text": text_box}

    def draw(fig, **values):
        return draw_head_view(fig, model=model, **values)

    return Explorer(draw, controls, figsize=(13, 5.2), update=update_head_view)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"head_view": head_view}
