"""One pint registry for the whole course (lesson 1 introduces units).

The registry is installed as pint's *application registry*, so Quantities made by course_lib,
by a notebook and by a test all mix. Bytes have a dimension of their own (information), so a
byte count never passes for a plain number. It adds the units the course needs on top of pint's own:
``FLOP`` (with SI prefixes: ``TFLOP/s``), ``MAC`` (= 2 FLOP, the vendors' convention), ``OP``
(an integer operation, counted like a FLOP: ``TOP/s`` is TOPS),
``byte`` with decimal (``GB``) and binary (``GiB``) prefixes, and ``FLOP/byte``.

Inside the solvers everything is a plain SI float (FLOP, byte, second); Quantities appear
only at the public surface. ``import course_lib`` installs the registry.
"""
from __future__ import annotations

import functools

from .errors import UnitsError

_EXTRA_UNITS = (
    # name = definition = symbol = aliases: the symbol is what short formats print ("TFLOP/s")
    "flop = [computation] = FLOP = FLOPs",
    "multiply_accumulate = 2 * flop = MAC",
    # integer operations (TOPS) count like FLOPs: 2 per multiply-accumulate
    "operation = flop = OP = OPs",
)

# Dimension a public argument must have, the base unit inside, and an example for errors.
DIMENSIONS = {
    "flops": ("FLOP", "Q_(312, 'TFLOP/s')"),
    "flop_rate": ("FLOP / second", "Q_(312, 'TFLOP/s')"),
    "bandwidth": ("byte / second", "Q_(2, 'TB/s')"),
    "bytes": ("byte", "Q_(80, 'GB')"),
    "time": ("second", "Q_(1, 'us')"),
    "intensity": ("FLOP / byte", "Q_(153, 'FLOP/byte')"),
    "power": ("watt", "Q_(400, 'W')"),
}


@functools.lru_cache(maxsize=None)
def registry():
    """The shared pint registry, installed as pint's application registry.

    pint's stock definitions make the bit (and so the byte) dimensionless, which would let a
    byte count pass where a plain number or a FLOP count is expected. The course's registry is
    pint's own definitions with one change, ``bit = [information]``, plus FLOP and MAC.
    """
    import pathlib

    import pint

    base = pathlib.Path(pint.__file__).parent
    try:
        text = (base / "default_en.txt").read_text()
        text = text.replace("@import constants_en.txt", (base / "constants_en.txt").read_text())
        if "\nbit = []\n" not in text or "@import" in text:
            raise ValueError("unexpected layout of pint's definition files")
        ureg = pint.UnitRegistry(None)
        ureg.load_definitions(text.replace("\nbit = []\n", "\nbit = [information] = b\n").splitlines())
    except (OSError, ValueError):  # another pint layout: keep its registry, bytes dimensionless
        ureg = pint.get_application_registry().get()
    for definition in _EXTRA_UNITS:
        if definition.split()[0] not in ureg:
            ureg.define(definition)
    pint.set_application_registry(ureg)
    return pint.get_application_registry()


def Q_(value, units=None):
    """Make a Quantity in the course's registry.

    >>> Q_(2.039, "TB/s").to("GB/s")
    <Quantity(2039.0, 'gigabyte / second')>
    >>> Q_(1, "MAC").to("FLOP")
    <Quantity(2, 'flop')>
    """
    return registry().Quantity(value, units)


def is_quantity(x) -> bool:
    return hasattr(x, "magnitude") and hasattr(x, "units") and hasattr(x, "to")


def to_si(x, kind: str, name: str = "value") -> float:
    """A Quantity of dimension `kind` as a plain float in the course's base unit.

    Bare numbers are refused, with a message that says how to attach units (MetPy's habit):
    a bare 2 could be TB/s or GB/s, and guessing is how wrong answers are born.
    """
    unit, example = DIMENSIONS[kind]
    if not is_quantity(x):
        raise UnitsError(
            f"{name} needs units: expected a {kind.replace('_', ' ')} such as {example}, "
            f"got the bare number {x!r}. Attach units with Q_(value, 'unit')."
        )
    try:
        return x.m_as(unit)
    except Exception:
        raise UnitsError(
            f"{name} has the wrong dimension: expected a {kind.replace('_', ' ')} such as "
            f"{example}, got {x:~P} ({x.dimensionality})."
        ) from None


def quantity(value, unit: str):
    """A plain SI value (float or numpy array) as a Quantity in `unit` at the public surface."""
    return Q_(value, unit)
