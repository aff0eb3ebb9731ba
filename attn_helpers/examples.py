"""The running examples that the notebooks share (numpy only).

Every notebook builds its tiny examples from here, so a number printed in one
notebook means the same thing in the next.
"""

from __future__ import annotations

import math

import numpy as np

from .block import init_block_params, residual_stream
from .config import PRINT_OPTIONS, SEED, setup_printing  # noqa: F401 - re-exported: notebooks import them from here
from .core import causal_mask, cosine_similarity, padding_mask, softmax
from .model_size import parameter_count
from .positions import positional_encoding
from .published import PUBLISHED_CONFIGS

__all__ = ["SEED", "JOURNEY_TOKENS", "journey_embeddings", "I_LOVE_AI_TOKENS", "i_love_ai", "qkv_attention_steps",
           "CREATURE_TOKENS", "CREATURE_FEATURES", "CREATURE_QUESTIONS", "creature_embeddings", "creature_example",
           "creature_heads_example", "combined_mask", "PRINT_OPTIONS", "setup_printing", "DOG_BITES_MAN_TOKENS",
           "dog_bites_man", "reorder_outputs", "GPT2_SMALL", "GPT2_FAMILY", "parameter_shares",
           "creature_block_example", "stack_diagnostics", "TRANSLATION_SOURCE", "TRANSLATION_TARGET",
           "translation_example"]


#: The six-token running example of notebooks 02-05.
JOURNEY_TOKENS = ("Your", "journey", "starts", "with", "one", "step")
_JOURNEY = (
    (0.43, 0.15, 0.89),  # Your
    (0.55, 0.87, 0.66),  # journey
    (0.57, 0.85, 0.64),  # starts
    (0.22, 0.58, 0.33),  # with
    (0.77, 0.25, 0.10),  # one
    (0.05, 0.80, 0.55),  # step
)

#: The three-token hand-worked example of notebook 05.
I_LOVE_AI_TOKENS = ("I", "love", "AI")

#: The eight-token sentence of notebooks 05, 07 and 08 (3Blue1Brown, deep-learning series, chapter 6).
CREATURE_TOKENS = ("a", "fluffy", "blue", "creature", "roamed", "the", "verdant", "forest")

#: What each of the 8 hand-designed embedding features of the creature example means.
CREATURE_FEATURES = ("article", "adjective", "noun", "verb", "about the creature", "about the forest", "alive",
                     "colour")

#: What each of the 4 query/key columns of the creature example asks (query) and answers (key).
CREATURE_QUESTIONS = (
    ("looks for an adjective", "is an adjective"),
    ("looks for a noun", "is a noun"),
    ("which thing? (+ creature, - forest)", "which thing? (+ creature, - forest)"),
    ("looks for who acts", "acts (left for you to design)"),
)

# One row per token, one column per feature of CREATURE_FEATURES (1 = has the feature).
_CREATURE = (
    (1, 0, 0, 0, 0, 0, 0, 0),  # a
    (0, 1, 0, 0, 1, 0, 0, 0),  # fluffy: an adjective about the creature
    (0, 1, 0, 0, 1, 0, 0, 1),  # blue: an adjective about the creature, a colour
    (0, 0, 1, 0, 1, 0, 1, 0),  # creature: a noun, alive
    (0, 0, 0, 1, 0, 0, 0, 0),  # roamed: a verb
    (1, 0, 0, 0, 0, 0, 0, 0),  # the
    (0, 1, 0, 0, 0, 1, 0, 1),  # verdant: an adjective about the forest, a colour (green)
    (0, 0, 1, 0, 0, 1, 0, 0),  # forest: a noun
)


def journey_embeddings(dtype=np.float32):
    """The 3-dimensional embeddings of "Your journey starts with one step", shape (6, 3).

    >>> X = journey_embeddings()
    >>> X.shape, X.dtype
    ((6, 3), dtype('float32'))
    >>> X[1].tolist() == np.array([0.55, 0.87, 0.66], dtype=np.float32).tolist()
    True
    """
    return np.array(_JOURNEY, dtype=dtype)


