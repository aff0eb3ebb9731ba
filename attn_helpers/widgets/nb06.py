"""Notebook 06: what dividing the scores by sqrt(d_k) does, for d_k from 2 to 1024."""

from __future__ import annotations

import ipywidgets as widgets
import matplotlib as mpl
import numpy as np
from matplotlib.artist import Artist
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.text import Text
from matplotlib.transforms import IdentityTransform

from ..core import entropy, softmax
from ..plotting import SERIES_COLOURS
from ..scaling import (
    DK_CHOICES,
    NUM_KEYS,
    NUM_QUERIES,
    jacobian_norm,
    query_at_percentile,
    scaling_summary,
    score_sample,
)
from . import LABEL_STYLE, Explorer

__all__ = ["PERCENTILES", "draw_scaling", "update_scaling", "scaling_explorer", "EXPLORERS"]

#: The sample queries the explorer offers, by the percentile of their unscaled largest weight (50 = median).
PERCENTILES = (10, 25, 50, 75, 90)

#: Colours of the two sides: without scaling, with scaling.
_SIDE_COLOURS = (SERIES_COLOURS[1], SERIES_COLOURS[0])

# Fast text for the live widget. Glyphs are the slow part of a redraw here (~0.1 ms each), so a text
# that changes is split: its fixed words are drawn once, in the cached background, and only the
# changing part (a number, say) is drawn on each update.
_DIGIT_BLANK, _POINT_BLANK = "\u2007", "\u2008"  # figure space, punctuation space: as wide as "0" and "."


class _Fields(Artist):
    """The changing parts (``(index, Text)`` pairs) of a legend label ``base`` whose blanks stand for them."""

    def __init__(self, base, starts):
        super().__init__()
        self.base = base
        self.fields = [(start, Text(0, 0, "", fontproperties=base.get_fontproperties(), color=base.get_color(),
                                    ha="left", va="baseline", transform=IdentityTransform())) for start in starts]
        self._offsets = {}
        self.set_zorder(6)

    def set_texts(self, texts):
        for (_, field), text in zip(self.fields, texts):
            field.set_text(text)

    def draw(self, renderer):
        if not self.get_visible():
            return
        x, y = self.base.get_transform().transform(self.base.get_unitless_position())  # label's baseline start, px
        key = (self.base.get_text(), getattr(renderer, "dpi", None))
        if self._offsets.get("key") != key:  # where each field starts: measured once per label and resolution
            font = self.base.get_fontproperties()
            widths = [renderer.get_text_width_height_descent(key[0][:start], font, ismath=False)[0] if start else 0.0
                      for start, _ in self.fields]
            self._offsets = {"key": key, "at": widths}
        for offset, (_, field) in zip(self._offsets["at"], self.fields):
            if field.get_figure() is None:
                field.set_figure(self.figure)
            field.set_position((x + offset, y))
            field.draw(renderer)


def _split_title(parent, x, y, transform, changing, fixed, va="baseline", **props):
    """A centred title as two texts, ``changing`` (returned, right-aligned) then ``fixed`` (left-aligned)."""
    fig = parent if isinstance(parent, Figure) else parent.figure
    renderer = fig.canvas.get_renderer()  # the Agg canvas of every Explorer figure (public API)
    font = FontProperties(size=props.get("fontsize"))
    width_changing, width_fixed = (renderer.get_text_width_height_descent(s, font, ismath=False)[0]
                                   for s in (changing, fixed))
    span = transform.transform((1, 0))[0] - transform.transform((0, 0))[0]  # pixels per unit of x
    join = x + (width_changing - width_fixed) / 2 / span
    parent.text(join, y, fixed, ha="left", va=va, transform=transform, **props)
    return parent.text(join, y, changing, ha="right", va=va, transform=transform, **props)


def _clean(d_k, percentile):
    """The d_k and query percentile the figure shows: values not offered fall back to 64 and 50 (the median)."""
    d_k = int(d_k) if d_k in DK_CHOICES else 64
    return d_k, int(percentile) if percentile in PERCENTILES else 50


def _query_words(percentile):
    return "a typical (median) query" if percentile == 50 else f"the query at percentile {percentile}"


#: The per-query numbers in the right legend, each always 4 characters wide (d.dd).
_ROW_METRICS = ("largest", "entropy", "||J||")


def _two(value):
    """A number in [0, 10) as 4 characters."""
    return f"{max(float(value), 0.0):.2f}"  # never "-0.00"


