"""Figures shared by the notebooks: projector-sized fonts, token names on the axes, colour-blind-safe colours."""

from __future__ import annotations

from functools import cache, lru_cache

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import font_manager, ft2font
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

__all__ = ["setup_style", "heatmap", "heatmap_grid", "place_labels", "text_colour_on", "token_colour", "token_colours",
           "MASKED_COLOUR", "HATCH_COLOUR", "CONTEXT_COLOUR", "HIGHLIGHT_EDGE", "PAPER_COLOUR", "LABEL_BOX",
           "OUTLINE_COLOUR", "GUIDE_COLOUR", "FAINT_COLOUR", "OKABE_ITO", "SERIES_COLOURS", "drawable_labels",
           "NO_GLYPH", "DIAGRAM_FONT_SIZE", "DIAGRAM_MAX_WIDTH", "PARAMETER_COLOUR", "shape_label", "Node",
           "array_node", "step_node", "flow_diagram", "describe_flow", "induction_nodes", "block_nodes",
           "describe_arrows"]

#: Colour of masked cells: visibly different from any weight, even 0.
MASKED_COLOUR = "#d9d9d9"
#: The hatching drawn over masked cells.
HATCH_COLOUR = "#969696"

#: The Okabe-Ito palette (Okabe & Ito, 2008): eight colours that stay distinct for the
#: common kinds of colour blindness. Every categorical colour of the series comes from here.
OKABE_ITO = {
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
    "black": "#000000",
}

#: The order in which categories (heads, tokens of an unknown sentence, lines) take colours:
#: yellow, hard to read on white, comes last; black is kept for text.
SERIES_COLOURS = tuple(OKABE_ITO[name] for name in (
    "blue", "orange", "bluish green", "vermillion", "reddish purple", "sky blue", "yellow"))

#: One colour per token across the whole series: a word has the same colour in every notebook.
_TOKEN_COLOUR_NAMES = {
    # "Your journey starts with one step" (notebooks 02-05)
    "Your": "blue", "journey": "orange", "starts": "bluish green", "with": "vermillion", "one": "reddish purple",
    "step": "sky blue",
    # "I love AI" (notebook 05)
    "I": "blue", "love": "vermillion", "AI": "bluish green",
    # "a fluffy blue creature roamed the verdant forest" (notebooks 07-08)
    "a": "sky blue", "fluffy": "orange", "blue": "blue", "creature": "vermillion", "roamed": "reddish purple",
    "the": "sky blue", "verdant": "bluish green", "forest": "bluish green",
}


def token_colour(token, index=0):
    """The series' colour of ``token``; a word the series has not named takes ``SERIES_COLOURS[index]``."""
    name = _TOKEN_COLOUR_NAMES.get(str(token))
    return OKABE_ITO[name] if name else SERIES_COLOURS[index % len(SERIES_COLOURS)]


def token_colours(tokens):
    """One colour per token of a sentence (a list of hex strings), the same in every notebook."""
    return [token_colour(token, i) for i, token in enumerate(tokens)]


# Colours with a role rather than a word (named once; every figure refers to these names).
#: The paper colour: behind labels (so no line can hide them) and inside hollow markers.
PAPER_COLOUR = "white"
#: A box behind a label, so that the arrows and lines under it cannot hide it.
LABEL_BOX = {"facecolor": PAPER_COLOUR, "alpha": 0.8, "edgecolor": "none", "pad": 1.0}
#: A context vector z, drawn over its inputs' token colours: the result, in black.
CONTEXT_COLOUR = OKABE_ITO["black"]
#: The outline of the chosen row (or column) of a heatmap: visible on every viridis colour.
OUTLINE_COLOUR = OKABE_ITO["vermillion"]
#: The edge of the one bar a figure's note talks about (the query's own key, the largest weight).
HIGHLIGHT_EDGE = OKABE_ITO["black"]
#: Reference lines and their labels: a uniform weight, a median, a tip-to-tail path.
GUIDE_COLOUR = "#666666"
#: Background marks: the zero lines of an axis, a cloud of thousands of points.
FAINT_COLOUR = "#bdbdbd"

_STYLE = {
    "figure.dpi": 90,
    "savefig.dpi": 90,
    "font.size": 12,
    "axes.titlesize": 13,
    "axes.labelsize": 12,
    "xtick.labelsize": 11,
    "ytick.labelsize": 11,
    "legend.fontsize": 11,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "image.cmap": "viridis",
}


def text_colour_on(level, signed=False):
    """Black or white: the text colour readable on a colormap (viridis, or diverging if ``signed``) at ``level``.

    >>> text_colour_on(0.1), text_colour_on(0.9), text_colour_on(0.05, signed=True)
    ('white', '#000000', 'white')
    """
    dark = abs(level - 0.5) > 0.3 if signed else level < 0.55
    return PAPER_COLOUR if dark else OKABE_ITO["black"]


