"""Notebook 10: the block diagram, GPT-2's parameters, the residual stream of stacked blocks (``stack_diagnostics``)."""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

from ..block import parameter_count
from ..examples import CREATURE_TOKENS, GPT2_FAMILY, creature_block_example, parameter_shares, stack_diagnostics
from ..plotting import OKABE_ITO, SERIES_COLOURS, heatmap
from . import Explorer, checked_option, dropdown, slider, toggle

__all__ = ["PLACEMENTS", "PARAMETER_PARTS", "draw_block_diagram", "draw_parameter_breakdown",
           "all_diagnostics", "draw_stream", "update_stream", "stream_explorer", "EXPLORERS"]

#: The explorer's choice of where the layer norms sit (label -> ``norm_first``).
PLACEMENTS = {"pre-norm (GPT-2)": True, "post-norm (2017 paper, BERT)": False}

_BOX_COLOURS = {"LayerNorm": OKABE_ITO["sky blue"], "attention": OKABE_ITO["orange"],
                "feed-forward": OKABE_ITO["bluish green"]}
_INK = OKABE_ITO["black"]


# --- the block as a diagram ------------------------------------------------------------------


def _box(ax, x, y, label, width=1.9, height=0.62):
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.04",
                                facecolor=_BOX_COLOURS[label], edgecolor=_INK, linewidth=1.2, alpha=0.9))
    ax.text(x, y, label, ha="center", va="center", fontsize=12)
    return y - height / 2, y + height / 2


def _plus_node(ax, x, y):
    ax.add_patch(FancyBboxPatch((x - 0.2, y - 0.2), 0.4, 0.4, boxstyle="circle,pad=0", facecolor="none",
                                edgecolor=_INK, linewidth=1.4))
    ax.text(x, y, "+", ha="center", va="center", fontsize=15, fontweight="bold")


def _arrow(ax, start, end, **style):
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="-|>", mutation_scale=14, color=_INK, linewidth=1.4,
                                 shrinkA=0, shrinkB=0, **style))


def _draw_column(ax, x, norm_first, title):
    """One block, drawn bottom (input) to top (output)."""
    y = 0.0
    ax.text(x, y - 0.35, "x  (T, d_model)", ha="center", va="top", fontsize=12)
    for sublayer in ("attention", "feed-forward"):
        branch_x, skip_x = x, x - 1.45
        start = y
        boxes = ["LayerNorm", sublayer] if norm_first else [sublayer]
        for label in boxes:
            bottom, top = _box(ax, branch_x, y + 0.9, label)
            _arrow(ax, (branch_x, y), (branch_x, bottom))
            y = top
        plus_y = y + 0.55
        _arrow(ax, (branch_x, y), (branch_x, plus_y - 0.2))
        # the residual path: around the sub-layer, into the +
        ax.plot([branch_x, skip_x, skip_x], [start + 0.15, start + 0.15, plus_y], color=_INK, linewidth=1.4)
        _arrow(ax, (skip_x, plus_y), (branch_x - 0.2, plus_y))
        _plus_node(ax, branch_x, plus_y)
        y = plus_y + 0.2
        if not norm_first:
            bottom, top = _box(ax, branch_x, y + 0.75, "LayerNorm")
            _arrow(ax, (branch_x, y), (branch_x, bottom))
            y = top
    _arrow(ax, (x, y), (x, y + 0.6))
    ax.text(x, y + 0.68, "out  (T, d_model)", ha="center", va="bottom", fontsize=12)
    ax.text(x, -1.25, title, ha="center", va="top", fontsize=13, fontweight="bold")
    return y + 1.1


def draw_block_diagram(fig):
    """Post-norm (left) and pre-norm (right) transformer blocks; the residual paths go around each sub-layer."""
    ax = fig.subplots()
    top = max(_draw_column(ax, 0.0, False, "post-norm: LN(x + sublayer(x))\n2017 paper, BERT"),
              _draw_column(ax, 5.2, True, "pre-norm: x + sublayer(LN(x))\nGPT-2 and most models since"))
    ax.set_xlim(-2.3, 7.2)
    ax.set_ylim(-2.1, top + 0.2)
    ax.set_aspect("equal")
    ax.axis("off")
    return ax


