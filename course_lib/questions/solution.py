"""What a question's solver returns: a Truth per answer variable (course_lib.questions.core
declares questions with them; course_lib.questions.key sends them as data)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from ..exercises.misconceptions import MISCONCEPTIONS

__all__ = ["Truth", "Solution"]


@dataclass
class Truth:
    """One answer variable's truth, the answers its classic mistakes lead to, and what the
    verify cell says after the reveal when the answer differs."""

    value: Any
    mistakes: dict = field(default_factory=dict)     # misconception label -> value (or values, or None)
    explanation: str = ""

    def __post_init__(self):
        unknown = [k for k in self.mistakes if k not in MISCONCEPTIONS]
        if unknown:
            raise ValueError(f"unknown misconception label(s) {unknown}; add them to "
                             "course_lib.exercises.misconceptions.MISCONCEPTIONS")


@dataclass
class Solution:
    """What a question's solver returns: a Truth per answer variable, the hint for a wrong
    answer that matches no listed mistake (it never states the answer), and `work`, a function
    that prints the arithmetic (run by the verify cell after the reveal)."""

    truths: dict
    hint: str = ""
    work: Callable[[], None] | None = None
