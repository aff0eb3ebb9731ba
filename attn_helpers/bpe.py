r"""Byte-pair encoding (Sennrich et al. 2016, as GPT-2 uses it): tokens learned from the text itself.

Start from the 256 byte values; repeatedly give the most frequent pair of neighbouring tokens a new token (a
*merge*), never across two chunks (a word with its space, digits, punctuation, whitespace). ``decode(encode(s)) == s``.
"""

from __future__ import annotations

import collections
import functools
import heapq
import json
import numbers
import pathlib
import re
import sys
import unicodedata

import numpy as np

__all__ = ["PRETOKENIZE", "pretokenize", "pair_counts", "merge_pair", "most_frequent_pair", "BPETokenizer",
           "train_bpe", "byte_to_char", "gpt2_pattern", "split_digits_then_gpt2", "VocabularyBPE"]

#: Where the text is cut before merging: an optional space and letters, or digits, or other
#: symbols; runs of whitespace. Every character matches, so the chunks join back into the text.
PRETOKENIZE = re.compile(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")


def pretokenize(text):
    """Cut ``text`` into the chunks that merges stay inside; ``"".join(chunks) == text``.

    >>> pretokenize("It is a truth, 1813!")
    ['It', ' is', ' a', ' truth', ',', ' 1813', '!']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    return PRETOKENIZE.findall(text)


def pair_counts(ids, counts=None, weight=1):
    """How often each pair of neighbouring tokens occurs in ``ids`` (added to ``counts`` if given).

    >>> pair_counts([1, 2, 1, 2, 3])
    Counter({(1, 2): 2, (2, 1): 1, (2, 3): 1})
    """
    counts = collections.Counter() if counts is None else counts
    for pair in zip(ids, ids[1:]):
        counts[pair] += weight
    return counts


def most_frequent_pair(counts):
    """The pair with the highest count; a tie goes to the smallest pair (the lowest ids).

    >>> most_frequent_pair({(5, 1): 3, (2, 9): 3, (0, 0): 1})
    (2, 9)
    """
    return max(counts, key=lambda pair: (counts[pair], -pair[0], -pair[1]))


def merge_pair(ids, pair, new_id):
    """Replace every occurrence of ``pair`` in ``ids`` by ``new_id``, scanning left to right.

    Overlaps go to the left: ``[7, 7, 7]`` with the pair ``(7, 7)`` becomes ``[new_id, 7]``.

    >>> merge_pair([1, 2, 3, 1, 2], (1, 2), 256)
    [256, 3, 256]
    """
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and ids[i] == pair[0] and ids[i + 1] == pair[1]:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


#: The encoder remembers the tokens of up to CACHE_SIZE recent chunks of at most CACHED_CHUNK characters (words).
CACHE_SIZE, CACHED_CHUNK = 2**14, 64


class BPETokenizer:
    """A byte-pair-encoding tokenizer: 256 byte tokens, then one token per merge.

    Token ``256 + k`` stands for the two tokens of ``merges[k]``; :attr:`token_bytes` holds the
    bytes each token spells.

    >>> tokenizer = BPETokenizer([(104, 105)])   # one merge: b"h" + b"i" -> token 256
    >>> tokenizer.encode("hi!")
    [256, 33]
    >>> tokenizer.decode([256, 33]), tokenizer.vocab_size
    ('hi!', 257)
    """

    def __init__(self, merges):
        merges = [tuple(int(i) for i in pair) for pair in merges]
        self.token_bytes = [bytes([b]) for b in range(256)]
        for k, (a, b) in enumerate(merges):
            if not (0 <= a < 256 + k and 0 <= b < 256 + k):
                raise ValueError(f"merges[{k}] = {(a, b)} uses a token that does not exist yet (ids 0..{255 + k})")
            self.token_bytes.append(self.token_bytes[a] + self.token_bytes[b])
        self.merges = merges
        self.ranks = {pair: 256 + k for k, pair in enumerate(merges)}  # pair -> its token; lower = learned earlier
        self._cached_chunk = functools.lru_cache(maxsize=CACHE_SIZE)(self._encode_chunk)  # recent short chunks

    @property
    def vocab_size(self) -> int:
        return len(self.id_bytes)

    @property
    def id_bytes(self) -> list:
        """The bytes each id spells: :attr:`token_bytes` (a published vocabulary numbers its tokens its own way)."""
        return self.token_bytes

    def __repr__(self):
        return f"{type(self).__name__}(vocab_size={self.vocab_size}, merges={len(self.merges)})"

    def _encode_chunk(self, chunk):
        """The merges replayed on one chunk, earliest merge first, each pair's occurrences left to right.

        The same result as repeating ``merge_pair`` with the earliest merge that applies (as in training), but
        a heap of (merge, position) over a linked list of tokens makes it O(n log n): a chunk of a million
        letters without a space takes seconds, not minutes.
        """
        ids = list(chunk.encode("utf-8"))
        after = list(range(1, len(ids) + 1))  # the next live token's position (len(ids): none)
        before = list(range(-1, len(ids) - 1))  # the previous live token's position (-1: none)
        heap = [(self.ranks[pair], i) for i, pair in enumerate(zip(ids, ids[1:])) if pair in self.ranks]
        heapq.heapify(heap)
        while heap:
            new_id, i = heapq.heappop(heap)
            j = after[i]
            if j == len(ids) or self.ranks.get((ids[i], ids[j])) != new_id:
                continue  # stale: a token of this pair was merged into another one since
            ids[i], ids[j] = new_id, None  # token i becomes the pair; token j leaves the list
            after[i] = after[j]
            if after[i] < len(ids):
                before[after[i]] = i
            for left in (before[i], i):  # the two pairs the new token is part of
                if left >= 0 and after[left] < len(ids) and (ids[left], ids[after[left]]) in self.ranks:
                    heapq.heappush(heap, (self.ranks[ids[left], ids[after[left]]], left))
        return [token for token in ids if token is not None]

    #: How the text is cut into chunks before merging (a published tokenizer brings its own).
    pretokenize = staticmethod(pretokenize)

    def encode(self, text):
        """Token ids of ``text``: its UTF-8 bytes, then the merges replayed chunk by chunk."""
        ids = []
        for chunk in self.pretokenize(text):
            ids.extend(self._cached_chunk(chunk) if len(chunk) <= CACHED_CHUNK else self._encode_chunk(chunk))
        return ids

    def decode(self, ids):
        """The string the tokens spell (bytes that are not valid UTF-8 on their own show as U+FFFD)."""
        if isinstance(ids, (str, bytes)):
            raise TypeError(f"ids must be a list of token ids (integers); got a {type(ids).__name__} {ids!r:.40}: "
                            "encode(text) gives a text's ids")
        try:
            arr = np.asarray(ids)
        except ValueError:  # ragged nested lists
            arr = np.asarray(ids, dtype=object)
        if arr.ndim != 1 or (arr.size and (arr.dtype.kind not in "iu")):
            raise TypeError(f"ids must be a list of integer token ids; got {type(ids).__name__} {ids!r:.60}")
        if arr.size and not (0 <= arr.min() and arr.max() < self.vocab_size):
            bad = int(arr[(arr < 0) | (arr >= self.vocab_size)][0])
            raise ValueError(f"ids must lie in [0, {self.vocab_size - 1}] (vocab_size {self.vocab_size}); got {bad}")
        return b"".join(self.id_bytes[i] for i in arr.tolist()).decode("utf-8", errors="replace")

    def token_str(self, token_id):
        """One token as readable text, for labels (a space shows as ``·``, a newline as ``⏎``)."""
        return self.decode([token_id]).replace(" ", "·").replace("\n", "⏎")

    def save(self, path):
        pathlib.Path(path).write_text(json.dumps({"merges": self.merges}) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path):
        return cls(json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["merges"])


def train_bpe(text, vocab_size, *, history=False):
    """Learn ``vocab_size - 256`` merges from ``text``.

    Each step merges the most frequent neighbouring pair (:func:`most_frequent_pair`) inside
    the chunks of :func:`pretokenize`. Counts are kept up to date incrementally: a merge only
    touches the distinct chunks that contain the pair, so training on a novel takes seconds.

    ``vocab_size``: at least 256 (the bytes); ``history``: also return the number of tokens of ``text`` after each
    merge (index 0: bytes). Returns ``lengths``: only with ``history=True``.

    >>> tokenizer = train_bpe("low lower lowest low low", vocab_size=258)
    >>> [tokenizer.decode([i]) for i in range(256, 258)]
    ['lo', 'low']
    >>> tokenizer.encode(" lowest")
    [32, 257, 101, 115, 116]
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, numbers.Integral):
        raise TypeError(f"vocab_size must be an integer (at least 256); got {type(vocab_size).__name__} {vocab_size!r}")
    if vocab_size < 256:
        raise ValueError(f"vocab_size must be at least 256 (one token per byte); got {vocab_size}")
    chunk_counts = collections.Counter(pretokenize(text))
    words = [list(chunk.encode("utf-8")) for chunk in chunk_counts]  # each distinct chunk, as token ids
    freqs = list(chunk_counts.values())
    counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> the distinct chunks that contain it
    for w, (ids, freq) in enumerate(zip(words, freqs)):
        pair_counts(ids, counts, freq)
        for pair in zip(ids, ids[1:]):
            where[pair].add(w)
    lengths = [sum(len(ids) * freq for ids, freq in zip(words, freqs))]
    merges = []
    while 256 + len(merges) < vocab_size and counts:
        pair = most_frequent_pair(counts)
        if counts[pair] < 2:
            break
        new_id = 256 + len(merges)
        merges.append(pair)
        length = lengths[-1]
        for w in where.pop(pair):
            old, freq = words[w], freqs[w]
            new = merge_pair(old, pair, new_id)
            for p in zip(old, old[1:]):  # take the chunk's old pairs out of the counts ...
                counts[p] -= freq
                if counts[p] <= 0:
                    del counts[p]
            for p in zip(new, new[1:]):  # ... and put its new ones in
                counts[p] += freq
                where[p].add(w)
            words[w] = new
            length -= (len(old) - len(new)) * freq  # each merged occurrence saves one token
        lengths.append(length)
    if 256 + len(merges) < vocab_size:
        raise ValueError(f"vocab_size={vocab_size} asks for {vocab_size - 256} merges, but after {len(merges)} no pair "
                         f"of neighbouring tokens occurs twice in text: use vocab_size <= {256 + len(merges)}")
    tokenizer = BPETokenizer(merges)
    return (tokenizer, lengths) if history else tokenizer