def i_love_ai(dtype=np.float32):
    """Embeddings and projection matrices of the "I love AI" example (notebook 05).

    Returns ``example``: ``X`` (3, 2) and ``W_q``, ``W_k``, ``W_v`` (2, 2), as in the hand-worked example.

    >>> ex = i_love_ai()
    >>> ex["X"] @ ex["W_q"]
    array([[1., 0.],
           [1., 1.],
           [2., 1.]], dtype=float32)
    """
    return {
        "X": np.array([[1, 0], [0, 1], [1, 1]], dtype=dtype),
        "W_q": np.array([[1, 0], [1, 1]], dtype=dtype),
        "W_k": np.array([[0, 1], [1, 0]], dtype=dtype),
        "W_v": np.array([[1, 2], [0, 1]], dtype=dtype),
    }


def qkv_attention_steps(X, W_q, W_k, W_v):
    """Every intermediate of self-attention with projections, as a dict of arrays (notebook 05).

    Keys: ``Q``, ``K``, ``V`` (``X @ W``), ``scores`` (``Q @ K.T``), ``scaled``
    (``scores / sqrt(d_k)``), ``weights`` (row-wise softmax) and ``context`` (``weights @ V``).

    >>> ex = i_love_ai()
    >>> steps = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    >>> steps["scores"]
    array([[0., 1., 1.],
           [1., 1., 2.],
           [1., 2., 3.]], dtype=float32)
    >>> bool(np.allclose(steps["weights"].sum(axis=-1), 1))
    True
    """
    Q = X @ W_q  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    K = X @ W_k  # (T, d_in) @ (d_in, d_k) -> (T, d_k)
    V = X @ W_v  # (T, d_in) @ (d_in, d_v) -> (T, d_v)
    d_k = Q.shape[-1]
    scores = Q @ K.T  # (T, d_k) @ (d_k, T) -> (T, T)
    scaled = scores / math.sqrt(d_k)  # a Python float keeps float32 scores float32
    weights = softmax(scaled, axis=-1)
    context = weights @ V  # (T, T) @ (T, d_v) -> (T, d_v)
    return {"Q": Q, "K": K, "V": V, "scores": scores, "scaled": scaled, "weights": weights, "context": context}


def creature_embeddings(dtype=np.float32):
    """Hand-designed embeddings of "a fluffy blue creature roamed the verdant forest", shape (8, 8).

    Row ``t`` is token ``CREATURE_TOKENS[t]``; column ``f`` is the feature ``CREATURE_FEATURES[f]``
    ("article", "adjective", "noun", ...), 1 where the word has it. Real embeddings are learned and
    their features have no names; these are readable so that attention can be seen to mean something.
    "a" and "the" get the same row: both are just articles here.

    >>> X = creature_embeddings()
    >>> X.shape, X.dtype
    ((8, 8), dtype('float32'))
    >>> [CREATURE_FEATURES[f] for f in np.flatnonzero(X[CREATURE_TOKENS.index("blue")])]
    ['adjective', 'about the creature', 'colour']
    """
    return np.array(_CREATURE, dtype=dtype)


def creature_example(dtype=np.float32):
    """The creature sentence with hand-designed projections: attention that means something (notebook 05).

    ``d_k = 4`` columns, one per question of :data:`CREATURE_QUESTIONS` (nouns seek adjectives and back, column 2
    the thing a word is about, column 3 of ``W_k`` zero for notebook 05's exercise); ``W_v`` is the identity.

    Returns ``example``: ``X`` (8, 8), ``W_q`` (8, 4), ``W_k`` (8, 4), ``W_v`` (8, 8).

    >>> ex = creature_example()
    >>> steps = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    >>> creature = CREATURE_TOKENS.index("creature")
    >>> {CREATURE_TOKENS[j]: round(float(w), 2) for j, w in enumerate(steps["weights"][creature]) if w > 0.1}
    {'fluffy': 0.45, 'blue': 0.45}
    """
    feature = {name: i for i, name in enumerate(CREATURE_FEATURES)}
    W_q = np.zeros((len(CREATURE_FEATURES), 4), dtype=dtype)  # (d_model, d_k)
    W_k = np.zeros((len(CREATURE_FEATURES), 4), dtype=dtype)  # (d_model, d_k)
    W_q[feature["noun"], 0] = 4.0  # a noun looks for an adjective ...
    W_k[feature["adjective"], 0] = 1.0  # ... and an adjective's key says "adjective"
    W_q[feature["adjective"], 1] = 4.0  # an adjective looks for a noun ...
    W_k[feature["noun"], 1] = 1.0  # ... and a noun's key says "noun"
    W_q[feature["about the creature"], 2], W_k[feature["about the creature"], 2] = 4.0, 1.0  # same thing: +
    W_q[feature["about the forest"], 2], W_k[feature["about the forest"], 2] = -4.0, -1.0  # other thing: -
    W_q[feature["verb"], 3] = 4.0  # a verb looks for who acts; no key answers yet
    W_v = np.eye(len(CREATURE_FEATURES), dtype=dtype)  # (d_model, d_model): values = embeddings
    return {"X": creature_embeddings(dtype), "W_q": W_q, "W_k": W_k, "W_v": W_v}


