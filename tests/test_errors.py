"""Every bad input gets a clear error that names the argument and the shapes involved."""

from __future__ import annotations

import numpy as np
import pytest

import attn_helpers as A

rng = np.random.default_rng(0)
Q = rng.standard_normal((4, 8), dtype=np.float32)
K = rng.standard_normal((5, 8), dtype=np.float32)
V = rng.standard_normal((5, 3), dtype=np.float32)
W = rng.standard_normal((8, 8), dtype=np.float32)


@pytest.mark.parametrize("temperature", [0, -1.0, 0.0, float("nan"), float("inf")])
def test_softmax_bad_temperature(temperature):
    with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
        A.softmax([1.0, 2.0], temperature=temperature)


def test_softmax_temperature_not_a_number():
    with pytest.raises(TypeError, match="temperature must be a positive number; got str"):
        A.softmax([1.0, 2.0], temperature="hot")


def test_dk_mismatch_names_both_shapes():
    with pytest.raises(ValueError, match=r"queries has shape \(4, 8\) and keys has shape \(5, 7\)") as info:
        A.scaled_dot_product_attention(Q, K[:, :7], V)
    assert "same d_k" in str(info.value)
    with pytest.raises(ValueError, match=r"queries has shape \(4, 8\) and keys has shape \(5, 7\)"):
        A.attention_scores(Q, K[:, :7])


def test_tk_mismatch_between_keys_and_values():
    with pytest.raises(ValueError, match=r"keys has shape \(5, 8\) and values has shape \(4, 3\)") as info:
        A.scaled_dot_product_attention(Q, K, V[:4])
    assert "same T_k" in str(info.value)


def test_d_model_not_divisible_by_num_heads():
    with pytest.raises(ValueError, match=r"d_model must be divisible by num_heads.*\(4, 8\).*num_heads=3"):
        A.split_heads(Q, 3)
    with pytest.raises(ValueError, match=r"W_q has shape \(8, 8\).*divisible by num_heads=3"):
        A.multi_head_attention(Q, W, W, W, W, num_heads=3)


def test_mask_that_does_not_broadcast():
    with pytest.raises(ValueError, match=r"mask of shape \(4, 4\) does not broadcast.*\(\.\.\., 4, 5\)"):
        A.scaled_dot_product_attention(Q, K, V, mask=np.ones((4, 4), bool))
    with pytest.raises(ValueError, match=r"leading \(batch\) axes do not broadcast.*mask \(3, 4, 5\)"):
        A.scaled_dot_product_attention(Q[None].repeat(2, 0), K, V, mask=np.ones((3, 4, 5), bool))


def test_mask_must_be_boolean():
    with pytest.raises(TypeError, match="mask must be boolean with True = may attend; got dtype float64"):
        A.scaled_dot_product_attention(Q, K, V, mask=np.ones((4, 5)))


@pytest.mark.parametrize("name", ["queries", "keys", "values"])
def test_nan_input(name):
    args = {"queries": Q.copy(), "keys": K.copy(), "values": V.copy()}
    args[name][0, 0] = np.nan
    with pytest.raises(ValueError, match=f"{name} contains NaN"):
        A.scaled_dot_product_attention(**args)


def test_nan_in_softmax_and_mha():
    with pytest.raises(ValueError, match="x contains NaN"):
        A.softmax([1.0, np.nan])
    x = Q.copy()
    x[1, 1] = np.nan
    with pytest.raises(ValueError, match=r"x contains NaN \(shape \(4, 8\)\)"):
        A.multi_head_attention(x, W, W, W, W, num_heads=2)


@pytest.mark.parametrize("bad", [None, "abc", [["a", "b"]], {"x": 1}, np.array([True, False])])
def test_non_numeric_input_is_a_type_error(bad):
    with pytest.raises(TypeError, match="must be numeric"):
        A.softmax(bad)
    with pytest.raises(TypeError, match="queries must be numeric"):
        A.scaled_dot_product_attention(bad, K, V)


def test_ragged_input():
    with pytest.raises(ValueError, match="x must be a rectangular array of numbers"):
        A.softmax([[1.0, 2.0], [3.0]])


def test_too_few_axes():
    with pytest.raises(ValueError, match=r"queries must have shape \(\.\.\., T, d\); got shape \(8,\)"):
        A.scaled_dot_product_attention(Q[0], K, V)


def test_weight_shapes_in_multi_head_attention():
    with pytest.raises(ValueError, match=r"W_k has shape \(7, 8\); expected \(8, d_out\)"):
        A.multi_head_attention(Q, W, W[:7], W, W, num_heads=2)
    with pytest.raises(ValueError, match=r"W_o has shape \(8, 8\); expected \(4, d_out\)"):
        A.multi_head_attention(Q, W, W, W[:, :4], W, num_heads=2)


