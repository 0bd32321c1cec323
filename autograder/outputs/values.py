"""How the instructor's pages show a recorded answer: decoded from its record, and written short
(three significant digits, strings cut at 40 characters) for the report's tables, the copies list
and the changed-after-reveal rows. A student's own receipts use
course_lib.exercises.predictions.show_values (four digits, strings quoted) instead."""
from __future__ import annotations

import re


def decode_entry(entry):
    """(ok, value) from a recorded entry {"value": ...} / {"error": ...} / {"missing": true}."""
    from course_lib.exercises.answers import decode

    if not isinstance(entry, dict) or "value" not in entry:
        return False, None
    try:
        return True, decode(entry["value"])
    except Exception:
        return False, None


def show(value) -> str:
    """A short printable form of an answer value."""
    from course_lib.units import is_quantity

    if is_quantity(value):
        return f"{show(value.magnitude)} {value.units:~P}"
    if hasattr(value, "dtype") and getattr(value, "size", 2) == 1:
        return show(value.item() if hasattr(value, "item") else value)
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, str):
        return re.sub(r"\s+", " ", value.strip())[:40] or "(empty string)"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(show(v) for v in value)[:40] + ")"
    return str(value)[:40]


def _number(x: float) -> str:
    """Three significant digits, but never an exponent where the digits fit: 1024 stays "1024"
    (a batch, a byte count: "1.02e+03" read as another number, issue 47), 2047.6 is "2048";
    from a million, or under a thousandth, the exponent is the short form."""
    import math

    if not math.isfinite(x):
        return str(x)
    if 1e3 <= abs(x) < 1e6 or (float(x).is_integer() and abs(x) < 1e6):
        return f"{x:.0f}"
    return f"{x:.3g}"
