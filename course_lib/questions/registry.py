"""Where the declared questions live: each lesson's module registers its questions here when it
is imported (``core.question``), and :func:`get` imports that module on first use.

The lowest module of course_lib.questions: ``core`` (declaring, checking) and ``variants``
(drawing a student's numbers) both look questions up here, and it imports neither.
"""
from __future__ import annotations

import importlib
import re
from typing import Any

__all__ = ["REGISTRY", "LESSON_MODULES", "lesson_module", "get", "question_order"]

#: question id -> its declaration (a course_lib.questions.core.Question)
REGISTRY: dict[str, Any] = {}

#: grade_id prefix -> the module of course_lib.questions that declares the lesson's questions
LESSON_MODULES = {"hello": "hello", "wall": "wall", "phases": "phases", "quant": "quant", "mach": "mach",
                 "scale": "scale"}


def lesson_module(qid: str) -> str:
    prefix = qid.split("_", 1)[0]
    if prefix not in LESSON_MODULES:
        raise KeyError(f"no lesson declares questions with the prefix {prefix!r} (known: {sorted(LESSON_MODULES)})")
    return f"{__package__}.{LESSON_MODULES[prefix]}"


def get(qid: str):
    """The declared question `qid` (importing its lesson's module on first use)."""
    if not isinstance(qid, str):
        raise TypeError(f"a question is named by its id, such as 'phases_q3'; got {qid!r}")
    if qid not in REGISTRY:
        try:
            importlib.import_module(lesson_module(qid))
        except KeyError:
            pass
    if qid not in REGISTRY:
        raise KeyError(f"no graded question {qid!r} is declared in course_lib.questions")
    return REGISTRY[qid]


def question_order(qid: str):
    """A sort key: questions in the order of their numbers (q2 < q2b < q10)."""
    hit = re.search(r"_q(\d+)([a-z]?)$", qid)
    return (int(hit.group(1)), hit.group(2)) if hit else (10**6, qid)
