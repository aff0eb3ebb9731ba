"""Input checks of the public functions, once, at the boundary: ``@checked(f_inputs)`` runs ``f_inputs`` on the
caller's arguments (a ``TypeError``/``ValueError`` naming the argument and the shapes), then the body. A call made
while another checked function runs (the package calling itself, on inputs already checked) goes straight to the
body, so the lessons' code calls ``softmax(...)``, never a second, unchecked name. A learner's function passed
as a hook (``attention=``, ``rotate=``, ...) runs as a direct call would (:func:`hook`): the calls it makes are
checked. Checked: shapes, axes, masks, NaN/inf, sizes; numpy speaks for the rest.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import math
import numbers

import numpy as np

from .config import SEED

#: True while a checked function runs: the calls it makes skip their checks (their inputs come from checked ones).
_INSIDE = contextvars.ContextVar("inside_a_checked_call", default=False)


def checked(check):
    """Decorator: run ``check`` on the caller's arguments, then the body on what it returns; inside another checked
    call, the body alone. (``check=None`` is :func:`checked_by_caller`.)"""
    def decorate(body):
        signature = inspect.signature(body)
        if check is not None and _parameters(inspect.signature(check)) != _parameters(signature):
            raise TypeError(f"{check.__name__}{inspect.signature(check)} must take {body.__name__}{signature}")

        keywords = [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]  # passed by name
        positional = len(signature.parameters) - len(keywords)

        @functools.wraps(body)
        def public(*args, **kwargs):
            if _INSIDE.get():
                return body(*args, **kwargs)
            if check is not None:  # (outside the body's context: a check's own calls are checked)
                inputs = _inputs(check, signature, body.__name__, args, kwargs)
                args, kwargs = inputs[:positional], dict(zip(keywords, inputs[positional:]))
            token = _INSIDE.set(True)
            try:
                return body(*args, **kwargs)
            finally:
                _INSIDE.reset(token)

        return public
    return decorate


def checked_by_caller(body):
    """Decorator for a function whose inputs its callers check (a backward pass reading what its forward recorded,
    a model's inner forward on checked ids): it checks nothing itself, and the series' functions it calls skip
    their checks, as inside any checked call."""
    return checked(None)(body)


def hook(function, name: str, expected: str):
    """``None``, or a function passed as a hook (``attention=``, ``rotate=``, ...), made to run as a direct call
    would: the series' functions it calls check their inputs again (a hook's inputs come from the package, its
    slips do not), and a numpy error it raises says which hook raised it, and with what. The package's own
    functions (``rope``, a block's methods) are used as they are: their inputs are the package's."""
    if function is None:
        return None
    if not callable(function):
        raise TypeError(f"{name} must be a function {expected}, or None; got {function!r:.80}")
    if (getattr(function, "__module__", None) or "").startswith("attn_helpers"):
        return function

    @functools.wraps(function)
    def as_called_directly(*args, **kwargs):
        token = _INSIDE.set(False)
        try:
            return function(*args, **kwargs)
        except (ValueError, TypeError, IndexError) as err:
            if getattr(err, "named_by_attn_helpers", False):  # a check's own message: it names the argument
                raise
            given = ", ".join(f"shape {a.shape}" if isinstance(a, np.ndarray) else type(a).__name__ for a in args)
            raise type(err)(f"your {name} function raised {type(err).__name__}: {err} (it was called with {given}; "
                            f"expected {expected})") from err
        finally:
            _INSIDE.reset(token)

    return as_called_directly


def _inputs(check, signature, name, args, kwargs):
    try:
        return check(*args, **kwargs)
    except TypeError as err:
        try:
            signature.bind(*args, **kwargs)
        except TypeError as bind_err:  # a missing or unknown argument: say whose
            raise _named(TypeError(f"{name}{signature}: {bind_err}")) from None
        _named(err)
        raise
    except (ValueError, IndexError) as err:
        _named(err)
        raise


def _named(err):
    """Mark an error raised by a check: its message names the argument (a hook passes it on as it is)."""
    err.named_by_attn_helpers = True
    return err


def _parameters(signature):
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def as_float_array(x, name: str, *, min_ndim: int = 1, allow_neg_inf: bool = False) -> np.ndarray:
    """``x`` as a float array (float32 stays float32, integers become float64), or a clear error."""
    arr = x if type(x) is np.ndarray and x.dtype in _FLOATS else _to_float_array(x, name)
    if arr.ndim < min_ndim:
        need = {1: "(..., d)", 2: "(..., T, d)"}.get(min_ndim, f"at least {min_ndim} axes")
        raise ValueError(f"{name} must have shape {need}; got shape {arr.shape}")
    if arr.size and not (arr.max() < np.inf if allow_neg_inf else np.isfinite(arr).all()):  # (NaN: max is NaN)
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains NaN (shape {arr.shape}); check where it came from")
        allowed = "finite or -inf" if allow_neg_inf else "finite"
        raise ValueError(f"{name} contains an infinity (shape {arr.shape}); values must be {allowed}")
    return arr


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _to_float_array(x, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{name} must be a rectangular array of numbers; could not convert it ({err})") from None
    except Exception as err:  # an object whose __array__ raises (a tensor of another library, say)
        raise TypeError(f"{name} could not be turned into a numpy array ({type(err).__name__}: {err})") from None
    if arr.dtype.kind not in "iuf":
        got = type(x).__name__ if arr.dtype == object else f"an array of dtype {arr.dtype}"
        raise TypeError(f"{name} must be numeric (an array of floats); got {got}")
    if arr.dtype.kind != "f":
        return arr.astype(np.float64)
    return arr.astype(np.float32) if arr.dtype.itemsize < 4 else arr


def as_float_dtype(dtype) -> np.dtype:
    """``dtype`` as a numpy floating dtype, or a ``TypeError`` naming it (``str``, ``int``, ``bool`` are not)."""
    try:
        resolved = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be a floating-point dtype such as np.float32; got {dtype!r}") from None
    if resolved.kind != "f":
        raise TypeError(f"dtype must be a floating-point dtype such as np.float32; got {dtype!r} ({resolved})")
    return resolved


def as_positive_int(n, name: str, *, allow_zero: bool = False) -> int:
    """``n`` as a Python int >= 1 (or >= 0), or a ``TypeError``/``ValueError``."""
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(n).__name__} {n!r}")
    n = int(n)
    if n < 0 or (n == 0 and not allow_zero):
        raise ValueError(f"{name} must be {'>= 0' if allow_zero else '>= 1'}; got {n}")
    return n


def as_number(value, name: str, kind: str = "a number", range_: str = "finite") -> float:
    """``value`` as a finite Python float, or a ``TypeError`` (not ``kind``) / ``ValueError`` (not ``range_``)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {kind}; got {type(value).__name__} {value!r}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond float64, such as 10**400
        raise ValueError(f"{name} must be {range_}; got {value!r}, beyond float64's range") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be {range_}; got {value!r}")
    return number


def as_positive_number(value, name: str, why: str = "") -> float:
    """``value`` as a Python float > 0, or a ``TypeError``/``ValueError`` naming ``name`` (and ``why``)."""
    number = as_number(value, name, "a positive number", "a finite number > 0")
    if not number > 0:
        raise ValueError(f"{name} must be a finite number > 0{why}; got {value!r}")
    return number


def as_flag(value, name: str) -> bool:
    """``value`` if it is True or False, else a ``TypeError``."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False; got {value!r}")
    return bool(value)


def as_token_ids(ids, vocab_size: int, name: str, ndims=None, allow_empty: bool = False) -> np.ndarray:
    """``ids`` as an integer array of token ids in ``0 .. vocab_size - 1`` with ``ndims`` axes (any if None), or
    one sentence naming ``name``: text instead of ids, floats, the wrong number of axes, no ids, an id outside."""
    if isinstance(ids, str):
        raise TypeError(f"{name} must be token ids, not text: encode it first (tokenizer.encode({ids[:20]!r}))")
    array = np.asarray(ids)
    if (ndims is not None and array.ndim not in ndims) or not (
            array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f")):
        shape = "any shape" if ndims is None else " or ".join({1: "(T,)", 2: "(B, T)"}[n] for n in ndims)
        raise TypeError(f"{name} must be integer token ids of shape {shape}; got {type(ids).__name__} of "
                        f"shape {array.shape} and dtype {array.dtype}")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} is empty; expected at least one token id")
    if array.size and (array.min() < 0 or array.max() >= vocab_size):
        raise ValueError(f"{name} must be token ids in 0 .. {vocab_size - 1}; got ids from {array.min()} to "
                         f"{array.max()}")
    return array.astype(np.intp)


def check_axis(axis, arr: np.ndarray, name: str) -> int:
    """``axis`` if it is an integer naming an axis of ``arr``, else a ``TypeError``/``ValueError``."""
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, numbers.Integral):
        raise TypeError(f"axis must be an integer (the axis that sums to 1); got {type(axis).__name__} {axis!r}")
    if not -arr.ndim <= axis < arr.ndim:
        raise ValueError(f"axis {axis} is out of range for {name} of shape {arr.shape}")
    return int(axis)


def batch_shape(what: str, **arrays: np.ndarray) -> tuple:
    """Broadcast the leading (batch) axes of several arrays, with a clear error."""
    if all(a.ndim <= 2 for a in arrays.values()):  # no batch axes: nothing to broadcast
        return ()
    try:
        return np.broadcast_shapes(*(a.shape[:-2] for a in arrays.values()))
    except ValueError:
        shapes = ", ".join(f"{k} {v.shape}" for k, v in arrays.items())
        raise ValueError(f"{what}: the leading (batch) axes do not broadcast: {shapes}") from None


def check_weight(name: str, w, d_in: int) -> np.ndarray:
    """A weight matrix ``(d_in, d_out)`` whose rows match ``d_in`` input features."""
    w = as_float_array(w, name, min_ndim=2)
    if w.ndim != 2:
        raise ValueError(f"{name} must be a matrix of shape (d_in, d_out); got shape {w.shape}")
    if w.shape[0] != d_in:
        raise ValueError(f"{name} has shape {w.shape}; expected ({d_in}, d_out) to match the {d_in} input features")
    return w


def check_bias(name: str, b, width: int):
    """``None``, or a vector of ``width`` numbers (a bias, a gamma or a beta)."""
    if b is None:
        return None
    b = as_float_array(b, name)
    if b.shape != (width,):
        raise ValueError(f"{name} has shape {b.shape}; expected ({width},), one number per output feature")
    return b


def check_mask(mask, T_q: int, T_k: int, scores: str = "(..., T_q, T_k)"):
    """``None``, or a boolean mask whose last two axes broadcast to ``(T_q, T_k)``."""
    if mask is None:
        return None
    try:
        mask = np.asarray(mask)
    except ValueError as err:
        raise ValueError(f"mask must be a rectangular boolean array; could not convert it ({err})") from None
    if mask.dtype != np.bool_:
        raise TypeError(f"mask must be boolean with True = may attend; got dtype {mask.dtype}. "
                        "If you have a 0/1 array, use mask.astype(bool)")
    if mask.ndim < 1:
        raise ValueError("mask must have shape broadcastable to (..., T_q, T_k); got a scalar")
    shape = mask.shape
    if mask.ndim < 2:
        mask = mask.reshape((1,) * (2 - mask.ndim) + mask.shape)
    if mask.shape[-2] not in (1, T_q) or mask.shape[-1] not in (1, T_k):
        raise ValueError(f"mask of shape {shape} does not broadcast to the scores' shape {scores} = "
                         f"(..., {T_q}, {T_k}); expected its last two axes to be ({T_q} or 1, {T_k} or 1)")
    return mask


def check_same(what: str, a_name: str, a, a_axis: int, b_name: str, b, b_axis: int) -> None:
    """A ``ValueError`` unless ``a.shape[a_axis] == b.shape[b_axis]``."""
    if a.shape[a_axis] != b.shape[b_axis]:
        raise ValueError(f"{what}: {a_name} has shape {a.shape} and {b_name} has shape {b.shape}; "
                         f"expected {a_name}.shape[{a_axis}] == {b_name}.shape[{b_axis}]")


def softmax_inputs(x, axis=-1, temperature=1.0):
    """``(scores, axis, temperature)`` of :func:`~attn_helpers.core.softmax`; ``-inf`` scores are allowed."""
    temperature = as_positive_number(temperature, "temperature")
    scores = as_float_array(x, "x", min_ndim=0, allow_neg_inf=True)
    if scores.ndim == 0:
        raise ValueError("x must have at least one axis to normalise over; got a scalar (shape ())")
    axis = check_axis(axis, scores, "x")
    if temperature < 1 and scores.size:  # is tau so small that scores / tau leave the float range?
        finite = scores[np.isfinite(scores)]
        spread = float(finite.max() - finite.min()) if finite.size else 0.0
        if scores.dtype.type(temperature) == 0 or spread / temperature > float(np.finfo(scores.dtype).max):
            # Then use the tau -> 0 limit: 0 on each slice's largest score(s), -inf elsewhere, at temperature 1.
            peak = scores.max(axis=axis, keepdims=True)
            scores = np.where((scores == peak) & (peak > -np.inf), 0, -np.inf).astype(scores.dtype)
            temperature = 1.0
    return scores, axis, temperature


def padding_inputs(lengths, T):
    """``(lengths, T)`` of :func:`~attn_helpers.core.padding_mask`: lengths in ``[0, T]``."""
    T = as_positive_int(T, "T", allow_zero=True)
    try:
        lengths = np.asarray(lengths)
    except ValueError:  # ragged nested lists
        raise TypeError(f"lengths must be a 1-D array of integers, one per sequence; got {lengths!r}") from None
    if lengths.dtype.kind not in "iu" or lengths.ndim != 1:
        raise TypeError(f"lengths must be a 1-D array of integers; got {lengths.dtype} with shape {lengths.shape}")
    if (lengths < 0).any() or (lengths > T).any():
        raise ValueError(f"lengths must lie in [0, T={T}]; got {lengths.tolist()}")
    return lengths, T


def cosine_inputs(a, b):
    """``(a, b)`` of :func:`~attn_helpers.core.cosine_similarity`: the same ``d``, broadcasting batch axes."""
    a, b = as_float_array(a, "a"), as_float_array(b, "b")
    check_same("a and b need the same number of features", "a", a, -1, "b", b, -1)
    try:
        np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ValueError(f"a of shape {a.shape} and b of shape {b.shape} do not broadcast") from None
    return a, b


def entropy_inputs(weights, axis=-1):
    p = as_float_array(weights, "weights")
    return p, check_axis(axis, p, "weights")


def _queries_and_keys(queries, keys):
    q = as_float_array(queries, "queries", min_ndim=2)
    k = as_float_array(keys, "keys", min_ndim=2)
    check_same("queries and keys need the same d_k", "queries", q, -1, "keys", k, -1)
    return q, k


def scores_inputs(queries, keys):
    """``(queries, keys)`` of :func:`~attn_helpers.core.attention_scores`."""
    q, k = _queries_and_keys(queries, keys)
    batch_shape("attention_scores", queries=q, keys=k)
    return q, k


def sdpa_inputs(queries, keys, values, mask=None, scale=None, bias=None):
    """``(queries, keys, values, mask, scale, bias)`` of :func:`~attn_helpers.core.scaled_dot_product_attention`."""
    q, k = _queries_and_keys(queries, keys)
    if scale is None and q.shape[-1] == 0:
        raise ValueError(f"queries of shape {q.shape} and keys of shape {k.shape} have d_k = 0 features: the scale "
                         "1/sqrt(d_k) is undefined; expected d_k >= 1 (the last axis)")
    v = as_float_array(values, "values", min_ndim=2)
    check_same("keys and values need the same T_k (one value per key)", "keys", k, -2, "values", v, -2)
    mask = check_mask(mask, q.shape[-2], k.shape[-2])
    batch_shape("scaled_dot_product_attention", queries=q, keys=k, values=v,
                **({} if mask is None else {"mask": mask}))
    scale = None if scale is None else as_number(scale, "scale")
    return q, k, v, mask, scale, check_score_bias(bias, (*q.shape[:-1], k.shape[-2]), "(..., T_q, T_k)")


def check_score_bias(bias, scores: tuple, names: str):
    """``None``, or a float array (``-inf`` allowed) that broadcasts to the scores' shape ``scores``."""
    if bias is None:
        return None
    bias = as_float_array(bias, "bias", min_ndim=0, allow_neg_inf=True)
    try:
        np.broadcast_shapes(bias.shape, scores)
    except ValueError:
        raise ValueError(f"bias of shape {bias.shape} does not broadcast to the scores' shape {names} = "
                         f"{scores}; it is added to the scores before the softmax") from None
    return bias


def record_input(record):
    """``None``, or the dict a forward pass writes its intermediate values into."""
    if record is not None and not isinstance(record, dict):
        raise TypeError(f"record must be a dict (it gets the forward's intermediate values, for a backward pass) or "
                        f"None; got {type(record).__name__} {record!r:.60}")
    return record


def dropout_inputs(dropout, rng):
    """``dropout`` a number in [0, 1) (None: 0, no dropout) and ``rng`` a Generator (a seed, or None for ``SEED``)."""
    dropout = 0.0 if dropout is None else dropout
    if not 0 <= as_number(dropout, "dropout", range_="a number in [0, 1)") < 1:
        raise ValueError(f"dropout must be a number in [0, 1), the probability of dropping each value; got {dropout!r}")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(as_positive_int(SEED if rng is None else rng, "rng", allow_zero=True))
    return float(dropout), rng


def tiled_inputs(queries, keys, values, mask=None, scale=None, block_size=128, *, causal=False, on_tile=None):
    """:func:`sdpa_inputs` for :func:`~attn_helpers.efficient.tiled_attention`, with queries, keys, values (in the
    results' dtype) and the mask broadcast to one batch shape (views: nothing is copied), and the tile size."""
    q, k, v, mask, scale, _ = sdpa_inputs(queries, keys, values, mask, scale)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2], () if mask is None else mask.shape[:-2])
    dtype = np.result_type(q, k, v)
    q, k, v = (np.broadcast_to(a.astype(dtype, copy=False), batch + a.shape[-2:]) for a in (q, k, v))
    mask = None if mask is None else np.broadcast_to(mask, batch + (q.shape[-2], k.shape[-2]))
    on_tile = hook(on_tile, "on_tile", "on_tile(rows, cols, m, l, acc), called after each tile")
    return q, k, v, mask, scale, as_positive_int(block_size, "block_size"), as_flag(causal, "causal"), on_tile


