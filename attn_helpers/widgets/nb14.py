"""Notebook 14: the tiny GPT's next-token distribution under temperature, top-k and top-p (numbers: ``gpt``)."""

from __future__ import annotations

import functools
from functools import partial

import ipywidgets as widgets
import numpy as np
from matplotlib import font_manager
from matplotlib.ft2font import FT2Font
from matplotlib.patches import Patch

from ..config import SEED
from ..gpt import generate_ids, load_tiny_gpt, next_token_probs
from ..plotting import FAINT_COLOUR, OKABE_ITO
from . import LABEL_STYLE, Explorer, FullRedraw, slider

__all__ = ["drawable", "sampling_view", "draw_sampling", "update_sampling", "sampling_explorer", "EXPLORERS"]

_KEPT = OKABE_ITO["blue"]
_REMOVED = FAINT_COLOUR
_RAW = OKABE_ITO["orange"]
SAMPLE_PROMPTS = ("Elizabeth", "Mr. Darcy", "It is a truth", "", "🙂 über", "she said")


@functools.cache
def _drawable():
    """The characters the figure's font can draw."""
    return frozenset(FT2Font(font_manager.findfont("DejaVu Sans")).get_charmap())


def drawable(text):
    """``text`` with each character the font lacks (an emoji, CJK) shown as ``□``, so a label never warns."""
    return "".join(c if ord(c) in _drawable() or c in "\n\t" else "□" for c in text)


def sampling_view(model, prompt, temperature=1.0, top_k=0, top_p=1.0, num_tokens=15, sample_tokens=12, seed=SEED):
    """The figure's numbers: dict of ``tokens``, ``raw`` and ``shaped`` probabilities, ``kept``, ``sample``.

    ``top_k = 0`` and ``top_p = 1`` switch the filters off.
    """
    ids = model.tokenizer.encode(prompt)[-model.context_length:] or model.tokenizer.encode("\n")
    logits = model.logits(ids)[-1]  # (vocab,): the scores of the token after the prompt
    raw = next_token_probs(logits)
    shaped = next_token_probs(logits, temperature, top_k or None, None if top_p >= 1 else top_p)
    order = np.argsort(-raw, kind="stable")[:num_tokens]  # the model's own favourites
    filters = {"top_k": top_k or None, "top_p": None if top_p >= 1 else top_p}
    new = generate_ids(model.decoder, ids, sample_tokens, context_length=model.context_length, temperature=temperature,
                       rng=np.random.default_rng(seed), **filters)[len(ids):]
    return {"tokens": [drawable(model.tokenizer.token_str(int(i))) for i in order], "raw": raw[order],
            "shaped": shaped[order], "kept": int((shaped > 0).sum()), "sample": model.tokenizer.decode(new)}


def draw_sampling(fig, model, prompt, temperature, top_k, top_p):
    """Bars: the model's probability of its 15 favourite next tokens (orange) and what sampling uses (blue)."""
    view = sampling_view(model, prompt, sample_tokens=0)
    ax = fig.add_subplot()
    x = np.arange(len(view["tokens"]))
    ax.bar(x - 0.2, view["raw"], width=0.4, color=_RAW)
    shaped = ax.bar(x + 0.2, np.zeros(len(x)), width=0.4, color=_KEPT)
    ax.legend(handles=[Patch(color=_RAW, label="the model (temperature 1, no filter)"),
                       Patch(color=_KEPT, label="what sampling draws from"),
                       Patch(color=_REMOVED, label="removed by top-k / top-p")], loc="upper right", fontsize=10)
    ax.set_xticks(x, view["tokens"], rotation=45, ha="right", fontsize=11)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability of the next token")
    ax.set_xlabel("the 15 tokens the model finds most probable after the prompt")
    ax.set_title(" ", fontsize=11)
    fig.handles = {"model": model, "prompt": prompt, "bars": shaped, "ax": ax}
    fig.dynamic = [*shaped, ax.title]
    return update_sampling(fig, prompt, temperature, top_k, top_p)


def update_sampling(fig, prompt, temperature, top_k, top_p):
    """Set the blue bars, their colours and the title for new settings; a new prompt needs a full redraw."""
    parts = fig.handles
    if prompt != parts["prompt"]:
        raise FullRedraw  # other favourite tokens: new tick labels
    view = sampling_view(parts["model"], prompt, temperature, top_k, top_p)
    for bar, p in zip(parts["bars"], view["shaped"], strict=True):
        bar.set_height(p)
        bar.set_color(_KEPT if p > 0 else _REMOVED)
    parts["ax"].set_title(f"after {drawable(prompt[-40:])!r}: temperature {temperature:g}, top-k {top_k or 'off'}, "
                          f"top-p {top_p if top_p < 1 else 'off'}  ({view['kept']} tokens left)", fontsize=11)
    return f"A seeded sample of 12 tokens: <b>{prompt[-40:]}</b>{view['sample']!r}"


def sampling_explorer(model=None, prompt="Elizabeth"):
    """Type a prompt, move temperature, top-k and top-p: see the next-token distribution and a seeded sample."""
    model = load_tiny_gpt() if model is None else model
    controls = {
        "prompt": widgets.Text(value=prompt, description="prompt (press Enter)", continuous_update=False,
                               style=LABEL_STYLE),
        "temperature": slider("temperature", 1.0, 0.0, 2.0, 0.1, readout_format=".1f"),
        "top_k": slider("top-k (0 = off)", 0, 0, 50, 1, integer=True),
        "top_p": slider("top-p (1 = off)", 1.0, 0.05, 1.0, 0.05, readout_format=".2f"),
    }
    return Explorer(partial(draw_sampling, model=model), controls, figsize=(10, 4.6), update=update_sampling,
                    samples={"prompt": SAMPLE_PROMPTS})


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"sampling_explorer": sampling_explorer}
