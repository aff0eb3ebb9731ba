"""Build notebook 14's corpus, ``attn_helpers/data/pride_and_prejudice.txt``, from Debian's janeaustenr package.

Jane Austen's *Pride and Prejudice* (1813) is in the public domain. The Debian package
``r-cran-janeaustenr`` (MIT-licensed R package by Julia Silge) holds the Project Gutenberg
text of her six novels as R character vectors, one line of the book per element. This script
reads them without R: the package's ``data/Rdata.rdb`` is a sequence of records, each a
4-byte length and a zlib stream holding one R object in R's XDR serialisation format.

Run (once, by a maintainer; the notebook never downloads anything)::

    apt-get download r-cran-janeaustenr
    dpkg-deb -x r-cran-janeaustenr_*.deb janeaustenr
    python tools/build_tiny_gpt_corpus.py janeaustenr/usr/lib/R/site-library/janeaustenr/data/Rdata.rdb

The text is reflowed: the lines of a paragraph are joined with single spaces, and each
paragraph ends with one newline.
"""

from __future__ import annotations

import pathlib
import re
import struct
import sys
import zlib

OUT = pathlib.Path(__file__).resolve().parents[1] / "attn_helpers" / "data" / "pride_and_prejudice.txt"


def r_character_vectors(rdb_bytes):
    """Every character vector stored in an R lazy-load database, in file order."""
    pos = 0
    while pos < len(rdb_bytes):
        stream = zlib.decompressobj()
        record = stream.decompress(rdb_bytes[pos + 4:])
        pos = len(rdb_bytes) - len(stream.unused_data)
        assert record[:2] == b"X\n", "not an XDR-serialised R object"
        at = 14 + 4 + struct.unpack(">i", record[14:18])[0]  # header, then the native encoding's name
        flags, length = struct.unpack(">Ii", record[at:at + 8])
        at += 8
        if flags & 0xFF != 16:  # STRSXP: a character vector
            continue
        lines = []
        for _ in range(length):
            _, size = struct.unpack(">Ii", record[at:at + 8])  # a CHARSXP: flags, then byte length (-1: NA)
            at += 8
            lines.append("" if size < 0 else record[at:at + size].decode("utf-8"))
            at += max(size, 0)
        yield lines


def reflow(lines):
    """Join the lines of each paragraph; one paragraph per output line."""
    paragraphs = re.split(r"\n\s*\n", "\n".join(lines))
    return "".join(" ".join(p.split()) + "\n" for p in paragraphs if p.strip())


def main(rdb_path):
    books = list(r_character_vectors(pathlib.Path(rdb_path).read_bytes()))
    (book,) = [lines for lines in books if lines[0].strip() == "PRIDE AND PREJUDICE"]
    OUT.write_text(reflow(book), encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main(sys.argv[1])
