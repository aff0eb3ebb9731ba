"""Notebook 08: multi-head attention: which numbers each head gets (right and wrong splits), what each adds."""

from __future__ import annotations

from functools import partial

import numpy as np
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.patches import Polygon, Rectangle

from ..core import causal_mask
from ..examples import CREATURE_TOKENS, creature_heads_example
from ..multihead import head_contributions, head_shares, multi_head_attention, split_heads
from ..plotting import FAINT_COLOUR, GUIDE_COLOUR, HATCH_COLOUR, MASKED_COLOUR, OKABE_ITO, SERIES_COLOURS, heatmap
from . import Explorer, dropdown, redraw_dynamic, slider, toggle

__all__ = ["HEAD_COLOURS", "SPLITS", "head_assignment", "head_contributions", "head_shares",
           "draw_grouping", "update_grouping", "grouping_explorer", "draw_head", "update_head", "head_explorer",
           "EXPLORERS"]

#: One colour per head (the series' colour-blind-safe order; black for an eighth head).
HEAD_COLOURS = (*SERIES_COLOURS, OKABE_ITO["black"])


#: The ways to cut ``(T, d_model)`` into heads that the grouping explorer offers (label -> key).
SPLITS = {
    "split_heads: reshape (T, h, d_h), then swap axes": "right",
    "reshape straight to (h, T, d_h)  [wrong]": "reshape",
    "reshape (T, d_h, h), heads last  [wrong]": "strided",
}

#: Head counts the explorers offer (all divide d_model = 8 and 16).
HEAD_CHOICES = (1, 2, 4, 8)


def head_assignment(T, d_model, num_heads, split="right"):
    """``head[t, f]``, shape (T, d_model): the head that gets feature f of token t, for a way of splitting.

    ``split``: ``"right"`` (``split_heads``: reshape (T, h, d_h), swap axes), ``"reshape"`` (straight to
    (h, T, d_h)) or ``"strided"`` (reshape (T, d_h, h), heads last).

    >>> head_assignment(2, 4, 2)
    array([[0, 0, 1, 1],
           [0, 0, 1, 1]])
    >>> head_assignment(2, 4, 2, "reshape")
    array([[0, 0, 0, 0],
           [1, 1, 1, 1]])
    """
    head_dim = d_model // num_heads
    index = np.arange(T * d_model).reshape(T, d_model)
    if split == "reshape":
        heads = index.reshape(num_heads, T, head_dim)
    elif split == "strided":
        heads = index.reshape(T, head_dim, num_heads).transpose(2, 0, 1)
    else:
        heads = index.reshape(T, num_heads, head_dim).transpose(1, 0, 2)
    owner = np.empty(T * d_model, dtype=int)
    for i in range(num_heads):
        owner[heads[i].ravel()] = i
    return owner.reshape(T, d_model)


# --- Explorer 1: which numbers go to which head ---

def draw_grouping(fig, num_heads=4, split="right", tokens=CREATURE_TOKENS, d_model=16):
    """Colour the projected ``(T, d_model)`` matrix by the head each number goes to."""
    T = len(tokens)
    fig.set_layout_engine("none")  # fixed margins: constrained layout would double the render time
    ax = fig.add_axes((0.14, 0.2, 0.7, 0.62))
    # one colour per head number, whatever h is: head i is always HEAD_COLOURS[i]
    image = ax.imshow(np.zeros((T, d_model)), cmap=ListedColormap(HEAD_COLOURS), vmin=-0.5,
                      vmax=len(HEAD_COLOURS) - 0.5, aspect="auto", interpolation="nearest")
    ax.set_xticks(range(d_model), labels=[str(f) for f in range(d_model)], fontsize=10)
    ax.set_yticks(range(T), labels=list(tokens))
    ax.set_xlabel("feature of Q (column)")
    ax.set_ylabel("token (row)")
    ax.spines[:].set_visible(False)
    ax.set_title(" \n ", fontsize=12)
    lines = [ax.hlines(np.arange(0.5, T - 1), -0.5, d_model - 0.5, color="white", linewidth=0.8),  # cell borders
             ax.vlines(np.arange(0.5, d_model - 1), -0.5, T - 0.5, color="white", linewidth=0.8)]
    legend = fig.add_axes((0.87, 0.2, 0.03, 0.62))
    legend.set_xlim(0, 1)
    legend.set_ylim(max(HEAD_CHOICES) - 0.5, -0.5)
    legend.axis("off")
    fig.handles.update(ax=ax, image=image, legend=legend, tokens=list(tokens), d_model=d_model)
    fig.dynamic.extend([image, *lines, ax.title])
    return update_grouping(fig, num_heads, split)


