"""Moved to ``course_lib.exercises.checks``; this name stays importable for good.

Gradebooks and student notebooks released before the move import it
(``from course_lib.checks import check_number``): it re-exports the very same objects
(a test checks they are identical). New code imports
course_lib.exercises.checks.
"""
from course_lib.exercises.checks import *  # noqa: F401,F403
from course_lib.exercises.checks import __all__  # noqa: F401
# course_lib.questions.core calls these through this name
from course_lib.exercises.checks import _check_form_from, _namespaces  # noqa: F401