def setup_style():
    """Apply the series' figure style (projector-friendly font sizes, viridis)."""
    mpl.rcParams.update(_STYLE)


def heatmap(matrix, row_labels=None, col_labels=None, *, ax=None, title=None, cmap=None, vmin=None, vmax=None,
            annotate=True, fmt="{:.2f}", mask=None, colorbar=True, xlabel="key (attended to)",
            ylabel="query (attending)", cbar_label=None):
    """Draw a labelled heatmap of ``matrix[i, j]`` (row i = query, column j = key); returns the AxesImage.

    Cells where ``mask`` is False are hatched grey with no number, so a masked cell never looks like a small weight.
    """
    matrix = np.asarray(matrix, dtype=float)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D; got shape {matrix.shape}")
    ax = ax or plt.gca()
    signed = matrix.min() < 0
    if cmap is None:
        cmap = "PuOr_r" if signed else "viridis"
    if signed and vmin is None and vmax is None:
        lim = float(np.abs(matrix).max()) or 1.0
        vmin, vmax = -lim, lim
    hidden = None if mask is None else ~np.broadcast_to(np.asarray(mask, bool), matrix.shape)
    shown = np.ma.masked_array(matrix, mask=hidden)
    colormap = (mpl.colormaps[cmap] if isinstance(cmap, str) else cmap).with_extremes(bad=MASKED_COLOUR)
    image = ax.imshow(shown, cmap=colormap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="nearest")
    rows, cols = matrix.shape
    if mask is not None:
        for i, j in zip(*np.nonzero(np.ma.getmaskarray(shown))):
            ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, hatch="///", edgecolor=HATCH_COLOUR,
                                   linewidth=0))
    if annotate and rows * cols <= 144:
        norm = image.norm
        for i in range(rows):
            for j in range(cols):
                if np.ma.is_masked(shown[i, j]):
                    continue
                ax.text(j, i, fmt.format(matrix[i, j]), ha="center", va="center", fontsize=10 if cols > 6 else 11,
                        color=text_colour_on(norm(matrix[i, j]), signed))
    col_labels = [str(c) for c in col_labels] if col_labels is not None else [str(c) for c in range(cols)]
    # slanted when a label is long, or when two neighbours (about 0.6 em a character) would meet: never one over
    # the next
    cell_points = ax.get_window_extent().width * 72 / ax.figure.dpi / cols  # the axes as laid out so far
    em = font_manager.FontProperties(size=mpl.rcParams["xtick.labelsize"]).get_size_in_points()
    shown = [(j, len(label)) for j, label in enumerate(col_labels) if label.strip()]
    crowded = any(0.6 * em * (a + b) / 2 > (j - i) * cell_points for (i, a), (j, b) in zip(shown, shown[1:]))
    long_labels = max(map(len, col_labels)) > 3 or crowded
    ax.set_xticks(range(cols), labels=col_labels, rotation=45 if long_labels else 0,
                  ha="right" if long_labels else "center", rotation_mode="anchor")
    ax.set_yticks(range(rows), labels=list(row_labels) if row_labels is not None else range(rows))
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.spines[:].set_visible(False)
    if colorbar:
        bar = ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
        if cbar_label:
            bar.set_label(cbar_label)
    return image


