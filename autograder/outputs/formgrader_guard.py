"""A Jupyter server extension: the Formgrader without its side doors.

nbgrader's Formgrader offers buttons that run nbgrader's own commands on the course: create an
assignment or change its due date, Generate (the student version), Release / Unrelease (to the
exchange), Collect and Autograde. Each bypasses what `python -m autograder` does at that step
(release: the course's generated cells, its checks, the exchange the course service keeps;
collect: the intake's checks of hostile submissions; grade: the sandbox). Here those API calls
answer 403 with the command to use instead, their buttons are not shown, and the assignment list
holds only what students can see (released) or what was handed in: no draft lessons.
Manual grading, Generate Feedback and Release Feedback (which the course's nbgrader_config.py
routes through the autograder's scrubbing) stay; a hand grade also takes the student's late
penalty again from the new score (nbgrader's API leaves the old one: after_hand_grade), and the
Manual Grading page of a late notebook says its penalty (the Formgrader shows none of its own).

Enabled in the instructor's server by `ServerApp.jpserver_extensions` (the hub kit's setup.sh).
"""
from __future__ import annotations

import json
import re

from tornado import web
from tornado.web import OutputTransform
from autograder.gradebook import open_gradebook

#: (the API path under formgrader/api/, the HTTP method) -> the command to use instead
REFUSED = {
    ("assignment/([^/]+)", "PUT"): "create assignments as folders in solutions/ and release them with "
                                   "`python -m autograder release NAME --exchange`",
    ("assignment/([^/]+)/assign", "POST"): "`python -m autograder release NAME` generates the student version",
    ("assignment/([^/]+)/release", "POST"): "`python -m autograder release NAME --exchange`",
    ("assignment/([^/]+)/unrelease", "POST"): "release a corrected version with "
                                              "`python -m autograder release NAME --exchange`",
    ("assignment/([^/]+)/collect", "POST"): "`python -m autograder collect NAME --exchange`",
    ("submission/([^/]+)/([^/]+)/autograde", "POST"): "`python -m autograder grade NAME` (sandboxed)",
}

#: what the pages hide: the cells of those buttons, the "Add new assignment..." link
HIDDEN_CSS = ("td.edit a, td.assign a, td.release a, td.collect a, td.autograde a "
              "{display: none !important;}")
NOTE = ('<p class="alert alert-info" id="autograder-note">This course creates, releases, collects '
        'and autogrades with <code>python -m autograder</code> in a terminal (its checks, its '
        'sandbox): those buttons are not here. Manual grading and feedback are.</p>')
_ADD_LINK = re.compile(rb'<span class="glyphicon glyphicon-plus"[^>]*></span>\s*'
                       rb'<a href="#" onClick="createAssignmentModal\(\);">Add new assignment\.\.\.</a>', re.I)
_PAGES = re.compile(r"/formgrader/(manage_assignments|manage_submissions/[^/]+)/?$")


def refusal(path: str, method: str) -> str | None:
    """Why a Formgrader API call (`path` under formgrader/api/) is refused; None: allowed."""
    for (pattern, m), instead in REFUSED.items():
        if m == method and re.fullmatch(pattern, path):
            return f"not from the Formgrader in this course: {instead}"
    return None


def visible(assignments: list[dict]) -> list[dict]:
    """The assignments the Formgrader lists: released ones and those with submissions."""
    return [a for a in assignments if a.get("status") == "released" or a.get("num_submissions")]


def page(path: str, body: bytes) -> bytes:
    """A Formgrader page with the refused buttons hidden (the list pages only; others as they are)."""
    if not _PAGES.search(path):
        return body
    body = _ADD_LINK.sub(b"", body)
    body = body.replace(b"</head>", b"<style>" + HIDDEN_CSS.encode() + b"</style></head>", 1)
    return body.replace(b'<div class="panel-group" id="accordion"', NOTE.encode() + b'<div class="panel-group" id="accordion"', 1)


class HideSideDoors(OutputTransform):
    """Rewrites the Formgrader's list pages as they are sent (their first chunk is the whole page)."""

    def __init__(self, request):
        super().__init__(request)
        self.path = request.path or ""

    def transform_first_chunk(self, status_code, headers, chunk, finishing):
        if finishing and status_code == 200 and headers.get("Content-Type", "").startswith("text/html"):
            new = page(self.path, chunk)
            if new is not chunk and "Content-Length" in headers:
                headers["Content-Length"] = str(len(new))
            chunk = new
        return status_code, headers, chunk


def after_hand_grade(root, db_url: str, grade_id: str) -> None:
    """What a hand grade changes besides its cell: the late penalty of the submission, taken again
    from its new score (autograder.grading.deadlines.retake_penalties). nbgrader's API writes the
    manual score and nothing else, so the Formgrader left a stale penalty that reached the LMS
    (issue 47); `export`, `report` and `feedback` take it again too. Nothing is done where the
    Formgrader's gradebook is not the course folder's (another db_url): that one is not ours."""
    from pathlib import Path

    from nbgrader.api import MissingEntry

    from autograder.course import Course
    from autograder.grading.deadlines import retake_penalties

    course = Course(root=Path(root))
    if course.db_url != db_url:
        return
    with open_gradebook(db_url) as gb:
        try:
            sub = gb.find_grade_by_id(grade_id).notebook.assignment
        except MissingEntry:
            return
        assignment, student = sub.assignment.name, sub.student.id
    retake_penalties(course, assignment, [student])


