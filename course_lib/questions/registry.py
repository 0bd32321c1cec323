"""Where the declared questions live: each lesson's module registers its questions here when it
is imported (``core.question``), and :func:`get` imports that module on first use.

The lowest module of course_lib.questions: ``core`` (declaring, checking) and ``variants``
(drawing a student's numbers) both look questions up here, and it imports neither.
"""
from __future__ import annotations

import importlib
import pkgutil
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["REGISTRY", "LESSON_MODULES", "Lesson", "lessons", "lesson_module", "get", "question_order"]

#: question id -> its declaration (a course_lib.questions.core.Question)
REGISTRY: dict[str, Any] = {}

#: the modules of course_lib.questions that declare no lesson: every other module is one lesson's
INFRASTRUCTURE = frozenset({"core", "key", "registry", "solution", "variants"})

#: grade_id prefix -> the module of course_lib.questions that declares the lesson's questions: a
#: lesson is a module of this package named for its prefix (README "Adding a lesson")
LESSON_MODULES = {m.name: m.name for m in pkgutil.iter_modules([str(Path(__file__).parent)])
                  if m.name not in INFRASTRUCTURE and not m.name.startswith("_")}


@dataclass(frozen=True)
class Lesson:
    """What a lesson declares about itself, beside its questions (its module's ``LESSON``): where
    its notebook is and the bars it is held to. Lint and the tests read these, never a list of
    lessons of their own."""

    #: its folder in solutions/ and notebooks/, e.g. "01_hello_roofline"
    assignment: str
    #: lint: at least this many hidden `_correct` tests, and written reflections graded by hand
    min_hidden_tests: int = 4
    min_reflections: int = 1
    #: the robustness test: at least this many regime, choice and ratio checks that must hold
    #: under the standard perturbations (course_lib.sensitivity)
    min_robust_checks: int = 4
    #: lint: every question gives each student their own numbers or says why (same_for_everyone=)
    every_question_varies: bool = False
    #: the variants test: each question with a space draws at least this many admissible
    #: variants (0: no such bar)
    min_admissible_variants: int = 0


def lessons() -> dict[str, Lesson]:
    """Every lesson's declaration by its prefix, in course order (imports each lesson's module)."""
    out = {}
    for prefix, module in LESSON_MODULES.items():
        declared = getattr(importlib.import_module(f"{__package__}.{module}"), "LESSON", None)
        if not isinstance(declared, Lesson):
            raise TypeError(f"course_lib.questions.{module} declares no LESSON = Lesson(...): every module of "
                            f"course_lib.questions but {sorted(INFRASTRUCTURE)} is a lesson's (README 'Adding a lesson')")
        out[prefix] = declared
    return dict(sorted(out.items(), key=lambda kv: kv[1].assignment))


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
