"""show_source (attn_helpers.source): a helper's source as a learner reads it, parts named, never searched for."""

from __future__ import annotations

import inspect

import pytest

from attn_helpers.backprop import block_backward
from attn_helpers.core import softmax
from attn_helpers.multihead import attention_heads
from attn_helpers.online import online_update, tiled_attention
from attn_helpers.source import show_source, source_names, source_text


def test_the_decorator_line_is_left_out_and_the_rest_is_the_package_s_own_source():
    text = source_text(tiled_attention)
    assert text.startswith("def tiled_attention(") and "@checked" not in text
    assert text in inspect.getsource(tiled_attention)  # the file's text itself, from the def down


def test_start_and_end_are_a_step_label_an_assigned_name_or_the_body():
    steps = source_text(attention_heads, start="1", end="2c")
    assert steps.lstrip().startswith("# 1. Project") and "kv_cache.append" in steps and "2c." not in steps
    assert source_text(online_update, start="m_new").lstrip().startswith("m_new = np.maximum")
    body = source_text(block_backward, start="body")
    assert body.lstrip().startswith("p, drop_1, drop_2 = params") and '"""' not in body


def test_a_part_starts_with_the_comment_right_above_it():
    assert source_text(softmax, start="peak").lstrip().startswith("# Subtract each slice's largest score")


def test_an_unknown_name_says_which_names_there_are():
    with pytest.raises(ValueError, match=r"start='m_old': online_update has no step label or assigned name 'm_old'; "
                                         r"it has 'body', 'm_new'"):
        source_text(online_update, start="m_old")
    with pytest.raises(ValueError, match="comes before"):
        source_text(online_update, start="rescale", end="m_new")


def test_a_class_is_shown_from_a_field_it_names():
    from attn_helpers.block import BlockParams

    assert source_text(BlockParams, start="W_q").lstrip().startswith("W_q: np.ndarray")
    assert "W_q" in source_names(BlockParams)


def test_markup_left_in_a_docstring_is_made_plain():
    def helper():
        r"""Uses :func:`~attn_helpers.core.softmax` and :math:`\sqrt{d_k}`.

        .. math:: a = b
        """

    text = source_text(helper)
    assert "`softmax`" in text and r"\sqrt{d_k}" in text and ":math:" not in text and ".. math::" not in text


def test_show_source_prints_what_source_text_returns(capsys):
    show_source(online_update, start="m_new", end="shift")
    assert capsys.readouterr().out == source_text(online_update, start="m_new", end="shift") + "\n"


@pytest.mark.parametrize("module", ["core", "block", "multihead", "kv_cache", "backprop", "positions", "online",
                                    "efficient"])
def test_the_docstrings_learners_read_carry_no_maths_markup(module):
    """``f??`` shows the file itself: its maths is plain Unicode (``softmax(Q Kᵀ / √d_k) V``), not reST."""
    import importlib

    source = inspect.getsource(importlib.import_module(f"attn_helpers.{module}"))
    assert ".. math::" not in source and ":math:`" not in source
