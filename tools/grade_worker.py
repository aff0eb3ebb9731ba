"""The child side of sandboxed grading: runs one exercise of a submitted notebook and answers in plain data.

    python -I tools/grade_worker.py SITE      # started by tools/grade.py, inside the sandbox; SITE: the checkers

The grader (tools/grade.py) never runs a learner's code; it sends this process the notebook's own cells that
the exercise needs, then the learner's exercise cell, then requests: "the value of ``my_total``", "call
``softmax_any_axis`` with these arrays". Every message, both ways, is an ``.npz`` archive (``allow_pickle=False``):
a JSON header plus the arrays it names, so nothing the learner's code makes can run in the grader.
Stdlib and numpy only; the learner's output goes to ``output.txt`` in the working folder, not to the grader.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import io
import json
import os
import struct
import sys
import traceback
import types

import numpy as np

CELL = "<your exercise cell>"  # the file name of the learner's code, as tracebacks and the call watch see it
PACKAGE = "attn_helpers"


# --------------------------------------------------------------------------- plain data, both ways


def encode(value, arrays: list, depth: int = 0):
    """``value`` as JSON-able data; arrays go into ``arrays`` (an object the grader cannot rebuild: its name)."""
    if depth > 50:
        return {"__object__": "deeply nested data", "repr": ""}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Handle):
        return {"__function__": value.index, "name": value.name, "source": value.source}
    if value is Ellipsis:
        return {"__ellipsis__": True}
    if isinstance(value, complex):
        return {"__complex__": [value.real, value.imag]}
    if isinstance(value, (np.ndarray, np.generic)) and np.asarray(value).dtype.kind in "biufcUS?":
        arrays.append(np.asarray(value).copy())
        return {"__array__": len(arrays) - 1, "scalar": isinstance(value, np.generic)}
    if isinstance(value, np.ndarray):  # object arrays: element by element
        return {"__objects__": encode(value.tolist(), arrays, depth + 1)}
    if isinstance(value, (list, tuple)):
        items = [encode(item, arrays, depth + 1) for item in value]
        return items if isinstance(value, list) else {"__tuple__": items}
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {"__dict__": {key: encode(item, arrays, depth + 1) for key, item in value.items()}}
    if dataclasses.is_dataclass(value) and type(value).__module__.startswith(PACKAGE + "."):
        fields = {f.name: encode(getattr(value, f.name), arrays, depth + 1)
                  for f in dataclasses.fields(value) if f.init}
        return {"__dataclass__": [type(value).__module__, type(value).__qualname__], "fields": fields}
    return {"__object__": type(value).__name__, "repr": _short_repr(value)}


def decode(data, arrays, make_function=None):
    """The value :func:`encode` wrote; ``make_function(spec)`` rebuilds a function handle (the grader's proxy)."""
    if isinstance(data, list):
        return [decode(item, arrays, make_function) for item in data]
    if not isinstance(data, dict):
        return data
    if "__array__" in data:
        array = arrays[data["__array__"]]
        return array[()] if data["scalar"] else array
    if "__tuple__" in data:
        return tuple(decode(item, arrays, make_function) for item in data["__tuple__"])
    if "__dict__" in data:
        return {key: decode(item, arrays, make_function) for key, item in data["__dict__"].items()}
    if "__objects__" in data:
        return np.array(decode(data["__objects__"], arrays, make_function), dtype=object)
    if "__ellipsis__" in data:
        return Ellipsis
    if "__complex__" in data:
        return complex(*data["__complex__"])
    if "__dataclass__" in data:
        module, name = data["__dataclass__"]
        if not module.startswith(PACKAGE + "."):
            raise ValueError(f"not a class of the series: {module}.{name}")
        cls = getattr(importlib.import_module(module), name)
        return cls(**{key: decode(item, arrays, make_function) for key, item in data["fields"].items()})
    if "__function__" in data and make_function is not None:
        return make_function(data)
    return opaque(data.get("__object__", "object"), data.get("repr", ""))


class Handle:
    """A function that stays in the learner's process, sent as its number there, its name and its source."""

    def __init__(self, index: int, name: str, source: str = ""):
        self.index, self.name, self.source = index, name, source


def opaque(type_name: str, text: str):
    """A stand-in for an object that stays in the sandbox: its type's name and its repr, nothing else."""
    return type(str(type_name), (), {"__repr__": lambda self: text})()


def _short_repr(value) -> str:
    try:
        return repr(value)[:200]
    except BaseException:  # noqa: BLE001 - a learner's __repr__ may raise anything
        return "<no repr>"


def pack(message: dict) -> bytes:
    """``message`` (with its arrays) as one length-prefixed ``.npz`` frame."""
    arrays: list = []
    header = json.dumps(encode(message, arrays))
    buffer = io.BytesIO()
    np.savez(buffer, header=np.frombuffer(header.encode(), dtype=np.uint8),
             **{f"a{i}": array for i, array in enumerate(arrays)})
    return struct.pack("!Q", buffer.tell()) + buffer.getvalue()


def unpack(payload: bytes, make_function=None):
    """The message of one frame's payload (no pickles are ever loaded)."""
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        header = json.loads(archive["header"].tobytes().decode())
        arrays = [archive[f"a{i}"] for i in range(len(archive.files) - 1)]
    return decode(header, arrays, make_function)


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


def _snapshot() -> dict:
    """Every attribute of numpy and of the series' modules, by identity (and each function's code)."""
    found = {}
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType) and (name.split(".")[0] in ("numpy", PACKAGE, "builtins")):
            for attr, value in list(vars(module).items()):
                found[f"{name}.{attr}"] = (id(value), id(getattr(value, "__code__", None)))
    return found


