"""What the exercise machinery may ask about a question declared in ``course_lib.questions``.

``course_lib.exercises`` is the layer below ``course_lib.questions`` and imports nothing from
it. Three things here depend on a declared question: a form check called without specs takes
the question's own, a receipt names the question's rule ("worked by hand"), and a commit records
the variant (the givens) it was made for. ``course_lib.questions`` registers how to answer
those (:func:`register`) when it is imported, which any notebook that declares its questions
does; until then no question is declared here.

>>> find("not_a_question") is None and variant("not_a_question") is None
True
"""
from __future__ import annotations

from typing import Any, Callable

__all__ = ["register", "find", "variant"]

_find: Callable[[str], Any] | None = None
_variant: Callable[[str], dict | None] | None = None


def register(*, find: Callable[[str], Any], variant: Callable[[str], dict | None]) -> None:
    """Called by course_lib.questions: `find(qid)` returns the declared question (with ``.specs``
    and ``.rule``) or None; `variant(qid)` the givens this kernel asks it with, or None for a
    question without a parameter space."""
    global _find, _variant
    _find, _variant = find, variant


def find(qid: str):
    """The question declared as `qid` (with ``.specs`` and ``.rule``), or None."""
    return None if _find is None else _find(qid)


def variant(qid: str) -> dict | None:
    """The givens this kernel asks `qid` with; None without a parameter space (or a declaration)."""
    return None if _variant is None else _variant(qid)