def heatmap_grid(matrices, titles=None, row_labels=None, col_labels=None, *, ncols=4, size=2.6, vmin=0.0, vmax=1.0,
                 cbar_label="attention weight", annotate=False, suptitle=None):
    """A new figure: a grid of heatmaps of ``matrices`` (n, R, C) with shared axes and one colorbar."""
    matrices = np.asarray(matrices, dtype=float)
    n = matrices.shape[0]
    ncols = min(ncols, n)
    nrows = -(-n // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(size * ncols + 1.2, size * nrows + 0.6), squeeze=False,
                             sharex=True, sharey=True, layout="constrained")
    image = None
    for k, ax in enumerate(axes.flat):
        if k >= n:
            ax.set_visible(False)
            continue
        image = heatmap(matrices[k], row_labels, col_labels, ax=ax, vmin=vmin, vmax=vmax, colorbar=False,
                        annotate=annotate, title=None if titles is None else titles[k],
                        xlabel="key" if k // ncols == nrows - 1 else None, ylabel="query" if k % ncols == 0 else None)
    fig.colorbar(image, ax=axes, shrink=0.8, label=cbar_label)
    if suptitle:
        fig.suptitle(suptitle)
    return fig


# Where a label may go relative to its point: (offset in points, horizontal and vertical alignment).
# The first ring hugs the point; the second, farther out, gets a thin leader line.
_RING = (
    ((5, 3), "left", "bottom"), ((5, -3), "left", "top"), ((-5, 3), "right", "bottom"), ((-5, -3), "right", "top"),
    ((0, 7), "center", "bottom"), ((0, -7), "center", "top"), ((8, 0), "left", "center"), ((-8, 0), "right", "center"),
)
_LABEL_SPOTS = _RING + tuple(((3 * dx, 3 * dy), ha, va) for (dx, dy), ha, va in _RING)


#: Names of installed fonts worth trying for characters the default font lacks (CJK, for a start).
FALLBACK_FONTS = ("CJK", "Source Han", "WenQuanYi", "Droid Sans Fallback", "YaHei", "SimHei", "SimSun", "PingFang",
                  "Hiragino", "Gothic", "Arial Unicode", "Noto Sans")
#: What stands in for a character that no installed font can draw.
NO_GLYPH = "\u25a1"


@cache
def _charmap(path):
    return frozenset(ft2font.FT2Font(path).get_charmap())


@lru_cache(maxsize=64)
def _fonts_for(characters):
    """``(families, missing)``: the fonts to draw ``characters`` with, and those no installed font has."""
    default = font_manager.FontProperties(family=mpl.rcParams["font.family"])
    missing = {c for c in characters if ord(c) not in _charmap(font_manager.findfont(default)) and c not in "\n\t"}
    if not missing:
        return None, frozenset()
    best, best_has = None, set()
    for font in font_manager.fontManager.ttflist:
        if any(name in font.name for name in FALLBACK_FONTS) and font.fname.lower().endswith((".ttf", ".otf")):
            has = {c for c in missing if ord(c) in _charmap(font.fname)}
            if len(has) > len(best_has):
                best, best_has = font.name, has
    families = None if best is None else [*default.get_family(), best]
    return families, frozenset(missing - best_has)


def drawable_labels(labels):
    """``(labels, families, missing)``: each character that no installed font draws (an emoji, CJK without a CJK
    font) replaced by ``NO_GLYPH``, so a figure never warns; the font families to draw the labels with (``None``:
    the default font has every character); and the characters replaced.

    >>> drawable_labels(["cat", "sat"])
    (['cat', 'sat'], None, frozenset())
    """
    families, missing = _fonts_for(frozenset("".join(labels)))
    if missing:
        labels = ["".join(NO_GLYPH if c in missing else c for c in label) for label in labels]
    return list(labels), families, missing


def _overlap(box, boxes):
    """Total overlap area of ``box`` (x0, y0, x1, y1) with each row of ``boxes`` (n, 4)."""
    boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
    width = np.minimum(box[2], boxes[:, 2]) - np.maximum(box[0], boxes[:, 0])
    height = np.minimum(box[3], boxes[:, 3]) - np.maximum(box[1], boxes[:, 1])
    return float(np.sum(np.clip(width, 0, None) * np.clip(height, 0, None)))


def place_labels(ax, xy, labels, colours=None, fontsize=11, **text_kwargs):
    """Label the points ``xy`` (n, 2) without (most) overlaps; returns the annotations. Call after setting limits.

    Greedy: each label takes the first of eight spots around its point (then eight farther out, with a
    leader line) that overlaps no earlier label, no other point and not the axes' edge (else the least bad).
    """
    fig = ax.figure
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)  # settle the layout first, so that pixel positions are (nearly) final
    renderer = fig.canvas.get_renderer()
    xy = np.asarray(xy, dtype=float)
    pixels = ax.transData.transform(xy)  # (n, 2)
    points = np.hstack([pixels - 4, pixels + 4])  # (n, 4): a small box around each marker
    frame = ax.get_window_extent(renderer).extents  # (x0, y0, x1, y1)
    per_point = fig.dpi / 72.0
    placed, texts = [], []
    for k, (point, label) in enumerate(zip(xy, labels, strict=True)):
        probe = ax.text(0, 0, label, fontsize=fontsize, **text_kwargs)
        size = probe.get_window_extent(renderer)
        probe.remove()
        width, height = size.width + 6, size.height + 6  # 3 pixels of padding on each side
        others = np.delete(points, k, axis=0)
        best = None
        for spot, ((dx, dy), ha, va) in enumerate(_LABEL_SPOTS):
            x0 = pixels[k, 0] + dx * per_point - {"left": 3.0, "center": width / 2, "right": width - 3}[ha]
            y0 = pixels[k, 1] + dy * per_point - {"bottom": 3.0, "center": height / 2, "top": height - 3}[va]
            box = (x0, y0, x0 + width, y0 + height)
            outside = width * height - _overlap(box, frame)
            cost = _overlap(box, placed) + _overlap(box, others) + 3 * outside
            if best is None or cost < best[0]:
                best = (cost, spot, box)
            if cost == 0:
                break
        _, spot, box = best
        (dx, dy), ha, va = _LABEL_SPOTS[spot]
        leader = {} if spot < len(_RING) else {"arrowprops": {"arrowstyle": "-", "color": GUIDE_COLOUR,
                                                              "linewidth": 0.8, "shrinkA": 1, "shrinkB": 4}}
        texts.append(ax.annotate(label, point, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                                 fontsize=fontsize, color=None if colours is None else colours[k], **leader,
                                 **text_kwargs))
        placed.append(box)
    return texts