def _patched(before: dict) -> list[str]:
    after = _snapshot()
    return sorted(name for name, ident in before.items() if after.get(name, ident) != ident)


class _Watch:
    """Which functions of the series the learner's code calls directly, and what each returned."""

    def __init__(self):
        self.root = os.path.dirname(importlib.import_module(PACKAGE).__file__)
        self.frames: dict = {}
        self.calls: list = []

    def __call__(self, frame, event, arg):
        if event == "call" and frame.f_back is not None and frame.f_back.f_code.co_filename == CELL \
                and frame.f_code.co_filename.startswith(self.root):
            body = frame.f_locals.get("body") if frame.f_code.co_name == "public" else None  # _validate's wrapper
            name = f"{body.__module__}.{body.__name__}" if callable(body) else \
                f"{frame.f_globals.get('__name__', '')}.{frame.f_code.co_name}"
            self.frames[id(frame)] = len(self.calls)
            self.calls.append([name, None])
        elif event == "return" and id(frame) in self.frames:
            self.calls[self.frames.pop(id(frame))][1] = arg


def _same(a, b) -> bool:
    if a is b:
        return True
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        x, y = np.asarray(a), np.asarray(b)
        return x.dtype.kind in "biuf" and x.shape == y.shape and x.size > 0 and bool(np.allclose(x, y))
    except BaseException:  # noqa: BLE001
        return False


def borrowed(watch: _Watch, result, solutions) -> str:
    """A sentence when the learner's function handed in the series' own work (it calls one of ``solutions``, or
    returns what a function of the series returned), else ``""``."""
    for name, returned in watch.calls:
        if name in solutions:
            return f"your function calls {name}, the series' own solution"
        if _same(returned, result):
            return f"your function returns what {name} computed: the exercise asks you to write it yourself"
    return ""


class _Recorder(np.ndarray):
    """An argument that notes the products and transposes taken of it, for a checker that watches them."""

    events: list = []

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        _Recorder.events.append([self.index, "ufunc", ufunc.__name__])
        return super().__array_ufunc__(ufunc, method, *(np.asarray(x) for x in inputs), **kwargs)

    def __array_finalize__(self, obj):
        self.index = getattr(obj, "index", -1)  # what is computed from an argument counts as that argument

    def __array_function__(self, func, types_, args, kwargs):
        _Recorder.events.append([self.index, "function", func.__module__, func.__name__])
        return super().__array_function__(func, types_, args, kwargs)

    def dot(self, *args, **kwargs):
        _Recorder.events.append([self.index, "method", "dot"])
        return np.asarray(self).dot(*args, **kwargs)

    @property
    def T(self):  # noqa: N802 - numpy's own name
        _Recorder.events.append([self.index, "method", "T"])
        return np.asarray(self).T

    def transpose(self, *axes):
        _Recorder.events.append([self.index, "method", "transpose", [a if isinstance(a, int) else None for a in axes]])
        return np.asarray(self).transpose(*axes)