# --- where the parameters sit ----------------------------------------------------------------

#: The parts of :func:`~attn_helpers.examples.parameter_shares` the breakdown figure shows, with a colour each.
PARAMETER_PARTS = {
    "token_embeddings": ("token embeddings", SERIES_COLOURS[5]),
    "position_embeddings": ("position embeddings", SERIES_COLOURS[6]),
    "attention": ("attention (W_q, W_k, W_v, W_o)", SERIES_COLOURS[1]),
    "feed_forward": ("feed-forward (W_1, W_2)", SERIES_COLOURS[2]),
    "layer_norms": ("layer norms", SERIES_COLOURS[4]),
}


def draw_parameter_breakdown(fig, configs=None):
    """One horizontal bar per model, split into the parts of its parameter count (shares of the total)."""
    configs = GPT2_FAMILY if configs is None else configs
    shares = parameter_shares(configs)
    ax = fig.subplots()
    names = list(configs)
    for row, name in enumerate(names):
        left = 0.0
        for part, (label, colour) in PARAMETER_PARTS.items():
            share = shares[name][part]
            ax.barh(row, share, left=left, color=colour, linewidth=0, label=label if row == 0 else None)
            if share > 0.06:
                ax.text(left + share / 2, row, f"{share:.0%}", ha="center", va="center", fontsize=11)
            left += share
        total = parameter_count(configs[name])["total"]
        ax.text(1.01, row, f"{total / 1e6:,.0f} M", ha="left", va="center", fontsize=11)
    ax.set_yticks(range(len(names)), labels=[f"GPT-2 {name}" for name in names])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the parameters")
    ax.xaxis.set_major_formatter(lambda value, _: f"{value:.0%}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False, fontsize=11)
    ax.set_title("where the parameters sit (tied embeddings: the output layer reuses the token embeddings)")
    return ax


# --- the residual stream explorer ------------------------------------------------------------


def all_diagnostics(example=None):
    """:func:`stack_diagnostics` of the example's blocks for every (placement, residual) pair.

    >>> diagnostics = all_diagnostics()
    >>> sorted(diagnostics)[0], diagnostics[(True, True)]["norm"].shape
    ((False, False), (13,))
    """
    example = creature_block_example() if example is None else example
    return {(norm_first, residual): stack_diagnostics(example["X"], example["blocks"], norm_first, residual)
            for norm_first in (True, False) for residual in (True, False)}


def draw_stream(fig, placement="pre-norm (GPT-2)", residual=True, num_blocks=6, diagnostics=None,
                tokens=CREATURE_TOKENS):
    """Left: token length per block; middle: own-input and between-token similarity; right: similarity matrix."""
    diagnostics = all_diagnostics() if diagnostics is None else diagnostics
    fig.set_layout_engine("none")  # fixed margins: a constrained layout would double the render time
    length_ax, cosine_ax, matrix_ax = fig.subplots(1, 3, width_ratios=[1, 1, 1.3], gridspec_kw={
        "left": 0.07, "right": 0.91, "top": 0.86, "bottom": 0.26, "wspace": 0.4})
    depth = len(next(iter(diagnostics.values()))["norm"]) - 1
    blocks = np.arange(depth + 1)
    for d in diagnostics.values():  # every setting, faint: the context the highlighted curve sits in
        length_ax.plot(blocks, d["norm"], color=_INK, alpha=0.18, linewidth=1.2)
    top = max(float(d["norm"].max()) for d in diagnostics.values())
    length_ax.set_xlim(0, depth)
    length_ax.set_ylim(0, top * 1.1)
    length_ax.set_xlabel("blocks applied")
    length_ax.set_ylabel("mean length of a token vector")
    (length_line,) = length_ax.plot([], [], color=SERIES_COLOURS[0], linewidth=3, marker="o", markersize=4)
    cosine_ax.axhline(0, color=_INK, linewidth=0.8, alpha=0.4)
    (own_line,) = cosine_ax.plot([], [], color=SERIES_COLOURS[0], linewidth=3, marker="o", markersize=4,
                                 label="token vs its own input")
    (between_line,) = cosine_ax.plot([], [], color=SERIES_COLOURS[1], linewidth=3, marker="s", markersize=4,
                                     label="between different tokens")
    cosine_ax.set_xlim(0, depth)
    cosine_ax.set_ylim(-0.45, 1.05)
    cosine_ax.set_xlabel("blocks applied")
    cosine_ax.set_ylabel("mean cosine similarity")
    cosine_ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, fontsize=11)
    T = len(tokens)
    image = heatmap(np.zeros((T, T)), tokens, tokens, ax=matrix_ax, vmin=-1, vmax=1, cmap="PuOr_r", annotate=False,
                    xlabel=None, ylabel=None, cbar_label="cosine similarity")
    fig.handles = {"diagnostics": diagnostics, "length_ax": length_ax, "cosine_ax": cosine_ax,
                   "matrix_ax": matrix_ax, "length_line": length_line, "own_line": own_line,
                   "between_line": between_line, "image": image}
    cosine_ax.set_title("is each token still itself?")
    fig.dynamic = [length_line, own_line, between_line, image, length_ax.title, matrix_ax.title]
    for artist in (length_ax.title, matrix_ax.title):
        artist.set_text(" ")
    return update_stream(fig, placement=placement, residual=residual, num_blocks=num_blocks)


