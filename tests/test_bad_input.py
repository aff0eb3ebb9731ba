"""Bad or unusual input on the API, found by probing it (issue 12, section 4).

Each gets either the right answer or a clear ``TypeError``/``ValueError`` that names the
argument, and never a warning or an error from deep inside numpy.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attn_helpers as A


@pytest.fixture(autouse=True)
def _no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


X = np.arange(12, dtype=np.float32).reshape(3, 4) / 10


@pytest.mark.parametrize("scale", [np.float32(0.5), np.float16(0.5), np.float16(60000.0)])
def test_a_float32_or_float16_scale_gives_no_overflow_warning(scale):
    context, weights = A.scaled_dot_product_attention(X, X, X, scale=scale)
    assert np.isfinite(weights).all() and np.allclose(weights.sum(-1), 1)


def test_softmax_over_an_empty_axis_is_empty():
    out = A.softmax(np.zeros((3, 0), np.float32))
    assert out.shape == (3, 0) and out.dtype == np.float32


@pytest.mark.parametrize("axis", [None, 1.0, "0", True])
def test_softmax_axis_must_be_an_integer(axis):
    with pytest.raises(TypeError, match="axis must be an integer"):
        A.softmax([1.0, 2.0], axis=axis)


def test_entropy_axis_out_of_range_is_named():
    with pytest.raises(ValueError, match=r"axis 5 is out of range for weights of shape \(2,\)"):
        A.entropy([0.5, 0.5], axis=5)


@pytest.mark.parametrize(("name", "call"), [
    ("scale", lambda: A.scaled_dot_product_attention(X, X, X, scale=10**400)),
    ("temperature", lambda: A.softmax([1.0, 2.0], temperature=10**400)),
])
def test_numbers_beyond_float64_are_named(name, call):
    with pytest.raises(ValueError, match=f"{name} must be .*beyond float64's range"):
        call()


def test_np_matrix_is_treated_as_an_array():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)  # numpy's own, on making a matrix
        matrix = np.matrix([[0.0, np.log(3.0)]])
    weights = A.softmax(matrix)
    assert type(weights) is np.ndarray
    np.testing.assert_allclose(weights, [[0.25, 0.75]])


def test_an_object_whose_array_conversion_fails_gets_a_type_error():
    class Tensor:
        def __array__(self, *args, **kwargs):
            raise RuntimeError("tensor is on another device")

    with pytest.raises(TypeError, match="queries could not be turned into a numpy array"):
        A.scaled_dot_product_attention(Tensor(), X, X)


def test_ragged_padding_lengths_are_named():
    with pytest.raises(TypeError, match="lengths must be a 1-D array of integers"):
        A.padding_mask([[1, 2], [3]], 4)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("size", [1e20, 1e-30])
def test_cosine_similarity_neither_overflows_nor_underflows(size, dtype):
    a = np.array([size, size], dtype)
    b = np.array([size, 0], dtype)
    np.testing.assert_allclose(A.cosine_similarity(a, b), np.sqrt(0.5), rtol=1e-6)
    np.testing.assert_allclose(A.cosine_similarity(a, a), 1.0, rtol=1e-6)


def test_cosine_of_a_zero_vector_is_zero():
    assert A.cosine_similarity([0.0, 0.0], [1.0, 2.0]) == 0


def test_merge_heads_of_split_heads_is_documented_to_share_memory():
    x = np.arange(8.0).reshape(2, 4)
    merged = A.merge_heads(A.split_heads(x, 2))
    np.testing.assert_array_equal(merged, x)
    assert "view" in A.merge_heads.__doc__ and "split_heads" in A.merge_heads.__doc__