def creature_heads_example(seed=SEED, weight_std=0.8, dtype=np.float32):
    """Multi-head projections for the creature sentence (notebook 08): d_model = 8, for h = 2 heads.

    Columns 0-3 of ``W_q``, ``W_k``: :func:`creature_example`'s (head 0); the rest random, ``N(0, weight_std^2)``
    from ``np.random.default_rng(seed)`` in the order ``W_q``, ``W_k`` (columns 4-7), ``W_v``, ``W_o``.

    Returns ``example``: ``X`` (8, 8) and ``W_q``, ``W_k``, ``W_v``, ``W_o`` (8, 8).

    >>> ex = creature_heads_example()
    >>> ex["W_q"].shape, ex["W_o"].dtype
    ((8, 8), dtype('float32'))
    >>> bool(np.array_equal(ex["W_q"][:, :4], creature_example()["W_q"]))
    True
    """
    designed = creature_example(dtype)
    d_model = designed["X"].shape[1]
    rng = np.random.default_rng(seed)
    random_q, random_k = (weight_std * rng.standard_normal((2, d_model, d_model - 4))).astype(dtype)
    W_v, W_o = (weight_std * rng.standard_normal((2, d_model, d_model))).astype(dtype)
    return {"X": designed["X"],
            "W_q": np.concatenate([designed["W_q"], random_q], axis=1),  # (d_model, 4) | (d_model, 4) -> (d_model, 8)
            "W_k": np.concatenate([designed["W_k"], random_k], axis=1),
            "W_v": W_v, "W_o": W_o}


def combined_mask(T, causal=True, length=None):
    """The (T, T) boolean mask of one sequence: causal (optional) AND no padding key after ``length``.

    ``length`` is clipped to 0..T (``None``: no padding). True = may attend.

    >>> combined_mask(3, causal=True, length=2).astype(int)
    array([[1, 0, 0],
           [1, 1, 0],
           [1, 1, 0]])
    >>> combined_mask(2, causal=False).all()
    np.True_
    """
    length = T if length is None else int(min(max(length, 0), T))
    mask = padding_mask([length], T)[0]  # (1, T): the real keys
    if causal:
        mask = mask & causal_mask(T)  # (1, T) & (T, T) -> (T, T)
    return np.broadcast_to(mask, (T, T)).copy()


#: The three-token sentence of notebook 09 (word order): "man bites dog" is the same set of words.
DOG_BITES_MAN_TOKENS = ("dog", "bites", "man")

_GPT2_DESIGN = {"bias": True, "tied_embeddings": True, "learned_positions": True, "final_norm": True}


def _gpt2(name):
    """A GPT-2 row of the published table as :func:`~attn_helpers.model_size.parameter_count` reads it."""
    row = PUBLISHED_CONFIGS[name]
    return {key: row[key] for key in ("num_layers", "d_model", "num_heads", "vocab_size", "context_length", "d_ff")
            } | _GPT2_DESIGN


#: The configuration of GPT-2 small (Radford et al., 2019; Hugging Face ``gpt2``), for
#: :func:`~attn_helpers.model_size.parameter_count`: pre-norm, biases, tied embeddings.
GPT2_SMALL = _gpt2("GPT-2 small")


def dog_bites_man(dtype=np.float32, seed=SEED):
    """GloVe vectors of "dog bites man" and seeded projections (notebook 09).

    ``X`` holds the real 50-dimensional GloVe vectors of the three words (:mod:`attn_helpers.glove`,
    no download). ``W_q``, ``W_k``, ``W_v`` (50, 50) are drawn from ``np.random.default_rng(seed)``
    in that order, each standard normal divided by ``sqrt(50)``: untrained, so the attention
    pattern means nothing about language; what matters is what it does with word order.

    Returns ``example``: ``tokens``, ``X`` (3, 50), ``W_q``, ``W_k``, ``W_v`` (50, 50).

    >>> ex = dog_bites_man()
    >>> ex["tokens"], ex["X"].shape, ex["W_q"].shape, ex["X"].dtype
    (('dog', 'bites', 'man'), (3, 50), (50, 50), dtype('float32'))
    """
    from .glove import load_glove, word_to_index

    _, vectors = load_glove()
    index = word_to_index()
    X = np.array([vectors[index[word]] for word in DOG_BITES_MAN_TOKENS], dtype=dtype)  # (T, 50)
    d_model = X.shape[1]
    rng = np.random.default_rng(seed)
    W_q, W_k, W_v = ((rng.standard_normal((d_model, d_model)) / np.sqrt(d_model)).astype(dtype) for _ in range(3))
    return {"tokens": DOG_BITES_MAN_TOKENS, "X": X, "W_q": W_q, "W_k": W_k, "W_v": W_v}


