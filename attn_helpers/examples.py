"""The running examples that the notebooks share (numpy only).

Every notebook builds its tiny examples from here, so a number printed in one
notebook means the same thing in the next.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "SEED",
    "JOURNEY_TOKENS",
    "journey_embeddings",
    "I_LOVE_AI_TOKENS",
    "i_love_ai",
    "CREATURE_TOKENS",
    "DOG_BITES_MAN_TOKENS",
    "dog_bites_man",
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

#: The eight-token sentence of notebook 07.
CREATURE_TOKENS = ("a", "fluffy", "blue", "creature", "roamed", "the", "verdant", "forest")

#: The three-token sentence of notebook 09 (word order): "man bites dog" is the same set of words.
DOG_BITES_MAN_TOKENS = ("dog", "bites", "man")


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


def dog_bites_man(dtype=np.float32, seed=SEED):
    """GloVe vectors of "dog bites man" and seeded projections (notebook 09).

    ``X`` holds the real 50-dimensional GloVe vectors of the three words (:mod:`attn_helpers.glove`,
    no download). ``W_q``, ``W_k``, ``W_v`` (50, 50) are drawn from ``np.random.default_rng(seed)``
    in that order, each standard normal divided by ``sqrt(50)``: untrained, so the attention
    pattern means nothing about language; what matters is what it does with word order.

    Returns
    -------
    example : dict
        ``tokens``, ``X`` (3, 50), ``W_q``, ``W_k``, ``W_v`` (50, 50).

    Examples
    --------
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


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)
