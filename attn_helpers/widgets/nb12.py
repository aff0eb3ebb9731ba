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

from ..plotting import OKABE_ITO, heatmap
from ..pretrained import head_fingerprints, load_minilm
from . import LABEL_STYLE, Explorer, FullRedraw, slider

__all__ = ["EXAMPLE_TEXT", "head_mosaic", "head_summary", "draw_head_view", "update_head_view", "head_view",
           "EXPLORERS"]

#: The sentence the head view opens with.
EXAMPLE_TEXT = "The cat sat on the mat because it was tired."
#: Colour of the frame around the chosen head.
FRAME_COLOUR = OKABE_ITO["vermillion"]
#: Above this many tokens the enlarged map labels every other token (or fewer), so labels stay legible.
MAX_LABELS = 24


def head_mosaic(attentions, gap=1):
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
    (5, 8)
    >>> head_mosaic(np.arange(8.0).reshape(1, 2, 2, 2))
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
    """Left: the 6 x 12 grid of every head's weights; right: the chosen head with token labels.

    The axes, tick labels and the grid are drawn here; :func:`update_head_view` moves the frame
    and swaps the enlarged map when only the layer or the head changes.
    """
    model = load_minilm() if model is None else model
    result = model.run(text)
    tokens = result.tokens
    layers, heads, T, _ = result.attentions.shape
    step = T + 1
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    grid_ax = fig.add_axes((0.04, 0.1, 0.55, 0.8))
    big_ax = fig.add_axes((0.68, 0.22, 0.25, 0.68))
    bar_ax = fig.add_axes((0.945, 0.22, 0.012, 0.68))
    # the NaN gaps between heads are masked: drawn transparent, so the axes' background shows
    grid_ax.imshow(np.ma.masked_invalid(head_mosaic(result.attentions)), cmap="viridis", vmin=0, vmax=1,
                   interpolation="nearest", aspect="equal")
    grid_ax.set_xticks([h * step + (T - 1) / 2 for h in range(heads)], labels=[str(h) for h in range(heads)])
    grid_ax.set_yticks([layer_ * step + (T - 1) / 2 for layer_ in range(layers)],
                       labels=[str(layer_) for layer_ in range(layers)])
    grid_ax.set_xlabel("head")
    grid_ax.set_ylabel("layer")
    grid_ax.tick_params(length=0)
    grid_ax.spines[:].set_visible(False)
    grid_ax.set_title(f"all {layers * heads} heads, {T} tokens (rows: queries, columns: keys)", fontsize=12)
    frame = grid_ax.add_patch(Rectangle((-0.5, -0.5), T, T, fill=False, edgecolor=FRAME_COLOUR, linewidth=2.5))
    big = heatmap(np.zeros((T, T)), tokens, tokens, ax=big_ax, vmin=0, vmax=1, colorbar=False, annotate=False,
                  title=" ", xlabel="key (attended to)", ylabel="query")
    fig.colorbar(big, cax=bar_ax, label="attention weight", ticks=[0, 0.5, 1])
    if T > MAX_LABELS:  # thin the labels: every k-th token
        every = -(-T // MAX_LABELS)
        big_ax.set_xticks(range(0, T, every), labels=tokens[::every], rotation=90, ha="center", fontsize=9)
        big_ax.set_yticks(range(0, T, every), labels=tokens[::every], fontsize=9)
    fig.handles.update(text=text, result=result, frame=frame, big=big, big_ax=big_ax, step=step)
    fig.dynamic.extend([frame, big, big_ax.title])
    return update_head_view(fig, text, layer, head)


def update_head_view(fig, text=EXAMPLE_TEXT, layer=0, head=0, **_):
    """Frame another head and enlarge it (the live widget's fast path); a new text needs a full redraw."""
    h = fig.handles
    if text != h["text"]:
        raise FullRedraw
    result = h["result"]
    layer, head = _choice(layer, head, result)
    h["frame"].set_xy((head * h["step"] - 0.5, layer * h["step"] - 0.5))
    h["big"].set_data(result.attentions[layer, head])
    h["big_ax"].set_title(f"layer {layer}, head {head}", fontsize=13)
    tokens = " ".join(result.tokens)
    return f"<b>tokens:</b> {tokens}<br>{head_summary(result, layer, head)}"


def head_view(text=EXAMPLE_TEXT, layer=0, head=0, model=None):
    """Type a sentence; pick a layer and a head. Returns an :class:`Explorer` (``.show()``, ``.static()``)."""
    model = load_minilm() if model is None else model
    text_box = widgets.Text(value=text, description="sentence (press Enter)", continuous_update=False,
                            style=LABEL_STYLE, layout=widgets.Layout(width="640px"))
    controls = {"text": text_box,
                "layer": slider("layer", layer, 0, model.num_layers - 1, 1, integer=True),
                "head": slider("head", head, 0, model.num_heads - 1, 1, integer=True)}

    def draw(fig, **values):
        return draw_head_view(fig, model=model, **values)

    return Explorer(draw, controls, figsize=(13, 5.2), update=update_head_view)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"head_view": head_view}
