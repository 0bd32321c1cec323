"""Answer values written down as JSON and read back exactly.

The autograder records every answer variable right after its answer cell ran (in the student's
kernel) and re-checks the answers in a clean process from that record; a prediction record
(commit before the reveal) can use the same format. ``encode`` turns a value into plain JSON
data, ``decode`` gives the value back: the same type, the same number, the same units.

Supported: ``str``, ``int``, ``float`` (nan and infinities too), ``bool``, ``None``, pint
Quantities (the magnitude, itself any supported number, and the unit string, read back with
the course's registry), numpy scalars, numpy arrays with one element (0-d included), and
tuples and lists of these. Anything else raises :class:`UnsupportedAnswer`, which says what is
supported; so does a malformed record given to ``decode``.

>>> decode(encode(Q_(0.153, "kFLOP/byte")))
<Quantity(0.153, 'kiloflop / byte')>
>>> encode(7)
{'type': 'int', 'value': 7}
>>> decode(encode(("prefill", 2.5)))
('prefill', 2.5)
>>> encode({"a": 1})
Traceback (most recent call last):
course_lib.exercises.answers.UnsupportedAnswer: a value of type dict cannot be recorded as an answer: answers are str, int, float, bool, None, pint Quantities, numpy scalars or one-element arrays, and tuples or lists of these
"""
from __future__ import annotations

import math
import re

from ..units import Q_, is_quantity

__all__ = ["encode", "decode", "record", "UnsupportedAnswer", "SUPPORTED"]

SUPPORTED = ("str, int, float, bool, None, pint Quantities, numpy scalars or one-element arrays, "
             "and tuples or lists of these")
MAX_DEPTH = 8            # nesting of tuples and lists
MAX_ITEMS = 10_000       # items of one tuple or list
MAX_UNITS_CHARS = 200    # a recorded unit string
# A recorded unit string as encode writes it (pint's "D" format): unit names joined by " * " and
# " / ", each with an optional plain numeric exponent, or "1 / ..."; checked before pint parses it,
# so that a record cannot make pint evaluate an expression ("meter ** (9 ** 9 ** 9)")
_FACTOR = r"[A-Za-z_][A-Za-z0-9_]{0,63}(?: ?\*\* ?-?\d{1,3}(?:\.\d{1,17})?)?"
UNITS_GRAMMAR = re.compile(rf"(?:1|{_FACTOR})(?: [*/] {_FACTOR}){{0,15}}")


class UnsupportedAnswer(TypeError):
    """A value that cannot be written down as an answer, or a record that is not one."""


def _float(x: float):
    # JSON has no nan or infinity: write them as strings
    return x if math.isfinite(x) else repr(x)


def _unfloat(x) -> float:
    if isinstance(x, str):
        if x not in ("nan", "inf", "-inf"):
            raise UnsupportedAnswer(f"not a float in an answer record: {x!r}")
        return float(x)
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise UnsupportedAnswer(f"not a float in an answer record: {x!r}")
    return float(x)


def _numpy():
    try:
        import numpy
    except ImportError:  # pragma: no cover - numpy is a dependency of course_lib
        return None
    return numpy


def encode(value, _depth: int = 0):
    """Plain JSON data (dicts, lists, str, numbers) from which ``decode`` rebuilds `value`.

    >>> encode(Q_(2, "ms"))
    {'type': 'quantity', 'magnitude': {'type': 'int', 'value': 2}, 'units': 'millisecond'}
    >>> encode(float("inf"))
    {'type': 'float', 'value': 'inf'}
    """
    if _depth > MAX_DEPTH:
        raise UnsupportedAnswer(f"answers nest tuples and lists at most {MAX_DEPTH} deep")
    t = type(value)
    # exact types first: a subclass of str or float could carry code that runs on comparison
    if value is None:
        return {"type": "none"}
    if t is bool:
        return {"type": "bool", "value": value}
    if t is int:
        return {"type": "int", "value": value}
    if t is float:
        return {"type": "float", "value": _float(value)}
    if t is str:
        return {"type": "str", "value": value}
    if t in (tuple, list):
        if len(value) > MAX_ITEMS:
            raise UnsupportedAnswer(f"a {t.__name__} of more than {MAX_ITEMS} items cannot be recorded as an answer")
        return {"type": t.__name__, "items": [encode(v, _depth + 1) for v in value]}
    if is_quantity(value):
        return {"type": "quantity", "magnitude": encode(value.magnitude, _depth + 1),
                "units": format(value.units, "D")}
    np = _numpy()
    if np is not None:
        if isinstance(value, np.generic):
            return _encode_numpy(np, value, None, value.dtype)
        if t is np.ndarray:
            if value.size != 1:
                raise UnsupportedAnswer(f"a numpy array of {value.size} elements cannot be recorded as an "
                                        f"answer (one element only): answers are {SUPPORTED}")
            return _encode_numpy(np, value.reshape(())[()], list(value.shape), value.dtype)
    raise UnsupportedAnswer(f"a value of type {t.__name__} cannot be recorded as an answer: answers are {SUPPORTED}")