def reorder_outputs(order, with_positions=False, example=None):
    """Self-attention on "dog bites man" in another word order: the outputs, and how much each word's changed.

    The sentence's words are put in ``order`` (``(2, 1, 0)`` is "man bites dog"); with ``with_positions``
    the sinusoidal encoding of the NEW positions is added to the embeddings before the projections.

    Returns ``result``: ``tokens`` (the words in the new order), ``context`` (T, d_model) (one row per word, in the new
    order) and ``change`` (T,): for each word of the ORIGINAL sentence, the distance between its context vector in the
    new order and in "dog bites man" (:func:`~attn_helpers.positions.order_sensitivity`).

    >>> result = reorder_outputs((2, 1, 0))
    >>> result["tokens"], result["change"].round(4)
    (('man', 'bites', 'dog'), array([0., 0., 0.], dtype=float32))
    >>> reorder_outputs((2, 1, 0), with_positions=True)["change"].round(2)
    array([0.33, 0.2 , 0.34], dtype=float32)
    """
    from .core import scaled_dot_product_attention
    from .positions import order_sensitivity, positional_encoding

    example = dog_bites_man() if example is None else example
    W_q, W_k, W_v = example["W_q"], example["W_k"], example["W_v"]

    def attend(X):
        if with_positions:
            X = X + positional_encoding(len(X), X.shape[-1], dtype=X.dtype)  # (T, d_model) + (T, d_model)
        context, _ = scaled_dot_product_attention(X @ W_q, X @ W_k, X @ W_v)  # (T, d_model) @ (d_model, d_model)
        return context

    order = tuple(int(i) for i in order)
    X = example["X"]
    return {"tokens": tuple(example["tokens"][i] for i in order), "context": attend(X[list(order)]),
            "change": order_sensitivity(attend, X, order)}


#: GPT-2's four sizes (Radford et al., 2019): one recipe, deeper and wider. ``d_ff = 4 d_model``.
GPT2_FAMILY = {"small": GPT2_SMALL, **{size.lower(): _gpt2(f"GPT-2 {size}") for size in ("medium", "large", "XL")}}


def creature_block_example(num_blocks=12, d_model=16, num_heads=4):
    """The creature sentence's tokens and ``num_blocks`` random (untrained) transformer blocks (notebook 10).

    ``X``: ``rng = np.random.default_rng(SEED)``, made-up embeddings
    ``rng.standard_normal((8, d_model))`` in float32, plus the sinusoidal positional encoding.
    Block ``n`` is ``init_block_params(d_model, num_heads, rng=np.random.default_rng([SEED, n]))``:
    its own random stream, so block 0 is the same whatever ``num_blocks`` is.

    Returns ``example``: ``tokens``, ``X`` (8, d_model) and ``blocks`` (a list of ``BlockParams``).

    >>> example = creature_block_example(num_blocks=2)
    >>> example["X"].shape, len(example["blocks"]), example["blocks"][0].d_ff
    ((8, 16), 2, 64)
    """
    rng = np.random.default_rng(SEED)
    embeddings = rng.standard_normal((len(CREATURE_TOKENS), d_model)).astype(np.float32)
    X = embeddings + positional_encoding(len(CREATURE_TOKENS), d_model)  # (T, d_model)
    blocks = [init_block_params(d_model, num_heads, rng=np.random.default_rng([SEED, n])) for n in range(num_blocks)]
    return {"tokens": CREATURE_TOKENS, "X": X, "blocks": blocks}


