"""Notebook 15: the tiny GPT's next-token distribution under temperature, top-k and top-p (numbers: ``gpt``)."""

from __future__ import annotations

import unicodedata
from functools import partial

import ipywidgets as widgets
import numpy as np
from matplotlib.patches import Patch

from ..config import SEED
from ..gpt import generate_ids, load_tiny_gpt, next_token_probs
from ..plotting import FAINT_COLOUR, OKABE_ITO, drawable_labels
from . import LABEL_STYLE, Explorer, FullRedraw, slider

__all__ = ["token_label", "sampling_view", "draw_sampling", "update_sampling", "sampling_explorer", "EXPLORERS"]

_KEPT = OKABE_ITO["blue"]
_REMOVED = FAINT_COLOUR
_RAW = OKABE_ITO["orange"]
SAMPLE_PROMPTS = ("Elizabeth", "Mr. Darcy", "It is a truth", "", "🙂 über", "she said")


def token_label(token):
    """A token's label, with a lone punctuation mark named, so that a comma rotated under a bar is not read as an
    apostrophe.

    >>> token_label(","), token_label("·was")
    (', (comma)', '·was')
    """
    mark = token.replace("·", "")
    if len(mark) == 1 and unicodedata.category(mark).startswith("P"):
        return f"{token} ({unicodedata.name(mark).lower()})"
    return token


def sampling_view(model, prompt, temperature=1.0, top_k=0, top_p=1.0, num_tokens=15, sample_tokens=12, seed=SEED):
    """The figure's numbers: dict of ``tokens`` (labels), ``raw`` probabilities, ``tempered`` (the temperature
    alone), ``shaped`` (temperature and filters: 0 where removed), ``kept`` and ``sample`` (the new text).

    ``top_k = 0`` and ``top_p = 1`` switch the filters off.
    """
    ids = model.tokenizer.encode(prompt)[-model.context_length:] or model.tokenizer.encode("\n")
    logits = model.logits(ids)[-1]  # (vocab,): the scores of the token after the prompt
    raw = next_token_probs(logits)
    tempered = next_token_probs(logits, temperature)
    shaped = next_token_probs(logits, temperature, top_k or None, None if top_p >= 1 else top_p)
    order = np.argsort(-raw, kind="stable")[:num_tokens]  # the model's own favourites
    filters = {"top_k": top_k or None, "top_p": None if top_p >= 1 else top_p}
    new = generate_ids(model.decoder, ids, sample_tokens, context_length=model.context_length, temperature=temperature,
                       rng=np.random.default_rng(seed), **filters)[len(ids):]
    return {"tokens": [token_label(model.tokenizer.token_str(int(i))) for i in order], "raw": raw[order],
            "tempered": tempered[order], "shaped": shaped[order], "kept": int((shaped > 0).sum()),
            "sample": model.tokenizer.decode(new)}


def draw_sampling(fig, model, prompt, temperature, top_k, top_p):
    """Bars: the model's probability of its 15 favourite next tokens (orange) and what sampling uses (blue)."""
    view = sampling_view(model, prompt, sample_tokens=0)
    (*labels, shown_prompt), families, _ = drawable_labels([*view["tokens"], prompt[-40:]])  # never a warning
    ax = fig.add_subplot()
    x = np.arange(len(view["tokens"]))
    ax.bar(x - 0.2, view["raw"], width=0.4, color=_RAW)
    shaped = ax.bar(x + 0.2, np.zeros(len(x)), width=0.4, color=_KEPT)
    ax.legend(handles=[Patch(color=_RAW, label="the model (temperature 1, no filter)"),
                       Patch(color=_KEPT, label="what sampling draws from"),
                       Patch(color=_REMOVED, label="removed by top-k / top-p (its probability before)")],
              loc="upper right", fontsize=11)
    ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=11, family=families)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("probability of the next token")
    ax.set_xlabel("the 15 tokens the model finds most probable after the prompt")
    ax.set_title(" ", fontsize=11, family=families)
    fig.handles = {"model": model, "prompt": prompt, "shown_prompt": shown_prompt, "bars": shaped, "ax": ax}
    fig.dynamic = [*shaped, ax.title]
    return update_sampling(fig, prompt, temperature, top_k, top_p)


def update_sampling(fig, prompt, temperature, top_k, top_p):
    """Set the blue bars, their colours and the title for new settings; a new prompt needs a full redraw."""
    parts = fig.handles
    if prompt != parts["prompt"]:
        raise FullRedraw  # other favourite tokens: new tick labels
    view = sampling_view(parts["model"], prompt, temperature, top_k, top_p)
    for bar, p, before in zip(parts["bars"], view["shaped"], view["tempered"], strict=True):
        bar.set_height(p if p > 0 else before)  # a removed token: grey, as high as it was before the filters
        bar.set_color(_KEPT if p > 0 else _REMOVED)
    parts["ax"].set_title(f"after {parts['shown_prompt']!r}: temperature {temperature:g}, top-k {top_k or 'off'}, "
                          f"top-p {top_p if top_p < 1 else 'off'}  ({view['kept']} tokens left)", fontsize=11)
    sample = view["sample"].replace("\n", " ⏎ ")
    return f"A seeded sample of 12 tokens after the prompt: {prompt[-40:]}<b>{sample}</b>"


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
