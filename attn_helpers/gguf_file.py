r"""Reading a GGUF file (notebook 16): llama.cpp's one-file format for a model, its tokenizer and its weights.

A GGUF file is a header (``b"GGUF"``, the version, how many tensors and metadata entries), the metadata
(key, type, value: the configuration, the tokenizer's tokens and merges, the chat template), one line per
tensor (name, shape, number type, where its bytes start), then the tensors' bytes, aligned. Weights are stored
*quantized*: a block of 32 numbers shares a scale (and a minimum), each number keeps a few bits.

Everything read is data: sizes are checked against the file's length before anything is allocated, and
nothing in the file is imported or called.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import NamedTuple

import numpy as np

__all__ = ["QK", "BLOCK_BYTES", "GGUFTensor", "GGUFFile", "read_gguf", "dequantize_q4_1", "dequantize_q8_0",
           "dequantize"]

#: Numbers per quantized block (Q4_1 and Q8_0 both use 32).
QK = 32
#: Bytes per block of 32 numbers: Q4_1 = a float16 scale ``d``, a float16 minimum ``m``, 16 bytes of 4-bit codes;
#: Q8_0 = a float16 scale and 32 signed bytes. F32 and F16 are one number per "block".
BLOCK_BYTES = {"F32": 4, "F16": 2, "Q4_1": 2 + 2 + QK // 2, "Q8_0": 2 + QK}
_BLOCK_NUMBERS = {"F32": 1, "F16": 1, "Q4_1": QK, "Q8_0": QK}
#: GGML's number-type codes that this reader knows (the others are refused by name).
_GGML_TYPES = {0: "F32", 1: "F16", 3: "Q4_1", 8: "Q8_0"}
#: GGUF metadata value types: code -> struct format (8: string, 9: array, handled apart).
_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_MAX_DIMS = 4


class GGUFTensor(NamedTuple):
    """One tensor's line in the file: ``shape`` as numpy sees it (rows first), its number ``kind``, its raw bytes."""

    name: str
    shape: tuple
    kind: str
    raw: np.ndarray  # uint8, a view into the file (no copy)


class GGUFFile(NamedTuple):
    """What :func:`read_gguf` returns: ``version``, ``metadata`` (key -> value), ``tensors`` (name -> GGUFTensor)."""

    version: int
    metadata: dict
    tensors: dict


class _Cursor:
    """Reads little-endian values from ``data``, refusing to read past its end."""

    def __init__(self, data, name):
        self.data, self.name, self.at = data, name, 0

    def take(self, n):
        if n < 0 or self.at + n > len(self.data):
            raise ValueError(f"{self.name} is not a valid GGUF file: it ends at byte {len(self.data):,} but a "
                             f"field needs bytes {self.at:,} to {self.at + n:,}")
        chunk = self.data[self.at:self.at + n]
        self.at += n
        return chunk

    def scalar(self, fmt):
        return struct.unpack("<" + fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self):
        return bytes(self.take(self.scalar("Q"))).decode("utf-8", errors="replace")

    def count(self, what, smallest):
        """A count read from the file, bounded by the bytes left (each item takes at least ``smallest`` bytes)."""
        n = self.scalar("Q")
        if n * smallest > len(self.data) - self.at:
            raise ValueError(f"{self.name} is not a valid GGUF file: it declares {n:,} {what}, more than its "
                             f"{len(self.data) - self.at:,} remaining bytes can hold")
        return n

    def value(self, kind):
        if kind in _SCALARS:
            return self.scalar(_SCALARS[kind])
        if kind == 8:
            return self.string()
        if kind == 9:
            item = self.scalar("I")
            if item == 9:
                raise ValueError(f"{self.name}: arrays of arrays are not supported")
            size = struct.calcsize(_SCALARS[item]) if item in _SCALARS else 8
            n = self.count("array items", size)
            if item in _SCALARS and item != 7:  # numbers: one read, as a numpy array
                fmt = np.dtype("<" + _SCALARS[item])
                return np.frombuffer(self.take(n * fmt.itemsize), dtype=fmt).copy()
            return [self.value(item) for _ in range(n)]
        raise ValueError(f"{self.name} is not a valid GGUF file: unknown metadata type {kind}")


