"""What an answer may look like: one parser shared by every check.

A question's answer variable is described by a *spec*: ``Regime()``, ``Choice(...)``,
``Number(units)``, ``Ratio()``, ``WholeNumber()`` or ``Reason()``. ``spec.read(value)`` turns
what a student wrote into the normalized answer (a regime string, one of the choices, a float
in the spec's units) or raises ``NotAnAnswer`` saying what form is expected. The form checks,
the verify cells and the hidden tests all call ``read``, so an answer one accepts, all accept.

Rules, the same everywhere:

* a regime is a string naming one regime: ``"Memory Bound."``, ``"memory"``, ``"compute-bound"``.
  A negation ("not memory-bound"), a hedge ("memory or compute", "probably compute") or any
  other words are not a prediction;
* a choice matches one option ignoring case, spaces, dashes, underscores and a final full
  stop (``"Lower."`` is ``"lower"``); numeric options accept ``256``, ``256.0``, ``"256"``,
  numpy integers, but not ``256.5`` or ``True``;
* a number is an int, a float, a numpy scalar or one-element array, a numeric string such as
  ``"1.643"``, or a pint Quantity convertible to the spec's units (a bare number is read in
  them). ``True``/``False``, NaN and infinities are not numbers. A whole number must be whole.

>>> Regime().read("Memory Bound.")
'memory-bound'
>>> Choice("above", "below").read("Above.")
'above'
>>> Choice(16, 64, 256).read("256")
256
>>> Number("ms").read("1.5")
1.5
>>> Regime().read("not memory-bound")
Traceback (most recent call last):
course_lib.exercises.answer_forms.NotAnAnswer: 'not memory-bound' is not a prediction: a negation says what it is not. Name the regime it is: 'memory-bound' or 'compute-bound'.
"""
from __future__ import annotations

import math
import re

from ..units import Q_, is_quantity

__all__ = ["NotAnAnswer", "Spec", "Regime", "Choice", "Number", "Ratio", "WholeNumber", "Reason"]


class NotAnAnswer(ValueError):
    """The value is not an answer of the expected form; the message says which form."""


def _type_name(value) -> str:
    return type(value).__name__


# ---- regimes --------------------------------------------------------------------------------
_REGIME_WORDS = {
    "memory-bound": {"memory", "mem", "bandwidth"},
    "compute-bound": {"compute", "computation", "flops", "flop", "math", "arithmetic"},
    "communication-bound": {"communication", "comm", "network", "interconnect", "allreduce"},
}
_FILLER = {"bound", "limited", "limit", "the", "it", "is", "its", "regime"}
_NEGATIONS = {"not", "no", "non", "never", "isn", "aren", "neither", "nor", "un", "without"}
_HEDGES = {"or", "and", "either", "both", "maybe", "probably", "perhaps", "likely", "possibly",
           "depends", "mixed", "partly", "somewhat", "mostly", "half"}


def _scalar(value):
    """A numpy scalar or one-element array as a Python scalar; anything else unchanged."""
    if hasattr(value, "dtype") and hasattr(value, "shape"):
        size = getattr(value, "size", 1)
        if size != 1:
            raise NotAnAnswer(f"one value is asked for, got an array of {size} values.")
        return value.reshape(()).item() if hasattr(value, "reshape") else value.item()
    return value


class Spec:
    """What an answer variable must look like. Subclasses: Regime, Choice, Number, Reason."""

    kind = "answer"
    rel_tol = 0.0

    def read(self, value):
        """The normalized answer, or NotAnAnswer saying what form is expected."""
        raise NotImplementedError

    def read_truth(self, truth):
        """A truth (or a mistake's value) computed by course_lib, normalized like an answer."""
        return self.read(truth)

    def agrees(self, answer, truth) -> bool:
        """Whether two normalized values are the same answer (within the spec's tolerance)."""
        return answer == truth

    def show(self, normalized) -> str:
        return repr(normalized)

    def expected(self) -> str:
        """The form asked for, in words."""
        return "an answer"

    def __repr__(self):
        return f"{type(self).__name__}()"