# --- data-flow diagrams: boxes for arrays, arrows for what is computed from what -------------------------------

#: The smallest text a diagram draws, in points: at the series' 90 dpi a figure up to ``DIAGRAM_MAX_WIDTH`` inches
#: wide is shown at its own size on a 1280 x 720 projector, so 12 pt stays 12 pt there.
DIAGRAM_FONT_SIZE = 12
#: The widest diagram, in inches: 12 in at 90 dpi is 1080 pixels, the width of a notebook cell at 1280 pixels.
DIAGRAM_MAX_WIDTH = 12.0
#: The fill of a box holding learned parameters (W_q, W_1, ...): light, so black text on it stays readable.
PARAMETER_COLOUR = FAINT_COLOUR
_INK = OKABE_ITO["black"]


def shape_label(shape, dims=None):
    """The label of an array's box: its shape, and the symbols of its axes when given.

    >>> shape_label((3, 2)), shape_label((3, 2), ("T", "d_k"))
    ('(3, 2)', '(T, d_k) = (3, 2)')
    """
    shape = tuple(int(n) for n in shape)
    numbers = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
    if dims is None:
        return numbers
    if len(dims) != len(shape):
        raise ValueError(f"dims must name each axis of the shape {shape}; got {tuple(dims)}")
    return "(" + ", ".join(dims) + ") = " + numbers


class Node:
    """One box of a :func:`flow_diagram`: an array (drawn with its shape) or an operation (a name only).

    Make one with :func:`array_node` or :func:`step_node`; ``key`` is what edges name (the label by default).
    """

    def __init__(self, label, xy, *, key=None, shape=None, dims=None, tokens=None, values=None, parameter=False,
                 colour=None, note=None):
        self.label, self.xy, self.key = str(label), (float(xy[0]), float(xy[1])), str(key or label)
        self.shape, self.dims, self.tokens, self.values = shape, dims, tokens, values
        self.parameter, self.colour, self.note = parameter, colour, note
        self.name_rows, self.numbers = False, None

    @property
    def text(self):
        """The words the box shows (its label and shape label), as the description and the alt text give them."""
        label = " ".join(self.label.split())  # a label on two lines is one line of text
        return label if self.shape is None else f"{label} {shape_label(self.shape, self.dims)}"

    def __repr__(self):
        return f"Node({self.text!r})"


def array_node(label, array, xy, *, key=None, dims=None, tokens=None, show_values=False, parameter=False,
               note=None, name_rows=False, show_numbers=False):
    """A box for ``array``, labelled ``label`` and with the array's own shape (never a typed one).

    ``dims``: the symbols of its axes, ``("T", "d_k")``; ``tokens``: one per row of the last two axes, each row drawn
    in the token's series colour; ``show_values``: a small viridis heatmap of a 2-D array inside the box (which
    weight is large; of a 3-D array, the first of the stack); ``parameter``: learned weights, drawn grey;
    ``note``: a line under the shape (the formula); ``name_rows``: the tokens' names written left of their rows;
    ``show_numbers``: each entry of a 1-D array written in its cell.

    >>> array_node("Q", np.zeros((3, 2)), (0, 0), dims=("T", "d_k")).text
    'Q (T, d_k) = (3, 2)'
    """
    array = np.asarray(array)
    if array.ndim not in (1, 2, 3):
        raise ValueError(f"array of {label!r} must be 1-D, 2-D or 3-D; got shape {array.shape}")
    shape_label(array.shape, dims)  # checks dims against the shape
    if tokens is not None and (array.ndim < 2 or len(tokens) != array.shape[-2]):
        raise ValueError(f"tokens of {label!r} must name each row of the array: {len(tokens)} tokens, "
                         f"shape {array.shape}")
    values = None
    if show_values:
        if array.ndim == 1:
            raise ValueError(f"show_values needs a 2-D or 3-D array; {label!r} has shape {array.shape}")
        values = np.asarray(array, dtype=float).reshape(-1, *array.shape[-2:])[0]  # (h, T, T): the front one
    node = Node(label, xy, key=key, shape=array.shape, dims=dims, tokens=None if tokens is None else list(tokens),
                values=values, parameter=parameter, note=note)
    node.name_rows = bool(name_rows and tokens is not None)
    if show_numbers and array.ndim != 1:
        raise ValueError(f"show_numbers needs a 1-D array; {label!r} has shape {array.shape}")
    node.numbers = np.array(array, dtype=float) if show_numbers else None
    return node


