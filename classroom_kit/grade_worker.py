"""The child side of sandboxed grading: runs one exercise of a submitted notebook and answers in plain data.

    python -I kernel.py SITE UID      # started by grade.py inside the sandbox, where this file is kernel.py

The grader (classroom_kit/grade.py) never runs a learner's code; it sends this process the notebook's own cells that
the exercise needs (the teacher's copies), then the learner's exercise cell, then requests: "the value of
``my_total``", "call ``softmax_any_axis`` with these arrays". Every message, both ways, is one length-prefixed
``.npz`` archive (``allow_pickle=False``): a JSON header of plain values plus the arrays it numbers. What this
process sends is data only (numbers, text, arrays, lists, dicts; a function as its number here, any other
object as its type's name and repr); the grader parses it with a schema and trusts none of it.
Before the first request this process gives up root: it runs the learner's code as user ``UID`` with a process
limit. Stdlib and numpy only; the learner's output goes to file descriptor 2, which the grader reads.
"""

from __future__ import annotations

import dataclasses
import importlib
import io
import json
import os
import resource
import struct
import sys
import traceback

import numpy as np

CELL = "<your exercise cell>"  # the file name of the learner's code, as tracebacks see it
PACKAGE = "attn_helpers"
PROCESSES = 64  # processes (and threads) the learner's code may have at once
NUMBERS = "biufcUS"  # the array kinds that cross (bool, integers, floats, complex, text); never objects


# --------------------------------------------------------------------------- plain data, both ways


def encode(value, arrays: list, classes: bool = False, depth: int = 0):
    """``value`` as JSON-able tagged data; arrays go into ``arrays``. Only with ``classes`` (the grader's
    requests) does a dataclass of the series keep its class's name; the child sends its fields only."""
    if depth > 40:
        return {"t": "object", "type": "nested", "repr": "data nested too deeply"}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Handle):
        return {"t": "function", "h": value.index, "name": value.name}
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if isinstance(value, complex):
        return {"t": "complex", "v": [value.real, value.imag]}
    if isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).dtype.kind in NUMBERS:
        arrays.append(np.array(value))  # a plain ndarray: a subclass's methods stay behind
        return {"t": "scalar" if isinstance(value, np.generic) else "array", "i": len(arrays) - 1}
    if isinstance(value, np.ndarray) and value.dtype.kind == "O":  # element by element
        return encode(value.tolist(), arrays, classes, depth + 1)
    if isinstance(value, (list, tuple)):
        items = [encode(item, arrays, classes, depth + 1) for item in value]
        return items if isinstance(value, list) else {"t": "tuple", "v": items}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"t": "dict", "v": {key: encode(item, arrays, classes, depth + 1) for key, item in value.items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: encode(getattr(value, f.name), arrays, classes, depth + 1) for f in dataclasses.fields(value)
                  if f.init}
        if classes and type(value).__module__.startswith(PACKAGE + "."):
            return {"t": "dataclass", "cls": [type(value).__module__, type(value).__qualname__], "v": fields}
        return {"t": "dict", "v": fields}
    return {"t": "object", "type": type(value).__name__, "repr": _short_repr(value)}


def decode_request(data, arrays):
    """The grader's request as values (in the sandbox only: it rebuilds the series' dataclasses by name)."""
    if isinstance(data, list):
        return [decode_request(item, arrays) for item in data]
    if not isinstance(data, dict):
        return data
    tag = data["t"]
    if tag in ("array", "scalar"):
        return arrays[data["i"]][()] if tag == "scalar" else arrays[data["i"]]
    if tag == "tuple":
        return tuple(decode_request(item, arrays) for item in data["v"])
    if tag == "dict":
        return {key: decode_request(item, arrays) for key, item in data["v"].items()}
    if tag == "dataclass":
        module, name = data["cls"]
        cls = getattr(importlib.import_module(module), name)
        return cls(**{key: decode_request(item, arrays) for key, item in data["v"].items()})
    if tag == "complex":
        return complex(*data["v"])
    if tag == "ellipsis":
        return Ellipsis
    return type(str(data.get("type", "object")), (), {"__repr__": lambda self: data.get("repr", "")})()  # its name


class Handle:
    """A function that stays in the learner's process, sent as its number there and its name."""

    def __init__(self, index: int, name: str):
        self.index, self.name = index, name


def _short_repr(value) -> str:
    try:
        return repr(value)[:200]
    except BaseException:  # noqa: BLE001 - a learner's __repr__ may raise anything
        return "<no repr>"


