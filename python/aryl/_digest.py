"""A digest of a value's full content, for cache keys (``aryl.policy.policy_identity``).

``digest(value)`` hashes what a value holds, never its printed form: NumPy arrays by
dtype, shape and bytes (``repr`` elides a big array's middle), containers element by
element (a set or a dict in sorted order, so string hashing cannot reorder them), a
function by its code, constants, defaults and closure, an object of a class written
in Python by its class and attributes. A value it cannot see through (an object of
a compiled extension type it does not know, a generator, an open file) is an
``Unfingerprintable`` error naming where in the value it sits, never a guess: two
values that differ must not share a cache entry.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import hashlib
import inspect
import pathlib
import random
import types
import uuid
from typing import Any, Dict, List, Tuple

import numpy as np
import pandas as pd

#: Values whose ``repr`` is exact and stable across processes.
_BY_REPR = (
    range,
    slice,
    pathlib.PurePath,
    decimal.Decimal,
    fractions.Fraction,
    datetime.date,
    datetime.time,
    datetime.timedelta,
    datetime.timezone,
    uuid.UUID,
    type(Ellipsis),
    type(NotImplemented),
)
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class written in Python


class Unfingerprintable(TypeError):
    """A value whose content ``digest`` cannot hash faithfully; ``where`` says where
    in the value (``.weights[3]``) and ``kind`` what it is."""

    def __init__(self, where: str, kind: str, why: str):
        self.where, self.kind = where, kind
        super().__init__(f"{where or 'the value'} ({kind}): {why}")


def digest(value: Any, where: str = "") -> str:
    """64 hex digits of SHA-256 over ``value``'s full content (module docstring);
    ``where`` names the value in an ``Unfingerprintable`` error's message."""
    return _Digest().of(value, where, []).hex()


def _name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def _hash(tag: str, *parts: bytes) -> bytes:
    h = hashlib.sha256(tag.encode())
    for part in parts:
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return h.digest()