def stack_diagnostics(x, blocks, norm_first=True, residual=True, mask=None):
    """What happens to the residual stream, block after block.

    ``x (T, d_model)``; ``norm_first, residual, mask``: as in :func:`~attn_helpers.block.transformer_block`. Returns
    ``diagnostics``: ``states`` (N + 1, T, d_model): the stream before and after each block; ``norm`` (N + 1,): the
    mean length of a token's vector; ``own_input`` (N + 1,): the mean cosine similarity of each token's vector with its
    own input vector (1 before the first block: how much of the token is still there); ``similarity`` (N + 1, T, T):
    the cosine similarity of every pair of tokens; ``between_tokens`` (N + 1,): its mean over pairs of different tokens
    (1 = all tokens alike).

    >>> example = creature_block_example(num_blocks=3)
    >>> d = stack_diagnostics(example["X"], example["blocks"])
    >>> d["norm"].shape, float(d["own_input"][0]), d["similarity"].shape
    ((4,), 1.0, (4, 8, 8))
    """
    states = residual_stream(x, blocks, mask, norm_first, residual=residual)  # (N + 1, T, d_model)
    similarity = cosine_similarity(states[:, :, None, :], states[:, None, :, :])  # (N + 1, T, T)
    T = states.shape[1]
    off_diagonal = ~np.eye(T, dtype=bool)
    return {
        "states": states,
        "norm": np.linalg.norm(states, axis=-1).mean(axis=-1),  # (N + 1, T) -> (N + 1,)
        "own_input": cosine_similarity(states, states[0]).mean(axis=-1),  # (N + 1, T) -> (N + 1,)
        "similarity": similarity,
        "between_tokens": similarity[:, off_diagonal].mean(axis=-1) if T > 1 else np.ones(len(states)),
    }


def parameter_shares(configs=None):
    """The share of each part in each model's total, from :func:`~attn_helpers.model_size.parameter_count`.

    Returns ``shares``: the parts ``token_embeddings`` (with token-type tables and an untied output head, if any),
    ``position_embeddings``, ``attention``, ``feed_forward`` and ``layer_norms`` (with the final and the embedding
    layer norms); each model's shares add up to 1.

    >>> shares = parameter_shares()
    >>> round(shares["small"]["feed_forward"], 3), round(sum(shares["xl"].values()), 12)
    (0.455, 1.0)
    """
    configs = GPT2_FAMILY if configs is None else configs
    shares = {}
    for name, config in configs.items():
        counts = parameter_count(config)
        parts = {part: counts[part] for part in ("token_embeddings", "position_embeddings", "attention",
                                                 "feed_forward", "layer_norms")}
        parts["layer_norms"] += counts["final_norm"] + counts["embedding_norm"]
        parts["token_embeddings"] += counts["token_type_embeddings"] + counts["output_head"]
        shares[name] = {part: value / counts["total"] for part, value in parts.items()}
    return shares


#: A source sentence (French) and the target sentence (English) for cross-attention; ``<s>`` starts the target.
TRANSLATION_SOURCE = ("le", "chat", "noir", "dort")
TRANSLATION_TARGET = ("<s>", "the", "black", "cat", "sleeps")


def translation_example(d_model=16, seed=SEED):
    """Made-up embeddings in which a word and its translation share a meaning vector.

    Each of the four meanings (le/the, chat/cat, noir/black, dort/sleeps) is a random vector;
    a word's embedding is its meaning plus a little noise of its own (std 0.3); ``<s>`` is
    noise only. French puts the adjective after the noun ("chat noir") and English before it
    ("black cat"), so the alignment crosses.

    Returns ``example``: ``source`` (4, d_model), ``target`` (5, d_model), ``source_tokens``, ``target_tokens`` and
    ``alignment``: for each target token, the index of its source word (``-1`` for ``<s>``).

    >>> example = translation_example()
    >>> example["target"].shape, example["source"].shape, example["alignment"]
    ((5, 16), (4, 16), (-1, 0, 2, 1, 3))
    """
    rng = np.random.default_rng(seed)
    meanings = rng.standard_normal((len(TRANSLATION_SOURCE), d_model))  # (4, d_model): le, chat, noir, dort
    alignment = (-1, 0, 2, 1, 3)  # <s> -, the -> le, black -> noir, cat -> chat, sleeps -> dort
    source = meanings + 0.3 * rng.standard_normal(meanings.shape)
    target = np.stack([meanings[j] if j >= 0 else np.zeros(d_model) for j in alignment])
    target = target + 0.3 * rng.standard_normal(target.shape)
    return {"source": source.astype(np.float32), "target": target.astype(np.float32),
            "source_tokens": TRANSLATION_SOURCE, "target_tokens": TRANSLATION_TARGET, "alignment": alignment}
