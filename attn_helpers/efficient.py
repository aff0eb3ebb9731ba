"""Fast attention, opt-in: the same results as the readable core, computed in blocks and threads.

``blocked_attention`` has the contract of :func:`attn_helpers.scaled_dot_product_attention`
(and is tested equal to it); the core never imports this module. Notebook 13 explains
the ideas. The attention kernel
works on blocks of query rows: each block of scores is computed, masked,
soft-maxed and multiplied by the values while it is still in the CPU cache, and
every step writes in place into the output arrays (no T x T temporaries).

Speed notes (measured with ``benchmarks/bench_attention.py``; see its README):

- The scale multiplies each block's queries, ``(g, r, d_k)``, not its scores, on the
  worker that runs the block (not one serial pass over all the queries first).
- The Cauchy-Schwarz bounds below are the only serial work before the workers start;
  their squared norms are summed in float32 (with a slack factor for its rounding),
  about 4x faster than in float64 (at T = 1024: 0.7 instead of 2.3 ms of a ~24 ms call).
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
- Worker threads (``_THREADS``, the calling thread included, never more than the
  caller allows the BLAS) share the blocks of a large problem; numpy's ufuncs and
  matrix products release the GIL. Each worker runs whole blocks, so the BLAS is held
  to one thread meanwhile (see :func:`_hold_blas_to_one_thread`): with both kinds of
  threads on 2 cores, one call took 3-4x longer on a busy machine.
- Row sums are a matrix-vector product with a column of ones: the BLAS reads a
  block about 4x faster than ``np.sum`` (0.1 against 0.45 ns per number here).
- Fully masked rows: their scores are all ``-inf`` (or, in a bounded block, their
  exponentials are all zeroed), the row sum is 0 and is replaced by 1, so the row
  of weights and of context is exactly 0 without any invalid operation.

Overflow: a float32 score can overflow (beyond 3.4e38) only when its bound says so;
such a call is computed in float64 and rounded back to float32 (weights in [0, 1]).
Float64 scores beyond 1.8e308 (entries near 1e154) raise a ``ValueError``, never NaN.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext

import numpy as np
import threadpoolctl
from threadpoolctl import ThreadpoolController

from ._validate import attention_inputs, batch_shape

__all__ = ["blocked_attention", "one_blas_thread"]

# Bytes of one block of scores (see the speed notes above).
_BLOCK_BYTES = 1 << 22
# |score| <= this for a whole block -> exp(score) needs no shift (e^60 ~ 1e26; float32 overflows at ~3e38).
_SAFE_EXPONENT = 60.0
_LOG2_E = float(np.log2(np.e))


def _numpy_has_simd_exp2() -> bool:
    """Whether numpy's float32 ``exp2`` is vectorized on this CPU (its AVX-512 loops).

    Without them ``exp2`` is a scalar loop, about twice as slow as the vectorized
    ``exp`` (measured 2.5 against 1.3 ns per number on an AVX2-only AMD EPYC). Read from
    numpy's public build report (``np.show_config(mode="dicts")``), whose "SIMD
    Extensions" name the CPU features numpy dispatches to: "AVX512_SKX" up to numpy 2.3,
    the group "X86_V4" from numpy 2.4. ``tests/test_efficient.py`` fails loudly if a numpy
    version stops reporting them.
    """
    simd = np.show_config(mode="dicts").get("SIMD Extensions", {})
    found = set(simd.get("baseline", ())) | set(simd.get("found", ()))
    return bool(found & {"AVX512_SKX", "X86_V4"})


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
    global _pool, _pool_lock, _blas_lock, _blas_users, _blas_limit
    _pool, _pool_lock, _blas_lock, _blas_users, _blas_limit = None, threading.Lock(), threading.Lock(), 0, None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


_blas = ThreadpoolController().select(user_api="blas")
_blas_lock = threading.Lock()
_blas_users = 0
_blas_limit = None  # the threadpoolctl limiter while a call runs, else None
_caller_threads = 1  # the BLAS threads the caller allowed, read when the first call began


def _hold_blas_to_one_thread() -> int:
    """Hold the BLAS to one thread for the duration of a call; return how many threads the caller allows.

    The caller's allowance is the BLAS's setting when the call begins: ``OMP_NUM_THREADS``,
    ``OPENBLAS_NUM_THREADS`` or an enclosing ``threadpoolctl.threadpool_limits(n)``; our own
    workers never outnumber it. Inside the call the BLAS runs on one thread: our workers run
    whole blocks in parallel (2 workers x 2 BLAS threads on 2 cores made one call 3-4x slower
    on a busy machine), and every product then sums in the same order whatever else runs, so
    the results do not depend on other threads. The setting is process-wide, so overlapping
    calls share one limit: the first saves the caller's setting, the last restores it
    (``threadpoolctl`` saves and restores). Undo with :func:`_release_blas`.
    """
    global _blas_users, _blas_limit, _caller_threads
    with _blas_lock:
        if _blas_users == 0:
            counts = [info["num_threads"] for info in _blas.info()]
            _caller_threads = min(counts) if counts else 1
            _blas_limit = _blas.limit(limits=1) if counts else None
        _blas_users += 1
        return _caller_threads


def _run_on_workers(run, tasks: int) -> None:
    """Call ``run()`` on up to ``tasks`` threads (this one included, never more than the caller
    lets the BLAS use), each with a one-threaded BLAS; wait for all of them."""
    with one_blas_thread() as allowed:
        workers = min(_THREADS, tasks, allowed)
        if workers < 2:
            run()
            return
        futures = [_get_pool().submit(run) for _ in range(workers - 1)]
        try:
            run()  # this thread is a worker too
        finally:
            for future in futures:
                future.result()


@contextmanager
def one_blas_thread():
    """Hold the BLAS to one thread inside a ``with`` block; give the number of threads the caller allowed.

    Scoped and counted (see :func:`_hold_blas_to_one_thread`): the caller's setting comes back
    when the last overlapping block ends. For many small matrix products (a small model's forward
    pass, say) on a busy machine, where BLAS threads mostly wait for each other.

    Examples
    --------
    >>> with one_blas_thread() as allowed:
    ...     allowed >= 1
    True
    """
    allowed = _hold_blas_to_one_thread()
    try:
        yield allowed
    finally:
        _release_blas()


def _release_blas() -> None:
    global _blas_users, _blas_limit
    with _blas_lock:
        _blas_users -= 1
        if _blas_users == 0 and _blas_limit is not None:
            _blas_limit.restore_original_limits()
            _blas_limit = None
            _hand_back_blas_control()


def _hand_back_blas_control() -> None:
    """Let the next call limit the BLAS from whichever thread it runs in.

    threadpoolctl 3.8 lets one thread only set the limit of an OpenBLAS whose thread pool is
    shared by the whole process: the first thread that sets it, until a ``with`` block of its
    ends. Our limit spans overlapping calls, not one ``with`` block, so it hands control back
    itself. Without this, once the main thread had run the model, a call from another thread
    (a Jupyter kernel runs widget callbacks in a thread of its own) silently kept every BLAS
    thread: twice the CPU for a forward pass of MiniLM, on a machine that has none to spare.
    """
    controller = getattr(threadpoolctl, "OpenBLASController", None)  # earlier versions have no owner to clear
    clear = getattr(controller, "clear_controlling_thread", None)
    if clear is not None:
        clear(force=True)


def _kernel_inputs(name, queries, keys, values, mask, scale):
    """The core's validation (:func:`~attn_helpers._validate.attention_inputs`) and the batch shape of all inputs."""
    q, k, v, mask, scale, dtype = attention_inputs(queries, keys, values, mask, scale)
    arrays = {"queries": q, "keys": k, "values": v}
    if mask is not None:
        arrays["mask"] = mask
    return q, k, v, mask, scale, dtype, batch_shape(name, **arrays)