class _Digest:
    def of(self, value: Any, where: str, stack: List[int]) -> bytes:
        if value is None or isinstance(value, (bool, str)):
            return _hash(type(value).__name__, repr(value).encode())
        if isinstance(value, enum.Enum):
            return _hash("enum", _name(type(value)).encode(), value.name.encode())
        if type(value) in (int, float, complex):
            text = value.hex() if isinstance(value, float) else repr(value)
            return _hash(type(value).__name__, text.encode())
        if type(value) in (bytes, bytearray, memoryview):
            return _hash("bytes", bytes(value))
        if isinstance(value, _BY_REPR):
            return _hash("repr", _name(type(value)).encode(), repr(value).encode())
        if isinstance(value, type):
            return self._class(value)
        if id(value) in stack:  # a reference back to a value that contains it
            return _hash("ref", str(stack.index(id(value))).encode())
        stack.append(id(value))
        try:
            return self._contents(value, where, stack)
        finally:
            stack.pop()

    def _contents(self, value: Any, where: str, stack: List[int]) -> bytes:
        of = self.of
        kind = type(value)
        if isinstance(value, np.ndarray):
            return self._array(value, where, stack)
        if isinstance(value, np.generic):
            return _hash("np.generic", self._array(np.asarray(value), where, stack))
        if isinstance(value, (pd.DataFrame, pd.Series, pd.Index)):
            return self._pandas(value, where)
        if isinstance(value, (list, tuple)):
            items = [of(v, f"{where}[{i}]", stack) for i, v in enumerate(value)]
            return _hash("seq", _name(kind).encode(), *items)
        if isinstance(value, (set, frozenset)):
            items = sorted(of(v, f"{where}{{...}}", stack) for v in value)
            return _hash("set", _name(kind).encode(), *items)
        if isinstance(value, dict):
            pairs = sorted(
                (of(k, f"{where}[{k!r}]", stack), of(v, f"{where}[{k!r}]", stack))
                for k, v in value.items()
            )
            return _hash("dict", _name(kind).encode(), *(a + b for a, b in pairs))
        if isinstance(value, np.random.Generator):
            state = value.bit_generator.state
            return _hash("np.Generator", of(state, f"{where}.bit_generator", stack))
        if isinstance(value, np.random.RandomState):
            return _hash("np.RandomState", of(value.get_state(), where, stack))
        if isinstance(value, random.Random):
            return _hash(
                "random", _name(kind).encode(), of(value.getstate(), where, stack)
            )
        if isinstance(value, types.MethodType):
            return _hash(
                "method",
                of(value.__func__, f"{where}.__func__", stack),
                of(value.__self__, f"{where}.__self__", stack),
            )
        if isinstance(value, types.FunctionType):
            return self._function(value, where, stack)
        if isinstance(value, (types.BuiltinFunctionType, np.ufunc)):
            name = getattr(value, "__qualname__", value.__name__)
            module = getattr(value, "__module__", None) or ""
            return _hash("builtin", module.encode(), name.encode())
        if isinstance(value, types.CodeType):
            return self._code(value, where, stack)
        if isinstance(value, types.CellType):
            try:
                content = value.cell_contents
            except ValueError:  # an empty cell
                return _hash("cell")
            return _hash("cell", of(content, where, stack))
        if isinstance(value, dataclasses.Field):
            return _hash("field", value.name.encode())
        if _python_object(value):
            return self._object(value, where, stack)
        raise Unfingerprintable(
            where,
            f"a {_name(kind)}",
            "its content cannot be read faithfully (not plain data, an array, a "
            "container, a function, nor an object of a class written in Python)",
        )

    def _array(self, a: np.ndarray, where: str, stack: List[int]) -> bytes:
        shape = repr(a.shape).encode()
        if a.dtype.hasobject:
            items = [self.of(v, f"{where}[...]", stack) for v in a.ravel(order="C")]
            return _hash("ndarray-object", shape, *items)
        dtype = repr(a.dtype.descr) if a.dtype.fields else a.dtype.str
        return _hash(
            "ndarray", dtype.encode(), shape, np.ascontiguousarray(a).tobytes()
        )

    def _pandas(self, value: Any, where: str) -> bytes:
        try:
            rows = pd.util.hash_pandas_object(value, index=True).to_numpy()
        except TypeError as error:  # cells that cannot be hashed
            raise Unfingerprintable(
                where, f"a {type(value).__name__}", str(error)
            ) from None
        if isinstance(value, pd.DataFrame):
            head = repr([(str(c), str(t)) for c, t in value.dtypes.items()])
        else:
            head = repr((str(getattr(value, "name", None)), str(value.dtype)))
        index = (
            repr((str(value.index.dtype), value.index.names))
            if not isinstance(value, pd.Index)
            else ""
        )
        return _hash(
            "pandas",
            type(value).__name__.encode(),
            head.encode(),
            index.encode(),
            rows.tobytes(),
        )

    def _function(self, fn: types.FunctionType, where: str, stack: List[int]) -> bytes:
        of = self.of
        return _hash(
            "function",
            f"{fn.__module__}.{fn.__qualname__}".encode(),
            self._code(fn.__code__, where, stack),
            of(fn.__defaults__, f"{where}.__defaults__", stack),
            of(fn.__kwdefaults__, f"{where}.__kwdefaults__", stack),
            of(fn.__closure__ or (), f"{where} (its closure)", stack),
        )

    def _code(self, code: types.CodeType, where: str, stack: List[int]) -> bytes:
        names = (code.co_names, code.co_varnames, code.co_freevars, code.co_cellvars)
        return _hash(
            "code",
            code.co_code,
            repr(names).encode(),
            self.of(code.co_consts, f"{where} (its constants)", stack),
        )

    def _class(self, cls: type) -> bytes:
        try:
            source = inspect.getsource(cls)
        except (OSError, TypeError):
            source = ""
        return _hash("class", _name(cls).encode(), source.encode())

    def _object(self, value: Any, where: str, stack: List[int]) -> bytes:
        kind = type(value)
        fields: Dict[str, Any] = dict(getattr(value, "__dict__", {}))
        for c in kind.__mro__:
            for slot in getattr(c, "__slots__", ()):
                if isinstance(slot, str) and slot not in ("__dict__", "__weakref__"):
                    if hasattr(value, slot):
                        fields[slot] = getattr(value, slot)
        parts: List[Tuple[bytes, bytes]] = sorted(
            (name.encode(), self.of(v, f"{where}.{name}", stack))
            for name, v in fields.items()
        )
        return _hash("object", self._class(kind), *(a + b for a, b in parts))


def _python_object(value: Any) -> bool:
    """An instance of a class written in Python (every class of its MRO but
    ``object``), so its state is in its ``__dict__`` and slots, not in C."""
    if isinstance(value, (types.ModuleType, types.GeneratorType, types.FrameType)):
        return False
    mro = [c for c in type(value).__mro__ if c is not object]
    if not all(c.__flags__ & _HEAPTYPE for c in mro):
        return False  # a compiled (static) type among its classes
    # Compiled heap types (``_thread.lock``) keep their state in C and have no
    # ``__dict__``; a class written in Python has one, or declares ``__slots__``.
    return hasattr(value, "__dict__") or all("__slots__" in vars(c) for c in mro)
