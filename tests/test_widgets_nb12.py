"""Notebook 12's head view at its edges: texts longer than the model takes, characters the fonts lack."""

import unicodedata

import pytest
from matplotlib import font_manager

from attn_helpers import plotting
from attn_helpers.pretrained import MAX_TOKENS, load_minilm
from attn_helpers.widgets import nb12


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.mark.parametrize("text", ["word " * 300, "中" * 400, "a, " * 200 + "x" * 500],
                         ids=["300 words", "400 CJK characters", "punctuation then one long word"])
def test_a_text_longer_than_the_model_takes_is_cut_with_a_note(model, text, capsys):
    shown, note = nb12.fit_text(model, text)
    tokens = model.tokenizer.tokenize(shown)
    assert text.startswith(shown) and len(tokens) <= MAX_TOKENS
    assert len(tokens) >= MAX_TOKENS - 2 or shown.endswith(",") or text[len(shown)] == " "  # as much as fits
    assert f"This text has {len(model.tokenizer.tokenize(text))} tokens; the model takes at most 256" in note
    nb12.head_view(sentence=text).static()  # draws (the model alone refuses such a text)
    assert "the model takes at most 256, so the view shows its first" in capsys.readouterr().out


def test_a_text_that_fits_is_not_cut(model):
    text = "word " * 254  # 254 words + [CLS] + [SEP] = 256 tokens
    assert nb12.fit_text(model, text) == (text, "")


def test_cjk_text_without_a_cjk_font_draws_boxes_and_says_so(monkeypatch, capsys):
    monkeypatch.setattr(plotting, "FALLBACK_FONTS", ())  # as on a machine with no CJK font
    plotting._fonts_for.cache_clear()
    try:
        nb12.head_view(sentence="我喜欢中文").static()  # warnings are errors: no missing-glyph warning escapes
    finally:
        plotting._fonts_for.cache_clear()
    out = capsys.readouterr().out
    assert "The figure's fonts have no glyph for" in out and "中" in out and plotting.NO_GLYPH in out


def _stix_only_character():
    """A character that STIX (shipped with matplotlib) draws and the default DejaVu Sans does not."""
    dejavu = plotting._charmap(font_manager.findfont(font_manager.FontProperties(family="DejaVu Sans")))
    stix = plotting._charmap(font_manager.findfont(font_manager.FontProperties(family="STIXGeneral")))
    return next(chr(c) for c in sorted(stix - dejavu) if unicodedata.category(chr(c))[0] in "LSN")


def test_characters_the_default_font_lacks_come_from_an_installed_font(monkeypatch):
    monkeypatch.setattr(plotting, "FALLBACK_FONTS", ("STIXGeneral",))  # stands in for a CJK font
    plotting._fonts_for.cache_clear()
    try:
        char = _stix_only_character()
        labels, families, note = nb12._drawable(["[CLS]", char, "[SEP]"])
        assert labels == ["[CLS]", char, "[SEP]"] and families[-1] == "STIXGeneral" and note == ""
        fig = nb12.head_view(sentence="a").figure()
        nb12._show_tokens(fig.handles["labels"], labels, families)
        fig.canvas.draw()  # warnings are errors: the glyph is found in the fallback font
    finally:
        plotting._fonts_for.cache_clear()


def test_the_static_view_takes_the_notebooks_word_sentence(capsys):
    """The text box says "sentence": so do head_view and its static and live calls."""
    explorer = nb12.head_view(sentence="A dog barked.")
    explorer.static(sentence="The cat sat.", layer=1, head=8)
    assert "[CLS] the cat sat . [SEP]" in capsys.readouterr().out
    assert "a dog barked" in explorer.figure().note
