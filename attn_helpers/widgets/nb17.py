"""Notebook 17: the loss by position of SmolLM2 under a sliding window with sinks (numbers: ``windows``), and the
diagrams of the mechanisms with their shapes."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.patches import FancyArrowPatch, Rectangle

from ..plotting import SERIES_COLOURS
from ..windows import WINDOW_GRID, load_streaming_runs
from . import Explorer, slider

__all__ = ["window_view", "draw_window", "window_explorer", "draw_mechanism", "MECHANISMS", "EXPLORERS"]

#: Losses are smoothed over this many positions before they are drawn.
SMOOTH = 16


@lru_cache(maxsize=1)
def _grid():
    runs = load_streaming_runs()
    windows = {int(w): n for n, w in enumerate(runs["grid_windows"])}
    sinks = {int(s): n for n, s in enumerate(runs["grid_sinks"])}
    return windows, sinks, runs["grid_losses"], runs["grid_full"]


def window_view(window, sinks):
    """The figure's numbers, from the shipped grid (:data:`~attn_helpers.windows.WINDOW_GRID`, rebuilt by
    ``tools/build_streaming_runs.py``): ``full`` and ``windowed`` losses ``(255,)`` by position over the first 256
    tokens, their means from position ``window`` on (``full_mean``, ``windowed_mean``), smoothed curves; ``window``:
    the grid's window nearest the one asked for."""
    windows, sink_counts, grid, full = _grid()
    window = min(windows, key=lambda w: abs(w - window))  # the grid's nearest window (a slider snaps to them)
    windowed = grid[windows[window], sink_counts[min(sink_counts, key=lambda s: abs(s - sinks))]]
    kernel = np.ones(SMOOTH) / SMOOTH
    late = slice(int(window), None)
    return {"full": full, "windowed": windowed, "full_mean": float(full[late].mean()),
            "windowed_mean": float(windowed[late].mean()), "full_smooth": np.convolve(full, kernel, "valid"),
            "windowed_smooth": np.convolve(windowed, kernel, "valid"), "window": window}


def draw_window(fig, window, sinks):
    """The loss by position with full attention and with the window (and sinks); the means under the figure."""
    view = window_view(window, sinks)
    window = view["window"]
    ax = fig.add_subplot()
    x = np.arange(len(view["full_smooth"])) + SMOOTH // 2
    ax.plot(x, view["full_smooth"], color=SERIES_COLOURS[0], linewidth=2, label="full attention")
    ax.plot(x, view["windowed_smooth"], color=SERIES_COLOURS[1], linewidth=2, linestyle="--",
            label=f"window {window}" + (f" + {sinks} sink{'s' * (sinks != 1)}" if sinks else ""))
    ax.axvline(window, color="black", linewidth=1, linestyle=":")
    ax.set_ylim(2.0, 8.0)
    right = window > 96  # a late window: the note goes left of the line, clear of the legend
    ax.text(window - 2 if right else window + 2, 7.8, "the first token leaves the window", va="top",
            ha="right" if right else "left")
    ax.set(xlabel="position in the text (query)", ylabel=f"next-token loss, nats (mean of {SMOOTH})",
           title="SmolLM2 with a sliding window: loss by position, first 256 tokens")
    ax.legend(loc="upper right")
    return (f"mean loss from position {window} on: full attention <b>{view['full_mean']:.2f}</b> nats, "
            f"window <b>{view['windowed_mean']:.2f}</b> nats")


def window_explorer():
    """Move the window and the number of sinks: SmolLM2's loss by position, against full attention (the shipped
    grid: a slider move only draws)."""
    controls = {"window": slider("window (tokens)", 32, WINDOW_GRID["windows"][0], WINDOW_GRID["windows"][-1],
                                 WINDOW_GRID["windows"][1] - WINDOW_GRID["windows"][0], integer=True),
                "sinks": slider("sinks (first tokens kept)", 0, 0, WINDOW_GRID["sinks"][-1], 1, integer=True)}
    return Explorer(draw_window, controls, figsize=(9, 4.2))


