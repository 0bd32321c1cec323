"""Moved to ``course_lib.exercises.predictions``; this name re-exports it.

Kept so that code written against the old name (branches in flight, notebooks, gradebooks)
still imports; it holds the very same objects. New code imports
course_lib.exercises.predictions, and sets its state there (``_HERE``,
the record's folder): setting it on this module changes nothing.
"""
from course_lib.exercises.predictions import *  # noqa: F401,F403
from course_lib.exercises.predictions import __all__  # noqa: F401
