"""Notebook 13: tiled attention (FlashAttention's idea, Dao et al. 2022: memory O(T d), not O(T²); written in
:mod:`~attn_helpers.online`, beside the online softmax it runs) and the tools that measure what attention costs.
In numpy it saves memory and skips masked tiles; its time is close to the core's.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from .config import one_core  # noqa: F401 - notebook 13 imports it from here
from .online import tiled_attention  # noqa: F401 - notebook 13 imports it from here: the lesson of this module

__all__ = ["tiled_attention", "tile_count", "best_time", "peak_memory", "attention_cost", "fitted_slope", "one_core"]


def best_time(fn, *args, budget=0.1, least=5):
    """The least processor time (s) of ``least`` calls ``fn(*args)``, more while they take under ``budget`` s."""
    times, stop = [], time.perf_counter() + budget
    while len(times) < least or time.perf_counter() < stop:
        start = time.process_time()
        fn(*args)
        times.append(time.process_time() - start)
    return min(times)


def peak_memory(fn, *args):
    """The peak bytes numpy allocates during one call ``fn(*args)`` (``tracemalloc``; no timing meanwhile)."""
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def attention_cost(fn, T_values, d_k=64, seed=0):
    """Seconds (:func:`best_time`) and peak bytes (:func:`peak_memory`) of ``fn(q, k, v)``, q, k, v seeded
    float32 ``(T, d_k)``, for each ``T``, on one core. The largest ``T`` runs once first, untimed (fresh memory)."""
    def inputs(T):  # q, k, v: (3, T, d_k), the same numbers for the same T
        return np.random.default_rng(seed).standard_normal((3, T, d_k), dtype=np.float32)

    seconds, peaks = [], []
    with one_core():
        fn(*inputs(max(T_values)))
        for T in T_values:
            seconds.append(best_time(fn, *inputs(T)))
            peaks.append(peak_memory(fn, *inputs(T)))
    return np.array(seconds), np.array(peaks)


def fitted_slope(x, y):
    """The exponent ``p`` of ``y ≈ c x^p``: the slope of the least-squares line through ``(log x, log y)``.

    >>> round(fitted_slope([1, 2, 4], [3, 12, 48]), 6)
    2.0
    """
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def tile_count(T, block_size):
    """How many tiles a T x T grid of scores has in tiles of ``block_size`` x ``block_size``.

    >>> tile_count(8, 3)   # 3 rows of tiles (3 + 3 + 2 positions), 3 columns
    9
    """
    return (-(-int(T) // int(block_size))) ** 2
