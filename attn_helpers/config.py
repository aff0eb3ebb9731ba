"""Settings every notebook and module shares: the random seed and the print options.

A leaf module (it imports numpy only), so that any module may import it without a cycle.
"""

import numpy as np

__all__ = ["SEED", "PRINT_OPTIONS", "setup_printing"]

#: The seed every notebook passes to ``np.random.default_rng``.
SEED = 2017  # the year of "Attention Is All You Need"

#: ``np.set_printoptions`` used by every notebook: 4 decimals, no scientific notation.
PRINT_OPTIONS = {"precision": 4, "suppress": True, "floatmode": "fixed", "linewidth": 100}


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)
