"""How much do the course's answers depend on its modelling choices? ``perturb`` says.

The course's numbers are the pure roofline of datasheet figures with capacities in binary
bytes. Real chips reach less than their peaks, activation traffic depends on fusion, and
someone may read "80 GB" as 80·10⁹ bytes. A question whose answer flips under such a change
teaches an accident, not an insight, so every graded regime, choice and ratio is re-solved
under each change in ``STANDARD`` by the test suite (its test_question_robustness.py).

``perturb`` is a context manager. Inside its ``with`` block, and only there:

* ``compute_efficiency=e`` -- every zoo chip's peaks are ``e`` × the datasheet's (and those
                              ``course_lib.measure.this_machine()`` returns, ``e`` × the measured);
* ``memory_efficiency=e``  -- every zoo chip's memory bandwidth is ``e`` × the datasheet's (a
                              measured machine's, ``e`` × the measured);
* ``activation_bytes=f``   -- every activation byte counted by ``solve``, ``serve`` and the
                              analysis functions is multiplied by ``f`` (weights and KV cache
                              are not);
* ``capacity="decimal"``   -- every zoo chip's memory capacity is its datasheet "GB" figure
                              read as 10⁹ bytes instead of binary.

Nothing else changes, and nothing is hidden: chips made inside say so in their name
(``Hardware.A100.name`` ends in ``[perturbed: ...]``), every ``solve``/``serve`` result made
inside prints the perturbation in its summary, and outside the block everything is as before.
Objects made before the block (e.g. ``A100 = Hardware.A100``) keep their figures: look chips
up inside the block.

>>> from course_lib import Hardware, solve, Models
>>> with perturb(compute_efficiency=0.85):
...     round(Hardware.A100.peak_flops_si("fp16") / 1e12, 1)
265.2
>>> round(Hardware.A100.peak_flops_si("fp16") / 1e12, 1)
312.0
>>> with perturb(capacity="decimal"):
...     Hardware.A100.memory_capacity_si
80000000000.0
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, fields, replace

__all__ = ["Assumptions", "perturb", "current", "STANDARD", "FUSION_RANGE"]


@dataclass(frozen=True)
class Assumptions:
    """The modelling choices ``perturb`` can change; the defaults are the course's."""

    compute_efficiency: float = 1.0
    memory_efficiency: float = 1.0
    activation_bytes: float = 1.0
    capacity: str = "binary"

    def __post_init__(self):
        for name in ("compute_efficiency", "memory_efficiency"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 1:
                raise ValueError(f"{name} must be a number in (0, 1], got {v!r}.")
        a = self.activation_bytes
        if isinstance(a, bool) or not isinstance(a, (int, float)) or not 0 < a < 10:
            raise ValueError(f"activation_bytes is a factor on activation bytes, such as 1.1; got {a!r}.")
        if self.capacity not in ("binary", "decimal"):
            raise ValueError(f"capacity must be 'binary' or 'decimal', got {self.capacity!r}.")

    @property
    def is_default(self) -> bool:
        return self == Assumptions()

    def describe(self) -> str:
        """'' for the course's own assumptions, else what is changed, e.g.
        'perturbed: compute_efficiency=0.85'."""
        changed = [f"{f.name}={getattr(self, f.name)!r}" if f.name == "capacity"
                   else f"{f.name}={getattr(self, f.name):g}"
                   for f in fields(self) if getattr(self, f.name) != f.default]
        return "perturbed: " + ", ".join(changed) if changed else ""


_STACK = [Assumptions()]

# The changes every graded regime, choice and ratio of the lessons must survive.
STANDARD = (
    {"compute_efficiency": 0.85},
    {"memory_efficiency": 0.85},
    {"activation_bytes": 0.9},
    {"activation_bytes": 1.1},
    {"capacity": "decimal"},
)


# The fusion convention's range: the course charges every activation to memory at every kernel
# boundary (unfused, x1); a fused engine keeps some in registers and caches and moves about half
# (x0.5), a framework with extra copies somewhat more (x1.1). Every graded answer holds over this
# range, or its variant is excluded (its question's ``assumes``), or its question states the
# convention it assumes (its module's ``UNFUSED_CONVENTION``); the robustness test
# re-solves every graded answer and every variant at each end and in between.
FUSION_RANGE = (
    {"activation_bytes": 0.5},
    {"activation_bytes": 0.7},
    {"activation_bytes": 0.9},
    {"activation_bytes": 1.1},
)


def current() -> Assumptions:
    """The assumptions in force (the course's, outside any ``perturb`` block)."""
    return _STACK[-1]


@contextlib.contextmanager
def perturb(**changes):
    """Change some of the course's modelling choices inside a ``with`` block (see the module
    docstring). Blocks nest; leaving one restores what was in force before it.

    >>> with perturb(activation_bytes=1.1) as a:
    ...     a.describe()
    'perturbed: activation_bytes=1.1'
    """
    unknown = set(changes) - {f.name for f in fields(Assumptions)}
    if unknown:
        raise TypeError(f"perturb() got unknown change(s) {sorted(unknown)}; valid: "
                        f"{[f.name for f in fields(Assumptions)]}")
    assumptions = replace(current(), **changes)
    _STACK.append(assumptions)
    try:
        yield assumptions
    finally:
        _STACK.pop()
