"""Notebook 01: explore real word vectors (GloVe 6B, 50d): nearest neighbours and analogies."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from matplotlib.patches import ConnectionPatch, FancyArrowPatch

from ..examples import JOURNEY_TOKENS, journey_embeddings
from ..glove import load_glove, most_similar, pca_2d, word_to_index
from ..plotting import OKABE_ITO, heatmap, token_colour
from . import Explorer, FullRedraw, dropdown, slider

__all__ = ["NEIGHBOUR_WORDS", "ANALOGY_WORDS", "draw_lookup", "draw_neighbours", "update_neighbours", "draw_analogy",
           "update_analogy", "neighbour_explorer", "analogy_explorer", "EXPLORERS"]

#: Words offered by the neighbour explorer: some with one clear meaning, some with several.
NEIGHBOUR_WORDS = (
    "apple", "king", "frog", "paris", "computer", "music", "happy", "river",
    "bank", "bass", "mouse", "python", "jaguar", "java", "amazon", "orange",
)

#: Words offered by the analogy explorer ("a is to b as c is to ?"), in related groups.
ANALOGY_WORDS = (
    "man", "woman", "king", "queen", "boy", "girl", "brother", "sister", "uncle", "aunt",
    "france", "paris", "germany", "berlin", "italy", "rome", "japan", "tokyo",
    "big", "bigger", "small", "good", "better", "bad", "walk", "walked", "swim", "go", "went",
    "doctor", "nurse",
)

_COLOURS = {"cosine": OKABE_ITO["blue"], "dot": OKABE_ITO["vermillion"], "length": OKABE_ITO["sky blue"],
            "target": OKABE_ITO["bluish green"], "mark": OKABE_ITO["black"]}

#: The live neighbour figure keeps room for this many bars (the k slider's maximum), so moving k edits bars only.
_K_SLOTS = 15


def draw_lookup(fig, tokens=JOURNEY_TOKENS, vocabulary=None, table=None):
    """Left: the embedding table E, one row per vocabulary word (its id first); right: X = E[token_ids], one row per
    token of the sentence. An arrow joins row ``token_ids[i]`` of E to row i of X; returns ``token_ids``.

    By default the vocabulary is the sentence's words in alphabetical order and E holds notebook 00's vectors in that
    order, as notebook 01 builds them.
    """
    tokens = list(tokens)
    vocabulary = sorted(tokens, key=str.lower) if vocabulary is None else list(vocabulary)
    if table is None:
        table = journey_embeddings()[[JOURNEY_TOKENS.index(word) for word in vocabulary]]  # (V, d_model)
    table = np.asarray(table)
    token_ids = np.array([vocabulary.index(token) for token in tokens])
    X = table[token_ids]  # (T,) ids index the rows of (V, d_model) -> (T, d_model)
    left, gap, right = fig.subplots(1, 3, width_ratios=[1, 0.7, 1])
    gap.set_axis_off()
    features = [str(j) for j in range(table.shape[1])]  # short labels stay horizontal
    heatmap(table, [f"id {v}: {word}" for v, word in enumerate(vocabulary)], features, ax=left, vmin=0, vmax=1,
            colorbar=False, xlabel="feature", ylabel="vocabulary, by id", title=f"table E, shape {table.shape}")
    image = heatmap(X, tokens, features, ax=right, vmin=0, vmax=1, colorbar=False, xlabel="feature",
                    ylabel="sentence (token order)", title=f"X = E[token_ids], shape {X.shape}")
    for text in (*left.texts, *right.texts):
        text.set_fontsize(12)  # the entries, legible on a projector
    right.yaxis.tick_right()
    right.yaxis.set_label_position("right")
    fig.colorbar(image, ax=[left, gap, right], location="bottom", shrink=0.4, label="value")
    arrows = []
    for i, (token, token_id) in enumerate(zip(tokens, token_ids, strict=True)):
        arrow = ConnectionPatch((table.shape[1] - 0.5, token_id), (-0.5, i), coordsA=left.transData,
                                coordsB=right.transData, arrowstyle="-|>", mutation_scale=16, linewidth=2,
                                color=token_colour(token, i))
        fig.add_artist(arrow)
        arrows.append(arrow)
    fig.handles = {"token_ids": token_ids, "X": X, "arrows": arrows}
    return token_ids


@lru_cache(maxsize=1)
def _median_length():
    _, vectors = load_glove()
    return float(np.median(np.linalg.norm(vectors, axis=1)))  # over all N words


def _neighbours(word, metric, k):
    words, vectors = load_glove()
    i = word_to_index()[word]
    rows, scores = most_similar(vectors[i], vectors, k=k, metric=metric, exclude=[i])
    return rows, scores, np.linalg.norm(vectors[rows], axis=1), float(np.linalg.norm(vectors[i]))


def draw_neighbours(fig, word="apple", metric="cosine", k=10):
    """Left: the ``k`` nearest words to ``word`` by ``metric``; right: the length of each of them."""
    k = int(max(1, min(k, 30)))
    slots = max(k, _K_SLOTS)
    _, scores, lengths, _ = _neighbours(word, metric, k)
    left, right = fig.subplots(1, 2, width_ratios=[1.3, 1], sharey=True)
    left.set_ylim(1, 0)  # best match on top
    left.set_yticks([])
    left.set_xlabel("cosine similarity" if metric == "cosine" else "dot product")
    left.set_xlim(0, 1 if metric == "cosine" else 5 * np.ceil(float(scores.max()) * 1.12 / 5))  # room for the numbers
    right.set_xlabel("vector length ‖v‖")
    right.set_title("their lengths", pad=16)  # room for the chosen word's triangle
    right.set_xlim(0, max(10.0, float(lengths.max()) * 1.05))
    zeros = np.zeros(slots)
    score_bars = left.barh(zeros, zeros, height=0, color=_COLOURS[metric])
    length_bars = right.barh(zeros, zeros, height=0, color=_COLOURS["length"])
    score_texts = [left.text(0, 0, "", va="center", fontsize=11) for _ in range(slots)]
    word_texts = [left.text(-0.03, 0, "", transform=left.get_yaxis_transform(), ha="right", va="center",
                            fontsize=11) for _ in range(slots)]
    # an invisible placeholder reserves room for the longest words in the (constrained) layout
    left.text(-0.03, 0, "m" * 7, transform=left.get_yaxis_transform(), ha="right", va="center", fontsize=11, alpha=0)
    median_length = _median_length()
    median_line = right.axvline(median_length, color=_COLOURS["mark"], linestyle="--", linewidth=1.5,
                                label=f"median of all ({median_length:.1f})")
    # the chosen word's length: a triangle above the panel, so it never hides the median line
    word_line, = right.plot([0], [1.0], "v", color=_COLOURS["target"], markersize=13, clip_on=False,
                            transform=right.get_xaxis_transform(), label="the chosen word", linestyle="none")
    right.legend(loc="upper center", bbox_to_anchor=(0.5, -0.17), fontsize=11, ncol=2, frameon=False,
                 handlelength=1.2, columnspacing=1.0)
    fig.handles.update(left=left, right=right, metric=metric, slots=slots, score_bars=score_bars,
                       length_bars=length_bars, score_texts=score_texts, word_texts=word_texts, word_line=word_line)
    fig.dynamic.extend([left.title, *score_bars, *length_bars, *score_texts, *word_texts,
                        median_line, word_line])  # the median too, so that it stays on top of the bars
    return update_neighbours(fig, word, metric, k)


def update_neighbours(fig, word="apple", metric="cosine", k=10, **_):
    """Bars, scores, words and lengths for ``word`` and ``k`` (the live widget's fast path)."""
    parts = fig.handles
    k = int(max(1, min(k, 30)))
    if metric != parts["metric"] or k > parts["slots"]:
        raise FullRedraw  # another x axis, or more bars than the figure has room for
    words = load_glove()[0]
    rows, scores, lengths, word_length = _neighbours(word, metric, k)
    left, right = parts["left"], parts["right"]
    if scores.max() > left.get_xlim()[1] or scores.min() < 0 or lengths.max() > right.get_xlim()[1]:
        raise FullRedraw
    left.set_title(f"{k} nearest words to {word!r}")
    pad = 0.01 * left.get_xlim()[1]  # the score sits just right of its bar
    for i in range(parts["slots"]):
        shown = i < k
        bar, length_bar = parts["score_bars"][i], parts["length_bars"][i]
        text, label = parts["score_texts"][i], parts["word_texts"][i]
        for artist in (bar, length_bar, text, label):
            artist.set_visible(shown)
        if not shown:
            continue
        y = (i + 0.5) / k
        for patch, width in ((bar, scores[i]), (length_bar, lengths[i])):
            patch.set_y(y - 0.4 / k)
            patch.set_height(0.8 / k)
            patch.set_width(width)
        text.set_position((scores[i] + pad, y))
        text.set_text(f"{scores[i]:.2f}" if metric == "cosine" else f"{scores[i]:.1f}")
        label.set_y(y)
        label.set_text(words[rows[i]])
    parts["word_line"].set_xdata([word_length])
    return (f"Mean length of these {k} neighbours: <b>{lengths.mean():.2f}</b> "
            f"(median over all {len(words):,} words: {_median_length():.2f}; {word!r}: {word_length:.2f}). "
            "The dot product rewards long vectors; cosine ignores length.")


def draw_analogy(fig, a="man", b="king", c="woman", k=8):
    """Left: the words nearest to b - a + c (cosine); right: a, b, c and the answer in 2-D (PCA of the five points)."""
    left, right = fig.subplots(1, 2, width_ratios=[1, 1.15])
    y = np.arange(k)
    bars = left.barh(y, np.zeros(k), color=[_COLOURS["target"]] + [_COLOURS["cosine"]] * (k - 1))
    left.set_ylim(k - 0.5, -0.5)
    left.set_yticks([])
    left.set_xlim(0, 1)
    left.set_xlabel("cosine similarity with b − a + c")
    left.set_title(" ")
    score_texts = [left.text(0, yy, "", va="center", fontsize=11) for yy in y]
    word_texts = [left.text(-0.03, yy, "", transform=left.get_yaxis_transform(), ha="right", va="center",
                            fontsize=11) for yy in y]
    # an invisible placeholder reserves room for the longest words in the (constrained) layout
    left.text(-0.03, 0, "m" * 7, transform=left.get_yaxis_transform(), ha="right", va="center", fontsize=11, alpha=0)
    right.set_xlim(-0.65, 0.75)
    right.set_ylim(-0.65, 0.65)
    right.set_xticks([])
    right.set_yticks([])
    right.set_xlabel("principal component 1")
    right.set_ylabel("principal component 2")
    right.set_title("2-D projection; × = b − a + c", fontsize=12)
    purple = _COLOURS["cosine"]
    arrow = {"arrowstyle": "-|>", "mutation_scale": 18, "linewidth": 2, "color": purple}
    arrows = [right.add_patch(FancyArrowPatch((0, 0), (0, 0), **arrow)),
              right.add_patch(FancyArrowPatch((0, 0), (0, 0), linestyle="--", **arrow))]
    given = right.scatter(np.zeros(3), np.zeros(3), s=60, color=purple, zorder=3)
    target = right.scatter([0], [0], s=90, marker="x", color=_COLOURS["mark"], zorder=3)
    answer = right.scatter([0], [0], s=90, marker="*", color=_COLOURS["target"], zorder=3)
    labels = [right.annotate("", (0, 0), textcoords="offset points", xytext=(6, 6), fontsize=11) for _ in range(4)]
    fig.handles.update(left=left, bars=bars, score_texts=score_texts, word_texts=word_texts, k=k, arrows=arrows,
                       points=(given, target, answer), labels=labels)
    fig.dynamic.extend([*bars, *score_texts, *word_texts, left.title, *arrows, given, target, answer, *labels])
    return update_analogy(fig, a, b, c, k)


def update_analogy(fig, a="man", b="king", c="woman", k=8, **_):
    """Another analogy (the live widget's fast path)."""
    parts = fig.handles
    if k != parts["k"]:
        raise FullRedraw
    words, vectors = load_glove()
    index = word_to_index()
    ia, ib, ic = index[a], index[b], index[c]
    target = vectors[ib] - vectors[ia] + vectors[ic]  # (50,)
    rows, scores = most_similar(target, vectors, k=k, metric="cosine", exclude=[ia, ib, ic])
    answer = words[rows[0]]
    for bar, text, label, score, r in zip(parts["bars"], parts["score_texts"], parts["word_texts"], scores, rows):
        bar.set_width(score)
        text.set_x(score + 0.01)
        text.set_text(f"{score:.2f}")
        label.set_text(words[r])
    parts["left"].set_title(f"{a} : {b} = {c} : ?")

    points = np.stack([vectors[ia], vectors[ib], vectors[ic], target, vectors[rows[0]]])  # (5, 50)
    coords, _ = pca_2d(points)  # (5, 2)
    span = np.ptp(coords, axis=0).max() or 1.0
    centre = (coords.max(axis=0) + coords.min(axis=0)) / 2
    coords = (coords - centre) / span  # into the fixed frame [-0.5, 0.5]
    pa, pb, pc, pt, pd = coords
    parts["arrows"][0].set_positions(pa, pb)
    parts["arrows"][1].set_positions(pc, pt)
    given, target_point, answer_point = parts["points"]
    given.set_offsets(coords[:3])
    target_point.set_offsets([pt])
    answer_point.set_offsets([pd])
    for label, point, word in zip(parts["labels"], coords[[0, 1, 2, 4]], [a, b, c, answer], strict=True):
        label.xy = tuple(point)  # the × is named in the title
        label.set_text(word)
    return (f"<b>{b} − {a} + {c} ≈ {answer}</b> (cosine {scores[0]:.2f}). "
            "The dashed arrow is the solid one moved to start at c; the star is the nearest real word.")


def neighbour_explorer():
    """Pick a word and a similarity: see its nearest neighbours and how long their vectors are."""
    controls = {"word": dropdown("word", NEIGHBOUR_WORDS, "apple"),
                "metric": dropdown("similarity", ["cosine", "dot"], "cosine"),
                "k": slider("neighbours k", 10, 5, 15, 1, integer=True)}
    return Explorer(draw_neighbours, controls, figsize=(9.5, 4.2), update=update_neighbours)


def analogy_explorer():
    """a is to b as c is to ?: the words nearest to b - a + c."""
    controls = {"a": dropdown("a", ANALOGY_WORDS, "man"), "b": dropdown("is to b", ANALOGY_WORDS, "king"),
                "c": dropdown("as c is to ?", ANALOGY_WORDS, "woman")}
    return Explorer(draw_analogy, controls, figsize=(9.5, 4.0), layout="row", update=update_analogy)


#: Every explorer of this notebook, by name (the latency benchmark drives each one).
EXPLORERS = {"neighbour_explorer": neighbour_explorer, "analogy_explorer": analogy_explorer}
