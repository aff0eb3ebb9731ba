"""Byte-pair encoding: every string round-trips, merges are the most frequent pairs, the shipped merges rebuild."""

import collections
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_helpers.bpe import BPETokenizer, merge_pair, most_frequent_pair, pair_counts, pretokenize, train_bpe
from attn_helpers.gpt import WEIGHTS_PATH, corpus_split

SMALL_TEXT = corpus_split("train")[:20_000]
TOKENIZER = train_bpe(SMALL_TEXT, 300)


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_any_string_round_trips(text):
    assert TOKENIZER.decode(TOKENIZER.encode(text)) == text
    assert "".join(pretokenize(text)) == text


@pytest.mark.parametrize("text", ["🙂🚀 emoji, 👩‍👩‍👧 a family", "注意力就是你所需要的",
                                  "Ünïcödé\tand\ttabs\n\n  spaces  ", "", " ", "\x00\x01 bytes",
                                  "It is a truth universally acknowledged"])
def test_emoji_cjk_and_corner_cases_round_trip(text):
    ids = TOKENIZER.encode(text)
    assert all(0 <= i < TOKENIZER.vocab_size for i in ids)
    assert TOKENIZER.decode(ids) == text


def test_merges_shorten_the_text_and_each_is_the_most_frequent_pair_at_its_step():
    tokenizer, lengths = train_bpe(SMALL_TEXT, 280, history=True)
    assert lengths[0] == len(SMALL_TEXT.encode("utf-8"))
    assert all(b < a for a, b in zip(lengths, lengths[1:]))
    assert lengths[-1] == len(tokenizer.encode(SMALL_TEXT))
    # An independent, slow re-implementation: recount every pair from scratch at every step.
    chunks = [list(chunk.encode("utf-8")) for chunk in pretokenize(SMALL_TEXT)]
    for k, merge in enumerate(tokenizer.merges):
        counts = collections.Counter()
        for ids in chunks:
            pair_counts(ids, counts)
        assert merge == most_frequent_pair(counts), k
        chunks = [merge_pair(ids, merge, 256 + k) for ids in chunks]
        assert sum(map(len, chunks)) == lengths[k + 1]


def test_merge_pair_and_pair_counts():
    assert merge_pair([7, 7, 7], (7, 7), 256) == [256, 7]
    assert merge_pair([], (1, 2), 256) == []
    assert pair_counts([1, 1, 1]) == {(1, 1): 2}
    assert most_frequent_pair({(3, 4): 2, (1, 9): 2, (0, 1): 1}) == (1, 9)


def _encode_by_sweeps(tokenizer, text):
    """The reference: per chunk, merge_pair with the earliest merge that applies, until none does."""
    out = []
    for chunk in pretokenize(text):
        ids = list(chunk.encode("utf-8"))
        while ranked := [tokenizer.ranks[p] for p in zip(ids, ids[1:]) if p in tokenizer.ranks]:
            ids = merge_pair(ids, tokenizer.merges[min(ranked) - 256], min(ranked))
        out += ids
    return out


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="aeilnorst ,.\n'ëé🙂", max_size=300))
def test_encode_replays_the_merges_as_the_sweeps_do(text):
    assert TOKENIZER.encode(text) == _encode_by_sweeps(TOKENIZER, text)


def test_a_long_text_without_spaces_encodes_as_the_sweeps_do_and_fast():
    rng = np.random.default_rng(0)
    letters = "".join(rng.choice(list("etaoinshrdlu"), size=200_000))
    text = SMALL_TEXT.replace(" ", "")[:20_000] + letters + "aaaa" * 2_000
    start = time.process_time()
    ids = TOKENIZER.encode(text)
    seconds = time.process_time() - start
    assert TOKENIZER.encode(text[:30_000]) == _encode_by_sweeps(TOKENIZER, text[:30_000])  # the slow reference
    assert TOKENIZER.decode(ids) == text
    assert seconds < 5, f"encoding {len(text):,} characters without spaces took {seconds:.1f} s of CPU"


def test_the_chunk_cache_is_bounded():
    from attn_helpers.bpe import CACHE_SIZE, CACHED_CHUNK

    tokenizer = BPETokenizer(TOKENIZER.merges)
    words = np.random.default_rng(0).choice(list("abcdefghij"), size=(CACHE_SIZE + 500, 8))
    tokenizer.encode(" ".join("".join(w) for w in words) + " " + "x" * (CACHED_CHUNK + 1))
    assert tokenizer._cached_chunk.cache_info().currsize == CACHE_SIZE


