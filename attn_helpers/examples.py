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
    "reorder_outputs",
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


def reorder_outputs(order, with_positions=False, example=None):
    """Self-attention on "dog bites man" in another word order: the outputs, and how much each word's changed.

    The sentence's words are put in ``order`` (``(2, 1, 0)`` is "man bites dog"); with ``with_positions``
    the sinusoidal encoding of the NEW positions is added to the embeddings before the projections.

    Returns
    -------
    result : dict
        ``tokens`` (the words in the new order), ``context`` (T, d_model) (one row per word, in the new
        order) and ``change`` (T,): for each word of the ORIGINAL sentence, the distance between its
        context vector in the new order and in "dog bites man" (:func:`~attn_helpers.positions.order_sensitivity`).

    Examples
    --------
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


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)