def read_gguf(path):
    """The metadata and the (still quantized) tensors of the GGUF file ``path``.

    The tensors' bytes are read through a memory map: nothing is copied until a tensor is dequantized.

    >>> from attn_helpers.llm import model_file
    >>> gguf = read_gguf(model_file())
    >>> gguf.metadata["general.architecture"], gguf.tensors["blk.0.attn_q.weight"].shape
    ('llama', (576, 576))
    """
    path = Path(path)
    if path.stat().st_size < 24:  # magic, version and the two counts
        raise ValueError(f"{str(path)!r} is not a GGUF file: it has {path.stat().st_size} bytes")
    data = np.memmap(path, dtype=np.uint8, mode="r")
    cursor = _Cursor(memoryview(data), repr(str(path)))
    if bytes(cursor.take(4)) != b"GGUF":
        raise ValueError(f"{str(path)!r} is not a GGUF file: it does not start with b'GGUF'")
    version = cursor.scalar("I")
    if version not in (2, 3):
        raise ValueError(f"{str(path)!r} is GGUF version {version}; this reader knows versions 2 and 3")
    n_tensors, n_metadata = cursor.count("tensors", 24), cursor.count("metadata entries", 12)
    metadata = {}
    for _ in range(n_metadata):
        key = cursor.string()
        metadata[key] = cursor.value(cursor.scalar("I"))
    infos = []
    for _ in range(n_tensors):
        name, n_dims = cursor.string(), cursor.scalar("I")
        if not 1 <= n_dims <= _MAX_DIMS:
            raise ValueError(f"{str(path)!r}: tensor {name!r} has {n_dims} dimensions (expected 1 to {_MAX_DIMS})")
        dims = [cursor.scalar("Q") for _ in range(n_dims)]
        code, offset = cursor.scalar("I"), cursor.scalar("Q")
        if code not in _GGML_TYPES:
            raise ValueError(f"{str(path)!r}: tensor {name!r} has number type {code}, which this reader does not "
                             f"know (it reads {sorted(_GGML_TYPES.values())})")
        infos.append((name, tuple(reversed(dims)), _GGML_TYPES[code], offset))  # GGUF lists the fastest axis first
    alignment = int(metadata.get("general.alignment", 32))
    start = -(-cursor.at // alignment) * alignment  # the tensors' bytes begin at the next multiple of alignment
    tensors = {}
    for name, shape, kind, offset in infos:
        count = int(np.prod(shape))
        if count % _BLOCK_NUMBERS[kind]:
            raise ValueError(f"{str(path)!r}: tensor {name!r} of shape {shape} is not a whole number of {kind} blocks")
        nbytes = count // _BLOCK_NUMBERS[kind] * BLOCK_BYTES[kind]
        if start + offset + nbytes > len(data):
            raise ValueError(f"{str(path)!r}: tensor {name!r} needs bytes up to {start + offset + nbytes:,} but the "
                             f"file has {len(data):,} (truncated?)")
        tensors[name] = GGUFTensor(name, shape, kind, data[start + offset:start + offset + nbytes])
    return GGUFFile(version, metadata, tensors)


def _blocks(raw, kind):
    raw = np.asarray(raw, dtype=np.uint8).reshape(-1)
    if raw.size % BLOCK_BYTES[kind]:
        raise ValueError(f"raw has {raw.size} bytes: not a whole number of {kind} blocks of {BLOCK_BYTES[kind]} bytes")
    return raw.reshape(-1, BLOCK_BYTES[kind])  # (blocks, bytes per block)


def dequantize_q4_1(raw):
    r"""Q4_1 blocks to float32: each block of 32 numbers is :math:`w_j = d\,q_j + m` with a 4-bit code :math:`q_j`.

    A block is 20 bytes: the scale ``d`` (float16), the minimum ``m`` (float16), then 16 bytes whose *low*
    halves are the codes of numbers 0..15 and whose *high* halves are those of numbers 16..31.

    >>> block = np.array([0, 60, 0, 188] + [0x10 * hi + lo for lo, hi in zip(range(16), range(15, -1, -1))], np.uint8)
    >>> dequantize_q4_1(block)[[0, 1, 15, 16, 31]]      # d = 1.0, m = -1.0: codes 0, 1, 15, 15, 0
    array([-1.,  0., 14., 14., -1.], dtype=float32)
    """
    blocks = _blocks(raw, "Q4_1")
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)  # (blocks, 1): the scale
    m = blocks[:, 2:4].copy().view("<f2").astype(np.float32)  # (blocks, 1): the minimum
    codes = blocks[:, 4:]  # (blocks, 16): two 4-bit codes per byte
    q = np.concatenate([codes & 0x0F, codes >> 4], axis=1)  # (blocks, 32): low halves first, then high
    return (d * q + m).reshape(-1)  # (blocks, 1) * (blocks, 32) + (blocks, 1) -> (blocks * 32,)


def dequantize_q8_0(raw):
    r"""Q8_0 blocks to float32: :math:`w_j = d\,q_j` with a signed 8-bit code :math:`q_j` (34 bytes per 32 numbers).

    >>> dequantize_q8_0(np.array([0, 56] + list(range(-16, 16)), np.int8).view(np.uint8))[:3]   # d = 0.5
    array([-8. , -7.5, -7. ], dtype=float32)
    """
    blocks = _blocks(raw, "Q8_0")
    d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)  # (blocks, 1)
    return (d * blocks[:, 2:].view(np.int8)).reshape(-1)  # (blocks, 1) * (blocks, 32) -> (blocks * 32,)


def dequantize(tensor):
    """A :class:`GGUFTensor` as a float32 array of its ``shape``."""
    if tensor.kind == "F32":
        flat = tensor.raw.view("<f4").astype(np.float32)
    elif tensor.kind == "F16":
        flat = tensor.raw.view("<f2").astype(np.float32)
    elif tensor.kind == "Q4_1":
        flat = dequantize_q4_1(tensor.raw)
    else:
        flat = dequantize_q8_0(tensor.raw)
    return flat.reshape(tensor.shape)
