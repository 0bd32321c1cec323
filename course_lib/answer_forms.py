"""Moved to ``course_lib.exercises.answer_forms``; this name re-exports it.

Kept so that code written against the old name (branches in flight, notebooks, gradebooks)
still imports; it holds the very same objects. New code imports
course_lib.exercises.answer_forms.
"""
from course_lib.exercises.answer_forms import *  # noqa: F401,F403
from course_lib.exercises.answer_forms import __all__  # noqa: F401
