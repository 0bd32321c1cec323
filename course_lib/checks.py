"""Checking students' answers: normalize, compare with units and tolerance, and say why.

Used by the notebooks' test cells. Messages teach without giving the answer away, and
nothing here writes to stderr (nbgrader marks a test cell with any stderr output as failed).

>>> normalize_regime("Memory Bound")
'memory-bound'
>>> check_number(153, Q_(152.9, "FLOP/byte"))          # a bare number is read in the truth's units
>>> check_number(Q_(0.153, "kFLOP/byte"), Q_(152.9, "FLOP/byte"))
"""
from __future__ import annotations

import math
import re

from .units import Q_, is_quantity

__all__ = ["normalize_regime", "normalize_choice", "check_form_regime", "check_form_choice",
           "check_form_number", "check_regime", "check_choice", "check_number", "compare",
           "Q_"]

_REGIME_WORDS = {
    "memory-bound": ("memory", "bandwidth", "mem"),
    "compute-bound": ("compute", "flops", "flop", "math", "arithmetic"),
    "communication-bound": ("communication", "comm", "network", "interconnect", "allreduce"),
}
_PLACEHOLDERS = {"", "...", "todo", "your reason here", "your answer here", "because"}


def normalize_regime(answer) -> str:
    """'Memory Bound', 'memory', 'MEMORY-BOUND' → 'memory-bound' (also compute-, communication-).

    Raises ValueError for anything else.

    >>> normalize_regime("compute")
    'compute-bound'
    """
    if not isinstance(answer, str):
        raise ValueError(f"a regime is a string such as 'memory-bound' or 'compute-bound', got {answer!r}")
    words = re.sub(r"[^a-z]+", " ", answer.lower()).split()
    words = [w for w in words if w not in ("bound", "limited", "the", "is", "it")]
    found = {regime for regime, keys in _REGIME_WORDS.items() if any(w in keys for w in words)}
    if len(found) != 1:
        raise ValueError(f"{answer!r} is not a regime: answer 'memory-bound' or 'compute-bound'"
                         " (or 'communication-bound' where tensor parallelism is involved)")
    return found.pop()


def normalize_choice(answer, choices) -> str:
    """Match `answer` to one of `choices` ignoring case, spaces, dashes and underscores.

    >>> normalize_choice("Pre fill", ["prefill", "decode"])
    'prefill'
    """
    key = lambda s: re.sub(r"[\s_\-]+", "", str(s).lower())  # noqa: E731
    table = {key(c): c for c in choices}
    if key(answer) not in table:
        raise ValueError(f"{answer!r} is not one of the choices: {', '.join(map(str, choices))}")
    return table[key(answer)]


def _check_reason(reasoning):
    assert isinstance(reasoning, str), (
        f"Give your reasoning as a string, e.g. q1_reasoning = \"...\"; got {type(reasoning).__name__}.")
    assert reasoning.strip().lower() not in _PLACEHOLDERS and len(reasoning.strip()) >= 10, (
        "Write a one-line reason for your prediction (a sentence, not a placeholder): "
        "the point of predicting is to commit to *why*.")


# ---- form checks: visible tests, no answer given away ------------------------------------
def check_form_regime(prediction, reasoning) -> None:
    """The prediction names a regime and comes with a reason.

    >>> check_form_regime("memory", "intensity is far below the ridge point")
    >>> check_form_regime("memory", "")
    Traceback (most recent call last):
    AssertionError: Write a one-line reason for your prediction (a sentence, not a placeholder): the point of predicting is to commit to *why*.
    """
    try:
        normalize_regime(prediction)
    except ValueError as e:
        raise AssertionError(str(e)) from None
    _check_reason(reasoning)


def check_form_choice(prediction, choices, reasoning=None) -> None:
    """The prediction is one of `choices` (and has a reason if one is asked for).

    >>> check_form_choice("Above", ("above", "below"))
    """
    try:
        normalize_choice(prediction, choices)
    except ValueError as e:
        raise AssertionError(str(e)) from None
    if reasoning is not None:
        _check_reason(reasoning)


