"""Notebook 14: a sentence cut into byte-pair tokens by the first ``merges`` merges of the tokenizer."""

from __future__ import annotations

from functools import partial

from matplotlib.patches import FancyBboxPatch

from ..bpe import BPETokenizer
from ..gpt import load_tiny_gpt
from ..plotting import OKABE_ITO, drawable_labels
from . import Explorer, slider

__all__ = ["merges_view", "draw_merges", "merges_explorer", "EXPLORERS"]

SENTENCE = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
#: Neighbouring tokens alternate between two fills, so that where one token ends and the next begins is visible.
_FILLS = (OKABE_ITO["sky blue"], OKABE_ITO["yellow"])
_ROW = 34  # characters per row of boxes


def merges_view(tokenizer, text, merges):
    """The tokens of ``text`` under the first ``merges`` merges of ``tokenizer``: dict of ``tokens`` (labels, a space
    as ``·``), ``bytes`` and ``ratio`` (bytes per token).

    >>> from attn_helpers.bpe import BPETokenizer
    >>> tokenizer = BPETokenizer([(104, 105)])   # one merge: b"h" + b"i"
    >>> merges_view(tokenizer, "hi hi", 0)["tokens"], merges_view(tokenizer, "hi hi", 1)["tokens"]
    (['h', 'i', '·', 'h', 'i'], ['hi', '·', 'hi'])
    """
    merges = max(0, min(int(merges), len(tokenizer.merges)))
    sub = BPETokenizer(tokenizer.merges[:merges])  # the tokenizer as training left it after ``merges`` merges
    ids = sub.encode(text)
    size = len(text.encode("utf-8"))
    return {"tokens": [sub.token_str(i) for i in ids], "bytes": size, "ratio": size / max(len(ids), 1)}


def _words(labels):
    """The labels grouped into words: a new word starts at a token that starts with a space (``·``)."""
    words = []
    for k, label in enumerate(labels):
        if not words or label.startswith("·"):
            words.append([])
        words[-1].append((k, label))
    return words


def draw_merges(fig, tokenizer, text, merges, ax=None):
    """Boxes, one per token, in reading order (a row breaks between words, never inside one); the title counts
    bytes and tokens and names the last merge."""
    view = merges_view(tokenizer, text, merges)
    labels, families, _ = drawable_labels(view["tokens"])
    ax = fig.add_subplot() if ax is None else ax
    ax.set_axis_off()
    x = y = 0.0
    for word in _words(labels):
        length = sum(len(label) + 0.8 for _, label in word)
        if x and x + length > _ROW:
            x, y = 0.0, y - 1.6
        for k, label in word:
            width = len(label) + 0.8
            ax.add_patch(FancyBboxPatch((x, y - 0.55), width - 0.2, 1.1,
                                        boxstyle="round,pad=0.05,rounding_size=0.2", facecolor=_FILLS[k % 2],
                                        edgecolor=OKABE_ITO["black"], linewidth=1))
            ax.text(x + (width - 0.2) / 2, y, label, ha="center", va="center", fontsize=15, family="monospace")
            x += width
    ax.set_xlim(-0.3, _ROW + 0.3)
    ax.set_ylim(y - 1.0, 1.0)
    merges = max(0, min(int(merges), len(tokenizer.merges)))
    last = f"; the last, merge {merges}, made {tokenizer.token_str(255 + merges)!r}" if merges else ""
    ax.set_title(f"{merges} merges: {view['bytes']} bytes become {len(labels)} tokens{last}", fontsize=15)
    return (f"{len(labels)} tokens for {view['bytes']} bytes ({view['ratio']:.2f} bytes per token). Neighbouring "
            "tokens alternate blue and yellow; a space shows as ·, and stays a token of its own until the merge "
            "that joins it to the letter after it.")


def merges_explorer(tokenizer=None, text=SENTENCE):
    """Move the number of merges from 0 (bytes, where it opens) to 256 (the whole tokenizer): see a sentence's tokens
    join up, one merge at a time."""
    tokenizer = load_tiny_gpt().tokenizer if tokenizer is None else tokenizer
    controls = {"merges": slider("merges", 0, 0, len(tokenizer.merges), 1, integer=True)}
    return Explorer(partial(draw_merges, tokenizer=tokenizer, text=text), controls, figsize=(10, 5))


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"merges_explorer": merges_explorer}
