"""Every graded question of the course, each declared once (see ``core``): the form check, the
hidden test and the verify cell of a question all read its declaration here.

>>> from course_lib.questions import get
>>> get("phases_q3").rule
'prediction'
"""
from ..exercises import declared as _declared
from .core import (REGISTRY, RULES, OtherLesson, Question, Solution, Truth, after, check_form, get, grade,
                   lesson_module, lesson_questions, question, revealed, show, takeaways)
from .variants import givens, set_student, student_key
from .variants import recorded as _recorded
from .variants import current as variant

__all__ = ["REGISTRY", "RULES", "Question", "Solution", "Truth", "check_form", "get", "grade",
           "lesson_module", "lesson_questions", "question", "show", "takeaways", "all_questions",
           "after", "revealed", "OtherLesson",
           "givens", "set_student", "student_key", "variant"]


def all_questions() -> dict:
    """Every declared question of every lesson, by id (imports each lesson's module)."""
    import importlib

    from .registry import LESSON_MODULES

    for module in LESSON_MODULES.values():
        try:
            importlib.import_module(f"{__name__}.{module}")
        except ModuleNotFoundError as e:
            if e.name != f"{__name__}.{module}":
                raise
    return dict(REGISTRY)


def _find(qid: str):
    """The declared question `qid`, or None (what course_lib.exercises asks, see its ``declared``)."""
    try:
        return get(qid)
    except KeyError:
        return None


# course_lib.exercises, the layer below, imports nothing from here: it asks through this
_declared.register(find=_find, variant=_recorded)
