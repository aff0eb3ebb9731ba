"""The opt-in fast kernel, ``attn_helpers.efficient.blocked_attention``.

Same contract and results as the readable ``scaled_dot_product_attention``; respects the
caller's thread limits; leaves no process-wide trace; gives the same numbers whatever
other threads do.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy as np
import pytest
from threadpoolctl import ThreadpoolController, threadpool_limits

from attn_helpers import causal_mask, efficient, padding_mask, scaled_dot_product_attention
from attn_helpers.efficient import blocked_attention


def _inputs(shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape).astype(dtype) for _ in range(3))


@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 7, 8), (1, 8, 300, 16)])
@pytest.mark.parametrize("mask_kind", [None, "causal", "padding"])
def test_blocked_attention_equals_the_readable_core(shape, mask_kind):
    queries, keys, values = _inputs(shape)
    T = shape[-2]
    mask = {None: None, "causal": causal_mask(T), "padding": padding_mask([T, 0], T)[:, None] if len(shape) == 4
            else np.arange(T) < T - 1}[mask_kind]
    expected = scaled_dot_product_attention(queries, keys, values, mask=mask)
    got = blocked_attention(queries, keys, values, mask=mask)
    for g, e in zip(got, expected):
        assert g.dtype == e.dtype == np.float32 and g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-6, atol=1e-6 * np.abs(e).max())  # relative to the scale of e


def test_blocked_attention_on_a_large_problem_uses_threads_and_matches(monkeypatch):
    queries, keys, values = _inputs((1, 4, 1024, 32), seed=1)
    used = []
    original = efficient._get_pool
    monkeypatch.setattr(efficient, "_get_pool", lambda: used.append(1) or original())
    context, weights = blocked_attention(queries, keys, values, mask=causal_mask(1024))
    expected_context, expected_weights = scaled_dot_product_attention(queries, keys, values, mask=causal_mask(1024))
    np.testing.assert_allclose(weights, expected_weights, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(context, expected_context, rtol=1e-5, atol=1e-6)
    if efficient._THREADS > 1:
        assert used, "a 4 x 1024 x 1024 problem should be shared by the worker threads"


def test_a_call_inside_threadpool_limits_1_uses_one_core(monkeypatch):
    queries, keys, values = _inputs((1, 4, 1024, 32), seed=2)
    unused = "the worker pool was used under threadpool_limits(1)"
    monkeypatch.setattr(efficient, "_get_pool", lambda: pytest.fail(unused))
    with threadpool_limits(limits=1):
        blocked_attention(queries, keys, values)


def test_the_callers_blas_setting_is_restored():
    controller = ThreadpoolController()
    before = [info["num_threads"] for info in controller.info()]
    queries, keys, values = _inputs((1, 4, 1024, 32), seed=3)
    blocked_attention(queries, keys, values)
    assert [info["num_threads"] for info in controller.info()] == before
    assert efficient._blas_users == 0 and efficient._blas_limit is None


def _in_threads(fn, count):
    results, errors = [], []

    def call():
        try:
            results.append(fn())
        except Exception as err:  # pragma: no cover - reported below
            errors.append(err)

    threads = [threading.Thread(target=call) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    return results


def test_one_blas_thread_holds_in_every_thread():
    """After a call in this thread, a call from another thread is held to one BLAS thread as well
    (as a Jupyter kernel's widget callbacks are, in a thread of their own): threadpoolctl 3.8 lets
    only the thread that controls a shared OpenBLAS pool set its limit, so each call hands it back."""
    blas = ThreadpoolController().select(user_api="blas")

    def threads_inside():
        with efficient.one_blas_thread():
            return [info["num_threads"] for info in blas.info()]

    assert set(threads_inside()) <= {1}
    for seen in _in_threads(threads_inside, 1) + _in_threads(threads_inside, 1):
        assert set(seen) <= {1}, f"a call from another thread ran with {seen} BLAS threads"
    assert threads_inside() == [1] * len(blas.info())


def test_results_do_not_depend_on_what_other_threads_do():
    """Four calls at once give the numbers of one call alone (made from a thread too: OpenBLAS's
    own thread count, which can change the last bits of a product, is a setting per calling
    thread on some builds)."""
    queries, keys, values = _inputs((2, 4, 512, 64), seed=4)
    mask = causal_mask(512)
    (alone,) = _in_threads(lambda: blocked_attention(queries, keys, values, mask=mask), 1)
    for context, weights in _in_threads(lambda: blocked_attention(queries, keys, values, mask=mask), 4):
        np.testing.assert_array_equal(weights, alone[1])
        np.testing.assert_array_equal(context, alone[0])


def test_numpy_still_reports_its_simd_extensions():
    """The exp2 choice reads numpy's public build report; fail loudly if a numpy version changes it."""
    simd = np.show_config(mode="dicts")["SIMD Extensions"]
    assert {"baseline", "found"} <= set(simd), f"numpy's show_config changed: {sorted(simd)}"
    assert isinstance(efficient._numpy_has_simd_exp2(), bool)


def test_the_core_imports_neither_threads_nor_the_fast_kernel():
    code = (
        "import sys, attn_helpers; "
        "print(sorted(m for m in ('attn_helpers.efficient', 'threadpoolctl', 'concurrent.futures.thread') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out
