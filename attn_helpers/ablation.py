"""Test a head's job by removing it (notebook 12): ablate one head of the pretrained model, measure what changes.

Head ``h`` reaches the model only through rows ``h * d_h .. (h + 1) * d_h - 1`` of ``W_o``: zero ablation sets
them to 0; mean ablation moves the head's mean contribution into ``b_o`` first. :func:`ablate_head` returns a copy.
Every one of the 72 heads removed both ways takes longer than a notebook may run, so :func:`load_all_heads` reads
that table, measured by ``tools/build_ablation_table.py`` on the same sentences with the same code.
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from .heads import ablate_heads, head_rows, head_values
from .pretrained import FINGERPRINT_SENTENCES, MODEL_SHA256, RunResult

__all__ = ["head_rows", "head_contexts", "mean_context", "ablate_head", "sentence_embeddings", "relative_change",
           "ablation_effects", "MODES", "SUMMARY", "summarise", "all_heads_table", "load_all_heads"]

#: The two ways of removing a head, in the order of the table's first axis.
MODES = ("zero", "mean")
#: The numbers notebook 12 prints for one removal, in the order of :func:`summarise`.
SUMMARY = ("block", "last", "self cosine", "largest move", "neighbours changed")
#: Every head removed both ways on ``FINGERPRINT_SENTENCES`` (``tools/build_ablation_table.py``).
ALL_HEADS_PATH = Path(__file__).resolve().parent / "data" / "nb12_ablation_all_heads.npz"


def head_contexts(model, result, layer, head):
    """Head ``(layer, head)``'s context vectors in ``result = model.run(text)``: ``weights @ values``, ``(T, d_h)``."""
    values = head_values(model.blocks[layer], result.hidden_states[layer])[head]  # the block's input -> (T, d_h)
    return result.attentions[layer, head] @ values  # (T, T) @ (T, d_h) -> (T, d_h)


def mean_context(model, results, layer, head):
    """The mean of head ``(layer, head)``'s context vector over every token of ``results``: ``(d_h,)``."""
    return np.concatenate([head_contexts(model, r, layer, head) for r in results]).mean(axis=0)


def ablate_head(model, layer, head, mean=None):
    """A copy of ``model`` without head ``(layer, head)``: its rows of ``W_o`` are 0.

    With ``mean`` (a context vector, ``(d_h,)``), the head's output is replaced by that constant
    instead: ``mean @ W_o[rows]`` is added to the bias ``b_o`` (:func:`~attn_helpers.heads.ablate_heads`).
    ``model`` is not changed.
    """
    ablated = copy.copy(model)
    ablated.blocks = list(model.blocks)
    ablated.blocks[layer] = ablate_heads(model.blocks[layer], [head], None if mean is None else [mean])
    return ablated


def sentence_embeddings(results):
    """The sentence embeddings of runs (``model.embed``'s: mean of the last layer, length 1), ``(n, d_model)``."""
    means = np.stack([r.hidden_states[-1].mean(axis=0) for r in results])  # (n, d_model)
    return means / np.linalg.norm(means, axis=1, keepdims=True)


def relative_change(results, reference, layer):
    """Per token, ``||h - h_ref|| / ||h_ref||`` of the hidden states at ``layer``, all runs concatenated."""
    return np.concatenate([np.linalg.norm(r.hidden_states[layer] - ref.hidden_states[layer], axis=-1)
                           / np.linalg.norm(ref.hidden_states[layer], axis=-1)
                           for r, ref in zip(results, reference, strict=True)])


def ablation_effects(model, sentences, heads):
    """Remove each head of ``heads`` (``name -> (layer, head)``) both ways; measure on ``sentences``.

    Returns ``"intact similarities"``: the ``(n, n)`` cosines of the intact model's sentence embeddings; and for each
    ``(name, mode)``, ``mode`` in ``("zero", "mean")``, a dict with ``"block"`` and ``"last"``: the per-token relative
    change of the hidden states right after the head's block and at the last layer; ``"self cosine"``: each sentence
    embedding's cosine with the intact one, ``(n,)``; ``"similarity change"``: the changes of the ``n (n - 1) / 2``
    cosines between different sentences; ``"neighbours changed"``: how many sentences have another nearest neighbour
    (most similar other sentence) than in the intact model.
    """
    intact = [model.run(s) for s in sentences]
    embeddings = sentence_embeddings(intact)
    similarities = embeddings @ embeddings.T  # (n, n)
    pairs = np.triu_indices(len(sentences), k=1)
    effects = {"intact similarities": similarities}
    for name, (layer, head) in heads.items():
        for mode in ("zero", "mean"):
            mean = mean_context(model, intact, layer, head) if mode == "mean" else None
            ablated_model = ablate_head(model, layer, head, mean)
            results = [_run_from(ablated_model, run, layer) for run in intact]
            ablated = sentence_embeddings(results)
            ablated_similarities = ablated @ ablated.T
            effects[name, mode] = {
                "block": relative_change(results, intact, layer + 1),
                "last": relative_change(results, intact, -1),
                "self cosine": (ablated * embeddings).sum(axis=1),
                "similarity change": (ablated_similarities - similarities)[pairs],
                "neighbours changed": int((_nearest(ablated_similarities) != _nearest(similarities)).sum()),
            }
    return effects


def _run_from(model, intact, layer):
    """``model.run`` of ``intact``'s text, from block ``layer`` on: the blocks before it are those of ``intact``."""
    hidden_states, attentions = model.run_blocks(intact.hidden_states[layer], layer)
    return RunResult(intact.tokens, np.concatenate([intact.hidden_states[:layer], hidden_states]),
                     np.concatenate([intact.attentions[:layer], attentions]))


def summarise(effect):
    """One removal's numbers (an entry of :func:`ablation_effects`), in the order of ``SUMMARY``.

    The mean relative change after the head's block and at the last layer, the lowest cosine of a sentence embedding
    with the intact one, the largest move of a cosine between two sentences, and the neighbours changed.
    """
    return (effect["block"].mean(), effect["last"].mean(), effect["self cosine"].min(),
            np.abs(effect["similarity change"]).max(), effect["neighbours changed"])


def all_heads_table(effects, num_layers, num_heads):
    """:func:`summarise` of every head, both ways: ``name -> (2 modes, layers, heads)`` for each name of ``SUMMARY``.

    ``effects``: :func:`ablation_effects` of the heads named ``"(layer, head)"``.
    """
    table = np.array([[[summarise(effects[f"({layer}, {head})", mode]) for head in range(num_heads)]
                       for layer in range(num_layers)] for mode in MODES])  # (2, layers, heads, 5)
    return {name: table[..., k] for k, name in enumerate(SUMMARY)}


def load_all_heads(path=ALL_HEADS_PATH):
    """The shipped :func:`all_heads_table` of all-MiniLM-L6-v2 on ``FINGERPRINT_SENTENCES``.

    It is checked to come from this model's weights and these sentences; ``ValueError`` otherwise.
    """
    with np.load(path) as data:
        if str(data["model_sha256"]) != MODEL_SHA256 or tuple(data["sentences"]) != FINGERPRINT_SENTENCES:
            raise ValueError(f"{path} was measured on another model or other sentences: run "
                             "tools/build_ablation_table.py again")
        return {name: data[name] for name in SUMMARY}


def _nearest(similarities):
    """For each sentence, the most similar OTHER sentence."""
    return np.where(np.eye(len(similarities), dtype=bool), -np.inf, similarities).argmax(axis=1)
