"""Notebook 12: a head view of all-MiniLM-L6-v2 (all 72 heads, one enlarged) for any sentence the learner types."""

from __future__ import annotations

from functools import partial

import ipywidgets as widgets
import matplotlib as mpl
import numpy as np
from matplotlib.patches import Rectangle

from ..plotting import NO_GLYPH, OKABE_ITO, drawable_labels
from ..pretrained import FINGERPRINT_SENTENCES, MAX_TOKENS, head_fingerprints, load_minilm
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
    """All heads' (layers, heads, T, T) weight matrices as one image, heads across, layers down, ``gap`` NaN between.

    >>> head_mosaic(np.ones((2, 3, 2, 2))).shape
    (4, 6)
    >>> head_mosaic(np.arange(8.0).reshape(1, 2, 2, 2), gap=1)
    array([[ 0.,  1., nan,  4.,  5.],
           [ 2.,  3., nan,  6.,  7.]])
    """
    attentions = np.asarray(attentions)
    if attentions.dtype.kind != "f":
        attentions = attentions.astype(float)
    if attentions.ndim != 4 or attentions.shape[-1] != attentions.shape[-2]:
        raise ValueError(f"attentions must have shape (layers, heads, T, T); got {attentions.shape}")
    layers, heads, T, _ = attentions.shape
    step = T + gap
    mosaic = np.full((layers * step - gap, heads * step - gap), np.nan, dtype=attentions.dtype)
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


def fit_text(model, text):
    """``(text, note)``: ``text`` itself, or its longest beginning that the model takes (at most 256 tokens)."""
    total = len(model.tokenizer.tokenize(text))
    if total <= MAX_TOKENS:
        return text, ""
    fits, too_long = 0, len(text)  # characters: text[:fits] fits, text[:too_long] does not
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        if len(model.tokenizer.tokenize(text[:middle])) <= MAX_TOKENS:
            fits = middle
        else:
            too_long = middle
    space = text.rfind(" ", 0, fits)
    cut = text[:space] if space > fits // 2 else text[:fits]  # whole words: never more tokens than text[:fits]
    shown = len(model.tokenizer.tokenize(cut))
    return cut, (f"<b>This text has {total} tokens; the model takes at most {MAX_TOKENS}, so the view shows its "
                 f"first {shown}.</b><br>")


def _drawable(tokens):
    """``(labels, families, note)``: the token labels as the figure's fonts can draw them."""
    labels, families, missing = drawable_labels(tokens)
    if not missing:
        return labels, families, ""
    shown = " ".join(sorted(missing)[:8]) + (" ..." if len(missing) > 8 else "")
    return labels, families, (f"<br>The figure's fonts have no glyph for {shown}: its labels show them as "
                              f"{NO_GLYPH} (the tokens above are exact; a font such as Noto Sans CJK would draw them).")


def draw_head_view(fig, sentence=EXAMPLE_TEXT, layer=0, head=0, model=None):
    """Left: the 6 x 12 grid of every head's weights; right: the chosen head with its tokens."""
    model = load_minilm() if model is None else model
    layers, heads = model.num_layers, model.num_heads
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    grid_ax = fig.add_axes((0.04, 0.1, 0.5, 0.8))
    big_ax = fig.add_axes((0.7, 0.27, 0.2, 0.6))
    bar_ax = fig.add_axes((0.915, 0.27, 0.012, 0.6))
    grid = grid_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, interpolation="nearest",
                          extent=(0, heads, layers, 0), aspect="equal")
    background = grid_ax.get_facecolor()  # lines between the heads in the axes' own colour
    lines = [grid_ax.hlines(range(1, layers), 0, heads, colors=[background], linewidth=2.5),
             grid_ax.vlines(range(1, heads), 0, layers, colors=[background], linewidth=2.5)]
    grid_ax.set_xticks([h + 0.5 for h in range(heads)], labels=[str(h) for h in range(heads)])
    grid_ax.set_yticks([layer_ + 0.5 for layer_ in range(layers)], labels=[str(layer_) for layer_ in range(layers)])
    grid_ax.set_xlabel("head")
    grid_ax.set_ylabel("layer")
    grid_ax.tick_params(length=0)
    grid_ax.spines[:].set_visible(False)
    # The title says nothing about the sentence (the note under the figure counts its tokens): a long
    # text, drawn once with the axes rather than again for every sentence (~10 ms each time).
    grid_ax.set_title(f"all {layers * heads} heads (in each square: rows = queries, columns = keys)", fontsize=12)
    frame = grid_ax.add_patch(Rectangle((0, 0), 1, 1, fill=False, edgecolor=FRAME_COLOUR, linewidth=3, zorder=3))
    big = big_ax.imshow(np.zeros((1, 1)), cmap="viridis", vmin=0, vmax=1, interpolation="nearest", aspect="auto")
    big_ax.set_xticks([])
    big_ax.set_yticks([])
    big_ax.spines[:].set_visible(False)
    big_ax.set_title(" ", fontsize=13)
    fig.colorbar(big, cax=bar_ax, label="attention weight", ticks=[0, 0.5, 1])
    axis_titles = _axis_titles(big_ax, "key (attended to)", "query")
    labels = _token_label_pool(big_ax)
    fig.handles.update(model=model, sentence=None, result=None, grid=grid, grid_ax=grid_ax, frame=frame, big=big,
                       big_ax=big_ax, labels=labels, axis_titles=axis_titles)
    fig.middle.extend([grid, *lines, *axis_titles, *labels])
    fig.dynamic.extend([frame, big, big_ax.title])
    return update_head_view(fig, sentence, layer, head)


