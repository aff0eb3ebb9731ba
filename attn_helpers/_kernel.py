"""The fast inner loops behind ``softmax`` and ``scaled_dot_product_attention``.

Inputs here are already validated, floating, and of one dtype. The attention kernel
works on blocks of query rows: each block of scores is computed, masked,
soft-maxed and multiplied by the values while it is still in the CPU cache, and
every step writes in place into the output arrays (no T x T temporaries).

Speed notes (measured with ``benchmarks/bench_attention.py``; see its README):

- The scale multiplies the queries once, ``(N, T_q, d_k)``, not the scores.
- Blocks hold about ``_BLOCK_BYTES`` of scores (4 MB: one head at T = 1024, 256
  query rows at T = 4096). Smaller blocks stay in L2 but make the BLAS slower
  (1 MB blocks: T = 4096 took 1.1 s of CPU instead of 0.84 s); 4 MB stays in L3.
  Small problems group several heads into one block so that tiny shapes do not
  pay Python overhead per head.
- The max is skipped when it is provably unnecessary. The row max is subtracted
  only so that ``exp`` cannot overflow (and the largest weight cannot underflow).
  Cauchy-Schwarz bounds every score of query row ``i`` by
  ``|scale| |q_i| max_j |k_j|``. When that bound is at most ``_SAFE_EXPONENT``
  for every row of a block, every ``exp(score)`` lies in ``[e^-60, e^60]``: no
  overflow, no underflow, not even subnormal numbers, so ``exp(s) / sum(exp(s))``
  is the same softmax, as accurate (the relative error of ``exp`` does not depend
  on the shift), without two of the five passes over the block (the max and the
  subtraction). On CPUs where numpy vectorizes ``exp2`` (AVX512_SKX: about 0.6 ns
  per number, ``exp`` about 1.1 ns) such blocks use it on scores computed in base 2
  (the queries are scaled by ``scale * log2(e)``); ``exp2`` is slow for results
  below 2**-126, which these bounded scores never reach. Elsewhere ``exp2`` is the
  slower one (AVX2 only: 2.5 ns against 1.3 ns) and they use ``exp`` (see
  ``_FAST_EXP2``). Blocks whose bound is larger, and all float64 input beyond 1e50,
  use the textbook max-subtracted softmax with ``exp``.
- Worker threads (``_THREADS``, the calling thread included) share the blocks of
  a large problem; numpy's ufuncs and matrix products release the GIL. Each worker
  runs whole blocks, so the BLAS is held to one thread meanwhile (see
  :func:`_one_blas_thread`): with both kinds of threads on 2 cores, one call took
  3-4x longer on a busy machine.
- Row sums are a matrix-vector product with a column of ones: the BLAS reads a
  block about 4x faster than ``np.sum`` (0.1 against 0.45 ns per number here).
- Fully masked rows: their scores are all ``-inf`` (or, in a bounded block, their
  exponentials are all zeroed), the row sum is 0 and is replaced by 1, so the row
  of weights and of context is exactly 0 without any invalid operation.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np

# Bytes of one block of scores (see the speed notes above).
_BLOCK_BYTES = 1 << 22
# |score| <= this for a whole block -> exp(score) needs no shift (e^60 ~ 1e26; float32 overflows at ~3e38).
_SAFE_EXPONENT = 60.0
_LOG2_E = float(np.log2(np.e))


def _numpy_has_simd_exp2() -> bool:
    """Whether numpy's float32 ``exp2`` is vectorized on this CPU (its AVX512_SKX loops).

    Without them ``exp2`` is a scalar loop, about twice as slow as the vectorized
    ``exp`` (measured 2.5 against 1.3 ns per number on an AVX2-only AMD EPYC).
    """
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as features
    except ImportError:  # numpy 1.x
        try:
            from numpy.core._multiarray_umath import __cpu_features__ as features
        except ImportError:
            return False
    return bool(features.get("AVX512_SKX", False))


#: Bounded blocks use exp2 on base-2 scores where that is the faster function.
_FAST_EXP2 = _numpy_has_simd_exp2()
# Worker threads for large problems, and the number of scores below which one thread is faster.
_THREADS = max(1, min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)))
_PARALLEL_MIN_SCORES = 1 << 20

_pool = None
_pool_lock = threading.Lock()


def _get_pool():
    """The worker threads (``_THREADS - 1`` of them: the calling thread is a worker too)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=max(1, _THREADS - 1), thread_name_prefix="attn_helpers")
        return _pool