def repeat_kv_heads_inputs(x, num_heads):
    """``(x, num_heads)`` of :func:`~attn_helpers.kv_cache.repeat_kv_heads`: its key/value heads divide num_heads."""
    x = as_float_array(x, "x", min_ndim=3)
    num_heads = as_positive_int(num_heads, "num_heads")
    if num_heads % x.shape[-3]:
        raise ValueError(f"x has shape {x.shape}: its {x.shape[-3]} key/value heads (axis -3 of (..., h_kv, T, d_h)) "
                         f"must divide num_heads={num_heads}")
    return x, num_heads


def heads_inputs(x, num_heads):
    """``(x, num_heads)`` of :func:`~attn_helpers.multihead.split_heads`: ``num_heads`` divides ``d_model``."""
    x = as_float_array(x, "x", min_ndim=2)
    num_heads = as_positive_int(num_heads, "num_heads")
    if x.shape[-1] % num_heads:
        raise ValueError(f"d_model must be divisible by num_heads: x has shape {x.shape} (d_model={x.shape[-1]}) "
                         f"and num_heads={num_heads}; expected d_model % num_heads == 0")
    return x, num_heads


def projection_inputs(x, W_q, W_k, W_v, W_o, num_heads, biases=None, memory=None, num_kv_heads=None):
    """The projections of an attention layer, checked against ``x`` (keys and values: against ``memory``, if any):
    ``W_q (d, h d_h)``; ``W_k (d_kv, h_kv d_h)`` and ``W_v (d_kv, h_kv d_v)``, ``h_kv`` (``num_kv_heads``, or read
    off ``W_k``'s width) dividing ``h``; ``W_o (h d_v, d_out)``; ``biases`` None or ``(b_q, b_k, b_v, b_o)``."""
    x = as_float_array(x, "x", min_ndim=2)
    source = x if memory is None else as_float_array(memory, "memory", min_ndim=2)
    num_heads = as_positive_int(num_heads, "num_heads")
    W_q = check_weight("W_q", W_q, x.shape[-1])
    W_k, W_v = check_weight("W_k", W_k, source.shape[-1]), check_weight("W_v", W_v, source.shape[-1])
    if W_q.shape[1] % num_heads:
        raise ValueError(f"W_q has shape {W_q.shape}: its output width {W_q.shape[1]} must be divisible by "
                         f"num_heads={num_heads}")
    head_dim = W_q.shape[1] // num_heads
    if num_kv_heads is None:  # read off W_k's width: h_kv = h is multi-head attention
        kv_heads = W_k.shape[1] // max(head_dim, 1)
        if W_k.shape[1] != kv_heads * head_dim or not kv_heads or num_heads % kv_heads:
            raise ValueError(f"W_q has shape {W_q.shape} and W_k has shape {W_k.shape}: with num_heads={num_heads} "
                             f"(d_h = {head_dim}), W_k's width must be h_kv * d_h for a number of key/value heads "
                             "h_kv that divides num_heads (h_kv = num_heads: multi-head attention)")
    else:
        kv_heads = as_positive_int(num_kv_heads, "num_kv_heads")
        if num_heads % kv_heads:
            raise ValueError(f"num_kv_heads={kv_heads} must divide num_heads={num_heads}: each key/value head "
                             "serves a group of num_heads / num_kv_heads query heads")
        if W_k.shape[1] != kv_heads * head_dim:
            raise ValueError(f"W_k has shape {W_k.shape}; expected ({source.shape[-1]}, num_kv_heads * d_h) = "
                             f"({source.shape[-1]}, {kv_heads * head_dim})")
    W_o = check_weight("W_o", W_o, W_v.shape[1] * (num_heads // kv_heads))
    if biases is not None:
        if not isinstance(biases, (tuple, list)) or len(biases) != 4:
            raise TypeError(f"biases must be None or (b_q, b_k, b_v, b_o), each None or a vector; got {biases!r:.80}")
        biases = tuple(check_bias(name, b, w.shape[1]) for name, b, w in
                       zip(("b_q", "b_k", "b_v", "b_o"), biases, (W_q, W_k, W_v, W_o)))
    return x, W_q, W_k, W_v, W_o, num_heads, biases, (None if memory is None else source)


def _is_cache(obj):
    return hasattr(obj, "length") and callable(getattr(obj, "append", None))


def check_kv_cache(kv_cache):
    """``None``, or a cache with ``length`` and ``append(keys, values)`` (a :class:`~attn_helpers.kv_cache.KVCache`)."""
    if kv_cache is not None and not _is_cache(kv_cache):
        raise TypeError(f"kv_cache must be a KVCache (attn_helpers.kv_cache) or None; got {type(kv_cache).__name__}")
    return kv_cache


def multi_head_inputs(x, W_q, W_k, W_v, W_o, num_heads, mask=None, biases=None, kv_cache=None, rotate=None,
                      bias=None, scale=None):
    """The inputs of :func:`~attn_helpers.multihead.multi_head_attention`, in its order."""
    x, W_q, W_k, W_v, W_o, num_heads, biases, _ = projection_inputs(x, W_q, W_k, W_v, W_o, num_heads, biases)
    kv_cache = check_kv_cache(kv_cache)
    T, T_k = x.shape[-2], x.shape[-2] + (0 if kv_cache is None else kv_cache.length)  # cached keys, then x's
    mask = check_mask(mask, T, T_k, "(..., T, T)" if T_k == T else "(..., T, T_past + T)")
    scores = (*x.shape[:-2], num_heads, T, T_k)
    return (x, W_q, W_k, W_v, W_o, num_heads, mask, biases, kv_cache, hook(rotate, "rotate", "rotate(x, positions) "
            "-> x turned by position (such as attn_helpers.positions.rope)"),
            check_score_bias(bias, scores, "(..., h, T, T_k)"), None if scale is None else as_number(scale, "scale"))


def cross_attention_inputs(x, memory, W_q, W_k, W_v, W_o, num_heads, mask=None, b_q=None, b_k=None, b_v=None,
                           b_o=None):
    """The inputs of :func:`~attn_helpers.block.cross_attention`, in its order."""
    if memory is None:
        raise TypeError("memory must be an array of shape (..., T_k, d_memory), the sequence that is looked up")
    x, W_q, W_k, W_v, W_o, num_heads, biases, memory = projection_inputs(
        x, W_q, W_k, W_v, W_o, num_heads, (b_q, b_k, b_v, b_o), memory, num_heads)
    mask = check_mask(mask, x.shape[-2], memory.shape[-2])
    return (x, memory, W_q, W_k, W_v, W_o, num_heads, mask, *biases)


def training_attention_inputs(x, W_q, W_k, W_v, W_o, num_heads, mask=None, biases=None, rotate=None, bias=None,
                              scale=None, record=None, dropout=0.0, rng=None):
    """The inputs of :func:`~attn_helpers.backprop.attention_layer_forward`: those of multi-head attention (no
    cache), then the ``record`` (a dict), ``dropout`` and ``rng``."""
    x, W_q, W_k, W_v, W_o, num_heads, mask, biases, _, rotate, bias, scale = multi_head_inputs(
        x, W_q, W_k, W_v, W_o, num_heads, mask, biases, None, rotate, bias, scale)
    return (x, W_q, W_k, W_v, W_o, num_heads, mask, biases, rotate, bias, scale, record_input(record),
            *dropout_inputs(dropout, rng))


def eps_input(eps) -> float:
    return as_positive_number(eps, "eps", " (it keeps a constant token from dividing by 0)")


def layer_norm_inputs(x, gamma=None, beta=None, eps=1e-5):
    """``(x, gamma, beta, eps)`` of :func:`~attn_helpers.block.layer_norm`."""
    x = as_float_array(x, "x")
    return x, check_bias("gamma", gamma, x.shape[-1]), check_bias("beta", beta, x.shape[-1]), eps_input(eps)


#: The activations of the feed-forward network, by name (``block.ACTIVATIONS`` maps them to functions).
ACTIVATIONS = ("gelu", "gelu_tanh", "relu")


def activation_input(activation):
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(f"activation must be one of {sorted(ACTIVATIONS)}; got {activation!r}")
    return activation


def gelu_inputs(x, approximate=False):
    return as_float_array(x, "x", min_ndim=0), as_flag(approximate, "approximate")


def feed_forward_inputs(x, W_1, W_2, b_1=None, b_2=None, activation="gelu"):
    """``(x, W_1, W_2, b_1, b_2, activation)`` of :func:`~attn_helpers.block.feed_forward`."""
    x = as_float_array(x, "x")
    W_1 = check_weight("W_1", W_1, x.shape[-1])
    W_2 = check_weight("W_2", W_2, W_1.shape[1])
    b_1, b_2 = check_bias("b_1", b_1, W_1.shape[1]), check_bias("b_2", b_2, W_2.shape[1])
    return x, W_1, W_2, b_1, b_2, activation_input(activation)


def merge_heads_input(x):
    return (as_float_array(x, "x", min_ndim=3),)


def init_block_params_inputs(d_model, num_heads, d_ff=None, rng=None, bias=False, dtype=np.float32):
    """``(d_model, num_heads, d_ff, rng, bias, dtype)`` of :func:`~attn_helpers.block.init_block_params`: sizes
    positive, ``rng`` a Generator or a seed (``num_heads`` is checked by the block it makes)."""
    d_model = as_positive_int(d_model, "d_model")
    d_ff = None if d_ff is None else as_positive_int(d_ff, "d_ff")
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(as_positive_int(SEED if rng is None else rng, "rng", allow_zero=True))
    return d_model, num_heads, d_ff, rng, as_flag(bias, "bias"), dtype


def block_params_input(params):
    """Check a :class:`~attn_helpers.block.BlockParams` once, when it is made: every array's shape against
    ``d_model``, ``d_ff`` and the key width (narrower in notebook 13's grouped-query blocks), ``num_heads``,
    ``eps`` and the activation; the arrays are stored as float arrays."""
    def put(name, value):
        object.__setattr__(params, name, value)

    d_model = as_float_array(params.W_q, "W_q", min_ndim=2).shape[0]
    put("num_heads", as_positive_int(params.num_heads, "num_heads"))
    if d_model % params.num_heads:
        raise ValueError(f"d_model={d_model} must be divisible by num_heads={params.num_heads}")
    kv_width = params.key_width  # d_model (notebook 13's grouped-query blocks have narrower keys and values)
    d_ff = as_float_array(params.W_1, "W_1", min_ndim=2).shape[-1]
    widths = {"W_q": d_model, "W_k": kv_width, "W_v": kv_width, "W_o": d_model, "W_1": d_ff, "W_2": d_model}
    for name, width in widths.items():
        rows = d_ff if name == "W_2" else d_model
        put(name, check_weight(name, getattr(params, name), rows))
        if getattr(params, name).shape[1] != width:
            raise ValueError(f"{name} has shape {getattr(params, name).shape}; expected ({rows}, {width})")
    norms = dict.fromkeys(("norm_1_gamma", "norm_1_beta", "norm_2_gamma", "norm_2_beta"), d_model)
    for name, width in {**norms, **{"b" + w[1:]: width for w, width in widths.items()}}.items():
        put(name, check_bias(name, getattr(params, name), width))  # b_k, b_v: kv_width; b_1: d_ff
    put("eps", eps_input(params.eps))
    activation_input(params.activation)


# --- positions (notebook 09) ------------------------------------------------------------------------------------

#: The most numbers :func:`~attn_helpers.positions.positional_encoding` makes (400 MB in float32): a larger table is
#: a slip.
MAX_TABLE = 10**8


def frequencies_inputs(d_model, base=10000.0):
    return as_positive_int(d_model, "d_model"), as_positive_number(base, "base")


def positional_encoding_inputs(T, d_model, dtype=np.float32, base=10000.0):
    """``(T, d_model, dtype, base)`` of :func:`~attn_helpers.positions.positional_encoding`: a table of at most
    :data:`MAX_TABLE` numbers."""
    T, d_model = as_positive_int(T, "T", allow_zero=True), as_positive_int(d_model, "d_model")
    dtype = as_float_dtype(dtype)
    if T * d_model > MAX_TABLE:
        raise ValueError(f"positional_encoding(T={T}, d_model={d_model}) would make {T * d_model:,} numbers "
                         f"({T * d_model * dtype.itemsize / 2**30:.1f} GiB); at most {MAX_TABLE:,}: "
                         "make the table for the positions you use")
    return T, d_model, dtype, as_positive_number(base, "base")


def learned_positions_inputs(table, T):
    """``(table, T)`` of :func:`~attn_helpers.positions.learned_positions`: a ``(max_len, d_model)`` table with a
    row for each of the ``T`` positions."""
    table = as_float_array(table, "table", min_ndim=2)
    if table.ndim != 2:
        raise ValueError(f"table must have shape (max_len, d_model); got shape {table.shape}")
    T = as_positive_int(T, "T", allow_zero=True)
    if T > table.shape[0]:
        raise ValueError(f"T = {T} positions, but the table was trained for max_len = {table.shape[0]} (shape "
                         f"{table.shape}): positions {table.shape[0]} to {T - 1} have no learned vector")
    return table, T


def rope_inputs(x, positions=None, base=10000.0):
    """``(x, positions, base)`` of :func:`~attn_helpers.positions.rope`: an even number of features, one position
    per row (float64), broadcasting against ``x``'s rows."""
    x = as_float_array(x, "x", min_ndim=2)
    T = x.shape[-2]
    if x.shape[-1] % 2:
        raise ValueError(f"x must have an even number of features (pairs are rotated); got shape {x.shape}")
    if positions is not None:
        positions = as_float_array(positions, "positions").astype(np.float64)
        if positions.shape[-1] != T:
            raise ValueError(f"positions must have one entry per row of x: x has shape {x.shape} (T = {T}) and "
                             f"positions has shape {positions.shape}; expected positions.shape[-1] == {T}")
        try:
            np.broadcast_shapes(positions.shape, x.shape[:-1])
        except ValueError:
            raise ValueError(f"positions of shape {positions.shape} do not broadcast to x's rows "
                             f"{x.shape[:-1]}") from None
    return x, positions, as_positive_number(base, "base")


def alibi_slopes_inputs(num_heads):
    return (as_positive_int(num_heads, "num_heads"),)


def alibi_bias_inputs(T, num_heads):
    return as_positive_int(T, "T", allow_zero=True), as_positive_int(num_heads, "num_heads")


def as_order(order, name="order"):
    """``order`` as a 1-D int array that is a permutation of 0..T-1, or a clear error."""
    arr = np.asarray(order)
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise TypeError(f"{name} must be a 1-D array of integers (a permutation of 0..T-1); "
                        f"got dtype {arr.dtype} with shape {arr.shape}")
    if not np.array_equal(np.sort(arr), np.arange(arr.size)):
        raise ValueError(f"{name} must contain each of 0..{arr.size - 1} exactly once; got {arr.tolist()}")
    return arr.astype(np.intp)


def order_input(order):
    return (as_order(order),)


def order_sensitivity_inputs(attend, X, order):
    """``(attend, X, order)`` of :func:`~attn_helpers.positions.order_sensitivity`: one entry of ``order`` per
    token of ``X``; ``attend`` a function (it runs as a direct call would, see :func:`hook`)."""
    attend = hook(attend, "attend", "attend(X) -> outputs of shape (T, d_out)")
    if attend is None:
        raise TypeError("attend must be a function attend(X) -> outputs of shape (T, d_out); got None")
    X, order = as_float_array(X, "X", min_ndim=2), as_order(order)
    if order.size != X.shape[-2]:
        raise ValueError(f"order must have one entry per token: X has shape {X.shape}, order has {order.size}")
    return attend, X, order


# --- the online softmax (notebook 13) -------------------------------------------------------------------------

def online_softmax_inputs(x, block_size=1):
    """``(x, block_size)`` of the online softmax: scores (``-inf`` allowed) with at least one on the last axis."""
    scores = as_float_array(x, "x", allow_neg_inf=True)
    block_size = as_positive_int(block_size, "block_size")
    if scores.shape[-1] == 0:
        raise ValueError(f"x must have at least one entry along its last axis; got shape {scores.shape}")
    return scores, block_size


def tiled_steps_inputs(queries, keys, values, mask=None, scale=None, block_size=2):
    """The inputs of :func:`~attn_helpers.online.tiled_attention_steps`: those of attention, for one sequence."""
    shapes = [np.shape(a) for a in (queries, keys, values)]
    queries, keys, values, mask, scale, block_size, _, _ = tiled_inputs(queries, keys, values, mask, scale, block_size)
    if queries.ndim != 2:  # (in the results' dtype, the mask broadcast to (T_q, T_k), by tiled_inputs)
        raise ValueError(f"tiled_attention_steps takes one sequence: queries, keys and values of shape (T, d); got "
                         f"{', '.join(map(str, shapes))}")
    return queries, keys, values, mask, scale, block_size


# --- the decoders' caches (for gpt.py and llm.py) ----------------------------------------------------------------

def check_caches(cache, num_layers: int, made_by: str = "model.empty_cache()"):
    """``cache`` if it is a list of ``num_layers`` KV caches (one per block, :func:`check_kv_cache`) holding the same
    number of positions, else a ``TypeError``/``ValueError`` that says where a right one comes from (``made_by``)."""
    if not isinstance(cache, list) or len(cache) != num_layers or not all(_is_cache(layer) for layer in cache):
        got = type(cache).__name__ if not isinstance(cache, list) else (
            f"a list of {len(cache)}: " + ", ".join(sorted({type(layer).__name__ for layer in cache})))
        raise TypeError(f"cache must be a list of {num_layers} KVCache, one per block ({made_by}); got {got}")
    lengths = {layer.length for layer in cache}
    if len(lengths) != 1:
        raise ValueError(f"cache: its layers hold different numbers of positions {sorted(lengths)}")
    return cache
