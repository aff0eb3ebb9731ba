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
    ax.text(window + 2, 7.8, "the first token leaves the window", fontsize=9, va="top")
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


def _box(ax, x, y, width, height, label, colour):
    ax.add_patch(Rectangle((x, y), width, height, facecolor=colour, edgecolor="black", alpha=0.35))
    ax.text(x + width / 2, y + height / 2, label, ha="center", va="center", fontsize=9)


def _arrow(ax, start, end):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="->", mutation_scale=12, color="black"))


#: Each mechanism as boxes ``(x, y, width, height, label, colour index)`` and arrows ``(start, end)``.
MECHANISMS = {
    "rolling buffer": ([(0, 1, 2, 1, "new k, v\n(h_kv, 1, d_h)", 0), (3, 1, 1, 1, "sinks\n(s, d_h)", 2),
                        (4.2, 1, 3, 1, "window slots\n(w, d_h): slot (t-s) % w", 1),
                        (3, -0.6, 4.2, 1, "cache: (h_kv, s + w, d_h),\nnever larger", 3)],
                       [((2, 1.5), (4.2, 1.5)), ((5.2, 1), (5.2, 0.4))]),
    "sink logit": ([(0, 1, 2.4, 1, "scores\n(h, T, T_k)", 0), (2.6, 1, 0.9, 1, "b\n(h, T, 1)", 2),
                    (4.2, 1, 3.2, 1, "softmax over\nT_k + 1 columns", 1),
                    (4.2, -0.6, 3.2, 1, "weights (h, T, T_k)\nrows sum to < 1", 3)],
                   [((3.5, 1.5), (4.2, 1.5)), ((5.8, 1), (5.8, 0.4))]),
    "latent attention": ([(0, 1, 1.6, 1, "x\n(T, d_model)", 0), (2.2, 1, 1.8, 1, "c = x W_down\n(T, d_c): cached", 2),
                          (4.6, 1.6, 2.8, 0.9, "keys c W_uk\n(h, T, d_h)", 1),
                          (4.6, 0.3, 2.8, 0.9, "or: q W_uk^T\n(h, T, d_c)", 3)],
                         [((1.6, 1.5), (2.2, 1.5)), ((4, 1.6), (4.6, 2)), ((4, 1.3), (4.6, 0.8))]),
    "linear attention": ([(0, 1, 1.8, 1, "k_t, v_t\n(d_k,), (d_v,)", 0),
                          (2.6, 1, 2.2, 1, "S += k_t^T v_t\n(d_k, d_v)", 2),
                          (5.6, 1, 1.8, 1, "o_t = q_t S\n(d_v,)", 1),
                          (2.6, -0.6, 2.2, 1, "state: fixed size,\nany T", 3)],
                         [((1.8, 1.5), (2.6, 1.5)), ((4.8, 1.5), (5.6, 1.5))]),
    "sparse attention": ([(0, 1, 2, 1, "indexer scores\n(h, T, T) in r dims", 0),
                          (2.6, 1, 2, 1, "top-k mask\n(h, T, T)", 2),
                          (5.2, 1, 2.2, 1, "attend k keys\nper query", 1)],
                         [((2, 1.5), (2.6, 1.5)), ((4.6, 1.5), (5.2, 1.5))]),
}


def draw_mechanism(ax, name):
    """A diagram of one of :data:`MECHANISMS`: its arrays as boxes labelled with their shapes, arrows for the
    steps."""
    boxes, arrows = MECHANISMS[name]
    for x, y, width, height, label, colour in boxes:
        _box(ax, x, y, width, height, label, SERIES_COLOURS[colour])
    for start, end in arrows:
        _arrow(ax, start, end)
    ax.set(xlim=(-0.2, 7.6), ylim=(-0.8, 2.7), title=name)
    ax.axis("off")
    return ax


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"window_explorer": window_explorer}