@pytest.mark.parametrize("ids, error, match", [
    ([-1], ValueError, r"ids must lie in \[0, 299\].*got -1"),
    ([300], ValueError, r"ids must lie in \[0, 299\].*got 300"),
    ([72.9, 105.2], TypeError, r"ids must be a list of integer token ids; got list \[72.9, 105.2\]"),
    ("72", TypeError, r"ids must be a list of token ids \(integers\); got a str '72'"),
    ([[72], [105]], TypeError, "ids must be a list of integer token ids"),
    ([72, "i"], TypeError, "ids must be a list of integer token ids"),
])
def test_decode_names_bad_ids(ids, error, match):
    with pytest.raises(error, match=match):
        TOKENIZER.decode(ids)


def test_decode_takes_lists_and_arrays_of_ids():
    assert TOKENIZER.decode([]) == ""
    assert TOKENIZER.decode(np.array([72, 105], dtype=np.uint16)) == TOKENIZER.decode((72, 105)) == "Hi"


def test_bad_input_is_named():
    for vocab_size in (100, 0, -5):
        with pytest.raises(ValueError, match=f"must be at least 256 \\(one token per byte\\); got {vocab_size}"):
            train_bpe("abc", vocab_size)
    with pytest.raises(TypeError, match="vocab_size must be an integer"):
        train_bpe("abc", 300.0)
    with pytest.raises(ValueError, match=r"vocab_size=1000000000 asks for 999999744 merges, but after 4 .*<= 260"):
        train_bpe("low lower lowest low low", 10**9)
    assert train_bpe("low lower lowest low low", 260).vocab_size == 260
    with pytest.raises(TypeError, match="text"):
        train_bpe(b"abc", 300)
    with pytest.raises(ValueError, match="merges\\[0\\]"):
        BPETokenizer([(1, 400)])


@pytest.mark.skipif(not WEIGHTS_PATH.exists(), reason="the tiny GPT's weights are not built")
def test_the_shipped_merges_are_rebuilt_from_the_training_text_in_seconds():
    with np.load(WEIGHTS_PATH) as data:
        shipped = [tuple(pair) for pair in data["merges"].tolist()]
    start = time.process_time()
    tokenizer = train_bpe(corpus_split("train"), 256 + len(shipped))
    seconds = time.process_time() - start
    assert tokenizer.merges == shipped
    assert seconds < 10, f"training the tokenizer took {seconds:.1f} s of CPU"


# --- a published vocabulary (notebook 16) ---------------------------------------------------------------

def test_gpt2_pattern_cuts_like_gpt2():
    from attn_helpers.bpe import gpt2_pattern

    cut = gpt2_pattern().findall
    assert cut("I'm sure they'll   go!") == ["I", "'m", " sure", " they", "'ll", "  ", " go", "!"]
    assert cut("naïve 日本 x²") == ["naïve", " 日本", " x", "²"]  # letters of any script; ² is a number
    assert cut("a\n\n b") == ["a", "\n\n", " b"]
    assert "".join(cut("  tabs\tand\r\nlines  ")) == "  tabs\tand\r\nlines  "


def test_vocabulary_bpe_replays_merges_in_the_models_numbering():
    from attn_helpers.bpe import VocabularyBPE, byte_to_char

    tokens = ["<|end|>", *(byte_to_char()[b] for b in range(256)), "Ġt", "he", "Ġthe"]
    tokenizer = VocabularyBPE(tokens, ["Ġ t", "h e", "Ġt he"], special=["<|end|>"])
    assert tokenizer.encode(" the<|end|>") == [259, 0]
    assert tokenizer.encode(" then") == [259, 1 + ord("n")]
    assert tokenizer.decode([259, 0]) == " the<|end|>" and tokenizer.vocab_size == 260
    assert tokenizer.encode("2024") == [1 + ord(c) for c in "2024"]
    with pytest.raises(ValueError, match="not in the vocabulary"):
        VocabularyBPE(tokens[:-1], ["Ġ t", "h e", "Ġt he"])
