"""Figures shared by the notebooks: projector-sized fonts, token names on the axes, colour-blind-safe colours."""

from __future__ import annotations

from functools import cache, lru_cache

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import font_manager, ft2font
from matplotlib.patches import Rectangle

__all__ = ["setup_style", "heatmap", "heatmap_grid", "place_labels", "text_colour_on", "token_colour", "token_colours",
           "MASKED_COLOUR", "HATCH_COLOUR", "CONTEXT_COLOUR", "HIGHLIGHT_EDGE", "PAPER_COLOUR", "LABEL_BOX",
           "OUTLINE_COLOUR", "GUIDE_COLOUR", "FAINT_COLOUR", "OKABE_ITO", "SERIES_COLOURS", "drawable_labels",
           "NO_GLYPH"]

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
    long_labels = max(map(len, col_labels)) > 3
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