def penalty_note(penalty: float, score: float) -> str:
    """The line the Manual Grading page of a late notebook shows above the notebook ("" when on
    time): the Formgrader's scores are before the penalty, every other page's after it."""
    if not penalty:
        return ""
    return (f'<p class="alert alert-warning" id="autograder-late-penalty">Late submission penalty: '
            f'-{penalty:g} of this notebook\'s score {score:g}, so {score - penalty:g} in the export, the '
            f'report, the feedback and the LMS. It is taken again from each hand grade you enter here '
            f'(reload the page to see it).</p>')


def flag_note(reasons: list[str], assignment: str, student: str) -> str:
    """The line the Manual Grading page of a flagged notebook shows: why, and the one step that
    clears it (the Formgrader's own flag gives no reason)."""
    import html

    why = "; ".join(reasons) or "flagged by hand (no reason recorded)"
    return (f'<p class="alert alert-danger" id="autograder-flag">Flagged: {html.escape(why)}. Once you have '
            f'looked: <code>python -m autograder unflag {html.escape(assignment)} {html.escape(student)} '
            f'--reason "..."</code> (a regrade finding the same then flags nothing).</p>')


def notebook_flags(root, assignment: str, student: str, notebook: str) -> list[str]:
    """Why the grader and the copy check flagged this notebook (the report's and export's reasons)."""
    from pathlib import Path

    from autograder.course import Course
    from autograder.grading.status import WHOLE, flags
    from autograder.integrity.copy_flags import reasons as copy_reasons

    course = Course(root=Path(root))
    mine = flags(course, assignment, student)
    try:
        copies = copy_reasons(course, assignment).get(student, {})
    except OSError:           # the assignment's sources are not in this folder: no copy reasons
        copies = {}
    return [r.message for key in (WHOLE, notebook) for r in mine.get(key, [])] + \
        [r.message for r in copies.get(notebook, [])]


def with_note(body: bytes, note: str) -> bytes:
    """The page with `note` first in its container (unchanged without a note or a container)."""
    anchor = b'<div class="container">'
    if not note or anchor not in body:
        return body
    return body.replace(anchor, anchor + note.encode(), 1)


def _handlers():
    from nbgrader.api import MissingEntry
    from nbgrader.server_extensions.formgrader import apihandlers, handlers
    from nbgrader.server_extensions.formgrader.base import check_xsrf

    class Refused(apihandlers.BaseApiHandler):
        """Answers the refused calls: 403 and the command to use instead."""

        def _refuse(self, *args):
            why = refusal(self.request.path.split("/formgrader/api/", 1)[-1], self.request.method)
            self.set_status(403)
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"success": False, "error": why or "refused", "log": ""}))

        @web.authenticated
        @check_xsrf
        def post(self, *args):
            self._refuse(*args)

    class Assignment(apihandlers.AssignmentHandler):
        @web.authenticated
        @check_xsrf
        def put(self, assignment_id):
            Refused._refuse(self)

    class Grade(apihandlers.GradeHandler):
        """nbgrader's hand grade, then the late penalty taken again from the new score."""

        @web.authenticated
        @check_xsrf
        def put(self, grade_id):
            super().put(grade_id)
            after_hand_grade(self.coursedir.root, self.db_url, grade_id)

    class Submission(handlers.SubmissionHandler):
        """nbgrader's Manual Grading page, its late penalty taken again and said above it, and
        why the notebook is flagged."""

        _note = ""

        @web.authenticated
        @check_xsrf
        def get(self, submission_id):
            self._note = ""
            try:
                nb = self.gradebook.find_submission_notebook_by_id(submission_id)
                grade_id = next((g.id for g in nb.grades), None)
            except MissingEntry:
                grade_id = None          # nbgrader's handler answers 404
            if grade_id is not None:
                # end this session's read transaction first: SQLite lets no other connection
                # commit (the penalty) while one holds the database open for reading
                self.gradebook.db.commit()
                after_hand_grade(self.coursedir.root, self.db_url, grade_id)
                self.gradebook.db.expire_all()      # the penalty another session just wrote
                nb = self.gradebook.find_submission_notebook_by_id(submission_id)
                self._note = penalty_note(nb.late_submission_penalty or 0.0, nb.score)
                if nb.flagged:
                    a, s = nb.assignment.assignment.name, nb.student.id
                    self._note += flag_note(notebook_flags(self.coursedir.root, a, s, nb.notebook.name), a, s)
            return super().get(submission_id)

        def write(self, chunk):
            if self._note and isinstance(chunk, str):
                chunk = with_note(chunk.encode(), self._note)
            super().write(chunk)

    class Assignments(apihandlers.AssignmentCollectionHandler):
        @web.authenticated
        @check_xsrf
        def get(self):
            self.write(json.dumps(visible(self.api.get_assignments())))

    out = [("/formgrader/api/assignments", Assignments), ("/formgrader/api/assignment/([^/]+)", Assignment),
           ("/formgrader/api/grade/([^/]+)", Grade), ("/formgrader/submissions/([^/]+)/?", Submission)]
    out += [("/formgrader/api/" + p, Refused) for p, m in REFUSED if m == "POST"]
    return out


def _jupyter_server_extension_points():
    return [{"module": "autograder.outputs.formgrader_guard"}]


def _load_jupyter_server_extension(serverapp) -> None:
    from jupyter_server.utils import url_path_join

    webapp = serverapp.web_app
    base = webapp.settings["base_url"]
    webapp.add_handlers(".*$", [(url_path_join(base, p.lstrip("/")), h) for p, h in _handlers()])
    # tornado tries host rules in order and inserts each new one before its last; nbgrader's
    # Formgrader adds its rules too, before or after this depending on the load order: ours first
    rules = webapp.default_router.rules
    rules.insert(0, rules.pop(-2))
    webapp.transforms.append(HideSideDoors)
    serverapp.log.info("autograder.outputs.formgrader_guard: the Formgrader's create/release/collect/autograde "
                       "go through python -m autograder")
