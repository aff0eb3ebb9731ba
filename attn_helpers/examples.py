"""The running examples that the notebooks share (numpy only).

Every notebook builds its tiny examples from here, so a number printed in one
notebook means the same thing in the next.
"""

from __future__ import annotations

import math

import numpy as np

from .core import causal_mask, padding_mask, softmax

__all__ = [
    "SEED",
    "JOURNEY_TOKENS",
    "journey_embeddings",
    "I_LOVE_AI_TOKENS",
    "i_love_ai",
    "qkv_attention_steps",
    "CREATURE_TOKENS",
    "CREATURE_FEATURES",
    "CREATURE_QUESTIONS",
    "creature_embeddings",
    "creature_example",
    "creature_heads_example",
    "combined_mask",
    "PRINT_OPTIONS",
    "setup_printing",
]

#: The seed every notebook passes to ``np.random.default_rng``.
SEED = 2017  # the year of "Attention Is All You Need"

#: ``np.set_printoptions`` used by every notebook: 4 decimals, no scientific notation.
PRINT_OPTIONS = {"precision": 4, "suppress": True, "floatmode": "fixed", "linewidth": 100}

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

    Examples
    --------
    >>> X = journey_embeddings()
    >>> X.shape, X.dtype
    ((6, 3), dtype('float32'))
    >>> X[1].tolist() == np.array([0.55, 0.87, 0.66], dtype=np.float32).tolist()
    True
    """
    return np.array(_JOURNEY, dtype=dtype)


def i_love_ai(dtype=np.float32):
    """Embeddings and projection matrices of the "I love AI" example (notebook 05).

    Returns
    -------
    example : dict
        ``X`` (3, 2) and ``W_q``, ``W_k``, ``W_v`` (2, 2), as in the hand-worked example.

    Examples
    --------
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

    Examples
    --------
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

    Examples
    --------
    >>> X = creature_embeddings()
    >>> X.shape, X.dtype
    ((8, 8), dtype('float32'))
    >>> [CREATURE_FEATURES[f] for f in np.flatnonzero(X[CREATURE_TOKENS.index("blue")])]
    ['adjective', 'about the creature', 'colour']
    """
    return np.array(_CREATURE, dtype=dtype)


def creature_example(dtype=np.float32):
    """The creature sentence with hand-designed projections: attention that means something (notebook 05).

    Queries and keys have ``d_k = 4`` columns, one per question of :data:`CREATURE_QUESTIONS`:

    - a **noun** looks for an adjective (query column 0 = 4), an **adjective** for a noun
      (column 1 = 4); keys answer "is an adjective" (key column 0 = 1) and "is a noun" (column 1 = 1);
    - column 2 matches the thing a word is about: +4 / +1 for "about the creature", -4 / -1 for
      "about the forest", so the creature's query prefers the creature's adjectives;
    - a **verb** looks for who acts (query column 3 = 4), but no key answers yet: column 3 of
      ``W_k`` is zero (notebook 05's design exercise fills it in);
    - articles have a zero query: every score 0, uniform weights, they look at nothing in particular.

    ``W_v`` is the identity, so a context vector is a weighted average of the embeddings and its
    features can be read by name.

    Returns
    -------
    example : dict
        ``X`` (8, 8), ``W_q`` (8, 4), ``W_k`` (8, 4), ``W_v`` (8, 8).

    Examples
    --------
    >>> ex = creature_example()
    >>> steps = qkv_attention_steps(ex["X"], ex["W_q"], ex["W_k"], ex["W_v"])
    >>> creature = CREATURE_TOKENS.index("creature")
    >>> [CREATURE_TOKENS[j] for j in np.argsort(steps["weights"][creature])[::-1][:2]]
    ['fluffy', 'blue']
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

    ``X`` is :func:`creature_embeddings`. Columns 0-3 of ``W_q`` and ``W_k`` are the hand-designed
    ones of :func:`creature_example` (with ``h = 2`` they are head 0); columns 4-7, all of ``W_v`` and
    ``W_o`` are random and untrained: drawn from a fresh ``np.random.default_rng(seed)``, normal with
    standard deviation ``weight_std``, in the order ``W_q``, ``W_k`` (columns 4-7), ``W_v``, ``W_o``.

    Returns
    -------
    example : dict
        ``X`` (8, 8) and ``W_q``, ``W_k``, ``W_v``, ``W_o`` (8, 8).

    Examples
    --------
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

    Examples
    --------
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


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)