def pack(message: dict, classes: bool = False) -> bytes:
    """``message`` (with its arrays) as one length-prefixed ``.npz`` frame."""
    arrays: list = []
    header = json.dumps(encode(message, arrays, classes))
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(header.encode(), dtype=np.uint8),
             **{f"a{i}": array for i, array in enumerate(arrays)})
    return struct.pack("!Q", buffer.tell()) + buffer.getvalue()


def unpack_request(payload: bytes):
    """The grader's message in one frame's payload (no pickles are ever loaded)."""
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        header = json.loads(archive["header"].tobytes().decode())
        arrays = [archive[f"a{i}"] for i in range(len(archive.files) - 1)]
    return decode_request(header, arrays)


def read_frame(stream) -> bytes | None:
    head = stream.read(8)
    if len(head) < 8:
        return None
    (size,) = struct.unpack("!Q", head)
    return stream.read(size)


# --------------------------------------------------------------------------- inside the sandbox


def _error(err: BaseException) -> dict:
    lines = traceback.format_exception(type(err), err, err.__traceback__)
    own = [line for line in lines if CELL in line or not line.startswith("  File")]  # the learner's frames only
    return {"type": type(err).__name__, "message": str(err)[:500], "traceback": "".join(own)[-1500:]}


def serve(proto_in, proto_out) -> None:
    """Answer the grader's messages until it closes the pipe."""
    namespace: dict = {"__name__": "__main__", "display": lambda *objects, **_: print(*map(repr, objects))}
    handles: list = []

    def reply(message):
        try:
            frame = pack(message)
        except BaseException as err:  # noqa: BLE001 - a value that does not encode becomes a sentence
            frame = pack({"error": {"type": "EncodingError", "message": f"could not send the answer back ({err})",
                                    "traceback": ""}})
        proto_out.write(frame)
        proto_out.flush()

    def as_data(value):
        if callable(value) and not isinstance(value, type):
            handles.append(value)
            return Handle(len(handles) - 1, str(getattr(value, "__name__", "function"))[:100])
        if isinstance(value, (list, tuple)):  # a pair of functions, say: each its own handle
            items = [as_data(item) for item in value]
            return items if isinstance(value, list) else tuple(items)
        return value

    while (payload := read_frame(proto_in)) is not None:
        request = unpack_request(payload)
        op = request["op"]
        if op == "run":  # the notebook's own cells, then the learner's cell
            try:
                for source in request["context"]:
                    exec(compile(source, "<the notebook's own cell>", "exec"), namespace)  # noqa: S102
            except BaseException as err:  # noqa: BLE001
                reply({"setup_error": _error(err)})
                continue
            error = None
            try:
                exec(compile(request["cell"], CELL, "exec"), namespace)  # noqa: S102 - the learner's code, sandboxed
            except BaseException as err:  # noqa: BLE001 - any failure is the learner's, reported as data
                error = _error(err)
            reply({"error": error})
        elif op == "value":
            name = request["name"]
            if name not in namespace:
                reply({"error": {"type": "NameError", "message": f"name {name!r} is not defined", "traceback": ""}})
            else:
                reply({"value": as_data(namespace[name])})
        elif op == "call":
            result, error = None, None
            try:
                result = handles[request["handle"]](*request["args"], **request["kwargs"])
            except BaseException as err:  # noqa: BLE001
                error = _error(err)
            reply({"result": as_data(result), "error": error})


def drop_root(uid: int) -> None:
    """Become user ``uid`` (no groups, no capabilities), with at most :data:`PROCESSES` processes: root ignores
    that limit, an ordinary user does not."""
    resource.setrlimit(resource.RLIMIT_NPROC, (PROCESSES, PROCESSES))
    if os.getuid() == 0:
        os.setgroups([])
        for user in (uid, 65534):  # nobody, where a container maps only the usual numbers
            try:
                os.setgid(user)
                os.setuid(user)
                break
            except OSError:
                continue
    if os.getuid() == 0:
        raise SystemExit("could not give up root")


def main(argv) -> int:
    sys.path.insert(0, argv[1])  # the checkers' grading copy, before anything else
    drop_root(int(argv[2]))
    proto_in, proto_out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    with open(os.devnull, "rb") as nothing:
        os.dup2(nothing.fileno(), 0)
    os.dup2(2, 1)  # what the learner prints goes to the grader's output file
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = sys.stdout
    sys.argv = [""]
    os.environ["MPLBACKEND"] = "Agg"
    os.environ["ATTN_HELPERS_PROGRESS"] = "off"
    serve(proto_in, proto_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