def update_grouping(fig, num_heads=4, split="right", **_):
    """Recolour the cells for another h or split (the live widget's fast path)."""
    handles = fig.handles
    tokens, d_model = handles["tokens"], handles["d_model"]
    num_heads = int(num_heads) if num_heads in HEAD_CHOICES else 4
    split = SPLITS.get(split, split)
    split = split if split in SPLITS.values() else "right"
    T = len(tokens)
    head_dim = d_model // num_heads
    owner = head_assignment(T, d_model, num_heads, split)
    handles["image"].set_data(owner)
    titles = {"right": "split_heads", "reshape": "reshape straight to (h, T, d_h)",
              "strided": "reshape (T, d_h, h), heads last"}
    handles["ax"].set_title(f"Q of shape ({T}, {d_model}), h = {num_heads}: colour = the head that receives "
                            f"each number\n[{titles[split]}]", fontsize=12)

    def legend():
        for i in range(num_heads):
            handles["legend"].add_patch(Rectangle((0, i - 0.5), 1, 1, color=HEAD_COLOURS[i]))
            handles["legend"].text(1.25, i, f"head {i}", va="center", fontsize=11, clip_on=False)

    redraw_dynamic(fig, "legend", legend)

    head0_tokens = sorted({tokens[t] for t in range(T) if (owner[t] == 0).any()}, key=list(tokens).index)
    head0_features = sorted(set(np.nonzero((owner == 0).any(axis=0))[0].tolist()))
    if num_heads == 1:
        return "With one head every split is the same: a test with h = 1 cannot catch a wrong split."
    if split == "right":
        return (f"Right: head 0 gets features {head0_features[0]}..{head0_features[-1]} (d_h = {head_dim}) of "
                f"<b>every</b> token: each head compares all {T} tokens with each other.")
    if split == "reshape":
        return (f"Wrong: head 0 gets only {', '.join(head0_tokens)}. Each of its {T} 'token rows' is a "
                f"{head_dim}-feature piece of one of them, and it never sees the other {T - len(head0_tokens)} tokens.")
    return (f"Wrong: every head sees every token, but head 0 gets the strided features "
            f"{', '.join(map(str, head0_features))}: not the block [0 : {head_dim}] that W_q's columns "
            f"for head 0 produce.")


def grouping_explorer(d_model=16, tokens=CREATURE_TOKENS):
    """Pick the number of heads and a way to split; see which head gets which number of a (T, d_model) matrix."""
    controls = {"num_heads": dropdown("number of heads h", HEAD_CHOICES, 4),
                "split": dropdown("split", list(SPLITS), next(iter(SPLITS)))}
    draw = partial(draw_grouping, tokens=tokens, d_model=d_model)
    return Explorer(draw, controls, figsize=(9.5, 4.6), update=update_grouping)


# --- Explorer 2: one head's pattern and its share of the output ---

def _hatch_future(ax, T):
    """Hatch the masked cells above the diagonal as one staircase polygon (one patch per cell would be slow)."""
    if T < 2:
        return
    corners = [(0.5, -0.5), (T - 0.5, -0.5), (T - 0.5, T - 1.5)]  # top edge, then down the right edge
    for k in range(T - 2, -1, -1):  # staircase back up along the diagonal
        corners += [(k + 0.5, k + 0.5), (k + 0.5, k - 0.5)]
    ax.add_patch(Polygon(corners, closed=True, facecolor=MASKED_COLOUR, hatch="///", edgecolor=HATCH_COLOUR,
                         linewidth=0))


def _head_state(example, num_heads, head, causal, T):
    num_heads = int(num_heads) if num_heads in HEAD_CHOICES else 2
    requested = int(head)
    head = min(max(requested, 0), num_heads - 1)
    mask = causal_mask(T) if causal else None
    X = example["X"]
    _, weights = multi_head_attention(X, example["W_q"], example["W_k"], example["W_v"], example["W_o"],
                                      num_heads, mask=mask)
    head_dim = X.shape[-1] // num_heads
    values = X @ example["W_v"]  # (T, d_model) @ (d_model, d_model) -> (T, d_model)
    values = split_heads(values, num_heads)  # (T, d_model) -> (h, T, d_h)
    context = weights @ values  # (h, T, T) @ (h, T, d_h) -> (h, T, d_h)
    shares = head_shares(head_contributions(context, example["W_o"]))  # (h, T)
    return num_heads, requested, head, head_dim, weights, shares