def _watched(value, index):
    view = np.asarray(value).view(_Recorder)
    view.index = index
    return view


def _source(fn, cell: str) -> str:
    """The lines of the learner's ``cell`` that define ``fn`` (for a checker that reads them), else ``""``."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_filename != CELL:
        return ""
    try:
        return "".join(inspect.getblock(cell.splitlines(keepends=True)[code.co_firstlineno - 1:]))
    except Exception:  # noqa: BLE001 - source that tokenize cannot read
        return ""


def serve(proto_in, proto_out) -> None:
    """Answer the grader's messages until it closes the pipe."""
    namespace: dict = {"__name__": "__main__", "display": lambda *objects, **_: print(*map(repr, objects))}
    handles, solutions, cell = [], set(), ""

    def reply(message):
        try:
            frame = pack(message)
        except BaseException as err:  # noqa: BLE001 - a value that does not encode becomes its name
            frame = pack({"error": {"type": "EncodingError", "message": f"could not send the answer back ({err})",
                                    "traceback": ""}})
        proto_out.write(frame)
        proto_out.flush()

    def as_data(value):
        if callable(value) and not isinstance(value, type):
            handles.append(value)
            return Handle(len(handles) - 1, str(getattr(value, "__name__", "function")), _source(value, cell))
        return value

    while (payload := read_frame(proto_in)) is not None:
        request = unpack(payload)
        op = request["op"]
        if op == "run":  # the notebook's own cells, then the learner's cell
            solutions, cell = set(request["solutions"]), request["cell"]
            try:
                for source in request["context"]:
                    exec(compile(source, "<the notebook's own cell>", "exec"), namespace)  # noqa: S102
            except BaseException as err:  # noqa: BLE001
                reply({"setup_error": _error(err)})
                continue
            before, error = _snapshot(), None
            try:
                exec(compile(request["cell"], CELL, "exec"), namespace)  # noqa: S102 - the learner's code, sandboxed
            except BaseException as err:  # noqa: BLE001 - any failure is the learner's, reported as data
                error = _error(err)
            reply({"error": error, "patched": _patched(before)})
        elif op == "value":
            name = request["name"]
            if name not in namespace:
                reply({"error": {"type": "NameError", "message": f"name {name!r} is not defined", "traceback": ""}})
            else:
                reply({"value": as_data(namespace[name])})
        elif op == "call":
            args = [_watched(a, i) if i in request["watch"] else a for i, a in enumerate(request["args"])]
            _Recorder.events = []
            watch, result, error = _Watch(), None, None
            sys.setprofile(watch)
            try:
                result = handles[request["handle"]](*args, **request["kwargs"])
            except BaseException as err:  # noqa: BLE001
                error = _error(err)
            finally:
                switched_off = sys.getprofile() is not watch
                sys.setprofile(None)
            message = borrowed(watch, result, solutions) if error is None else ""
            if switched_off:
                message = "your function switches off the grader's watch (sys.setprofile)"
            reply({"result": as_data(result), "error": error, "borrowed": message, "events": _Recorder.events})


def main(argv) -> int:
    sys.path.insert(0, argv[1])  # the checkers' grading copy, before anything else
    proto_in, proto_out = os.fdopen(os.dup(0), "rb"), os.fdopen(os.dup(1), "wb")
    with open(os.devnull, "rb") as nothing, open("output.txt", "ab") as output:
        os.dup2(nothing.fileno(), 0)
        os.dup2(output.fileno(), 1)
        os.dup2(output.fileno(), 2)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = sys.stdout
    os.environ["MPLBACKEND"] = "Agg"
    os.environ["ATTN_HELPERS_PROGRESS"] = "off"
    serve(proto_in, proto_out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