def _axis_titles(ax, xlabel, ylabel):
    """The axis titles of the enlarged map as text artists that :func:`update_head_view` moves."""
    style = {"fontsize": mpl.rcParams["axes.labelsize"], "fontweight": mpl.rcParams["axes.labelweight"],
             "color": mpl.rcParams["axes.labelcolor"], "transform": ax.transAxes, "ha": "center"}
    return (ax.text(0.5, 0, xlabel, va="top", **style),
            ax.text(0, 0.5, ylabel, va="bottom", rotation="vertical", rotation_mode="anchor", **style))


def _token_label_pool(ax):
    """Room for the tokens along both edges of the enlarged map: MAX_LABELS rows, then MAX_LABELS columns."""
    rows = [ax.text(0, 0, "", ha="right", va="center") for _ in range(MAX_LABELS)]
    columns = [ax.text(0, 0, "", ha="right", va="top", rotation=60, rotation_mode="anchor")
               for _ in range(MAX_LABELS)]
    return rows + columns


def _show_tokens(labels, tokens, families=None):
    """The tokens along both edges of the enlarged map (every k-th beyond MAX_LABELS); returns the longest's width."""
    T = len(tokens)
    for label in labels:
        label.set_family(families or mpl.rcParams["font.family"])
    every = max(1, -(-T // MAX_LABELS))
    size = 11 if every == 1 else 9
    shown = range(0, T, every)
    rows, columns = labels[:MAX_LABELS], labels[MAX_LABELS:]
    for k in range(MAX_LABELS):
        visible = k < len(shown)
        rows[k].set_visible(visible)
        columns[k].set_visible(visible)
        if visible:
            i = shown[k]
            rows[k].set(text=tokens[i], position=(-0.7, i), fontsize=size)
            columns[k].set(text=tokens[i], position=(i, T - 0.3), fontsize=size)
    return max(len(tokens[i]) for i in shown) * size / 11


def update_head_view(fig, sentence=EXAMPLE_TEXT, layer=0, head=0, **_):
    """Show another sentence, layer or head (the live widget's fast path)."""
    h = fig.handles
    if sentence != h["sentence"]:  # a new sentence: run the model, refill the grid, relabel (the middle layer)
        shown, cut_note = fit_text(h["model"], sentence)
        result = h["model"].run(shown)
        T = len(result.tokens)
        h["grid"].set_data(head_mosaic(result.attentions))
        h["big"].set_extent((-0.5, T - 0.5, T - 0.5, -0.5))
        h["big_ax"].set_xlim(-0.5, T - 0.5)
        h["big_ax"].set_ylim(T - 0.5, -0.5)
        labels, families, font_note = _drawable(result.tokens)
        longest = _show_tokens(h["labels"], labels, families)  # the axis titles go just outside the longest label
        xlabel, ylabel = h["axis_titles"]
        xlabel.set_y(-0.05 - 0.028 * longest)
        width = h["big_ax"].get_position().width * fig.get_figwidth()  # the enlarged map's width in inches
        ylabel.set_x(-(0.16 + 0.094 * longest) / width)                # about 0.094 in a character at 11 pt
        fig.middle_changed = True
        h.update(sentence=sentence, result=result, notes=(cut_note, font_note))
    result = h["result"]
    layers, heads = result.attentions.shape[:2]
    layer, head = min(max(int(layer), 0), layers - 1), min(max(int(head), 0), heads - 1)
    h["frame"].set_xy((head, layer))
    h["big"].set_data(result.attentions[layer, head])
    h["big_ax"].set_title(f"layer {layer}, head {head}", fontsize=13)
    tokens = " ".join(result.tokens)
    cut_note, font_note = h["notes"]
    return f"{cut_note}<b>{len(result.tokens)} tokens:</b> {tokens}<br>{head_summary(result, layer, head)}{font_note}"


def head_view(sentence=EXAMPLE_TEXT, layer=0, head=0, model=None):
    """Type a sentence; pick a layer and a head. Returns an :class:`Explorer` (``.show()``, ``.static()``, both of
    which take ``sentence=``, ``layer=``, ``head=``)."""
    model = load_minilm() if model is None else model
    text_box = widgets.Text(value=sentence, description="sentence (press Enter)", continuous_update=False,
                            style=LABEL_STYLE, layout=widgets.Layout(width="640px"))
    controls = {"sentence": text_box,
                "layer": slider("layer", layer, 0, model.num_layers - 1, 1, integer=True),
                "head": slider("head", head, 0, model.num_heads - 1, 1, integer=True)}
    return Explorer(partial(draw_head_view, model=model), controls, figsize=(10.5, 5.2), update=update_head_view,
                    samples={"sentence": FINGERPRINT_SENTENCES})  # sentences to type, for the latency benchmark


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"head_view": head_view}