class Regime(Spec):
    """A roofline regime: 'memory-bound', 'compute-bound' (or 'communication-bound').

    >>> Regime().read("compute")
    'compute-bound'
    """

    kind = "regime"

    def expected(self):
        return "a regime: 'memory-bound' or 'compute-bound'"

    def read(self, value):
        if not isinstance(value, str):
            raise NotAnAnswer(f"a regime is a string such as 'memory-bound' or 'compute-bound', "
                              f"got {value!r} ({_type_name(value)}).")
        words = re.findall(r"[a-z]+", value.lower())
        found = {r for r, keys in _REGIME_WORDS.items() if keys & set(words)}
        if set(words) & _NEGATIONS:
            raise NotAnAnswer(f"{value!r} is not a prediction: a negation says what it is not. "
                              "Name the regime it is: 'memory-bound' or 'compute-bound'.")
        if len(found) > 1 or set(words) & _HEDGES or "?" in value:
            raise NotAnAnswer(f"{value!r} is not a prediction: it hedges. Commit to one regime, "
                              "'memory-bound' or 'compute-bound', and give your reason in the "
                              "reasoning variable.")
        extra = set(words) - _FILLER - set().union(*_REGIME_WORDS.values())
        if not found or extra:
            raise NotAnAnswer(f"{value!r} is not a regime: answer just 'memory-bound' or "
                              "'compute-bound' (give your reason in the reasoning variable).")
        return found.pop()

    def read_truth(self, truth):
        return self.read(getattr(truth, "bottleneck", truth))


def _choice_key(value) -> str:
    text = str(value).strip().casefold().rstrip(".!")
    return re.sub(r"[\s_\-]+", "", text)


class Choice(Spec):
    """One of the listed options (strings, or whole numbers such as batch sizes).

    >>> Choice("prefill", "decode").read("Pre-fill")
    'prefill'
    >>> Choice(16, 64, 256).read(256.0)
    256
    """

    kind = "choice"

    def __init__(self, *options):
        if len(options) == 1 and isinstance(options[0], (list, tuple)):
            options = tuple(options[0])
        if len(options) < 2:
            raise ValueError("a Choice needs at least two options")
        self.options = tuple(options)
        self.numeric = all(isinstance(o, int) and not isinstance(o, bool) for o in options)
        if not self.numeric and not all(isinstance(o, str) for o in options):
            raise ValueError(f"options are all strings or all whole numbers, got {options!r}")

    def expected(self):
        return "one of " + ", ".join(repr(o) for o in self.options)

    def read(self, value):
        listed = ", ".join(repr(o) for o in self.options)
        value = _scalar(value)
        if self.numeric:
            number = value
            if isinstance(value, str):
                try:
                    number = float(value.strip())
                except ValueError:
                    number = None
            if isinstance(number, bool) or not isinstance(number, (int, float)) \
                    or not math.isfinite(number) or not float(number).is_integer() \
                    or int(number) not in self.options:
                raise NotAnAnswer(f"{value!r} is not one of the choices: {listed}.")
            return int(number)
        if not isinstance(value, str):
            raise NotAnAnswer(f"{value!r} is not one of the choices: {listed} (a string).")
        table = {_choice_key(o): o for o in self.options}
        key = _choice_key(value)
        if key not in table:
            raise NotAnAnswer(f"{value!r} is not one of the choices: {listed}.")
        return table[key]

    def __repr__(self):
        return f"Choice{self.options!r}"