#: The text of the mechanism diagrams, in points: the boxes are sized to it, so it reads on a projector.
MECHANISM_FONT_SIZE = 11
_PAD = 0.08  # inches of box around a label
_GAP = 0.35  # inches between two steps (room for an arrow)


def _box(ax, x, y, label, colour, renderer):
    """A box of ``label`` with its left edge at ``x`` and its centre at height ``y`` (inches); returns its width."""
    text = ax.text(x + _PAD, y, label, ha="left", va="center", fontsize=MECHANISM_FONT_SIZE, zorder=2)
    extent = text.get_window_extent(renderer)
    width, height = extent.width / ax.figure.dpi + 2 * _PAD, extent.height / ax.figure.dpi + 2 * _PAD
    ax.add_patch(Rectangle((x, y - height / 2), width, height, facecolor=colour, edgecolor="black", alpha=0.35,
                           clip_on=False))
    return width


def _arrow(ax, start, end):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="->", mutation_scale=12, color="black"))


#: Each mechanism as its steps, left to right: a step is one box ``(label, colour index)`` or two stacked (the
#: arrays computed side by side); an arrow joins each box to each box of the next step.
MECHANISMS = {
    "rolling buffer": [[("new k, v\n(h_kv, 1, d_h)", 0)],
                       [("sinks (s, d_h)", 2), ("window slots (w, d_h):\nslot (t-s) % w", 1)],
                       [("cache: (h_kv, s + w, d_h),\nnever larger", 3)]],
    "sink logit": [[("scores (h, T, T_k)", 0), ("b (h, T, 1)", 2)], [("softmax over\nT_k + 1 columns", 1)],
                   [("weights (h, T, T_k)\nrows sum to < 1", 3)]],
    "latent attention": [[("x\n(T, d_model)", 0)], [("c = x W_down\n(T, d_c): cached", 2)],
                         [("keys c W_uk (h, T, d_h)", 1), ("or: q W_uk^T (h, T, d_c)", 3)]],
    "linear attention": [[("k_t, v_t\n(d_k,), (d_v,)", 0)],
                         [("S += k_t^T v_t (d_k, d_v)\nstate: fixed size, any T", 2)],
                         [("o_t = q_t S\n(d_v,)", 1)]],
    "sparse attention": [[("indexer scores\n(h, T, T) in r dims", 0)], [("top-k mask\n(h, T, T)", 2)],
                         [("attend k keys\nper query", 1)]],
}


def draw_mechanism(ax, name):
    """A diagram of one of :data:`MECHANISMS` in one row of ``ax``: its name, then its arrays as boxes labelled with
    their shapes, arrows for the steps (the axes' data units are inches, so the boxes fit their text)."""
    fig = ax.figure
    renderer = fig.canvas.get_renderer()
    extent = ax.get_window_extent(renderer)
    width, height = extent.width / fig.dpi, extent.height / fig.dpi
    ax.set(xlim=(0, width), ylim=(0, height))
    ax.axis("off")
    ax.text(0, height / 2, name.replace(" ", "\n"), ha="left", va="center", fontsize=MECHANISM_FONT_SIZE,
            fontweight="bold")
    x, previous = 1.0, []
    for step in MECHANISMS[name]:
        ys = [height / 2] if len(step) == 1 else [height * 0.74, height * 0.26]
        widths = [_box(ax, x, y, label, SERIES_COLOURS[colour], renderer) for (label, colour), y in zip(step, ys)]
        for end, y in ((x, y) for y in ys):
            for start, y0 in previous:
                _arrow(ax, (start, y0), (end, y))
        previous = [(x + w, y) for w, y in zip(widths, ys)]
        x += max(widths) + _GAP
    return ax


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"window_explorer": window_explorer}
