"""Input checks shared by the public functions.

Every public function turns bad input into a ``TypeError`` or ``ValueError`` whose
message names the argument, the shape (or dtype) it got and what was expected, so a
learner never has to read a numpy traceback from deep inside a matrix product.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = [
    "as_float_array",
    "as_bool_mask",
    "as_positive_int",
    "result_float_dtype",
    "as_number",
    "softmax_inputs",
    "attention_inputs",
    "batch_shape",
    "finite_scores",
]


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


def as_number(value, name: str, kind: str = "a number", range_: str = "finite") -> float:
    """``value`` as a Python float, or a ``TypeError`` (not ``kind``) / ``ValueError`` (not ``range_``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer)):
        raise TypeError(f"{name} must be {kind}; got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float64, such as 10**400
        raise ValueError(f"{name} must be {range_}; got {value!r}, beyond float64's range") from None
    if not np.isfinite(number):
        raise ValueError(f"{name} must be {range_}; got {value!r}")
    return number


def softmax_inputs(x, axis, temperature):
    """Validated ``(scores, axis, temperature)`` for :func:`~attn_helpers.core.softmax`.

    ``temperature`` comes back as a numpy scalar of a dtype that holds it: float64 when
    the scores are float32 and the temperature lies outside float32's normal range
    (then the division happens in float64, never ``x / 0`` or ``x / inf``).
    """
    temperature = as_number(temperature, "temperature", "a positive number", "a finite number > 0")
    if not temperature > 0:
        raise ValueError(f"temperature must be a finite number > 0; got {temperature!r}")
    scores = as_float_array(x, "x", min_ndim=0, allow_neg_inf=True)
    if scores.ndim == 0:
        raise ValueError("x must have at least one axis to normalise over; got a scalar (shape ())")
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an integer (the axis that sums to 1); got {type(axis).__name__} {axis!r}")
    if not -scores.ndim <= axis < scores.ndim:
        raise ValueError(f"axis {axis} is out of range for x of shape {scores.shape}")
    info = np.finfo(scores.dtype)
    fits = float(info.tiny) <= temperature <= float(info.max)
    return scores, int(axis), (scores.dtype.type if fits else np.float64)(temperature)


def attention_inputs(queries, keys, values, mask, scale):
    """Validated inputs of scaled dot-product attention.

    Returns ``(queries, keys, values, mask, scale, dtype)``: the arrays in the dtype
    to compute in, the mask as bool (or None), the scale as a Python float (default
    ``1 / sqrt(d_k)``) and the dtype of the results. The arrays are float64 when
    float32 scores could overflow (a bound from the largest entries); the results
    are then rounded back to ``dtype``.
    """
    q = as_float_array(queries, "queries", min_ndim=2)
    k = as_float_array(keys, "keys", min_ndim=2)
    v = as_float_array(values, "values", min_ndim=2)
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"queries and keys need the same d_k: queries has shape {q.shape} and keys has shape {k.shape}; "
            f"expected queries.shape[-1] == keys.shape[-1]"
        )
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(
            f"keys and values need the same T_k (one value per key): keys has shape {k.shape} and values has "
            f"shape {v.shape}; expected keys.shape[-2] == values.shape[-2]"
        )
    arrays = {"queries": q, "keys": k, "values": v}
    t_q, t_k = q.shape[-2], k.shape[-2]
    if mask is not None:
        m = as_bool_mask(mask)
        if m.ndim < 2:
            m = m.reshape((1,) * (2 - m.ndim) + m.shape)
        if not (m.shape[-2] in (1, t_q) and m.shape[-1] in (1, t_k)):
            raise ValueError(
                f"mask of shape {np.shape(mask)} does not broadcast to the scores' shape (..., T_q, T_k) = "
                f"(..., {t_q}, {t_k}); expected its last two axes to be ({t_q} or 1, {t_k} or 1)"
            )
        arrays["mask"] = mask = m
    batch_shape("scaled_dot_product_attention", **arrays)
    scale = 1.0 / np.sqrt(q.shape[-1]) if scale is None and q.shape[-1] else 1.0 if scale is None else scale
    scale = as_number(scale, "scale")
    dtype = result_float_dtype(q, k, v)
    work = dtype
    if dtype != np.float64 and q.size and k.size:
        # |q . k| <= d_k max|q| max|k|: if that (or it times the scale) could pass float32's
        # range, compute in float64, where no float32 input can overflow.
        bound = q.shape[-1] * float(np.abs(q).max()) * float(np.abs(k).max()) * max(1.0, abs(scale))
        if bound > float(np.finfo(dtype).max) / 4:
            work = np.float64
    return q.astype(work, copy=False), k.astype(work, copy=False), v.astype(work, copy=False), mask, scale, dtype


def batch_shape(what: str, **arrays: np.ndarray) -> tuple:
    """Broadcast the leading (batch) axes of several arrays, with a clear error."""
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        raise ValueError(f"{what}: the leading (batch) axes do not broadcast: {shapes}") from None


def finite_scores(scores: np.ndarray, scale: float) -> np.ndarray:
    """``scores`` if every entry is finite; else a ``ValueError`` (float64 overflow), never NaN later."""
    if not np.isfinite(scores).all():
        raise ValueError(
            f"the scores overflow float64 (|score| beyond 1.8e308): scale={scale:g} times the dot products of "
            f"queries and keys is too large; rescale queries, keys or scale"
        )
    return scores
