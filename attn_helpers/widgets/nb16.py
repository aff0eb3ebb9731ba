"""Notebook 16: type a message, read SmolLM2's answer and any head's attention over it (numbers: ``llm``)."""

from __future__ import annotations

from functools import lru_cache, partial

import ipywidgets as widgets

from ..llm import chat_prompt, load_smollm2
from ..plotting import drawable_labels, heatmap
from . import LABEL_STYLE, Explorer, slider

__all__ = ["chat_view", "draw_chat", "chat_explorer", "EXPLORERS"]

SAMPLE_MESSAGES = ("What is the capital of France?", "Name three colours.", "", "Translate 'cat' into French.",
                   "🙂 über 2+2?")
#: The most tokens the figure shows (the last ones: the end of the message and the answer).
SHOWN = 28


@lru_cache(maxsize=8)
def _chat(model, message, max_new_tokens):
    """The chat's ids (the prompt, then the answer without its end token), how many are the prompt's, and every
    head's weights over them ``(layers, h, T, T)``: computed once per message, so a slider move only draws."""
    prompt = model.encode(chat_prompt(message))
    ids = prompt + [i for i in model.generate(prompt, max_new_tokens) if i != model.end_id]
    return ids, len(prompt), model.forward(ids)[1]


def chat_view(model, message, layer, head, max_new_tokens=24):
    """The figure's numbers: ``answer`` (text), ``labels`` and ``weights (n, n)`` of head ``(layer, head)`` over the
    last ``n <= SHOWN`` tokens of the chat (the message and the answer; rows: queries), ``first`` (the weight of
    every shown query on the chat's first token), ``answer_start`` (the row of the answer's first token)."""
    ids, prompt_length, weights = _chat(model, message, max_new_tokens)
    weights = weights[layer, head]  # (T, T)
    start = max(0, len(ids) - SHOWN)
    labels = [model.decode([i]).replace(" ", "·").replace("\n", "⏎") for i in ids[start:]]
    return {"answer": model.decode(ids[prompt_length:]), "labels": labels, "weights": weights[start:, start:],
            "first": weights[start:, 0], "answer_start": prompt_length - start}


def draw_chat(fig, model, message, layer, head):
    """Heatmap of one head's weights over the end of the chat; the answer under the figure."""
    view = chat_view(model, message, layer, head)
    labels, families, _ = drawable_labels(view["labels"])
    ax = fig.add_subplot()
    heatmap(view["weights"], labels, labels, ax=ax, vmin=0.0, vmax=1.0, annotate=False,  # causal: 0 above the diagonal
            xlabel="key: the token looked at", ylabel="query: the token looking", cbar_label="attention weight")
    for tick in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        tick.set_family(families)
    ax.axhline(view["answer_start"] - 0.5, color="black", linewidth=1.5)
    ax.set_title(f"layer {layer}, head {head}: rows below the line are the answer's tokens;\nweight on the "
                 f"chat's first token (not shown), mean {view['first'].mean():.2f}", fontsize=11)
    return f"<b>SmolLM2:</b> {view['answer']!s:.400}"


def chat_explorer(model=None, message="What is the capital of France?"):
    """Type a message (press Enter), pick a layer and a head: the answer and that head's attention."""
    model = load_smollm2() if model is None else model
    controls = {  # the sliders first: they only draw; a new message runs the model (a reply takes a second or so)
        "layer": slider("layer", 18, 0, len(model.blocks) - 1, 1, integer=True),
        "head": slider("head", 6, 0, model.blocks[0].num_heads - 1, 1, integer=True),
        "message": widgets.Text(value=message, description="message (press Enter)", continuous_update=False,
                                style=LABEL_STYLE, layout=widgets.Layout(width="520px")),
    }
    return Explorer(partial(draw_chat, model=model), controls, figsize=(8.4, 7.0),
                    samples={"message": SAMPLE_MESSAGES})


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"chat_explorer": chat_explorer}