# --- A published byte-level BPE (notebook 16): GPT-2's byte alphabet, its cutting rule, a model's vocabulary ---

@functools.cache
def byte_to_char():
    """GPT-2's printable stand-in for each byte, as vocabulary files spell tokens: ``{byte: char}``.

    Printable bytes stand for themselves; the others (space, newline, control bytes...) are moved to
    ``chr(256 + n)``, so a space is ``"Ġ"`` and a newline ``"Ċ"``.

    >>> byte_to_char()[ord("a")], byte_to_char()[ord(" ")], byte_to_char()[ord("\\n")]
    ('a', 'Ġ', 'Ċ')
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    moved = [b for b in range(256) if b not in printable]
    return {**{b: chr(b) for b in printable}, **{b: chr(256 + n) for n, b in enumerate(moved)}}


def _char_class(keep):
    """A regex character class of every code point whose category ``keep`` accepts (as ranges)."""
    ranges, start = [], None
    for c in range(sys.maxunicode + 2):
        inside = c <= 0x323AF and keep(unicodedata.category(chr(c)))  # beyond: no letters or numbers
        if inside and start is None:
            start = c
        elif not inside and start is not None:
            ranges.append(re.escape(chr(start)) + ("" if c - 1 == start else "-" + re.escape(chr(c - 1))))
            start = None
            if c > 0x323AF:
                break
    return "[" + "".join(ranges) + "]"


@functools.cache
def gpt2_pattern():
    r"""GPT-2's rule for cutting text before merging, with Python's ``re``: ``\p{L}`` (letters) and ``\p{N}``
    (numbers) are built from :mod:`unicodedata` once.

    ``'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+``: English contractions, a word with
    the space before it, a number, other symbols, and runs of whitespace that leave their last space to the next word.
    """
    letters = _char_class(lambda category: category[0] == "L")
    numbers = _char_class(lambda category: category[0] == "N")
    not_space_letter_number = "[^\\s" + letters[1:-1] + numbers[1:-1] + "]"
    return re.compile(rf"'s|'t|'re|'ve|'m|'ll|'d| ?{letters}+| ?{numbers}+| ?{not_space_letter_number}+"
                      rf"|\s+(?!\S)|\s+")


@functools.cache
def _one_number():
    return re.compile("(" + gpt2_pattern().pattern.split("| ?")[2].rstrip("+") + ")")  # one \p{N} character


def split_digits_then_gpt2(text):
    """SmolLM2's cutting rule: every number character alone (``"2024"`` is four chunks), then GPT-2's rule.

    >>> split_digits_then_gpt2("I'm 42 today!")
    ['I', "'m", ' ', '4', '2', ' today', '!']
    """
    chunks = []
    for n, part in enumerate(_one_number().split(text)):  # odd parts: one number character each
        chunks.extend([part] if n % 2 else gpt2_pattern().findall(part))
    return chunks


class VocabularyBPE(BPETokenizer):
    """Notebook 14's tokenizer with a published model's vocabulary: the same merges replayed, ids in the model's order.

    ``tokens``: the vocabulary, each token spelled with :func:`byte_to_char` (``"Ġthe"``); ``merges``: ``"Ġ t"``
    strings, earliest first; ``special``: tokens kept whole where they appear in the text (``"<|im_end|>"``) and
    never merged; ``pretokenize``: the cutting rule (default :func:`split_digits_then_gpt2`).

    >>> tokenizer = VocabularyBPE(["<|end|>", "h", "i", "!", "hi"], ["h i"], special=["<|end|>"])
    >>> tokenizer.encode("hi!<|end|>"), tokenizer.decode([4, 3, 0])
    ([4, 3, 0], 'hi!<|end|>')
    """

    def __init__(self, tokens, merges, special=(), pretokenize=split_digits_then_gpt2):
        char_to_byte = {char: b for b, char in byte_to_char().items()}
        self.vocabulary = {token: i for i, token in enumerate(tokens)}

        def spelled(token):  # the bytes a vocabulary entry stands for
            return bytes(char_to_byte[char] for char in token)

        internal = {bytes([b]): b for b in range(256)}  # bytes -> notebook 14's id (256 bytes, then one per merge)
        pairs = []
        for k, merge in enumerate(merges):
            left, right = merge.split(" ")
            pairs.append((internal[spelled(left)], internal[spelled(right)]))
            internal.setdefault(spelled(left) + spelled(right), 256 + k)
        super().__init__(pairs)
        self.special = {token: self.vocabulary[token] for token in special}
        spellings = ["".join(byte_to_char()[b] for b in spelling) for spelling in self.token_bytes]
        unknown = [spelling for spelling in spellings[256:] if spelling not in self.vocabulary][:3]
        if unknown:
            raise ValueError(f"merges make tokens that are not in the vocabulary: {unknown}")
        # notebook 14's id -> the model's id; -1: a byte the vocabulary has no token for (dropped, as the model's own
        # tokenizer drops it: SmolLM2 lacks 8 of the 256 bytes, control characters no text uses)
        self.model_ids = np.array([self.vocabulary.get(spelling, -1) for spelling in spellings])
        self.pretokenize = pretokenize
        self.model_bytes = [spelled(token) if token not in self.special else token.encode() for token in tokens]
        self._special_split = re.compile("(" + "|".join(map(re.escape, self.special)) + ")") if self.special else None

    @property
    def id_bytes(self) -> list:
        return self.model_bytes

    def encode(self, text):
        """The model's token ids of ``text`` (no special tokens added; those typed in the text are kept whole)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__}")
        parts = self._special_split.split(text) if self._special_split else [text]
        ids = []
        for n, part in enumerate(parts):  # odd parts: special tokens
            pieces = [self.special[part]] if n % 2 else self.model_ids[super().encode(part)].tolist()
            ids.extend(i for i in pieces if i >= 0)
        return ids