def step_node(label, xy, *, key=None, colour=None, note=None):
    """A box for an operation (softmax, split into heads, LayerNorm, +) or a token: its name, no shape.

    ``colour``: the fill (a token's series colour, say); white by default.
    """
    return Node(label, xy, key=key, colour=colour, note=note)


_CELL = 0.4  # the side of one array entry, in data units (inches on an equal-aspect diagram)
_MAX_CELLS = 8  # longer axes are drawn at this length: the shape label says the true one


def _box_size(shape, cell=_CELL):
    rows, cols = (1, shape[0]) if len(shape) == 1 else shape[-2:]
    return cell * min(max(cols, 1), _MAX_CELLS), cell * min(max(rows, 1), _MAX_CELLS)


def _draw_array(ax, node, cell=_CELL):
    x, y = node.xy
    width, height = _box_size(node.shape, cell)
    depth = min(node.shape[0], 4) if len(node.shape) == 3 else 1  # (h, T, d_h): h boxes, one behind the other
    step = 0.12
    for layer in reversed(range(1, depth)):
        ax.add_patch(Rectangle((x - width / 2 + layer * step, y - height / 2 + layer * step), width, height,
                               facecolor=PAPER_COLOUR, edgecolor=_INK, linewidth=1.0))
    left, bottom = x - width / 2, y - height / 2
    face = PARAMETER_COLOUR if node.parameter else PAPER_COLOUR
    frame = Rectangle((left, bottom), width, height, facecolor=face, edgecolor=_INK, linewidth=1.4, zorder=2)
    ax.add_patch(frame)
    if node.tokens is not None:
        shown = node.tokens[:_MAX_CELLS]
        row_height = height / len(shown)
        for r, token in enumerate(shown):
            ax.add_patch(Rectangle((left, bottom + height - (r + 1) * row_height), width, row_height,
                                   facecolor=token_colour(token, r), edgecolor=PAPER_COLOUR, linewidth=0.8, zorder=2))
            if node.name_rows:
                ax.text(left - 0.08, bottom + height - (r + 0.5) * row_height, token, ha="right", va="center",
                        fontsize=DIAGRAM_FONT_SIZE, color=_INK, zorder=3)
    if node.values is not None:
        ax.imshow(node.values, cmap="viridis", vmin=0.0, vmax=max(float(node.values.max()), 1e-12),
                  extent=(left, left + width, bottom, bottom + height), interpolation="nearest", zorder=2)
    top = y + height / 2 + (depth - 1) * step
    if node.numbers is not None:  # each entry written in its cell (a short 1-D array, a tile of scores)
        for c, value in enumerate(np.ravel(node.numbers)[:_MAX_CELLS]):
            ax.text(left + (c + 0.5) * cell, y, f"{value:g}", ha="center", va="center", fontsize=DIAGRAM_FONT_SIZE,
                    color=_INK, zorder=3)
    # the labels on a paper-coloured box: an arrow that passes behind them never crosses their letters
    ax.text(x, top + 0.08, node.label, ha="center", va="bottom", fontsize=DIAGRAM_FONT_SIZE + 1, fontweight="bold",
            color=_INK, zorder=3, bbox=LABEL_BOX)
    shape = shape_label(node.shape, node.dims).replace(" = ", "\n= ")
    ax.text(x, bottom - 0.08, shape, ha="center", va="top", fontsize=DIAGRAM_FONT_SIZE, color=_INK, zorder=3,
            bbox=LABEL_BOX)
    if node.note:  # under the shape's lines (in points, so at any scale), never over them
        below = (shape.count("\n") + 1) * 1.2 * DIAGRAM_FONT_SIZE + 4
        ax.annotate(node.note, (x, bottom - 0.08), xytext=(0, -below), textcoords="offset points", ha="center",
                    va="top", fontsize=DIAGRAM_FONT_SIZE, color=GUIDE_COLOUR, zorder=3, bbox=LABEL_BOX)
    return frame