def _max_abs(x) -> float:
    """``max |x|`` without a temporary array (two reductions instead of ``abs`` then ``max``)."""
    return float(max(x.max(initial=0), -x.min(initial=0)))


def _score_bounds(queries, keys, scale):
    """Upper bound on ``|score|`` for every query row: ``|scale| * |q_i| * max_j |k_j|``, shape (..., T_q).

    ``queries`` : (..., T_q, d_k), ``keys`` : (..., T_k, d_k), batch axes broadcast.

    The squared norms are summed in the inputs' own dtype when no square can come near
    overflowing it (entries below 1e15: float32 reaches 3.4e38), which is about 4x faster
    than summing float32 in float64; their rounding error, at most ``d_k`` units in the
    last place, is covered by a slack factor. Larger entries are summed in float64. Any
    entry or scale beyond 1e50 gets an infinite bound (the max-subtracted path).
    """
    t_q, d_k = queries.shape[-2:]
    big = max(_max_abs(queries), _max_abs(keys))
    if not (big < 1e50 and abs(scale) < 1e50):
        return np.full(np.broadcast_shapes(queries.shape[:-2], keys.shape[:-2]) + (t_q,), np.inf)
    sum_dtype = None if big < 1e15 else np.float64
    query_sq = np.einsum("...qd,...qd->...q", queries, queries, dtype=sum_dtype)  # (..., T_q)
    key_sq = np.einsum("...kd,...kd->...k", keys, keys, dtype=sum_dtype).max(axis=-1, keepdims=True,
                                                                            initial=0)  # (..., 1)
    slack = 1.0 + d_k * 2.0**-20  # >= 1 + d_k * eps of float32 (2**-23), with room to spare
    # (..., T_q) * (..., 1) -> (..., T_q), in float64: the product of two squares below 1e100 cannot overflow
    return abs(float(scale)) * np.sqrt(query_sq.astype(np.float64) * key_sq.astype(np.float64) * slack)


