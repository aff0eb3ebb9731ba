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


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe("abc", 100)
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