def check_form_number(prediction, units=None, reasoning=None) -> None:
    """The prediction is a finite number, or a Quantity convertible to `units`.

    >>> check_form_number(Q_(4.5, "ms"), "ms")
    >>> check_form_number(Q_(4.5, "GB"), "ms")
    Traceback (most recent call last):
    AssertionError: Your answer has units GB, which cannot be converted to ms. Check what the question asks for.
    """
    if is_quantity(prediction):
        if units is not None:
            assert prediction.check(Q_(1, units).dimensionality), (
                f"Your answer has units {prediction.units:~P}, which cannot be converted to "
                f"{units}. Check what the question asks for.")
        value = prediction.magnitude
    else:
        value = prediction
    assert isinstance(value, (int, float)) and not isinstance(value, bool) or hasattr(value, "__float__"), (
        f"Answer with a number (or a Quantity such as Q_(153, 'FLOP/byte')), got {prediction!r}.")
    assert math.isfinite(float(value)), f"Your answer {prediction!r} is not a finite number."
    if reasoning is not None:
        _check_reason(reasoning)


# ---- correctness checks: hidden tests -----------------------------------------------------
def check_regime(prediction, truth) -> None:
    """The predicted regime equals `truth` (a regime string or anything with ``.bottleneck``).

    >>> check_regime("Memory Bound", "memory-bound")
    """
    truth = normalize_regime(getattr(truth, "bottleneck", truth))
    try:
        got = normalize_regime(prediction)
    except ValueError as e:
        raise AssertionError(str(e)) from None
    assert got == truth, (
        f"The roofline disagrees with '{got}'. Compare the arithmetic intensity "
        "(FLOPs per byte moved) with the ridge point (peak FLOP/s per byte/s of bandwidth).")


def check_choice(prediction, truth, choices) -> None:
    """The prediction is the same choice as `truth`.

    >>> check_choice("DECODE", "decode", ("prefill", "decode"))
    """
    try:
        got = normalize_choice(prediction, choices)
    except ValueError as e:
        raise AssertionError(str(e)) from None
    assert got == normalize_choice(truth, choices), (
        "Not what course_lib finds. Rework the prediction from the numbers the question gives.")


_HINTS = (
    (2.0, "off by a factor of 2: check 2 FLOPs per multiply-accumulate, and 2 bytes per fp16 element"),
    (4.0, "off by a factor of 4: check bytes per element (fp32 = 4, fp16 = 2, int8 = 1)"),
    (1000.0, "off by a factor of 1000: check the unit prefixes (k, M, G, T; ms vs µs)"),
    (1e6, "off by a factor of a million: check the unit prefixes"),
    (1.073741824, "off by 7%: decimal GB (10⁹ B) vs binary GiB (2³⁰ B)?"),
    (1.024, "off by 2.4%: decimal kB (1000 B) vs binary KiB (1024 B)?"),
)


