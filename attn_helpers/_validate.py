"""Input checks shared by the public functions.

Every public function turns bad input into a ``TypeError`` or ``ValueError`` whose
message names the argument, the shape (or dtype) it got and what was expected, so a
learner never has to read a numpy traceback from deep inside a matrix product.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "as_float_array",
    "as_bool_mask",
    "as_positive_int",
    "result_float_dtype",
    "as_number",
    "as_positive_number",
    "check_axis",
    "softmax_inputs",
    "attention_inputs",
    "batch_shape",
    "largest_magnitude",
    "sum_of_squares",
]


def as_float_array(x, name: str, *, min_ndim: int = 1, allow_neg_inf: bool = False, check_finite: bool = True
                   ) -> np.ndarray:
    """Return ``x`` as a floating-point array, or raise a clear error.

    Floating arrays keep their dtype (float32 stays float32); integer input becomes
    float64; float16 becomes float32. Booleans, strings, ``None`` and other
    non-numeric input raise ``TypeError``; NaN (and infinities, unless
    ``allow_neg_inf`` lets ``-inf`` through) raise ``ValueError``; ``check_finite=False``
    leaves that check to the caller (see :func:`largest_magnitude`).
    """
    if type(x) is np.ndarray:  # the common case; subclasses (np.matrix) become plain arrays below
        arr = x
    elif isinstance(x, np.ma.MaskedArray):
        raise TypeError(
            f"{name} is a masked array (numpy.ma), whose mask numpy would silently drop here; pass plain values "
            f"({name}.filled(...)) and, for attention, a boolean mask= with True = may attend"
        )
    else:
        try:
            arr = np.asarray(x)
        except ValueError as err:  # ragged nested lists
            raise ValueError(f"{name} must be a rectangular array of numbers; could not convert it ({err})") from None
        except Exception as err:  # an object whose __array__ raises (a tensor of another library, say)
            raise TypeError(
                f"{name} could not be turned into a numpy array ({type(err).__name__}: {err}); pass a numpy array"
            ) from None
    char = arr.dtype.char
    if char == "f" or char == "d":  # float32 or float64, the usual case: nothing to convert
        kind = "f"
    else:
        kind = arr.dtype.kind
    if kind not in "iuf":
        got = type(x).__name__ if arr.dtype == object else f"an array of dtype {arr.dtype}"
        raise TypeError(f"{name} must be numeric (an array of floats); got {got}")
    if kind != "f":
        arr = arr.astype(np.float64)
    elif char != "f" and char != "d":  # float16 -> float32, longdouble -> float64
        arr = arr.astype(np.float32 if arr.dtype.itemsize < 4 else np.float64)
    if arr.ndim < min_ndim:
        need = {1: "(..., d)", 2: "(..., T, d)"}.get(min_ndim, f"at least {min_ndim} axes")
        raise ValueError(f"{name} must have shape {need}; got shape {arr.shape}")
    # One reduction each: NaN and +inf propagate through max.
    if check_finite and allow_neg_inf:
        if arr.size and not arr.max() < np.inf:  # (max without initial=: a microsecond less per call)
            _not_finite(arr, name, allow_neg_inf=True)
    elif check_finite:
        largest_magnitude(arr, name)  # raises for NaN or an infinity
    return arr


def _not_finite(arr: np.ndarray, name: str, allow_neg_inf: bool = False):
    """Raise the ``ValueError`` that says what in ``arr`` is not finite."""
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN (shape {arr.shape}); check where it came from")
    if not allow_neg_inf or np.isposinf(arr).any():
        allowed = "finite or -inf" if allow_neg_inf else "finite"
        raise ValueError(f"{name} contains an infinity (shape {arr.shape}); values must be {allowed}")


def sum_of_squares(arr: np.ndarray, name: str) -> float:
    """``sum(arr ** 2)`` as a Python float, from one BLAS call; a clear ``ValueError`` for NaN or inf.

    An inf or NaN entry makes the sum inf or NaN. So can a sum that overflows float32
    (entries beyond about 1e19): then it is summed again in float64, where no float32
    input overflows. A float64 sum beyond 1.8e308 comes back as ``inf``.
    """
    total = float(np.vdot(arr, arr))
    if not math.isfinite(total):
        if not np.isfinite(arr).all():
            _not_finite(arr, name)
        wide = arr.astype(np.float64)
        total = float(np.vdot(wide, wide))  # inf only for float64 entries beyond about 1e154
    return total


def largest_magnitude(arr: np.ndarray, name: str) -> float:
    """``max |arr|`` as a Python float (0 for an empty array); a clear ``ValueError`` for NaN or inf."""
    largest = float(np.abs(arr).max(initial=0))  # NaN and inf propagate: one reduction checks them too
    if not math.isfinite(largest):
        _not_finite(arr, name)
    return largest


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


_FLOAT32 = np.dtype(np.float32)


def result_float_dtype(*arrays: np.ndarray) -> np.dtype:
    """The floating dtype of a result computed from ``arrays`` (float32 only if all are)."""
    if all(a.dtype.char == "f" for a in arrays):  # all float32, the usual case: no type promotion
        return _FLOAT32
    return np.result_type(*arrays, np.float32)


def as_number(value, name: str, kind: str = "a number", range_: str = "finite") -> float:
    """``value`` as a Python float, or a ``TypeError`` (not ``kind``) / ``ValueError`` (not ``range_``)."""
    if type(value) is not float and (  # the common case first: a plain float is fine
        isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating, np.integer))
    ):
        raise TypeError(f"{name} must be {kind}; got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float64, such as 10**400
        raise ValueError(f"{name} must be {range_}; got {value!r}, beyond float64's range") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be {range_}; got {value!r}")
    return number


def as_positive_number(value, name: str, why: str = "") -> float:
    """``value`` as a Python float > 0, or a ``TypeError``/``ValueError`` naming ``name`` (and ``why`` it must be)."""
    number = as_number(value, name, "a positive number", "a finite number > 0")
    if not number > 0:
        raise ValueError(f"{name} must be a finite number > 0{why}; got {value!r}")
    return number


def softmax_inputs(x, axis, temperature):
    """Validated ``(scores, axis, temperature)`` for :func:`~attn_helpers.core.softmax`.

    ``temperature`` comes back as a Python float, or as ``np.float64`` when
    the scores are float32 and the temperature lies outside float32's normal range
    (then the division happens in float64, never ``x / 0`` or ``x / inf``).
    """
    if type(temperature) is not float or not 0 < temperature < math.inf:  # a plain positive float passes at once
        temperature = as_positive_number(temperature, "temperature")
    scores = as_float_array(x, "x", min_ndim=0, allow_neg_inf=True)
    if scores.ndim == 0:
        raise ValueError("x must have at least one axis to normalise over; got a scalar (shape ())")
    check_axis(axis, scores, "x")
    tiny, largest = _NORMAL_RANGE[scores.dtype.char]
    return scores, int(axis), temperature if tiny <= temperature <= largest else np.float64(temperature)


#: The smallest and largest normal number of each float dtype.
_NORMAL_RANGE = {np.dtype(t).char: (float(np.finfo(t).tiny), float(np.finfo(t).max)) for t in (np.float32, np.float64)}
#: A quarter of each float dtype's largest number: room for the rounding of the bound.
_LARGEST = {np.dtype(t).char: float(np.finfo(t).max) / 4 for t in (np.float32, np.float64)}


def check_axis(axis, arr: np.ndarray, name: str) -> None:
    """A ``TypeError``/``ValueError`` unless ``axis`` is an integer naming an axis of ``arr``."""
    if type(axis) is not int and (isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral)):
        raise TypeError(f"axis must be an integer (the axis that sums to 1); got {type(axis).__name__} {axis!r}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} of shape {arr.shape}")


def attention_inputs(queries, keys, values, mask, scale):
    """Validated inputs of scaled dot-product attention.

    Returns ``(queries, keys, values, mask, scale, dtype)``: the arrays as floating
    arrays (float64 when float32 scores could overflow), the mask as bool (or None), the
    scale as a Python float (default ``1 / sqrt(d_k)``) and the dtype of the results
    (float32 only if all inputs are). Scores that could overflow float64 raise ``ValueError``.
    """
    q = as_float_array(queries, "queries", min_ndim=2, check_finite=False)  # checked by the bound below
    k = as_float_array(keys, "keys", min_ndim=2, check_finite=False)
    v = as_float_array(values, "values", min_ndim=2, check_finite=False)
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
        mask = m
    batches = {q.shape[:-2], k.shape[:-2], v.shape[:-2]}
    if len(batches) > 1 or (mask is not None and mask.shape[:-2] not in batches and mask.ndim > 2):
        arrays = {"queries": q, "keys": k, "values": v, "mask": mask}
        batch_shape("scaled_dot_product_attention", **{n: a for n, a in arrays.items() if a is not None})
    if scale is None:
        scale = 1.0 / math.sqrt(q.shape[-1]) if q.shape[-1] else 1.0
    scale = as_number(scale, "scale")
    dtype = result_float_dtype(q, k, v)
    # Every score is at most ||q_i|| ||k_j|| |scale| <= sqrt(sum q^2) sqrt(sum k^2) |scale|
    # (Cauchy-Schwarz). When that bound could pass float32's range, compute in float64
    # (no float32 input overflows there) and round the results back; when it could pass
    # float64's, say so rather than give NaN. The sums also prove every entry finite.
    sum_of_squares(v, "values")
    bound = math.sqrt(sum_of_squares(q, "queries") * sum_of_squares(k, "keys")) * max(1.0, abs(scale))
    if bound > _LARGEST[dtype.char]:
        if bound > _LARGEST["d"]:
            raise ValueError(
                f"the scores could overflow float64 (|score| up to {bound:.3g}, beyond 1.8e308): scale={scale:g} "
                f"times the dot products of queries and keys is too large; rescale queries, keys or scale"
            )
        q, k, v = (a.astype(np.float64) for a in (q, k, v))
    return q, k, v, mask, scale, dtype


def batch_shape(what: str, **arrays: np.ndarray) -> tuple:
    """Broadcast the leading (batch) axes of several arrays, with a clear error."""
    shapes = {a.shape[:-2] for a in arrays.values()}
    if len(shapes) == 1:  # the usual case: nothing to broadcast
        return shapes.pop()
    try:
        return np.broadcast_shapes(*shapes)
    except ValueError:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        raise ValueError(f"{what}: the leading (batch) axes do not broadcast: {shapes}") from None