class Number(Spec):
    """A number, read in `units` if it is bare (a Quantity is converted to them).

    rel_tol -- how close verify cells and hidden tests require it to be, relative to the truth:
               15% means from 0.85 to 1.15 times the truth, as the receipts say
    units   -- e.g. "FLOP/byte", "ms", "GB"; None for a plain number (a count, a ratio)
    low, high -- the range a well-formed answer lies in, if the question fixes one (a fraction
               lies between 0 and 1)

    >>> from course_lib import Q_
    >>> Number("ms").read(Q_(1500, "us"))
    1.5
    >>> Number("ms", rel_tol=0.02).agrees(1.52, 1.5)
    True
    >>> Ratio(rel_tol=0.15).agrees(1.583, 1.360), Ratio(rel_tol=0.15).agrees(1.155, 1.360)
    (False, False)
    >>> Ratio(rel_tol=0.15).agrees(1.564, 1.360), Ratio(rel_tol=0.15).agrees(1.156, 1.360)   # the edges
    (True, True)
    """

    kind = "number"

    def __init__(self, units: str | None = None, rel_tol: float = 0.02, low=None, high=None):
        if units is not None:
            Q_(1, units)                # an unknown unit is the notebook author's error: raise now
        if not 0 <= rel_tol < 1:
            raise ValueError(f"rel_tol is a fraction such as 0.02, got {rel_tol!r}")
        self.units, self.rel_tol, self.low, self.high = units, rel_tol, low, high

    def expected(self):
        if self.units:
            return (f"a number in {self.units} (or a Quantity convertible to it, "
                    f"Q_(value, '{self.units}'))")
        return "a plain number"

    def read(self, value):
        value = _scalar(value)
        if is_quantity(value):
            target = self.units or "dimensionless"
            try:
                magnitude = value.m_as(target)
            except Exception:
                have = f"{value.units:~P}" or "no units"
                raise NotAnAnswer(f"the answer has units {have}, which do not convert to "
                                  f"{self.units or 'a plain number'}: check what the question asks "
                                  "for.") from None
            return self._number(_scalar(magnitude), value)
        return self._number(value, value)

    def _number(self, x, original):
        if isinstance(x, str):
            try:
                x = float(x.strip().replace("_", ""))
            except ValueError:
                raise NotAnAnswer(f"{original!r} is not a number: write {self.expected()}.") from None
        if isinstance(x, bool) or not isinstance(x, (int, float)):
            raise NotAnAnswer(f"{original!r} is not a number: write {self.expected()}.")
        x = float(x)
        if not math.isfinite(x):
            raise NotAnAnswer(f"{original!r} is not a finite number.")
        if (self.low is not None and x < self.low) or (self.high is not None and x > self.high):
            raise NotAnAnswer(f"{original!r} is outside the range the question allows "
                              f"({self.low if self.low is not None else '-inf'} to "
                              f"{self.high if self.high is not None else 'inf'}).")
        return x

    def read_truth(self, truth):
        truth = _scalar(truth)
        if is_quantity(truth):
            return float(_scalar(truth.m_as(self.units or "dimensionless")))
        return float(truth)

    def agrees(self, answer, truth):
        # relative to the truth, not to the larger of the two (math.isclose): 15% is 15% either side
        # (the edge itself included, whatever the rounding of its last bit)
        return abs(answer - truth) <= self.rel_tol * abs(truth) * (1 + 1e-9)

    def show(self, normalized):
        text = (f"{normalized:,.0f}" if float(normalized).is_integer() and abs(normalized) < 1e15
                else f"{normalized:.4g}")
        return f"{text} {Q_(1, self.units).units:~P}" if self.units else text

    def __repr__(self):
        return f"{type(self).__name__}({self.units!r}, rel_tol={self.rel_tol})"


class Ratio(Number):
    """A plain number saying how many times: a speedup, a ratio, a fraction.

    >>> Ratio(low=0, high=1).read("0.68")
    0.68
    """

    kind = "ratio"

    def __init__(self, rel_tol: float = 0.02, low=None, high=None):
        super().__init__(None, rel_tol, low, high)

    def __repr__(self):
        return f"Ratio(rel_tol={self.rel_tol})"


class WholeNumber(Number):
    """A count that must be whole (sequences, layers); `rel_tol` 0 means exactly.

    >>> WholeNumber().read(64.0)
    64.0
    """

    kind = "whole"

    def __init__(self, rel_tol: float = 0.0):
        super().__init__(None, rel_tol)

    def expected(self):
        return "a whole number"

    def _number(self, x, original):
        x = super()._number(x, original)
        if not x.is_integer():
            raise NotAnAnswer(f"{original!r} is not a whole number: the question counts whole "
                              "items, so give a whole number.")
        return x

    def read_truth(self, truth):
        t = _scalar(truth)
        return float(t.m_as("dimensionless") if is_quantity(t) else t)

    def __repr__(self):
        return f"WholeNumber(rel_tol={self.rel_tol})"


_PLACEHOLDERS = {"", "...", "todo", "your reason here", "your answer here", "because", "tbd", "idk"}


class Reason(Spec):
    """A one-sentence reason: a string of at least `min_chars` characters, not a placeholder.

    >>> Reason().read("  Intensity is far below the ridge. ")
    'Intensity is far below the ridge.'
    """

    kind = "reason"

    def __init__(self, min_chars: int = 10):
        self.min_chars = min_chars

    def expected(self):
        return "a one-sentence reason (a string)"

    def read(self, value):
        if not isinstance(value, str):
            raise NotAnAnswer(f"give your reasoning as a string (a sentence in quotes), got "
                              f"{_type_name(value)}.")
        text = value.strip()
        if text.lower().strip(".") in _PLACEHOLDERS or len(text) < self.min_chars:
            raise NotAnAnswer("write a one-line reason for your prediction (a sentence, not a "
                              "placeholder): the point of predicting is to commit to *why*.")
        return text
