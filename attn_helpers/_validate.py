"""Input checks shared by the public functions.

Every public function turns bad input into a ``TypeError`` or ``ValueError`` whose
message names the argument, the shape (or dtype) it got and what was expected, so a
learner never has to read a numpy traceback from deep inside a matrix product.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["as_float_array", "as_bool_mask", "as_positive_int", "result_float_dtype"]


def as_float_array(x, name: str, *, min_ndim: int = 1, allow_neg_inf: bool = False) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Floating arrays keep their dtype (float32 stays float32); integer input becomes
    float64; float16 becomes float32. Booleans, strings, ``None`` and other
    non-numeric input raise ``TypeError``; NaN (and infinities, unless
    ``allow_neg_inf`` lets ``-inf`` through) raise ``ValueError``.
    """
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except ValueError as err:  # ragged nested lists
            raise ValueError(f"{name} must be a rectangular array of numbers; could not convert it ({err})") from None
    kind = arr.dtype.kind
    if kind not in "iuf":
        got = type(x).__name__ if arr.dtype == object else f"an array of dtype {arr.dtype}"
        raise TypeError(f"{name} must be numeric (an array of floats); got {got}")
    if kind != "f":
        arr = arr.astype(np.float64)
    elif arr.dtype == np.float16:
        arr = arr.astype(np.float32)
    if arr.ndim < min_ndim:
        need = {1: "(..., d)", 2: "(..., T, d)"}.get(min_ndim, f"at least {min_ndim} axes")
        raise ValueError(f"{name} must have shape {need}; got shape {arr.shape}")
    if arr.size and not np.isfinite(arr).all():
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN (shape {arr.shape}); check where it came from")
        if not allow_neg_inf or np.isposinf(arr).any():
            allowed = "finite or -inf" if allow_neg_inf else "finite"
            raise ValueError(f"{name} contains an infinity (shape {arr.shape}); values must be {allowed}")
    return arr


def as_bool_mask(mask, name: str = "mask") -> np.ndarray:
    """Return ``mask`` as a boolean array (True = may attend), or raise a clear error."""
    try:
        arr = np.asarray(mask)
    except ValueError as err:
        raise ValueError(f"{name} must be a rectangular boolean array; could not convert it ({err})") from None
    if arr.dtype != np.bool_:
        raise TypeError(
            f"{name} must be boolean with True = may attend; got dtype {arr.dtype}. "
            f"If you have a 0/1 array, use {name}.astype(bool)"
        )
    if arr.ndim < 1:
        raise ValueError(f"{name} must have shape broadcastable to (..., T_q, T_k); got a scalar")
    return arr


def as_positive_int(n, name: str, *, allow_zero: bool = False) -> int:
    """Return ``n`` as a Python int, or raise ``TypeError``/``ValueError``."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '>= 1'}; got {n}")
    return n


def result_float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The floating dtype of a result computed from ``arrays`` (float32 only if all are)."""
    return np.result_type(*arrays, np.float32)