def _after_fork_in_child():
    # A forked child has none of the parent's threads: start a fresh pool when needed.
    global _pool, _pool_lock, _blas_lock, _blas_users
    _pool, _pool_lock, _blas_lock, _blas_users = None, threading.Lock(), threading.Lock(), 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _find_openblas_threads():
    """``(get_num_threads, set_num_threads)`` of the OpenBLAS bundled with numpy's wheels, or None.

    numpy offers no way to limit its BLAS threads; the wheels bundle OpenBLAS, whose
    C functions ``ctypes`` can call (what ``threadpoolctl`` does, without the dependency).
    Any other BLAS (MKL, Accelerate, a system OpenBLAS) gives None.
    """
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
    except Exception:  # an old or unusual numpy build: leave its BLAS alone
        return None
    if "openblas" not in str(blas.get("name", "")).lower():
        return None
    import ctypes
    import glob

    here = os.path.dirname(np.__file__)
    for path in glob.glob(os.path.join(here + ".libs", "*openblas*")) + glob.glob(
        os.path.join(here, ".dylibs", "*openblas*")
    ):
        try:
            lib = ctypes.CDLL(path)  # already loaded by numpy: the same library, not a second copy
        except OSError:
            continue
        for prefix, suffix in (
            ("scipy_openblas", "64_"),
            ("scipy_openblas", ""),
            ("openblas", "64_"),
            ("openblas", ""),
        ):
            get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
            set_ = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
            if get is not None and set_ is not None:
                get.argtypes, get.restype = [], ctypes.c_int
                set_.argtypes, set_.restype = [ctypes.c_int], None
                return get, set_
    return None


_openblas = None  # (get, set) once looked up; False when there is none
_blas_lock = threading.Lock()
_blas_users = 0
_blas_saved_threads = 1


def _one_blas_thread():
    """Limit the BLAS to one thread while our own workers run; return False if we cannot.

    Our workers each run whole blocks (matrix products and softmax) in parallel, so
    the BLAS must not start threads of its own: 2 workers x 2 BLAS threads on 2 cores
    made one call 3-4x slower when the machine was busy. The setting is process-wide,
    so it is counted: the first caller saves it and the last one restores it.
    """
    global _openblas, _blas_users, _blas_saved_threads
    with _blas_lock:
        if _openblas is None:
            _openblas = _find_openblas_threads() or False
        if not _openblas:
            return False
        get, set_ = _openblas
        if _blas_users == 0:
            _blas_saved_threads = get()
            set_(1)
        _blas_users += 1
        return True


def _restore_blas_threads():
    global _blas_users
    with _blas_lock:
        _blas_users -= 1
        if _blas_users == 0:
            _openblas[1](_blas_saved_threads)


def softmax_rows_(x: np.ndarray) -> np.ndarray:
    """Softmax over the last axis of ``x``, in place; rows that are all ``-inf`` become 0.

    ``x`` : ndarray, shape (..., n), floating, no NaN, no ``+inf``.
    """
    row_max = x.max(axis=-1, keepdims=True)  # (..., 1)
    # A row that is all -inf (every key masked) has max -inf; shifting by 0 instead
    # keeps it at -inf, so exp gives 0 and the row sums to 0 (handled below).
    np.copyto(row_max, 0, where=row_max == -np.inf)
    np.subtract(x, row_max, out=x)
    np.exp(x, out=x)
    total = x.sum(axis=-1, keepdims=True)  # (..., 1)
    np.copyto(total, 1, where=total == 0)
    np.divide(x, total, out=x)
    return x