def _encode_numpy(np, scalar, shape, dtype):
    kind = dtype.kind
    if kind == "b":
        item = bool(scalar)
    elif kind in "iu":
        item = int(scalar)
    elif kind == "f":
        item = _float(float(scalar))
    elif kind == "U":
        item = str(scalar)
    else:
        raise UnsupportedAnswer(f"a numpy value of dtype {dtype} cannot be recorded as an answer: "
                                f"answers are {SUPPORTED}")
    out = {"type": "numpy", "dtype": dtype.str, "value": item}
    if shape is not None:
        out["shape"] = shape
    return out


def decode(obj):
    """The value `obj` (from ``encode``) stands for.

    >>> decode({"type": "str", "value": "memory-bound"})
    'memory-bound'
    >>> decode({"type": "numpy", "dtype": "<f8", "value": 1.5})
    np.float64(1.5)
    """
    return _decode(obj, 0)


def _decode(obj, depth):
    if depth > MAX_DEPTH:
        raise UnsupportedAnswer(f"answer records nest at most {MAX_DEPTH} deep")
    if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
        raise UnsupportedAnswer(f"not an answer record (a dict with a 'type'): {str(obj)[:80]}")
    t = obj["type"]
    if t == "none":
        return None
    if t in ("bool", "int", "str"):
        v = obj.get("value")
        want = {"bool": bool, "int": int, "str": str}[t]
        if type(v) is not want:
            raise UnsupportedAnswer(f"an answer record of type {t} holds {type(v).__name__}")
        return v
    if t == "float":
        return _unfloat(obj.get("value"))
    if t in ("tuple", "list"):
        items = obj.get("items")
        if not isinstance(items, list) or len(items) > MAX_ITEMS:
            raise UnsupportedAnswer(f"an answer record of type {t} without a list of items")
        out = [_decode(i, depth + 1) for i in items]
        return tuple(out) if t == "tuple" else out
    if t == "quantity":
        units = obj.get("units")
        if not isinstance(units, str):
            raise UnsupportedAnswer("a quantity record without a unit string")
        if len(units) > MAX_UNITS_CHARS or not UNITS_GRAMMAR.fullmatch(units):
            raise UnsupportedAnswer(f"not a unit string of an answer record: {units[:80]!r} (expected unit names "
                                    "joined by ' * ' and ' / ', each with an optional number as exponent, "
                                    "e.g. 'gigabyte / second' or 'meter ** 2')")
        magnitude = _decode(obj.get("magnitude"), depth + 1)
        try:
            return Q_(magnitude, units)
        except Exception as e:
            raise UnsupportedAnswer(f"unknown units in an answer record: {units!r} ({e})") from None
    if t == "numpy":
        np = _numpy()
        try:
            dtype = np.dtype(obj["dtype"])
        except Exception:
            raise UnsupportedAnswer(f"not a numpy dtype in an answer record: {obj.get('dtype')!r}") from None
        if dtype.kind not in "biufU":
            raise UnsupportedAnswer(f"numpy dtype {dtype} is not an answer type")
        v = obj.get("value")
        if dtype.kind == "f":
            v = _unfloat(v)
        elif type(v) not in (bool, int, str):
            raise UnsupportedAnswer(f"not a numpy scalar value in an answer record: {v!r}")
        shape = obj.get("shape")
        if shape is None:
            return np.array(v, dtype=dtype)[()]
        if not isinstance(shape, list) or not all(type(n) is int and n == 1 for n in shape):
            raise UnsupportedAnswer(f"not the shape of a one-element array: {shape!r}")
        return np.array(v, dtype=dtype).reshape(shape)
    raise UnsupportedAnswer(f"unknown answer record type {t!r}")


MAX_RECORD_CHARS = 100_000   # one answer's JSON; a bigger "answer" is not an answer


def record(names, namespace: dict) -> str:
    """JSON of {name: {"value": encode(v)} | {"error": why} | {"missing": true}} for `names` in
    `namespace`: how a grader writes down the answers right after an answer cell ran.

    >>> record(["x", "y", "z"], {"x": 2.5, "z": {1}})
    '{"x": {"value": {"type": "float", "value": 2.5}}, "y": {"missing": true}, "z": {"error": "a value of type set cannot be recorded as an answer: answers are str, int, float, bool, None, pint Quantities, numpy scalars or one-element arrays, and tuples or lists of these"}}'
    """
    import json

    out = {}
    for name in names:
        if name not in namespace:
            out[name] = {"missing": True}
            continue
        try:
            text = json.dumps(encode(namespace[name]), allow_nan=False)
            if len(text) > MAX_RECORD_CHARS:
                raise UnsupportedAnswer(f"too large to record as an answer ({len(text):,} characters of JSON, "
                                        f"at most {MAX_RECORD_CHARS:,})")
            out[name] = {"value": json.loads(text)}
        except UnsupportedAnswer as e:
            out[name] = {"error": str(e)}
        except Exception as e:   # a value whose conversion itself fails (a broken Quantity...)
            out[name] = {"error": f"could not be recorded: {type(e).__name__}: {e}"}
    return json.dumps(out)