def draw_head(fig, num_heads=2, head=0, causal=False, tokens=CREATURE_TOKENS, example=None):
    """Left: the chosen head's attention weights; right: each head's share of each token's output."""
    example = creature_heads_example() if example is None else example
    T = len(tokens)
    fig.set_layout_engine("none")
    left = fig.add_axes((0.1, 0.24, 0.33, 0.62))
    bar_ax = fig.add_axes((0.47, 0.24, 0.012, 0.62))
    right = fig.add_axes((0.64, 0.24, 0.33, 0.62))
    image = heatmap(np.zeros((T, T)), tokens, tokens, ax=left, vmin=0, vmax=1, colorbar=False, annotate=False,
                    title=" ")
    fig.colorbar(image, cax=bar_ax, label="attention weight", ticks=[0, 0.5, 1])
    own = right.barh(range(T), np.zeros(T), label="this head")
    others = right.barh(range(T), np.zeros(T), color=FAINT_COLOUR, label="other heads")
    texts = [right.text(0, t, "", ha="center", va="center", fontsize=11) for t in range(T)]
    equal = right.axvline(0.25, color=GUIDE_COLOUR, linestyle="--", linewidth=1)
    right.set_xlim(0, 1)
    right.set_ylim(T - 0.5, -0.5)
    right.set_xticks([0, 0.25, 0.5, 0.75, 1], labels=["0", "", "50%", "", "100%"])
    right.set_yticks(range(T), labels=list(tokens))
    right.set_xlabel("share of the output norm")
    right.set_title(" \n ", fontsize=12)
    fig.handles.update(example=example, T=T, left=left, right=right, image=image, own=own, others=others,
                       texts=texts, equal=equal)
    fig.dynamic.extend([image, left.title, *own, *others, *texts, equal, right.title])
    return update_head(fig, num_heads, head, causal)


def update_head(fig, num_heads=2, head=0, causal=False, **_):
    """Show another head, number of heads or mask (the live widget's fast path)."""
    handles = fig.handles
    T = handles["T"]
    num_heads, requested, head, head_dim, weights, shares = _head_state(handles["example"], num_heads, head, causal, T)
    handles["image"].set_data(weights[head])
    handles["left"].set_title(f"head {head} of {num_heads} (d_h = {head_dim})")
    redraw_dynamic(fig, "hatch", lambda: _hatch_future(handles["left"], T) if causal else None)
    red, green, blue = to_rgb(HEAD_COLOURS[head])
    ink = "black" if 0.2126 * red + 0.7152 * green + 0.0722 * blue > 0.45 else "white"  # by relative luminance
    for t in range(T):
        handles["own"][t].set_width(shares[head, t])
        handles["own"][t].set_color(HEAD_COLOURS[head])
        handles["others"][t].set_x(shares[head, t])
        handles["others"][t].set_width(1.0 - shares[head, t])
        text = handles["texts"][t]
        text.set_x(shares[head, t] / 2)
        text.set_text(f"{shares[head, t]:.0%}")
        text.set_color(ink)
    handles["equal"].set_xdata([1 / num_heads, 1 / num_heads])
    others = {1: "no other heads", 2: "grey: the other head"}.get(num_heads, f"grey: the other {num_heads - 1} heads")
    handles["right"].set_title(f"head {head}'s share of each token's output\n({others})", fontsize=12)
    note = (f"Head {head} gives on average {shares[head].mean():.0%} of the output norm "
            f"(dashed line: an equal share, 1/h = {1 / num_heads:.0%}). Largest weight of its rows: "
            f"{weights[head].max(axis=-1).mean():.2f} on average.")
    if requested != head:
        note = f"There are only {num_heads} heads (0..{num_heads - 1}): showing head {head}. " + note
    return note


def head_explorer(example=None, tokens=CREATURE_TOKENS):
    """Pick h, a head and the mask; see the head's pattern and its share of the output.

    ``example``: a dict ``X, W_q, W_k, W_v, W_o`` (default ``creature_heads_example()``), cut for every h.
    """
    example = creature_heads_example() if example is None else example
    heads = slider("head", 0, 0, max(HEAD_CHOICES) - 1, 1, integer=True)
    num_heads = dropdown("number of heads h", HEAD_CHOICES, 2)
    heads.max = num_heads.value - 1

    def follow(change):  # keep the head slider inside 0 .. h-1
        heads.max = change["new"] - 1

    num_heads.observe(follow, names="value")
    controls = {"num_heads": num_heads, "head": heads, "causal": toggle("causal mask", False)}
    return Explorer(partial(draw_head, tokens=tokens, example=example), controls, figsize=(10, 4.4), update=update_head)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"grouping_explorer": grouping_explorer, "head_explorer": head_explorer}
