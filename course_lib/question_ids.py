"""Moved to ``course_lib.exercises.question_ids``; this name re-exports it.

Kept so that code written against the old name (branches in flight, notebooks, gradebooks)
still imports; it holds the very same objects. New code imports
course_lib.exercises.question_ids.
"""
from course_lib.exercises.question_ids import *  # noqa: F401,F403
from course_lib.exercises.question_ids import __all__  # noqa: F401
