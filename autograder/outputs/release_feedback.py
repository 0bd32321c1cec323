"""`release-feedback`: the feedback pages into the nbgrader exchange, where each student's
Assignment List ("Fetch Feedback") finds them.

nbgrader's release_feedback files a page under a hash of the notebook name and the secret that
the student's `submit` wrote (submission_secret.txt, carried with timestamp.txt from the exchange
by `collect` into submitted/, then by autograding and feedback into feedback/<student>/<assignment>/).
Only the submitting student's Assignment List knows that secret, so no one else can find the page.
A submission that did not come through the exchange (an LMS download) has no secret: its feedback
is reported, not released; hand it back through the LMS.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from autograder.course import Course
from autograder.gradebook import prepare

NEEDED = ("timestamp.txt", "submission_secret.txt")


@dataclass
class Released:
    released: list = field(default_factory=list)   # students
    skipped: dict = field(default_factory=dict)    # student -> why


def release_feedback(course: Course, assignment: str, exchange,
                     students: list[str] | None = None) -> Released:
    """Release feedback/<student>/<assignment>/*.html of every student (or `students`) to `exchange`
    (a folder, or the plugin nbgrader's configuration selects: autograder.locate.PluginExchange)."""
    from autograder.locate import PluginExchange

    from nbgrader.apps import NbGraderAPI

    prepare(course.db_url)
    out = Released()
    have = sorted(p.parent.name for p in course.feedback.glob(f"*/{assignment}")
                  if p.is_dir() and not p.parent.name.startswith("."))
    for s in students or []:
        if s not in have:
            out.skipped[s] = f"no feedback in {course.feedback / s / assignment} (run `feedback` first)"
    todo = [s for s in have if students is None or s in students]
    if not todo:
        return out
    config = course.config()
    config.CourseDirectory.course_id = course.course_id
    if isinstance(exchange, PluginExchange):
        exchange.apply(config)
    else:
        config.Exchange.root = str(exchange)
    api = NbGraderAPI(config=config)
    api.log.setLevel(logging.WARNING)
    for student in todo:
        folder = course.feedback / student / assignment
        # the service exchange files feedback by the submission's time alone (no secret in it)
        needed = ("timestamp.txt",) if isinstance(exchange, PluginExchange) else NEEDED
        missing = [n for n in needed if not (folder / n).is_file()]
        if not list(folder.glob("*.html")):
            out.skipped[student] = f"no feedback page in {folder}"
        elif missing:
            out.skipped[student] = (f"{' and '.join(missing)} missing in {folder}: this submission did not come "
                                    f"through the exchange; hand its feedback back another way")
        else:
            result = api.release_feedback(assignment, student)
            if result.get("success"):
                out.released.append(student)
            else:
                out.skipped[student] = (result.get("error") or result.get("log") or "nbgrader failed").strip() \
                    .splitlines()[-1]
    return out