def draw_scaling(fig, d_k=64, percentile=50):
    """Left: the score distributions without/with scaling on one x-axis; right: one query's weights, both ways."""
    d_k, percentile = _clean(d_k, percentile)
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    left, right = fig.subplots(1, 2, width_ratios=[1.15, 1], gridspec_kw={"left": 0.05, "right": 0.98, "top": 0.84,
                                                                          "bottom": 0.14, "wspace": 0.22})
    keys = np.arange(NUM_KEYS)
    blank = _DIGIT_BLANK + _POINT_BLANK + 2 * _DIGIT_BLANK  # as wide as "0.00"
    left_labels = ("without scaling: std ", "with scaling ")  # + "8.03", + "(/ sqrt(64)): std 1.00"
    right_labels = [f"{side}: " + ", ".join(f"{metric} {blank}" for metric in _ROW_METRICS)
                    for side in ("unscaled", "scaled")]
    stairs, bars = [], []
    for k, (colour, offset, bins) in enumerate(zip(_SIDE_COLOURS, (-0.2, 0.2), (41, 21), strict=True)):
        stairs.append(left.stairs(np.zeros(bins - 1), np.linspace(-1, 1, bins), fill=True, color=colour, alpha=0.85,
                                  label=left_labels[k]))
        bars.append(right.bar(keys + offset, np.zeros(NUM_KEYS), width=0.4, color=colour, label=right_labels[k]))
    left.set_ylim(0, 1.45)
    left.set_yticks([])
    left.set_xlabel("score")
    left.set_ylabel("frequency (peak = 1)")
    left.set_title(f"scores of {NUM_QUERIES} queries x {NUM_KEYS} keys")
    left_legend = left.legend(loc="upper left", fontsize=11, frameon=False)
    right.set_ylim(0, 1.45)
    right.set_yticks([0, 0.25, 0.5, 0.75, 1])
    right.set_xticks(keys, labels=[f"k{j}" for j in keys])
    right.set_xlabel("key")
    right.set_ylabel("attention weight")
    right_legend = right.legend(loc="upper left", fontsize=11, frameon=False)
    fields = [left.add_artist(_Fields(text, [len(label)])) for text, label in zip(left_legend.get_texts(), left_labels)]
    starts = [[i for i in range(1, len(label)) if label[i - 1:i + 1] == " " + blank[0]] for label in right_labels]
    fields += [right.add_artist(_Fields(text, at)) for text, at in zip(right_legend.get_texts(), starts)]
    query_title = _split_title(right, 0.5, 1.0, right.title.get_transform(), _query_words(percentile),
                               f": its weights over {NUM_KEYS} keys", fontsize=mpl.rcParams["axes.titlesize"])
    d_k_title = _split_title(fig, 0.5, 0.98, fig.transFigure, f"d_k = {d_k}",
                             ": random queries and keys with unit-variance components", va="top", fontsize=13)
    fig.handles = {"left": left, "stairs": stairs, "bars": bars, "fields": fields, "query_title": query_title,
                   "d_k_title": d_k_title}
    # the score axis follows d_k, so its ticks are redrawn with the histograms
    fig.dynamic = [*stairs, left.xaxis, *bars[0], *bars[1], *fields, query_title, d_k_title]
    return update_scaling(fig, d_k, percentile)


def update_scaling(fig, d_k=64, percentile=50, **_):
    """Refill the histograms, the bars and the changing words of legends and titles (the fast path)."""
    handles = fig.handles
    d_k, percentile = _clean(d_k, percentile)
    query = query_at_percentile(d_k, percentile)
    scores = score_sample(d_k)
    summary = scaling_summary(d_k)
    limit = max(4.0 * np.sqrt(d_k), 5.0)  # one x-axis for both histograms: the unscaled spread grows with d_k
    std = {name: summary[name]["score std"] for name in summary}
    sides = ((f"{std['unscaled']:.2f}", 1.0, np.linspace(-limit, limit, 41)),
             (f"(/ sqrt({d_k})): std {std['scaled']:.2f}", 1.0 / np.sqrt(d_k), np.linspace(-5, 5, 21)))
    for k, (label, factor, bins) in enumerate(sides):
        shown = scores * factor
        counts, edges = np.histogram(shown, bins=bins)
        # each histogram scaled to peak 1, so that a narrow one does not dwarf a wide one
        handles["stairs"][k].set_data(counts / counts.max(), edges)
        handles["fields"][k].set_texts([label])
        weights = softmax(shown[query])
        for bar, weight in zip(handles["bars"][k], weights):
            bar.set_height(weight)
        handles["fields"][2 + k].set_texts([_two(weights.max()), _two(entropy(weights)), _two(jacobian_norm(weights))])
    handles["left"].set_xlim(-limit, limit)
    handles["query_title"].set_text(_query_words(percentile))
    handles["d_k_title"].set_text(f"d_k = {d_k}")
    lines = [f"{'averages over ' + str(NUM_QUERIES) + ' queries':<28}{'without scaling':>16}{'with scaling':>14}"]
    lines += [f"{metric:<28}{summary['unscaled'][metric]:>16.3f}{summary['scaled'][metric]:>14.3f}"
              for metric in summary["unscaled"]]
    lines.append(f"(uniform weights over {NUM_KEYS} keys: largest {1 / NUM_KEYS:.3f}, entropy {np.log(NUM_KEYS):.3f}, "
                 f"||J|| {np.sqrt(1 / NUM_KEYS - 1 / NUM_KEYS**2):.3f})")
    return "<pre>" + "\n".join(lines) + "</pre>"


def scaling_explorer():
    """A slider over d_k (powers of 2): score spread, weights, entropy and gradient size, without and with scaling."""
    d_k = widgets.SelectionSlider(options=list(DK_CHOICES), value=64, description="d_k (key/query size)",
                                  continuous_update=False, style=LABEL_STYLE, layout=widgets.Layout(width="420px"))
    percentile = widgets.SelectionSlider(options=list(PERCENTILES), value=50,
                                         description="sample query: percentile of its largest weight",
                                         continuous_update=False, style=LABEL_STYLE,
                                         layout=widgets.Layout(width="420px"))
    return Explorer(draw_scaling, {"d_k": d_k, "percentile": percentile}, figsize=(10.5, 4.4), update=update_scaling)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"scaling_explorer": scaling_explorer}