def check_number(answer, truth, rel_tol: float = 0.02, units: str | None = None) -> None:
    """`answer` matches `truth` within `rel_tol`.

    `truth` is a Quantity or a float. A bare-number answer is read in `units` if given, else
    in the truth's units; a Quantity answer is converted, so 153, Q_(153, "FLOP/byte") and
    Q_(0.153, "kFLOP/byte") all match a truth of 153 FLOP/byte.

    >>> check_number(Q_(0.153, "kFLOP/byte"), Q_(153.0, "FLOP/byte"))
    >>> check_number(306, Q_(153.0, "FLOP/byte"))
    Traceback (most recent call last):
    AssertionError: Your value (read in FLOP/B) is too large, off by a factor of 2: check 2 FLOPs per multiply-accumulate, and 2 bytes per fp16 element.
    """
    if is_quantity(truth):
        t_units = units or truth.units
        t = truth.m_as(t_units)
        if is_quantity(answer):
            try:
                a = answer.m_as(t_units)
            except Exception:
                raise AssertionError(
                    f"Your answer's units ({answer.units:~P}) do not convert to {Q_(1, t_units).units:~P}.") from None
        else:
            a = answer
    else:
        t, t_units = truth, units
        a = answer
        if is_quantity(answer):
            try:  # a plain-number truth is in `units` (or dimensionless: a ratio, a count)
                a = answer.m_as(units or "dimensionless")
            except Exception:
                raise AssertionError(
                    f"Your answer's units ({answer.units:~P}) do not convert to "
                    f"{units or 'a plain number'}.") from None
    try:
        a = float(a)
    except (TypeError, ValueError):
        raise AssertionError(f"Answer with a number, got {answer!r}.") from None
    assert math.isfinite(a), f"Your answer {answer!r} is not a finite number."
    if math.isclose(a, float(t), rel_tol=rel_tol, abs_tol=0.0):
        return
    unit_txt = f" (read in {Q_(1, t_units).units:~P})" if t_units is not None else ""
    if a == 0 or t == 0 or (a > 0) != (t > 0):
        raise AssertionError(f"Your value{unit_txt} is not within {rel_tol:.0%} of course_lib's.")
    ratio = max(a / t, t / a)
    direction = "large" if a > t else "small"
    # unit hints only for dimensioned answers: for a ratio or a count, a factor of 2 says
    # nothing about FLOPs per MAC
    dimensioned = t_units is not None and not Q_(1, t_units).dimensionless
    for factor, hint in _HINTS if dimensioned else ():
        # near-1 factors (GB vs GiB) need a tight match, or they catch unrelated slips
        if math.isclose(ratio, factor, rel_tol=max(rel_tol, 0.03) if factor > 1.5 else 0.004):
            raise AssertionError(f"Your value{unit_txt} is too {direction}, {hint}.")
    raise AssertionError(
        f"Your value{unit_txt} is too {direction} (not within {rel_tol:.0%}). "
        "Redo the arithmetic step by step: FLOPs, then bytes, then the ratio.")


# ---- verify cells --------------------------------------------------------------------------
def _show(v) -> str:
    if is_quantity(v):
        return f"{_show(v.magnitude)} {v.units:~P}"
    if isinstance(v, float):
        return f"{v:,.0f}" if v.is_integer() and abs(v) < 1e15 else f"{v:.4g}"
    if hasattr(v, "dtype") and getattr(v, "ndim", 1) == 0:  # numpy scalar
        return _show(v.item())
    if isinstance(v, int):
        return f"{v:,}"
    return str(v)


def compare(prediction, truth, explanation_if_wrong: str = "", *, kind: str = "regime",
            rel_tol: float = 0.1, units: str | None = None, choices=None) -> bool:
    """Print prediction vs truth for a verify cell; print `explanation_if_wrong` when it differs.

    kind -- "regime" (truth: a regime or a result with .bottleneck), "number" (with `rel_tol`
            and `units`), or "choice" (with `choices`).
    Returns whether the prediction was right. Never raises on a malformed prediction.

    >>> compare("compute", "memory-bound", "Intensity is below the ridge.")
    Your prediction: 'compute'
    course_lib:      memory-bound
    Your prediction differs. Intensity is below the ridge.
    False
    """
    truth_v = getattr(truth, "bottleneck", truth) if kind == "regime" else truth
    if kind not in ("regime", "number", "choice"):
        raise ValueError(f"kind must be 'regime', 'number' or 'choice', got {kind!r}")
    try:
        if kind == "regime":
            right = normalize_regime(prediction) == normalize_regime(truth_v)
        elif kind == "choice":
            right = normalize_choice(prediction, choices) == normalize_choice(truth_v, choices)
        else:
            check_number(prediction, truth_v, rel_tol=rel_tol, units=units)
            right = True
    except (AssertionError, ValueError, TypeError):
        right = False
    shown = _show(truth_v)
    print(f"Your prediction: {_show(prediction) if kind == 'number' else repr(prediction)}")
    print(f"course_lib:      {shown}")
    if right:
        print("Your prediction holds.")
    else:
        print("Your prediction differs." + (f" {explanation_if_wrong}" if explanation_if_wrong else ""))
    return right