def _check_no_overflow(row_max, masked, scale):
    """Raise a clear ``ValueError`` if a row of scores overflowed (finite inputs, so only float64 can).

    ``row_max`` : (g, r, 1), the max of each row of scores after masking; ``masked`` :
    (g, r, T_k) bool or None. A row max of ``+inf`` or NaN (from ``inf - inf`` in the
    product) is an overflow; ``-inf`` is one too unless every key of that row is masked.
    """
    overflow = np.isnan(row_max) | (row_max == np.inf)
    if masked is None:
        overflow |= row_max == -np.inf
    else:
        overflow |= (row_max == -np.inf) & ~masked.all(axis=-1, keepdims=True)
    if overflow.any():
        raise ValueError(
            f"the scores overflow float64 (|score| beyond 1.8e308): scale={float(scale):g} times the "
            f"dot products of queries and keys is too large; rescale queries, keys or scale"
        )


def _block_layout(n, t_q, t_k, itemsize):
    """(heads, rows) per block so that one block of scores is about ``_BLOCK_BYTES``."""
    row_bytes = max(1, t_k * itemsize)
    if t_q * row_bytes <= _BLOCK_BYTES:  # whole heads fit: group several heads per block
        return min(n, max(1, _BLOCK_BYTES // (t_q * row_bytes))), t_q
    return 1, min(t_q, max(8, _BLOCK_BYTES // row_bytes))


def _attention_into(queries, keys, values, mask, scale, context, weights) -> None:
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
    # Which blocks may skip the max shift (see the module docstring). Each block scales
    # its own queries, (g, r, d_k), rather than its (g, r, T_k) scores: bounded blocks by
    # scale * log2(e), for exp2 on scores in base 2, where exp2 is the faster (_FAST_EXP2),
    # else by scale, for exp; both without the shift. The others take the textbook
    # exp(score - row max).
    bounds = _score_bounds(queries, keys, scale)  # (N, T_q)
    limit = float(np.finfo(dtype).max) / 4  # room for the rounding of the bound
    if dtype != np.float64 and not (bounds.max() <= limit and _max_abs(queries) * abs(scale) <= limit):
        # The scores (or the scaled queries) could overflow the inputs' dtype: compute in
        # float64, where they cannot for any float32 input and a scale below 1e200, and
        # round the results (weights in [0, 1], context within the range of the values).
        wide = [np.asarray(a, dtype=np.float64) for a in (queries, keys, values)]
        context_64, weights_64 = np.empty(context.shape), np.empty(weights.shape)
        _attention_into(*wide, mask, scale, context_64, weights_64)
        context[...], weights[...] = context_64, weights_64
        return
    blocks = [
        (first, last, start, stop, bool(bounds[first:last, start:stop].max() <= _SAFE_EXPONENT))
        for first, last, start, stop in blocks
    ]
    factor = dtype.type(scale)
    bounded_exp, bounded_factor = (np.exp2, dtype.type(scale * _LOG2_E)) if _FAST_EXP2 else (np.exp, factor)

    ones = np.ones((t_k, 1), dtype=dtype)  # (T_k, 1): the row sums as a matrix product
    next_lock = threading.Lock()  # the workers share iter_blocks: whoever is free takes the next block

    def run():
        # Scratch buffers, one set per worker: the row max (or sum), the scaled queries and the inverted mask.
        row_buf = np.empty((heads, rows, 1), dtype=dtype)
        queries_buf = np.empty((heads, rows, queries.shape[-1]), dtype=dtype)
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
            # The block's queries, scaled: (g, r, d_k) * () -> (g, r, d_k)
            q = np.multiply(queries[first:last, start:stop], bounded_factor if is_bounded else factor,
                            out=queries_buf[:g, :r])
            # Only float64 scores of an unbounded block can overflow: _check_no_overflow tells.
            with np.errstate(over="ignore", invalid="ignore"):
                np.matmul(q, keys_t[first:last], out=block)  # (g, r, d_k) @ (g, d_k, T_k) -> (g, r, T_k)
            if is_bounded:
                # |score| <= 60: exp cannot overflow or underflow, no shift needed.
                # With exp2, e^score = 2^(score * log2 e). The masked scores are zeroed
                # after the exp, never -inf before it (exp2(-inf) takes a slow path).
                bounded_exp(block, out=block)
                if mask is not None:
                    np.copyto(block, 0, where=masked)
            else:
                # The textbook stable softmax: -inf where masked, shift by the row max
                # (by 0 for a fully masked row, which stays -inf and gives exp = 0).
                if mask is not None:
                    np.copyto(block, -np.inf, where=masked)
                np.max(block, axis=-1, keepdims=True, out=row)
                if not np.isfinite(row).all():
                    _check_no_overflow(row, None if mask is None else masked, scale)
                    np.copyto(row, 0, where=row == -np.inf)  # fully masked rows
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
    # One thread for small problems: they pay more for threads than they gain.
    _run_on_workers(run, len(blocks) if n * t_q * t_k >= _PARALLEL_MIN_SCORES else 1)


def blocked_attention(queries, keys, values, mask=None, scale=None):
    r"""Scaled dot-product attention computed block by block on several threads.

    Same contract and results (to float32 rounding) as
    :func:`attn_helpers.scaled_dot_product_attention`; faster for long sequences.

    Parameters
    ----------
    queries, keys, values, mask, scale
        As for :func:`~attn_helpers.scaled_dot_product_attention`: shapes (..., T_q, d_k),
        (..., T_k, d_k), (..., T_k, d_v); ``mask`` True = may attend; ``scale`` default
        ``1 / sqrt(d_k)``.

    Returns
    -------
    context : ndarray, shape (..., T_q, d_v)
    weights : ndarray, shape (..., T_q, T_k)

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> queries, keys, values = rng.standard_normal((3, 2, 64, 16), dtype=np.float32)  # 2 heads of 64 tokens
    >>> fast = blocked_attention(queries, keys, values, mask=causal_mask(64))
    >>> readable = scaled_dot_product_attention(queries, keys, values, mask=causal_mask(64))
    >>> [bool(np.allclose(f, r, atol=1e-6)) for f, r in zip(fast, readable)]
    [True, True]
    """
    q, k, v, mask, scale, dtype, batch = _kernel_inputs("blocked_attention", queries, keys, values, mask, scale)
    t_q, t_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    n = int(np.prod(batch, dtype=np.int64))

    def flat(a):  # (..., T, d) -> (N, T, d), a view when no broadcasting is needed
        a = a.astype(dtype, copy=False)
        if a.shape[:-2] != batch:
            a = np.broadcast_to(a, batch + a.shape[-2:])
        return a.reshape((n,) + a.shape[-2:])

    context = np.zeros((n, t_q, d_v), dtype=dtype)
    weights = np.zeros((n, t_q, t_k), dtype=dtype)
    if n and t_q and t_k:  # empty sequences: nothing to attend to, all zeros
        flat_mask = None
        if mask is not None:
            flat_mask = np.broadcast_to(mask, batch + mask.shape[-2:]).reshape((n,) + mask.shape[-2:])
        _attention_into(flat(q), flat(k), flat(v), flat_mask, scale, context, weights)
    return context.reshape(batch + (t_q, d_v)), weights.reshape(batch + (t_q, t_k))


# =====================================================================================
# Online softmax and tiled attention: attention without the T x T matrix (notebook 13)
# =====================================================================================
#
# ``tiled_attention`` is the idea of FlashAttention (Dao et al., 2022) in numpy: the keys
# and values are visited in tiles, and each query row keeps three running quantities,
# its running max ``m``, its running sum ``l`` of ``exp(score - m)`` and its running
# accumulator ``acc`` of ``exp(score - m) * value``. When a tile raises the max, the sum
# and the accumulator are rescaled by ``exp(m_old - m_new)``; at the end ``acc / l`` is
# the context. Only one tile of scores exists at a time, per worker: memory O(T * d),
# not O(T^2). Notebook 13 derives it; ``attn_helpers.online`` has the readable version.
#
# Speed notes (``benchmarks/bench_tiled.py``):
#
# - Tiles entirely masked are never computed (a causal mask skips almost half of them),
#   whatever the mask: each tile is classified once, from the mask or from ``causal=True``,
#   as empty (skipped), full (no mask applied) or partial (masked scores set to -inf).
# - The shift: any constant gives the same softmax; the max only keeps ``exp`` from
#   overflowing. When Cauchy-Schwarz bounds every score of a block of query rows by
#   ``_TILE_SAFE_EXPONENT`` (``|score| <= scale |q_i| max_j |k_j|``), ``exp(score)`` needs
#   no shift at all: no running max, no rescaling, two passes fewer per tile. Other
#   blocks take the running max with rescaling (both paths are tested).
# - Query blocks of ``_TILE_ROWS`` rows share the workers of ``_get_pool`` (the calling
#   thread included), each with a one-threaded BLAS meanwhile; the number of workers
#   never exceeds the BLAS threads the caller allows (``OMP_NUM_THREADS``,
#   ``OPENBLAS_NUM_THREADS``, ``threadpoolctl.threadpool_limits``).

#: Query rows and keys per tile (``block_size=None``): 512 x 256 float32 scores = 512 KiB, in L2.
_TILE_ROWS = 512
_TILE_KEYS = 256
#: |score| <= this for every score of a block -> exp(score) needs no shift (see the notes above).
_TILE_SAFE_EXPONENT = 60.0

_TILE_EMPTY, _TILE_FULL, _TILE_PARTIAL = 0, 1, 2

from ._validate import as_positive_int  # noqa: E402 - this section's own imports, kept with it

__all__ += ["tiled_attention"]


def _tile_starts(length, size):
    return np.arange(0, length, size)


def _mask_tiles(mask, row_starts, key_starts):
    """Classify every tile of a boolean mask: ``_TILE_EMPTY``, ``_TILE_FULL`` or ``_TILE_PARTIAL``.

    ``mask`` : (..., T_q, T_k) bool; returns int8 of shape (..., n_row_tiles, n_key_tiles),
    computed with two reductions per axis (``reduceat``), never a copy of the mask.
    """
    any_ = np.logical_or.reduceat(np.logical_or.reduceat(mask, row_starts, axis=-2), key_starts, axis=-1)
    all_ = np.logical_and.reduceat(np.logical_and.reduceat(mask, row_starts, axis=-2), key_starts, axis=-1)
    return np.where(all_, _TILE_FULL, np.where(any_, _TILE_PARTIAL, _TILE_EMPTY)).astype(np.int8)


def _causal_tiles(t_q, t_k, row_starts, key_starts, rows, keys):
    """The tile classes of the causal mask ``j <= i + (T_k - T_q)``, by arithmetic on the tile corners."""
    offset = t_k - t_q
    first_row = row_starts[:, None]  # (n_row_tiles, 1)
    last_row = np.minimum(row_starts + rows, t_q)[:, None] - 1
    first_key = key_starts[None, :]  # (1, n_key_tiles)
    last_key = np.minimum(key_starts + keys, t_k)[None, :] - 1
    full = last_key <= first_row + offset  # every key of the tile is at or before every query's position
    empty = first_key > last_row + offset  # every key of the tile is after every query's position
    return np.where(full, _TILE_FULL, np.where(empty, _TILE_EMPTY, _TILE_PARTIAL)).astype(np.int8)


def _combine_tiles(a, b):
    """The classes of the tiles of ``a AND b``: empty if either is, full if both are, else partial."""
    either_empty = (a == _TILE_EMPTY) | (b == _TILE_EMPTY)
    both_full = (a == _TILE_FULL) & (b == _TILE_FULL)
    return np.where(either_empty, _TILE_EMPTY, np.where(both_full, _TILE_FULL, _TILE_PARTIAL)).astype(np.int8)


def _score_bound_per_block(queries, keys, scale, row_starts):
    """:func:`_score_bounds` for each block of query rows (its largest): shape (..., n_row_tiles)."""
    bounds = _score_bounds(queries, keys, scale)  # (..., T_q)
    return np.maximum.reduceat(bounds, row_starts, axis=-1) if bounds.shape[-1] else bounds


class _Scratch:
    """One worker's buffers, reused for every tile it computes: nothing is allocated in the loop."""

    def __init__(self, rows, keys, d_v, dtype):
        self.scores = np.empty(rows * keys, dtype=dtype)  # one tile of scores, reshaped to (r', b) per tile
        self.product = np.empty((rows, d_v), dtype=dtype)  # exp(scores) @ values of one tile
        self.tile_sum = np.empty((rows, 1), dtype=dtype)  # exp(scores) summed over one tile's keys
        self.ones = np.ones((keys, 1), dtype=dtype)  # summing a row is a product with ones (one BLAS call)


def _tiled_block(queries, keys_t, values, tiles, key_starts, keys_per_tile, row_mask, causal_rows, bounded,
                 check_overflow, scale, out, scratch):
    """The online softmax of one block of query rows over the tiles of keys; writes ``out``.

    queries : (r, d_k), already multiplied by the scale   keys_t : (d_k, T_k)   values : (T_k, d_v)
    tiles : (n_key_tiles,) tile classes   row_mask : (r, T_k) bool or None (the caller's mask rows)
    causal_rows : None, or the positions ``i + T_k - T_q`` of these query rows, (r, 1)
    out : (r, d_v), the context rows   scratch : the worker's :class:`_Scratch`
    """
    r = queries.shape[0]
    dtype = out.dtype
    t_k = keys_t.shape[1]
    running_sum = np.zeros((r, 1), dtype=dtype)  # l: sum of exp(score - m) over the keys seen so far
    running_max = np.full((r, 1), 0 if bounded else -np.inf, dtype=dtype)  # m: the shift (stays 0 when bounded)
    out[...] = 0  # acc: sum of exp(score - m) * value over the keys seen so far
    quiet = np.errstate(over="ignore", invalid="ignore") if check_overflow else nullcontext()
    for tile, k0 in zip(tiles.tolist(), key_starts.tolist()):  # Python ints: cheaper per tile than numpy scalars
        if tile == _TILE_EMPTY:
            continue  # every key of this tile is masked for every row: never computed
        k1 = min(k0 + keys_per_tile, t_k)
        # On the causal diagonal, the first rows of a tile may see none of its keys: start below them.
        lo = int(np.searchsorted(causal_rows[:, 0], k0)) if tile == _TILE_PARTIAL and causal_rows is not None else 0
        rows = slice(lo, r)
        scores = scratch.scores[: (r - lo) * (k1 - k0)].reshape(r - lo, k1 - k0)  # contiguous scratch, (r', b)
        with quiet:  # only float64 scores can overflow here: checked just below
            np.matmul(queries[rows], keys_t[:, k0:k1], out=scores)  # (r', d_k) @ (d_k, b) -> (r', b)
        if check_overflow and not np.isfinite(scores).all():
            _check_no_overflow(scores.max(axis=-1, keepdims=True), None, scale)  # raises a clear ValueError
        blocked = None  # (r', b) bool: True where the score is masked
        if tile == _TILE_PARTIAL:
            if causal_rows is not None:
                blocked = np.arange(k0, k1) > causal_rows[rows]  # (b,) > (r', 1): keys after the query's position
            if row_mask is not None:
                blocked = ~row_mask[rows, k0:k1] if blocked is None else blocked | ~row_mask[rows, k0:k1]
        if bounded:
            np.exp(scores, out=scores)  # |score| <= 60: no shift, nothing to rescale
            if blocked is not None:
                np.copyto(scores, 0, where=blocked)
        else:
            if blocked is not None:
                np.copyto(scores, -np.inf, where=blocked)
            new_max = np.maximum(running_max[rows], scores.max(axis=-1, keepdims=True))  # (r', 1)
            shift = np.where(new_max == -np.inf, 0, new_max)  # rows with nothing allowed yet keep -inf scores
            correction = np.exp(running_max[rows] - shift)  # exp(m_old - m_new) <= 1; 0 while m_old is -inf
            running_sum[rows] *= correction  # rescale what was summed with the old shift ...
            out[rows] *= correction  # ... and the accumulator too
            running_max[rows] = new_max  # -inf until a row meets its first allowed key
            np.subtract(scores, shift, out=scores)
            np.exp(scores, out=scores)
        tile_sum, product = scratch.tile_sum[rows], scratch.product[rows]
        running_sum[rows] += np.matmul(scores, scratch.ones[: k1 - k0], out=tile_sum)  # (r', b) @ (b, 1) -> (r', 1)
        out[rows] += np.matmul(scores, values[k0:k1], out=product)  # (r', b) @ (b, d_v) -> (r', d_v)
    np.copyto(running_sum, 1, where=running_sum == 0)  # a fully masked row: 0 / 1 = 0, not 0 / 0
    out /= running_sum


def tiled_attention(queries, keys, values, mask=None, scale=None, block_size=None, *, causal=False):
    r"""Scaled dot-product attention tile by tile with the online softmax, never building the weights.

    The context of :func:`attn_helpers.scaled_dot_product_attention` (tested equal to it),
    computed with memory O(T d) instead of O(T^2): the keys and values are visited in
    tiles, and each query row keeps a running max, a running sum and a running weighted
    sum of the values, rescaled whenever the max grows (notebook 13 derives it; the idea
    of FlashAttention, Dao et al. 2022). No weights are returned: they are never built.

    Tiles in which every key is masked for every query are skipped (a causal mask skips
    almost half of them). The mask is read once to classify the tiles; ``causal=True``
    gives the causal mask without building it.

    Parameters
    ----------
    queries, keys, values, mask, scale
        As for :func:`~attn_helpers.scaled_dot_product_attention` (and :func:`blocked_attention`).
    block_size : int, optional
        Query rows and keys per tile; default 512 rows by 256 keys. Any size works,
        dividing ``T`` or not; the results agree to rounding.
    causal : bool, default False
        Also apply the causal mask ``j <= i + (T_k - T_q)``: each query sees the keys up
        to its own position, counting the queries as the last ``T_q`` of the ``T_k``
        positions (for ``T_q == T_k``, :func:`~attn_helpers.causal_mask`; for one new
        query, all the keys). Combined with ``mask`` (both must allow a key).

    Returns
    -------
    context : ndarray, shape (..., T_q, d_v)
        A query row that may attend to no key gets a zero row.

    Examples
    --------
    >>> from attn_helpers import causal_mask, scaled_dot_product_attention
    >>> rng = np.random.default_rng(0)
    >>> q, k, v = rng.standard_normal((3, 2, 7, 4), dtype=np.float32)   # (h, T, d) each
    >>> context = tiled_attention(q, k, v, causal=True, block_size=3)   # 3 x 3 tiles, 7 tokens
    >>> expected, _ = scaled_dot_product_attention(q, k, v, mask=causal_mask(7))
    >>> bool(np.allclose(context, expected, atol=1e-6)), context.dtype
    (True, dtype('float32'))
    """
    q, k, v, mask, scale, dtype, batch = _kernel_inputs("tiled_attention", queries, keys, values, mask, scale)
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"causal must be True or False; got {type(causal).__name__} {causal!r}")
    if block_size is None:
        rows, keys_per_tile = _TILE_ROWS, _TILE_KEYS
    else:
        rows = keys_per_tile = as_positive_int(block_size, "block_size")
    t_q, t_k, d_v = q.shape[-2], k.shape[-2], v.shape[-1]
    work = q.dtype
    if work != np.float64 and v.size and _max_abs(v) * max(t_k, 1) > float(np.finfo(work).max) / 4:
        work = np.dtype(np.float64)  # the accumulator (a sum of up to T_k values) could overflow: widen
        q, k, v = (a.astype(work) for a in (q, k, v))
    context = np.zeros(batch + (t_q, d_v), dtype=work)
    n = int(np.prod(batch, dtype=np.int64))
    if not (n and t_q and t_k):  # empty sequences: nothing to attend to, all zeros
        return context.astype(dtype, copy=False)

    row_starts, key_starts = _tile_starts(t_q, rows), _tile_starts(t_k, keys_per_tile)
    # Tile classes, (..., n_row_tiles, n_key_tiles), from the mask's own shape (not broadcast to every head).
    tiles = None
    if mask is not None:
        full_mask = np.broadcast_to(mask, mask.shape[:-2] + (t_q, t_k))  # a view: (..., T_q, T_k)
        tiles = _mask_tiles(full_mask, row_starts, key_starts)
    if causal:
        causal_tiles = _causal_tiles(t_q, t_k, row_starts, key_starts, rows, keys_per_tile)
        tiles = causal_tiles if tiles is None else _combine_tiles(tiles, causal_tiles)
    if tiles is None:
        tiles = np.full((len(row_starts), len(key_starts)), _TILE_FULL, dtype=np.int8)
    bounds = _score_bound_per_block(q, k, scale, row_starts)  # (..., n_row_tiles)
    largest_value = _max_abs(v)
    # No shift needed where exp(bound) cannot overflow the scores, the sum of T_k of them, or the accumulator.
    safe = min(_TILE_SAFE_EXPONENT, np.log(float(np.finfo(work).max) / 4 / max(t_k, 1) / max(largest_value, 1.0)))
    check_overflow = work == np.float64 and bool(bounds.max() > float(np.finfo(np.float64).max) / 4)

    qb, kb, vb = (np.broadcast_to(a, batch + a.shape[-2:]) for a in (q, k, v))  # views
    tb = np.broadcast_to(tiles, batch + tiles.shape[-2:])
    boundb = np.broadcast_to(bounds, batch + bounds.shape[-1:])
    maskb = None if mask is None else np.broadcast_to(mask, batch + mask.shape[-2:])
    factor = work.type(scale)
    tasks = [(index, block) for index in np.ndindex(*batch) for block in range(len(row_starts))]
    # Most tiles first, so that the last tasks to start are short ones (a causal mask: the late rows).
    tasks.sort(key=lambda task: -int(np.count_nonzero(tb[task[0]][task[1]])))
    next_task = iter(tasks)
    lock = threading.Lock()

    def run():
        queries_buf = np.empty((rows, q.shape[-1]), dtype=work)
        scratch = _Scratch(min(rows, t_q), min(keys_per_tile, t_k), d_v, work)
        while True:
            with lock:
                index, block = next(next_task, (None, None))
            if index is None:
                return
            r0, r1 = int(row_starts[block]), min(int(row_starts[block]) + rows, t_q)
            block_queries = np.multiply(qb[index][r0:r1], factor, out=queries_buf[: r1 - r0])  # (r, d_k)
            row_mask = None
            if maskb is not None:
                row_mask = np.broadcast_to(maskb[index][r0:r1] if maskb.shape[-2] > 1 else maskb[index],
                                           (r1 - r0, t_k))
            causal_rows = np.arange(r0, r1)[:, None] + (t_k - t_q) if causal else None
            _tiled_block(block_queries, np.swapaxes(kb[index], -1, -2), vb[index], tb[index][block], key_starts,
                         keys_per_tile, row_mask, causal_rows, bool(boundb[index][block] <= safe), check_overflow,
                         scale, context[index][r0:r1], scratch)

    large = n * t_q * t_k >= _PARALLEL_MIN_SCORES
    _run_on_workers(run, len(tasks) if large else 1)
    return context.astype(dtype, copy=False)