def update_stream(fig, placement="pre-norm (GPT-2)", residual=True, num_blocks=6, **_):
    """Refill the highlighted curves, the similarity matrix and the titles (the live widget's fast path)."""
    h = fig.handles
    norm_first = bool(PLACEMENTS[checked_option("placement", placement, choices=list(PLACEMENTS))]
                      if isinstance(placement, str) else placement)
    residual = bool(residual)
    d = h["diagnostics"][(norm_first, residual)]
    depth = len(d["norm"]) - 1
    n = int(min(max(num_blocks, 0), depth))
    shown = np.arange(n + 1)
    h["length_line"].set_data(shown, d["norm"][: n + 1])
    h["own_line"].set_data(shown, d["own_input"][: n + 1])
    h["between_line"].set_data(shown, d["between_tokens"][: n + 1])
    h["image"].set_data(d["similarity"][n])
    name = "pre-norm" if norm_first else "post-norm"
    h["length_ax"].set_title(f"{name}, residuals {'on' if residual else 'off'}")
    h["matrix_ax"].set_title(f"token similarity after {n} block{'s' if n != 1 else ''}")
    return (f"After {n} block{'s' if n != 1 else ''} ({name}, residuals {'on' if residual else 'off'}): "
            f"a token vector has length {d['norm'][n]:.1f}, keeps a cosine of {d['own_input'][n]:.2f} with its "
            f"own input, and two different tokens have a cosine of {d['between_tokens'][n]:.2f} on average "
            f"(1.00 = all tokens alike).")


def stream_explorer(example=None):
    """Stack 0-12 random blocks, pre- or post-norm, with or without residuals; watch the residual stream."""
    diagnostics = all_diagnostics(example)
    controls = {
        "num_blocks": slider("blocks", 6, 0, 12, 1, integer=True),
        "placement": dropdown("layer norm", PLACEMENTS, "pre-norm (GPT-2)"),
        "residual": toggle("residual connections (x + ...)", True),
    }
    return Explorer(partial(draw_stream, diagnostics=diagnostics), controls, figsize=(10.4, 4.2), update=update_stream)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"stream_explorer": stream_explorer}
