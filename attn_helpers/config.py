"""Settings every notebook and module shares: the random seed, the print options, the constants of the models'
training, and :func:`one_core` (numpy's matrix products on one core, for a while).

A leaf module (it imports numpy, and threadpoolctl when asked for one core), so that any module may import it
without a cycle.
"""

import contextlib
import functools

import numpy as np

__all__ = ["SEED", "PRINT_OPTIONS", "setup_printing", "CONTEXT_LENGTH", "GPT_ADAM_BETAS",
           "FINAL_RATE", "one_core"]

#: The seed every notebook passes to ``np.random.default_rng``.
SEED = 2017  # the year of "Attention Is All You Need"

#: ``np.set_printoptions`` used by every notebook: 4 decimals, no scientific notation.
PRINT_OPTIONS = {"precision": 4, "suppress": True, "floatmode": "fixed", "linewidth": 100}


def setup_printing():
    """Apply :data:`PRINT_OPTIONS` (call it in a notebook's first cell)."""
    np.set_printoptions(**PRINT_OPTIONS)


#: The tiny GPT's window (notebooks 13 and 14): the most tokens it reads at once.
CONTEXT_LENGTH = 64

#: The tiny GPT's Adam decay rates ``(beta1, beta2)``: its longer training on noisier batches averages the squared
#: gradients over more steps than ``adam_step``'s defaults (0.9, 0.98), which notebook 11's model uses.
GPT_ADAM_BETAS = (0.9, 0.99)

#: Where the tiny GPT's cosine schedule ends: this fraction of the peak learning rate.
FINAL_RATE = 0.1


@functools.lru_cache(maxsize=1)
def _blas_libraries():
    from threadpoolctl import ThreadpoolController  # found once: looking the libraries up takes about a millisecond

    return ThreadpoolController()


@contextlib.contextmanager
def one_core():
    """``with one_core():`` (or ``@one_core()`` on a function): numpy's matrix products run on one BLAS thread,
    and the caller's setting comes back after. Small products on a shared machine run faster so, and a seeded
    run adds its sums in the same order every time.
    """
    libraries = _blas_libraries()
    if all(library.num_threads == 1 for library in libraries.lib_controllers if library.user_api == "blas"):
        yield  # already one thread: nothing to change (and nothing to restore)
        return
    with libraries.limit(limits=1, user_api="blas"):
        yield
