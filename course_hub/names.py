"""The grammars of the names the course's tools pass between them, each defined once: the grader
(autograder), the hub's course service and LTI launch (course_hub) and the hub kit
(deploy/jupyterhub/setup.sh, whose copy of COURSE_ID a test compares with this one) all use these.
It imports nothing of the course (the hub's process reads it, where course_lib may be unreadable).

Each is a compiled pattern for `fullmatch`; WHAT says, for an error message, what it expects.
"""
from __future__ import annotations

import re

#: a student's id in the gradebook, a roster, a collected folder or an LMS download
STUDENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")
#: a course's id in nbgrader's exchange and the hub kit (--course-id)
COURSE_ID = re.compile(r"[a-z][a-z0-9_-]{0,30}")
#: an assignment (lesson) folder's name
ASSIGNMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
#: a notebook's name in the exchange, without .ipynb
NOTEBOOK = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+ -]{0,127}")
#: a Unix user name: a hub user, and the name of their files in the course service's store
UNIX_USER = re.compile(r"[a-z_][a-z0-9_.-]{0,31}")
#: a folder or notebook name recorded beside a prediction (no control character, no slash)
RECORDED_NAME = re.compile(r"[^\x00-\x1f/\\]{0,200}")

WHAT = {
    STUDENT_ID: "a student id (letters, digits, . _ @ + -; at most 128, starting with a letter or digit)",
    COURSE_ID: "a course id (a short lower-case name: letters, digits, _ -; at most 31, starting with a letter)",
    ASSIGNMENT: "an assignment id (letters, digits, _ . -; at most 100, not starting with . or -)",
    NOTEBOOK: "a notebook id (letters, digits, space, _ . + -; at most 128)",
    UNIX_USER: "a Unix user name (lower case, digits, _ . -; at most 32)",
    RECORDED_NAME: "a folder or notebook name (at most 200 characters, no slashes)",
}
