"""Notebook 16: type a message, read SmolLM2's answer and any head's attention over it (numbers: ``llm``)."""

from __future__ import annotations

from functools import lru_cache, partial

import ipywidgets as widgets

from ..core import causal_mask
from ..llm import chat_prompt, load_smollm2
from ..plotting import drawable_labels, heatmap
from . import LABEL_STYLE, Explorer, slider

__all__ = ["chat_view", "draw_chat", "chat_explorer", "EXPLORERS"]

SAMPLE_MESSAGES = ("What is the capital of France?", "Name three colours.", "", "Translate 'cat' into French.",
                   "🙂 über 2+2?")
#: The figure's rows: the answer's first ``ROWS`` tokens; its columns: the ``COLUMNS`` tokens up to the last row's
#: (the end of the message, the template's tokens, the answer so far). 12 x 28 labels read on a slide at 18 px.
ROWS, COLUMNS = 12, 28


@lru_cache(maxsize=8)
def _chat(model, message, max_new_tokens):
    """The chat's ids (the prompt, then the answer without its end token), how many are the prompt's, and every
    head's weights over them ``(layers, h, T, T)``: computed once per message, so a slider move only draws."""
    prompt = model.encode(chat_prompt(message))
    ids = prompt + [i for i in model.generate(prompt, max_new_tokens) if i != model.end_id]
    return ids, len(prompt), model.forward(ids)[1]


def chat_view(model, message, layer, head, max_new_tokens=24):
    """The figure's numbers: ``answer`` (text); ``weights (r, c)`` of head ``(layer, head)``: rows, the answer's
    first ``r <= ROWS`` tokens (``queries``, their labels), looking at columns, the ``c <= COLUMNS`` tokens up to
    the last row's (``keys``); ``answer_column`` (the column of the answer's first token); ``first`` (the weight
    of each row on the chat's first token); ``seen`` (notebook 07's causal mask, cut like ``weights``)."""
    ids, prompt_length, weights = _chat(model, message, max_new_tokens)
    weights = weights[layer, head]  # (T, T)
    first_row = min(prompt_length, len(ids) - 1)  # an empty answer: the prompt's last token, which chose to stop
    end = min(len(ids), first_row + ROWS)
    start = max(0, end - COLUMNS)
    labels = [model.decode([i]).replace(" ", "·").replace("\n", "⏎") for i in ids[start:end]]
    return {"answer": model.decode(ids[prompt_length:]), "queries": labels[first_row - start:], "keys": labels,
            "weights": weights[first_row:end, start:end], "answer_column": first_row - start,
            "first": weights[first_row:end, 0], "seen": causal_mask(len(ids))[first_row:end, start:end]}


def draw_chat(fig, model, message, layer, head):
    """Heatmap of one head's weights: the answer's tokens looking at the end of the chat; the answer under it."""
    view = chat_view(model, message, layer, head)
    keys, families, _ = drawable_labels(view["keys"])  # the rows, the answer's tokens, are the last columns
    ax = fig.add_subplot()
    heatmap(view["weights"], keys[view["answer_column"]:], keys, ax=ax, vmin=0.0, vmax=1.0, annotate=False,
            mask=view["seen"],  # hatched: the tokens after a row's own
            xlabel="key: the token looked at", ylabel="query: the answer's token looking",
            cbar_label="attention weight")
    for tick in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        tick.set_family(families)
    ax.axvline(view["answer_column"] - 0.5, color="black", linewidth=1.5)
    ax.set_title(f"layer {layer}, head {head}; right of the line, the answer's own tokens;\n"
                 f"weight on the chat's first token (not shown), mean {view['first'].mean():.2f}", fontsize=11)
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
    return Explorer(partial(draw_chat, model=model), controls, figsize=(10.3, 5.2),
                    samples={"message": SAMPLE_MESSAGES})


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"chat_explorer": chat_explorer}