def _score_bounds(queries, keys, scale):
    """Upper bound on ``|score|`` for every query row: ``|scale| * |q_i| * max_j |k_j|``, shape (N, T_q).

    Computed in float64, so nothing can overflow for float32 input (at most 3.4e38);
    float64 input or a scale beyond 1e50 simply gets an infinite bound (the
    max-subtracted path).
    """
    n, t_q = queries.shape[:2]
    big = float(max(np.abs(queries).max(initial=0), np.abs(keys).max(initial=0), abs(scale)))
    if not big < 1e50:
        return np.full((n, t_q), np.inf)
    query_norms = np.sqrt(np.einsum("nqd,nqd->nq", queries, queries, dtype=np.float64))  # (N, T_q)
    key_norms = np.sqrt(np.einsum("nkd,nkd->nk", keys, keys, dtype=np.float64))  # (N, T_k)
    return abs(float(scale)) * query_norms * key_norms.max(axis=1, keepdims=True)  # (N, T_q) * (N, 1) -> (N, T_q)


def matmul_rows_(a, b, out):
    """``np.matmul(a, b, out=out)`` for a large ``a`` of shape (M, K), its rows shared by our workers.

    Each worker multiplies a slab of rows with a one-threaded BLAS. Falls back to one
    plain ``np.matmul`` (whose BLAS may use its own threads) for small products or when
    the BLAS threads cannot be limited.
    """
    m = a.shape[0]
    workers = min(_THREADS, m // 64)
    if workers < 2 or a.size * b.shape[-1] < _PARALLEL_MIN_SCORES * 64 or not _one_blas_thread():
        return np.matmul(a, b, out=out)
    try:
        cuts = [m * i // workers for i in range(workers + 1)]
        futures = [
            _get_pool().submit(np.matmul, a[lo:hi], b, out=out[lo:hi])
            for lo, hi in zip(cuts[1:-1], cuts[2:], strict=True)
        ]
        try:
            np.matmul(a[: cuts[1]], b, out=out[: cuts[1]])  # (m / workers, K) @ (K, n) -> (m / workers, n)
        finally:
            for future in futures:
                future.result()
    finally:
        _restore_blas_threads()
    return out


def _block_layout(n, t_q, t_k, itemsize):
    """(heads, rows) per block so that one block of scores is about ``_BLOCK_BYTES``."""
    row_bytes = max(1, t_k * itemsize)
    if t_q * row_bytes <= _BLOCK_BYTES:  # whole heads fit: group several heads per block
        return min(n, max(1, _BLOCK_BYTES // (t_q * row_bytes))), t_q
    return 1, min(t_q, max(8, _BLOCK_BYTES // row_bytes))


def attention_(queries, keys, values, mask, scale, context, weights) -> None:
    """Scaled dot-product attention into preallocated ``context`` and ``weights``.

    queries : (N, T_q, d_k)  keys : (N, T_k, d_k)  values : (N, T_k, d_v)
    mask : None or bool broadcastable to (N, T_q, T_k)
    context : (N, T_q, d_v) output  weights : (N, T_q, T_k) output
    """
    n, t_q, _ = queries.shape
    t_k = keys.shape[1]
    dtype = weights.dtype
    heads, rows = _block_layout(n, t_q, t_k, dtype.itemsize)
    keys_t = np.swapaxes(keys, -1, -2)  # (N, d_k, T_k), a view
    if mask is not None:
        mask = np.broadcast_to(mask, (n, t_q, t_k))
    blocks = [
        (first, min(first + heads, n), start, min(start + rows, t_q))
        for first in range(0, n, heads)
        for start in range(0, t_q, rows)
    ]
    # Which blocks may skip the max shift (see the module docstring), and the queries
    # each path needs, scaled once, (N, T_q, d_k), rather than T_q x T_k scores:
    # - bounded blocks use exp2 on scores in base 2 (scale * log2(e)) where exp2 is
    #   the faster (_FAST_EXP2), else exp on the scores, both without the shift;
    # - the others the textbook exp(score - row max).
    bounds = _score_bounds(queries, keys, scale)  # (N, T_q)
    bounded = [bool(bounds[first:last, start:stop].max() <= _SAFE_EXPONENT) for first, last, start, stop in blocks]
    use_exp2 = _FAST_EXP2
    queries_base2 = None
    if use_exp2 and any(bounded):
        queries_base2 = np.multiply(queries, np.asarray(scale * _LOG2_E, dtype=dtype))
    queries_scaled = None if use_exp2 and all(bounded) else np.multiply(queries, np.asarray(scale, dtype=dtype))
    bounded_exp, bounded_queries = (np.exp2, queries_base2) if use_exp2 else (np.exp, queries_scaled)
    blocks = [block + (is_bounded,) for block, is_bounded in zip(blocks, bounded, strict=True)]

    ones = np.ones((t_k, 1), dtype=dtype)  # (T_k, 1): the row sums as a matrix product
    next_lock = threading.Lock()  # the workers share iter_blocks: whoever is free takes the next block

    def run():
        # Scratch buffers, one set per worker: the row max (or sum) and the inverted mask.
        row_buf = np.empty((heads, rows, 1), dtype=dtype)
        masked_buf = None if mask is None else np.empty((heads, rows, t_k), dtype=bool)
        while True:
            with next_lock:
                first, last, start, stop, is_bounded = next(iter_blocks, (None,) * 5)
            if first is None:
                return
            g, r = last - first, stop - start
            block = weights[first:last, start:stop]  # (g, r, T_k) view into the output
            row = row_buf[:g, :r]
            if mask is not None:
                masked = masked_buf[:g, :r]
                np.logical_not(mask[first:last, start:stop], out=masked)
            if is_bounded:
                # |score| <= 60: exp cannot overflow or underflow, no shift needed.
                # With exp2, e^score = 2^(score * log2 e). The masked scores are zeroed
                # after the exp, never -inf before it (exp2(-inf) takes a slow path).
                q = bounded_queries[first:last, start:stop]
                np.matmul(q, keys_t[first:last], out=block)  # (g, r, d_k) @ (g, d_k, T_k) -> (g, r, T_k)
                bounded_exp(block, out=block)
                if mask is not None:
                    np.copyto(block, 0, where=masked)
            else:
                # The textbook stable softmax: -inf where masked, shift by the row max
                # (by 0 for a fully masked row, which stays -inf and gives exp = 0).
                q = queries_scaled[first:last, start:stop]
                np.matmul(q, keys_t[first:last], out=block)  # (g, r, d_k) @ (g, d_k, T_k) -> (g, r, T_k)
                if mask is not None:
                    np.copyto(block, -np.inf, where=masked)
                np.max(block, axis=-1, keepdims=True, out=row)
                if mask is not None:
                    np.copyto(row, 0, where=row == -np.inf)
                np.subtract(block, row, out=block)
                np.exp(block, out=block)
            # Row sums as a matrix-vector product with ones: the BLAS reads the block
            # about 4x faster than np.sum's pairwise loop (0.1 vs 0.45 ns per number).
            np.matmul(block, ones, out=row)  # (g, r, T_k) @ (T_k, 1) -> (g, r, 1)
            if mask is not None:
                np.copyto(row, 1, where=row == 0)  # fully masked row: 0 / 1 = 0, not 0 / 0
            np.reciprocal(row, out=row)
            np.multiply(block, row, out=block)  # each row now sums to 1: the weights
            out = context[first:last, start:stop]
            np.matmul(block, values[first:last], out=out)  # (g, r, T_k) @ (g, T_k, d_v) -> (g, r, d_v)

    iter_blocks = iter(blocks)
    workers = min(_THREADS, len(blocks))
    if workers < 2 or n * t_q * t_k < _PARALLEL_MIN_SCORES or not _one_blas_thread():
        run()  # one thread here; the BLAS may still use its own threads for the matrix products
        return
    try:
        futures = [_get_pool().submit(run) for _ in range(workers - 1)]
        try:
            run()  # this thread is a worker too
        finally:
            for future in futures:
                future.result()
    finally:
        _restore_blas_threads()
