"""Bad or unusual input on the API, found by probing it (issue 12, section 4).

Each gets either the right answer or a clear ``TypeError``/``ValueError`` that names the
argument. Exotic values (beyond 1e150, say) are not defended against: there numpy's own warning
speaks, and the tests here pin only that the answer is never silently wrong.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import attn_helpers as A
from attn_helpers.backprop import attention_backward
from attn_helpers.gpt import random_decoder
from attn_helpers.kv_cache import cache_table, kv_cache_bytes


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


def test_cosine_of_a_zero_vector_is_zero():
    assert A.cosine_similarity([0.0, 0.0], [1.0, 2.0]) == 0


def test_merge_heads_of_split_heads_is_documented_to_share_memory():
    x = np.arange(8.0).reshape(2, 4)
    merged = A.merge_heads(A.split_heads(x, 2))
    np.testing.assert_array_equal(merged, x)
    assert "view" in A.merge_heads.__doc__ and "split_heads" in A.merge_heads.__doc__


# --- issue 24: where learners slip, a clear error instead of a silent or huge result ----------
def test_a_positional_table_of_a_billion_rows_is_refused_before_it_is_allocated():
    with pytest.raises(ValueError, match=r"positional_encoding\(T=1000000000, d_model=4\) would make "
                                         r"4,000,000,000 numbers \(14\.9 GiB\)"):
        A.positional_encoding(10**9, 4)
    assert A.positional_encoding(1000, 512).shape == (1000, 512)  # a lesson-sized table is fine


def test_attention_backward_names_grad_context():
    q = np.ones((2, 3, 4))
    with pytest.raises(ValueError, match=r"grad_context has shape \(2, 3, 5\); expected the context's shape"):
        attention_backward(q, q, q, np.ones((2, 3, 5)))
    with pytest.raises(ValueError, match=r"grad_context has shape \(3, 3, 4\)"):
        attention_backward(q, q, q, np.ones((3, 3, 4)))  # a batch of 3 gradients for a batch of 2
    with pytest.raises(ValueError, match="grad_context contains NaN"):
        attention_backward(q, q, q, np.full((2, 3, 4), np.nan))


def test_random_decoder_refuses_an_integer_dtype():
    with pytest.raises(TypeError, match="dtype must be a floating-point dtype"):
        random_decoder(dtype=int)


def test_a_four_bit_cache_is_half_a_byte_per_number():
    eight_bit = kv_cache_bytes(32, 32, 128, 4096, bytes_per_number=1)
    assert kv_cache_bytes(32, 32, 128, 4096, bytes_per_number=0.5) == eight_bit / 2 == 2**29
    with pytest.raises(ValueError, match="bytes_per_number must be a finite number > 0"):
        kv_cache_bytes(32, 32, 128, 4096, bytes_per_number=-0.5)


def test_cache_table_at_zero_tokens_is_refused():
    with pytest.raises(ValueError, match="T must be >= 1"):
        cache_table(T=0)


def test_layer_norm_of_values_whose_squares_overflow_is_not_silent():
    # Beyond 1e154 the squares overflow float64: numpy says so rather than a silent row of zeros.
    with pytest.warns(RuntimeWarning, match="overflow"):
        A.layer_norm([[1e200, -1e200, 0.0]])