def _draw_step(ax, node, renderer):
    colour = node.colour or PAPER_COLOUR
    text = ax.text(*node.xy, node.label, ha="center", va="center", fontsize=DIAGRAM_FONT_SIZE + 1, zorder=3,
                   color=text_colour_on(0.0) if _is_dark(colour) else _INK)
    # the box around the text, in data units (measured, not drawn: no full draw of the figure is needed)
    (x0, y0), (x1, y1) = ax.transData.inverted().transform(text.get_window_extent(renderer).get_points())
    pad = 0.1
    box = FancyBboxPatch((x0 - pad, y0 - pad), x1 - x0 + 2 * pad, y1 - y0 + 2 * pad, boxstyle="round,pad=0.02",
                         facecolor=colour, edgecolor=_INK, linewidth=1.2, zorder=2)
    ax.add_patch(box)
    if node.note:
        ax.text(node.xy[0], y0 - pad - 0.05, node.note, ha="center", va="top", fontsize=DIAGRAM_FONT_SIZE,
                color=GUIDE_COLOUR, zorder=3)
    return box


def _is_dark(colour):
    red, green, blue = mpl.colors.to_rgb(colour)
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue < 0.35  # black text on lighter fills, white on darker


def flow_diagram(nodes, edges, *, ax=None, title=None, figsize=None, cell=_CELL):
    """Draw what flows where: ``nodes`` (from :func:`array_node`, :func:`step_node`) joined by ``edges``.

    ``edges``: ``(from_key, to_key)`` or ``(from_key, to_key, label)`` or ``(from_key, to_key, label, options)``
    with ``options`` a dict of ``bend`` (the arc's curvature, 0 = straight), ``width`` (a line width, for a weight)
    and ``dashed``. Each array's box shows the array's own shape, so the picture follows the arrays it is given.
    ``cell``: the side of one entry of an array, in data units (an axis longer than 8 is drawn 8 long).
    Returns the Axes (if ``ax`` is None, of a new figure ``DIAGRAM_MAX_WIDTH`` wide and as high as the nodes need).
    """
    nodes = list(nodes)
    by_key = {}
    for node in nodes:
        if not isinstance(node, Node):
            raise TypeError(f"nodes must come from array_node or step_node; got {type(node).__name__}")
        if node.key in by_key:
            raise ValueError(f"two nodes share the key {node.key!r}: give one a key=")
        by_key[node.key] = node
    (x0, x1), (y0, y1) = _limits(nodes, cell)
    if ax is None:
        width = DIAGRAM_MAX_WIDTH if figsize is None else figsize[0]
        if width > DIAGRAM_MAX_WIDTH:
            raise ValueError(f"figsize {figsize} is wider than {DIAGRAM_MAX_WIDTH} in: its text would shrink on a "
                             "projector")
        height = min(width * (y1 - y0) / (x1 - x0), 7.0) + (0.4 if title else 0.0) if figsize is None else figsize[1]
        fig = plt.figure(figsize=(width, height))
        ax = fig.add_axes((0.0, 0.0, 1.0, 1.0 - (0.4 / height if title else 0.0)))
    ax.set_xlim(x0, x1)
    ax.set_ylim(y0, y1)
    ax.set_aspect("equal")
    ax.axis("off")
    ax.apply_aspect()  # so that data units map to their final pixels
    renderer = ax.figure.canvas.get_renderer()
    patches = {key: _draw_array(ax, node, cell) if node.shape is not None else _draw_step(ax, node, renderer)
               for key, node in by_key.items()}
    for edge in edges:
        start, end, label, options = (*edge, None, None)[:4]
        options = options or {}
        for key in (start, end):
            if key not in by_key:
                raise ValueError(f"edge {edge!r} names {key!r}, which is no node's key; keys: {sorted(by_key)}")
        arrow = FancyArrowPatch(by_key[start].xy, by_key[end].xy, patchA=patches[start], patchB=patches[end],
                                arrowstyle="-|>", mutation_scale=15, color=_INK, zorder=1,
                                linewidth=options.get("width", 1.4), linestyle="--" if options.get("dashed") else "-",
                                connectionstyle=f"arc3,rad={options.get('bend', 0.0)}", shrinkA=4, shrinkB=4)
        ax.add_patch(arrow)
        if label:
            (x0, y0), (x1, y1) = by_key[start].xy, by_key[end].xy
            bend = options.get("bend", 0.0)
            mid = ((x0 + x1) / 2 + bend * (y1 - y0) / 2, (y0 + y1) / 2 - bend * (x1 - x0) / 2)
            ax.text(*mid, label, ha="center", va="center", fontsize=DIAGRAM_FONT_SIZE, color=_INK, bbox=LABEL_BOX,
                    zorder=3)
    # The figure keeps the size its boxes give it (not its text's rendered extents, which differ a little between
    # matplotlib releases and would change the stored "<Figure size ...>" line): the limits make room for the text.
    _fit(ax, renderer)
    if title:
        ax.set_title(title, fontsize=DIAGRAM_FONT_SIZE + 2)
    return ax


