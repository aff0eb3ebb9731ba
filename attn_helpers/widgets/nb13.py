"""Notebook 13: the tiles of online-softmax attention, step by step (numbers from ``tiled_attention_steps``)."""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.colors import ListedColormap
from matplotlib.patches import Patch, Rectangle

from ..config import SEED
from ..core import causal_mask
from ..efficient import tile_count
from ..examples import CREATURE_TOKENS
from ..online import tiled_attention_steps
from ..plotting import HATCH_COLOUR, MASKED_COLOUR, OKABE_ITO
from . import Explorer, FullRedraw, dropdown, redraw_dynamic, slider, toggle

__all__ = ["tiling_example", "draw_tiles", "update_tiles", "tile_count", "tile_explorer", "EXPLORERS"]

_LIVE = OKABE_ITO["vermillion"]
_DONE = OKABE_ITO["blue"]
_FINAL = OKABE_ITO["black"]


def tiling_example(T=8, d_k=4, seed=SEED):
    """Seeded random queries, keys and values ``(T, d_k)`` for the tile explorer (T = 8: the creature sentence)."""
    rng = np.random.default_rng(seed)
    queries, keys, values = (rng.standard_normal((T, d_k)) for _ in range(3))
    return {"queries": queries, "keys": keys, "values": values}


def _tile_state(example, T, block_size, causal):
    """The mask, the steps of :func:`tiled_attention_steps` and the scores that colour the tiles."""
    mask = causal_mask(T) if causal else None
    _, steps = tiled_attention_steps(example["queries"], example["keys"], example["values"], mask=mask,
                                     block_size=int(block_size))
    scale = 1.0 / np.sqrt(example["queries"].shape[-1])
    scores = example["queries"] @ example["keys"].T * scale  # (T, d_k) @ (d_k, T) -> (T, T): only to colour tiles
    return mask, steps, scores


def _row_limits(example, T, block_size):
    """Fixed y-limits of the running max and sum plots: over every row, with and without the mask."""
    values = {"max": [], "sum": []}
    for causal in (False, True):
        _, steps, _ = _tile_state(example, T, block_size, causal)
        for step in steps:
            values["max"].extend(step.running_max[np.isfinite(step.running_max)])
            values["sum"].append(step.running_sum)
    limits = {}
    for name, numbers in values.items():
        numbers = np.concatenate([np.ravel(n) for n in numbers]) if name == "sum" else np.array(numbers)
        low, high = float(numbers.min()), float(numbers.max())
        pad = 0.08 * (high - low) + 0.05
        limits[name] = (low - pad, high + pad)
    return limits


def draw_tiles(fig, step=1, query="creature", block_size=2, causal=True, example=None, tokens=CREATURE_TOKENS):
    """Left: the scores tile by tile; right: the chosen row's running max and running sum after each tile."""
    example = tiling_example(len(tokens)) if example is None else example
    tokens = list(tokens)
    T = len(tokens)
    _, steps, scores = _tile_state(example, T, block_size, causal)
    fig.set_layout_engine("none")
    grid = fig.add_gridspec(2, 2, width_ratios=[1.15, 1], left=0.1, right=0.97, top=0.9, bottom=0.26, wspace=0.35,
                            hspace=0.55)
    left = fig.add_subplot(grid[:, 0])
    top, bottom = fig.add_subplot(grid[0, 1]), fig.add_subplot(grid[1, 1])
    limit = float(np.abs(scores).max())
    image = left.imshow(np.full((T, T), np.nan), cmap="PuOr", vmin=-limit, vmax=limit)
    fig.colorbar(image, ax=left, shrink=0.8, label="score (computed tiles)")
    masked = left.imshow(np.full((T, T), np.nan), cmap=ListedColormap([MASKED_COLOUR]), vmin=0, vmax=1)
    for tile in steps:  # the tile grid
        left.add_patch(Rectangle((tile.cols.start - 0.5, tile.rows.start - 0.5), len(tile.cols), len(tile.rows),
                                 fill=False, edgecolor=HATCH_COLOUR, linewidth=0.8))
    live = left.add_patch(Rectangle((-0.5, -0.5), 1, 1, fill=False, edgecolor=_LIVE, linewidth=3.5))
    row_box = left.add_patch(Rectangle((-0.5, -0.5), T, 1, fill=False, edgecolor=_FINAL, linewidth=1.5,
                                       linestyle="--"))
    left.set_xticks(range(T), labels=tokens, rotation=45, ha="right", rotation_mode="anchor")
    left.set_yticks(range(T), labels=tokens)
    left.set_xlabel("key")
    left.set_ylabel("query")
    left.set_title(" ")
    left.legend(handles=[Patch(facecolor="none", edgecolor=_LIVE, linewidth=3, label="this tile"),
                         Patch(facecolor=MASKED_COLOUR, hatch="///", edgecolor=HATCH_COLOUR, label="tile skipped"),
                         Patch(facecolor=MASKED_COLOUR, label="masked")],
                loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize=11, frameon=False)
    limits = _row_limits(example, T, block_size)
    lines = {}
    for ax, name, label in ((top, "max", "running max m"), (bottom, "sum", "running sum l")):
        (path,) = ax.plot([], [], color=_DONE, linewidth=2, drawstyle="steps-post")
        (dots,) = ax.plot([], [], "o", color=_DONE, markersize=7)
        final = ax.axhline(0.0, color=_FINAL, linestyle="--", linewidth=1)
        now = ax.axvline(1, color=_LIVE, linewidth=2)
        lines[name] = (path, dots, final, now)
        ax.set_xlim(0.5, len(steps) + 0.5)
        ax.set_ylim(*limits[name])
        ax.set_ylabel(label)
    top.set_title(" ")
    bottom.set_xlabel("tile (in the order computed)")
    fig.handles = {"example": example, "tokens": tokens, "block_size": int(block_size), "image": image,
                   "masked": masked, "live": live, "row_box": row_box, "lines": lines, "left": left, "top": top}
    fig.dynamic = [image, masked, live, row_box, left.title, top.title,
                   *(artist for group in lines.values() for artist in group)]
    return update_tiles(fig, step=step, query=query, block_size=block_size, causal=causal)


