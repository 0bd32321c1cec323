"""Every graded question of the course, each declared once (see ``core``): the form check, the
hidden test and the verify cell of a question all read its declaration here.

>>> from course_lib.questions import get
>>> get("phases_q3").rule
'prediction'
"""
from .core import (REGISTRY, RULES, Question, Solution, Truth, after, check_form, get, grade,
                   lesson_module, lesson_questions, question, revealed, show, takeaways)
from .variants import givens, set_student, student_key
from .variants import current as variant

__all__ = ["REGISTRY", "RULES", "Question", "Solution", "Truth", "check_form", "get", "grade",
           "lesson_module", "lesson_questions", "question", "show", "takeaways", "all_questions",
           "after", "revealed",
           "givens", "set_student", "student_key", "variant"]


def all_questions() -> dict:
    """Every declared question of every lesson, by id (imports each lesson's module)."""
    import importlib

    from .core import LESSON_MODULES

    for module in LESSON_MODULES.values():
        try:
            importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{module}":
                raise
    return dict(REGISTRY)