def test_bad_integers():
    with pytest.raises(TypeError, match="T must be an integer; got float"):
        A.causal_mask(3.0)
    with pytest.raises(ValueError, match="T must be >= 0; got -1"):
        A.causal_mask(-1)
    with pytest.raises(ValueError, match="num_heads must be >= 1; got 0"):
        A.split_heads(Q, 0)
    with pytest.raises(ValueError, match="lengths must lie in"):
        A.padding_mask([5], 3)


def test_a_missing_or_unknown_argument_names_the_function_and_its_signature():
    x = np.ones((3, 4))
    with pytest.raises(TypeError, match=r"scaled_dot_product_attention\(queries, keys, values, mask=None, "
                                        r"scale=None, bias=None\): missing a required argument: 'values'"):
        A.scaled_dot_product_attention(x, x)
    with pytest.raises(TypeError, match=r"multi_head_attention\(.*\): got an unexpected keyword argument "
                                        r"'num_kv_heads'"):
        A.multi_head_attention(x, np.eye(4), np.eye(4), np.eye(4), np.eye(4), 2, num_kv_heads=1)


def test_a_check_that_takes_other_arguments_than_its_function_is_refused():
    from attn_helpers._validate import checked

    with pytest.raises(TypeError, match=r"must take body\(x, scale=None\)"):
        @checked(lambda x, scale=1.0: (x, scale))
        def body(x, scale=None):
            return x


# --- a learner's function passed as a hook gets the errors a direct call gets (issue 48) ---------------------------

def _slipped_attention(x, mask=None):
    """The slip of issue 48: queries and keys cut to different widths, then the series' attention."""
    from attn_helpers import scaled_dot_product_attention

    q, k = x[:, :4], x[:, :3]
    return scaled_dot_product_attention(q, k, x, mask)


SAME_D_K = r"queries and keys need the same d_k: queries has shape \(5, 4\) and keys has shape \(5, 3\)"


def test_the_slip_gets_the_same_named_error_called_directly_and_as_a_hook():
    from attn_helpers import init_block_params, transformer_block

    x = np.ones((5, 8))
    with pytest.raises(ValueError, match=SAME_D_K):
        _slipped_attention(x)
    with pytest.raises(ValueError, match=SAME_D_K):
        transformer_block(x, init_block_params(8, 2), attention=_slipped_attention)


def test_a_numpy_error_inside_a_hook_names_the_hook_and_what_it_was_given():
    from attn_helpers import init_block_params, transformer_block

    def attention(x, mask=None):  # the learner's own matmul, with the same slip
        return x[:, :4] @ x[:, :3].T, None

    with pytest.raises(ValueError, match=r"^your attention function raised ValueError: matmul.*called with shape "
                                         r"\(5, 8\).*expected attention\(x, mask\) -> \(out, weights\)"):
        transformer_block(np.ones((5, 8)), init_block_params(8, 2), attention=attention)


def test_every_kind_of_hook_runs_as_a_direct_call():
    from attn_helpers import multi_head_attention, rope, scaled_dot_product_attention
    from attn_helpers.efficient import tiled_attention
    from attn_helpers.positions import order_sensitivity

    x, W = np.ones((5, 8)), np.eye(8)
    with pytest.raises(ValueError, match=r"x must have an even number of features"):  # rope's own check
        multi_head_attention(x, W, W, W, W, 2, rotate=lambda heads, positions: rope(heads[..., :3], positions))
    with pytest.raises(ValueError, match=SAME_D_K):
        order_sensitivity(lambda X: scaled_dot_product_attention(X[:, :4], X[:, :3], X)[0], x, [1, 0, 2, 3, 4])

    def on_tile(rows, cols, m, l, acc):
        scaled_dot_product_attention(np.ones((5, 4)), np.ones((5, 3)), np.ones((5, 3)))

    with pytest.raises(ValueError, match=SAME_D_K):
        tiled_attention(x, x, x, block_size=2, on_tile=on_tile)


def test_the_package_s_own_hooks_are_not_wrapped():
    from attn_helpers import rope
    from attn_helpers._validate import hook

    assert hook(rope, "rotate", "") is rope and hook(None, "rotate", "") is None
    with pytest.raises(TypeError, match=r"^rotate must be a function rotate\(x, positions\)"):
        hook("rope", "rotate", "rotate(x, positions)")


def test_a_decoder_s_cache_is_checked_once_for_both_gpts():
    from attn_helpers._validate import check_caches
    from attn_helpers.kv_cache import KVCache

    caches = [KVCache(), KVCache()]
    assert check_caches(caches, 2) is caches
    with pytest.raises(TypeError, match=r"^cache must be a list of 2 KVCache, one per block \(decoder.empty_cache"):
        check_caches([KVCache()], 2, "decoder.empty_cache()")
    with pytest.raises(TypeError, match="got a list of 2: KVCache, str"):
        check_caches([KVCache(), "keys"], 2)
    caches[0].append(np.zeros((1, 2, 2)), np.zeros((1, 2, 2)))
    with pytest.raises(ValueError, match=r"hold different numbers of positions \[0, 2\]"):
        check_caches(caches, 2)