def update_tiles(fig, step=1, query="creature", block_size=2, causal=True, **_):
    """Move to another tile, row or mask (the live widget's fast path); a new tile size needs a new frame."""
    h = fig.handles
    if int(block_size) != h["block_size"]:
        raise FullRedraw
    tokens, T = h["tokens"], len(h["tokens"])
    row = tokens.index(query) if query in tokens else 0
    mask, steps, scores = _tile_state(h["example"], T, block_size, causal)
    step = int(min(max(int(step), 1), len(steps)))
    current = steps[step - 1]

    shown = np.full((T, T), np.nan)  # the scores of the tiles computed so far; nothing where none reached yet
    for done in steps[:step]:
        if not done.skipped:
            rows, cols = slice(done.rows.start, done.rows.stop), slice(done.cols.start, done.cols.stop)
            shown[rows, cols] = scores[rows, cols]
    h["image"].set_data(shown)
    h["masked"].set_data(np.full((T, T), np.nan) if mask is None else np.where(mask, np.nan, 1.0))

    def hatch_skipped():
        for done in steps[:step]:
            if done.skipped:
                h["left"].add_patch(Rectangle((done.cols.start - 0.5, done.rows.start - 0.5), len(done.cols),
                                              len(done.rows), facecolor=MASKED_COLOUR, hatch="///",
                                              edgecolor=HATCH_COLOUR, linewidth=0))

    redraw_dynamic(fig, "skipped", hatch_skipped)
    h["live"].set_xy((current.cols.start - 0.5, current.rows.start - 0.5))
    h["live"].set_width(len(current.cols))
    h["live"].set_height(len(current.rows))
    h["row_box"].set_y(row - 0.5)
    status = "skipped: every key masked" if current.skipped else "live tile"
    h["left"].set_title(f"tile {step} of {len(steps)} ({status})")
    h["top"].set_title(f"query {tokens[row]!r}: dots = tiles of its row")

    x = np.arange(1, len(steps) + 1)
    touches = np.array([row in s.rows and not s.skipped for s in steps])
    for name, values in (("max", np.array([s.running_max[row] for s in steps])),
                         ("sum", np.array([s.running_sum[row] for s in steps]))):
        path, dots, final, now = h["lines"][name]
        seen = np.isfinite(values) & (x <= step)
        path.set_data(x[seen], values[seen])
        dots.set_data(x[seen & touches], values[seen & touches])
        finite = values[np.isfinite(values)]
        final.set_ydata([finite[-1]] * 2 if finite.size else [0.0, 0.0])
        now.set_xdata([step, step])

    if current.skipped:
        return (f"Tile {step}: rows {current.rows.start}-{current.rows.stop - 1}, keys {current.cols.start}-"
                f"{current.cols.stop - 1}: every key is in the future of every row, so it is never computed.")
    if row not in current.rows:
        return f"Tile {step} holds other query rows: {tokens[row]!r}'s max and sum do not move."
    m, l = current.running_max[row], current.running_sum[row]
    before = steps[step - 2].running_max[row] if step > 1 and row in steps[step - 2].rows else -np.inf
    grew = " The max grew, so the old sum was rescaled by exp(m_old - m_new)." if m > before > -np.inf else ""
    return f"After tile {step}, {tokens[row]!r} has running max m = {m:.3f} and running sum l = {l:.3f}.{grew}"


def tile_explorer(example=None, tokens=CREATURE_TOKENS):
    """Step through the tiles; pick the query row whose running max and sum are plotted."""
    draw = partial(draw_tiles, example=tiling_example(len(tokens)) if example is None else example, tokens=tokens)
    step = slider("tile", 6, 1, tile_count(len(tokens), 1), 1, integer=True)
    block_size = dropdown("tile size", [1, 2, 4], 2)
    step.max = tile_count(len(tokens), block_size.value)

    def follow(change):  # the tile slider runs over the tiles of this tile size
        step.max = tile_count(len(tokens), change["new"])

    block_size.observe(follow, names="value")
    controls = {
        "step": step,
        "query": dropdown("query row", tokens, "creature" if "creature" in tokens else tokens[min(3, len(tokens) - 1)]),
        "block_size": block_size,
        "causal": toggle("causal mask (skip tiles in the future)", True),
    }
    return Explorer(draw, controls, figsize=(11, 5.2), update=update_tiles)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"tile_explorer": tile_explorer}