def _fit(ax, renderer, title_space=None, rounds=3):
    """Limits that hold every text and arrow: text keeps its size in points, so each round changes the scale a little.
    On a figure of its own (``title_space``: inches above the axes) the diagram keeps the full width, and the
    figure takes the height it needs."""
    fig = ax.figure
    for _ in range(rounds):
        ax.apply_aspect()
        boxes = [artist.get_window_extent(renderer) for artist in (*ax.texts, *ax.patches, *ax.images)]
        corners = ax.transData.inverted().transform(np.vstack([box.get_points() for box in boxes]))
        (x0, y0), (x1, y1) = corners.min(axis=0) - 0.1, corners.max(axis=0) + 0.1
        ax.set_xlim(x0, x1)
        ax.set_ylim(y0, y1)
        if title_space is not None:
            width = fig.get_size_inches()[0]
            height = width * (y1 - y0) / (x1 - x0)
            fig.set_size_inches(width, height + title_space)
            ax.set_position((0.0, 0.0, 1.0, height / (height + title_space)))


def _limits(nodes, cell=_CELL):
    """``(x0, x1), (y0, y1)``: axis limits that hold every box and its labels (autoscaling ignores text)."""
    xs, ys = [], []
    for node in nodes:
        longest = max(map(len, node.label.split("\n")))
        width, height = _box_size(node.shape, cell) if node.shape is not None else (0.17 * longest, 0.4)
        width = max(width, 0.13 * longest)  # a label wider than its box (about 0.13 units a character)
        below = (1.0 if node.dims else 0.6) + (0.4 if node.note else 0.0) if node.shape is not None else 0.4
        left = 0.5 + (0.11 * max(map(len, node.tokens)) if node.name_rows else 0.0)
        xs += [node.xy[0] - width / 2 - left, node.xy[0] + width / 2 + 0.5]
        ys += [node.xy[1] - height / 2 - below, node.xy[1] + height / 2 + 0.5]
    return (min(xs), max(xs)), (min(ys), max(ys))


def describe_flow(nodes, edges):
    """The diagram in words, one line per box in the order given, with the boxes that flow into it: the figure's
    text version (for a screen reader in the notebook) and the source of its alt text on the site.

    >>> x, w = array_node("X", np.zeros((3, 2)), (0, 0)), array_node("W_q", np.zeros((2, 4)), (1, 0), parameter=True)
    >>> q, s = array_node("Q", np.zeros((3, 4)), (2, 0)), array_node("S", np.zeros((3, 3)), (3, 0))
    >>> print(describe_flow([x, w, q, s], [("X", "W_q"), ("W_q", "Q"), ("Q", "S")]))
    X (3, 2)
    W_q (2, 4)
    Q (3, 4) <- X times W_q
    S (3, 3) <- Q
    """
    nodes = list(nodes)
    by_key = {node.key: node for node in nodes}
    sources = {node.key: [] for node in nodes}
    for start, end, *_ in edges:
        sources[end].append(start)

    def name(key):  # an arrow through a parameter box is a product: "X times W_q"
        node = by_key[key]
        label = " ".join(node.label.split())
        return " and ".join(map(name, sources[key])) + f" times {label}" if node.parameter and sources[key] else label

    return "\n".join(node.text + (" <- " + ", ".join(map(name, sources[node.key]))
                                   if sources[node.key] and not node.parameter else "") for node in nodes)


