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
    "GPT2_SMALL",
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

#: The configuration of GPT-2 small (Radford et al., 2019; Hugging Face ``gpt2``), for
#: :func:`~attn_helpers.block.parameter_count`: pre-norm, biases, tied embeddings.
GPT2_SMALL = {
    "num_layers": 12,
    "d_model": 768,
    "num_heads": 12,
    "vocab_size": 50257,
    "context_length": 1024,
    "d_ff": 3072,
    "bias": True,
    "tied_embeddings": True,
    "learned_positions": True,
    "final_norm": True,
}


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


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)
