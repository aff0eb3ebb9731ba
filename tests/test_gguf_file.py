"""attn_helpers.gguf_file against llama.cpp's own Python package ``gguf`` (reader, writer, quantizer).

The ``gguf`` package plays the other side: it writes files (random tensors, quantized with its own code) that our
reader must read back exactly; then crafted and randomly damaged files must give a ValueError naming the file,
never another exception, a hang or a huge allocation.
"""

import struct

import gguf
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from attn_helpers.gguf_file import BLOCK_BYTES, QK, dequantize, dequantize_q4_1, dequantize_q8_0, read_gguf
from attn_helpers.llm import MODEL_SIZE, model_file

KINDS = {"F32": gguf.GGMLQuantizationType.F32, "F16": gguf.GGMLQuantizationType.F16,
         "Q4_1": gguf.GGMLQuantizationType.Q4_1, "Q8_0": gguf.GGMLQuantizationType.Q8_0}


def _write(path, tensors, metadata=()):
    """A GGUF file written by the ``gguf`` package: ``tensors`` maps name -> (float32 array, kind)."""
    writer = gguf.GGUFWriter(str(path), "llama")
    for key, value in metadata:
        if isinstance(value, str):
            writer.add_string(key, value)
        elif isinstance(value, list):
            writer.add_array(key, value)
        else:
            writer.add_uint32(key, value)
    for name, (array, kind) in tensors.items():
        data = gguf.quants.quantize(array, KINDS[kind]) if kind in ("Q4_1", "Q8_0") else array.astype(
            np.float16 if kind == "F16" else np.float32)
        writer.add_tensor(name, data, raw_dtype=KINDS[kind])
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture(scope="module")
def small_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    tensors = {f"t_{kind}": (rng.standard_normal((3, 64)).astype(np.float32) * 2, kind) for kind in KINDS}
    tensors["vector"] = (rng.standard_normal(5).astype(np.float32), "F32")
    return _write(tmp_path_factory.mktemp("gguf") / "small.gguf", tensors,
                  [("general.name", "tiny"), ("tokens", ["a", "Ġb", "日本"]), ("count", 7)])


def test_a_file_written_by_gguf_reads_back_exactly(small_file):
    ours = read_gguf(small_file)
    reference = gguf.GGUFReader(str(small_file))
    assert ours.version == 3 and ours.metadata["general.name"] == "tiny" and ours.metadata["count"] == 7
    assert ours.metadata["tokens"] == ["a", "Ġb", "日本"]
    assert sorted(ours.tensors) == sorted(t.name for t in reference.tensors)
    for tensor in reference.tensors:
        expected = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
        got = dequantize(ours.tensors[tensor.name])
        assert got.dtype == np.float32 and got.shape == expected.shape
        np.testing.assert_array_equal(got, expected)  # the same arithmetic on the same bytes: equal, not close


def test_every_tensor_of_the_model_equals_gguf():
    path = model_file()
    ours, reference = read_gguf(path), gguf.GGUFReader(str(path))
    assert len(ours.tensors) == len(reference.tensors) == 272
    kinds = {}
    for tensor in reference.tensors[:12] + reference.tensors[-4:]:  # every kind: Q8_0, Q4_1, F32
        kinds[ours.tensors[tensor.name].kind] = True
        np.testing.assert_array_equal(dequantize(ours.tensors[tensor.name]),
                                      gguf.quants.dequantize(tensor.data, tensor.tensor_type))
    assert set(kinds) == {"Q8_0", "Q4_1", "F32"}
    assert ours.metadata["tokenizer.ggml.merges"][:2] == ["Ġ t", "Ġ a"]
    assert len(ours.metadata["tokenizer.ggml.tokens"]) == 49152


def test_one_q4_1_block_by_its_definition():
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 256, size=BLOCK_BYTES["Q4_1"], dtype=np.uint8)
    raw[0:2] = np.frombuffer(np.float16(0.25).tobytes(), np.uint8)
    raw[2:4] = np.frombuffer(np.float16(-1.5).tobytes(), np.uint8)
    codes = [raw[4 + j] & 15 for j in range(16)] + [raw[4 + j] >> 4 for j in range(16)]  # low halves first
    np.testing.assert_array_equal(dequantize_q4_1(raw), [0.25 * q - 1.5 for q in codes])


def test_one_q8_0_block_by_its_definition():
    codes = np.arange(-16, 16, dtype=np.int8)
    raw = np.concatenate([np.frombuffer(np.float16(0.125).tobytes(), np.uint8), codes.view(np.uint8)])
    np.testing.assert_array_equal(dequantize_q8_0(raw), 0.125 * codes)


@pytest.mark.parametrize("function, kind", [(dequantize_q4_1, "Q4_1"), (dequantize_q8_0, "Q8_0")])
def test_a_partial_block_is_refused(function, kind):
    with pytest.raises(ValueError, match=f"not a whole number of {kind} blocks"):
        function(np.zeros(BLOCK_BYTES[kind] + 1, np.uint8))
    assert function(np.zeros(3 * BLOCK_BYTES[kind], np.uint8)).shape == (3 * QK,)


def _header(n_tensors=0, n_metadata=0, magic=b"GGUF", version=3):
    return magic + struct.pack("<IQQ", version, n_tensors, n_metadata)


@pytest.mark.parametrize("data, message", [
    (b"GGML" + bytes(20), "does not start with b'GGUF'"),
    (_header(version=7), "GGUF version 7"),
    (_header(n_tensors=2**60), "declares 1,152,921,504,606,846,976 tensors"),
    (_header(n_metadata=10**12), "metadata entries, more than"),
    (_header(n_metadata=1) + struct.pack("<Q", 10**9), "ends at byte"),
    (_header(n_metadata=1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 42), "unknown metadata type 42"),
    (_header(n_metadata=1) + struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 4, 2**61), "array items"),
    (_header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<I", 9), "9 dimensions"),
    (_header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<IQIQ", 1, 32, 2, 0), "number type 2"),
    (_header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<IQIQ", 1, 10**6, 0, 0), "truncated"),
    (_header(n_tensors=1) + struct.pack("<Q", 1) + b"w" + struct.pack("<IQIQ", 1, 33, 8, 0), "whole number of Q8_0"),
])
def test_crafted_files_are_refused_by_name(tmp_path, data, message):
    path = tmp_path / "crafted.gguf"
    path.write_bytes(data + bytes(64))
    with pytest.raises(ValueError, match=message) as err:
        read_gguf(path)
    assert "crafted.gguf" in str(err.value)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_damaged_files_read_or_fail_with_a_value_error(small_file, tmp_path_factory, data):
    raw = bytearray(small_file.read_bytes())
    cut = data.draw(st.integers(0, len(raw)))
    flips = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)), max_size=4))
    for at, value in flips:
        raw[at] = value
    path = tmp_path_factory.mktemp("damaged") / "damaged.gguf"
    path.write_bytes(bytes(raw[:cut]))
    try:
        result = read_gguf(path)
    except ValueError as err:
        assert "damaged.gguf" in str(err) or "GGUF" in str(err)
        return
    for tensor in result.tensors.values():  # whatever it read lies inside the file
        assert dequantize(tensor).size <= cut


def test_the_model_file_size_is_the_one_checked():
    assert model_file().stat().st_size == MODEL_SIZE