def induction_nodes(tokens, ids, previous_weights, induction_weights, previous_queries, induction_queries,
                    names=("previous-token head", "induction head"), spacing=0.8):
    # names: one per row; "layer 0: previous-token head" is drawn on two lines, its weights titled "layer 0 weights"
    """The nodes and edges of the two-step induction circuit on one sequence, for :func:`flow_diagram`.

    ``tokens``: the sequence's token names; ``ids``: their ids (a token's colour follows its id, so a repeat has its
    first copy's colour); ``previous_weights``, ``induction_weights``: the two heads' weights ``(T, T)``;
    ``*_queries``: the query positions to draw. Each query gets an arrow from the key it attends to most (line
    width: that weight). The first head's row is drawn below, the second above; dashed arrows carry the keys the
    induction head picks up the residual stream, where the first head wrote "my previous token was ...".
    Returns ``nodes, edges``; the two heads' weights are drawn as heatmaps at the right.
    """
    tokens, ids = [str(t) for t in tokens], np.asarray(ids)
    previous_weights, induction_weights = np.asarray(previous_weights), np.asarray(induction_weights)
    T = len(tokens)
    for name, weights in (("previous_weights", previous_weights), ("induction_weights", induction_weights)):
        if weights.shape != (T, T):
            raise ValueError(f"{name} must be (T, T) = ({T}, {T}) for {T} tokens; got shape {weights.shape}")
    rows = ((previous_weights, previous_queries, 0.0), (induction_weights, induction_queries, 2.8))
    keys = {i: int(induction_weights[i].argmax()) for i in induction_queries}   # what the induction head copies
    nodes, edges = [], []
    for level, (weights, queries, y) in enumerate(rows):
        nodes.append(step_node(names[level].replace(": ", ":\n"), (-1.8 - 0.4 * spacing, y)))
        nodes += [step_node(t, (spacing * i, y), key=f"{level} {i}", colour=token_colour(t, int(ids[i])),
                            note=f"→ {tokens[keys[i]]}" if level and i in keys else None) for i, t in enumerate(tokens)]
        nodes.append(array_node(f"{names[level].split(':')[0]} weights", weights, (spacing * (T + 0.5) + 1.6, y + 0.2),
                                dims=("T", "T"), show_values=True))
        for i in queries:
            j = int(weights[i].argmax())  # the key this query attends to most: an arrow key -> query
            bend = min(0.9, 1.8 / (spacing * max(abs(i - j), 1)))  # an arc about 0.9 units high, whatever its length
            edges.append((f"{level} {j}", f"{level} {i}", None,
                          {"bend": -bend if level else bend, "width": 0.5 + 2.5 * float(weights[i, j])}))
    for n, j in enumerate(dict.fromkeys(keys.values())):
        edges.append((f"0 {j}", f"1 {j}", f"after {tokens[j - 1]}" if n == 0 and j else None, {"dashed": True}))
    return nodes, edges


def block_nodes(tokens, x, stream, out, params, norm_first=True):
    """The nodes and edges of one transformer block on the residual stream, for :func:`flow_diagram`.

    ``x``, ``stream`` (after the attention half) and ``out`` are the block's arrays ``(T, d_model)``, one row per
    name of ``tokens``; ``params`` its :class:`~attn_helpers.block.BlockParams` (the boxes' shapes and head count
    come from it). The stream runs along ``y = 0``; each sub-layer branches off above it and is added back at a
    "+". ``norm_first``: pre-norm (each sub-layer reads a normalised copy); else post-norm (the sum is normalised).
    Returns ``nodes, edges``.

    >>> from attn_helpers.block import init_block_params
    >>> x = np.zeros((3, 8))
    >>> nodes, edges = block_nodes(["a", "b", "c"], x, x, x, init_block_params(d_model=8, num_heads=2))
    >>> nodes[0].text, len(nodes), len(edges)
    ('x (T, d_model) = (3, 8)', 10, 11)
    """
    p, rows = params, {"tokens": tokens, "dims": ("T", "d_model")}
    attention = f"attention, {p.num_heads} heads\nW_q, W_k, W_v, W_o\n{p.W_q.shape} each"   # shapes from the block
    nodes = [array_node("x", x, (0, 0), **rows), step_node(attention, (4.4, 2.3), key="attention"),
             step_node("+", (6.6, 0), key="+1"), array_node("W_1", p.W_1, (11.0, 2.3), parameter=True),
             array_node("W_2", p.W_2, (13.6, 2.3), parameter=True), step_node("+", (14.8, 0), key="+2"),
             array_node("out", out, (17.4, 0), **rows)]
    if norm_first:   # pre-norm: each sub-layer reads a normalised copy; the stream itself is never normalised
        nodes += [step_node("LN", (1.8, 2.3), key="LN 1"), array_node("stream", stream, (8.4, 0), **rows),
                  step_node("LN", (9.6, 2.3), key="LN 2")]
        edges = [("x", "LN 1"), ("LN 1", "attention"), ("+1", "stream"), ("stream", "LN 2"), ("LN 2", "W_1"),
                 ("+2", "out")]
    else:            # post-norm: the sum itself is normalised
        nodes += [step_node("LN", (7.6, 0), key="LN 1"), array_node("stream", stream, (9.0, 0), **rows),
                  step_node("LN", (15.8, 0), key="LN 2")]
        edges = [("x", "attention"), ("+1", "LN 1"), ("LN 1", "stream"), ("stream", "W_1"), ("+2", "LN 2"),
                 ("LN 2", "out")]
    edges += [("x", "+1", "residual"), ("attention", "+1"), ("W_1", "W_2", "GELU"), ("W_2", "+2"),
              ("stream", "+2", "residual")]
    return nodes, edges


def describe_arrows(tokens, weights, queries):
    """One line: each query with the key it attends to most, ``"J5 -> P8"`` (key, then query, positions from 0)."""
    return ", ".join(f"{tokens[j]}{j} -> {tokens[i]}{i}" for i in queries for j in [int(np.argmax(weights[i]))])
