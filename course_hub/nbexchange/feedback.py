"""Feedback on the service exchange, keyed by student and submission (the service's timestamp):

* `nbgrader release_feedback` (instructor): each feedback/<student>/<assignment>/<notebook>.html,
  sent for the submission whose service time its timestamp.txt names (written by collect, kept by
  autograde and generate_feedback); a page whose timestamp matches no submission is reported and
  not sent;
* `nbgrader fetch_feedback` (the Assignment List's "Fetch Feedback"): the student's own pages, from
  the service, into <assignment>/feedback/<timestamp>/<notebook>.html (replacing, never following,
  whatever lies at that name).
"""
from __future__ import annotations

import glob
import os
import re
import stat
import tempfile

from nbgrader.exchange.abc import ExchangeFetchFeedback as ABCExchangeFetchFeedback
from nbgrader.exchange.abc import ExchangeReleaseFeedback as ABCExchangeReleaseFeedback
from nbgrader.utils import parse_utc

from .exchange import Exchange

MAX_PAGE = 16 << 20


def read_regular(path: str, limit: int = MAX_PAGE) -> bytes | None:
    """The bytes of the regular file at `path` (never a link), at most `limit`; None otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        return f.read(limit + 1)[:limit]


class ExchangeReleaseFeedback(Exchange, ABCExchangeReleaseFeedback):

    def init_src(self):
        student_id = self.coursedir.student_id if self.coursedir.student_id else '*'
        self.src_path = self.coursedir.format_path(self.coursedir.feedback_directory, student_id,
                                                   self.coursedir.assignment_id)

    def init_dest(self):
        self.require_course()

    def submission_ids(self, student: str) -> dict[str, str]:
        """{the submission's time as nbgrader writes it, and as the service does: its id}."""
        found = self.call("GET", self.coursedir.course_id, "submissions",
                          params={"assignment": self.coursedir.assignment_id, "student": student, "inbound": "1"})
        out = {}
        for sub in found.get("submissions", []):
            out[self.format_time(sub["timestamp"])] = sub["id"]
            out[parse_utc(self.service_time(sub["timestamp"])).isoformat()] = sub["id"]
        return out

    def copy_files(self):
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        exclude = set(self.coursedir.student_id_exclude.split(",")) if self.coursedir.student_id_exclude else set()
        regexp = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)", assignment, escape=True),
            "(?P<notebook_id>.*).html"])
        ids: dict[str, dict] = {}
        for html_file in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            m = re.match(regexp, html_file)
            if m is None:
                self.log.error("Could not match '%s' with regexp '%s'", html_file, regexp)
                continue
            student, notebook = m.group("student_id"), m.group("notebook_id")
            if student in exclude:
                self.log.debug("Skipping student '{}'".format(student))
                continue
            stamp_bytes = read_regular(os.path.join(os.path.dirname(html_file), "timestamp.txt"), 4096)
            if stamp_bytes is None:
                self.log.error("No timestamp.txt beside %s: not released (collect the submission again)", html_file)
                continue
            stamp = stamp_bytes.decode("utf-8", "replace").strip()
            if student not in ids:
                ids[student] = self.submission_ids(student)
            try:
                key = parse_utc(stamp).isoformat()
            except (ValueError, OverflowError):
                key = None
            sub_id = ids[student].get(stamp) or ids[student].get(key)
            if sub_id is None:
                self.log.error("No submission of %s by %s at %s in the course service: %s not released",
                               assignment, student, stamp, html_file)
                continue
            page = read_regular(html_file)
            if page is None:
                self.log.error("%s is not a regular file of at most %d MiB: not released", html_file, MAX_PAGE >> 20)
                continue
            self.log.info("Releasing feedback for student '{}' on assignment '{}/{}/{}' ({})".format(
                student, course, assignment, notebook, stamp))
            self.call("PUT", course, "submissions", assignment, student, sub_id, "feedback", notebook + ".html",
                      data=page, content_type="text/html")


class ExchangeFetchFeedback(Exchange, ABCExchangeFetchFeedback):

    def init_src(self):
        course = self.require_course()
        assignment = self.coursedir.assignment_id if self.coursedir.assignment_id not in ("", "*") else None
        found = self.call("GET", course, "submissions", params={"assignment": assignment, "mine": "1"})
        self.feedback_files = []
        for sub in found.get("submissions", []):
            timestamp = self.format_time(sub["timestamp"])
            for notebook in sub.get("notebooks", []):
                if notebook in (sub.get("feedback") or {}):
                    self.feedback_files.append((sub, notebook, timestamp))
                    self.log.info("Found feedback for '{}/{}/{}' submitted at {}".format(
                        course, sub["assignment_id"], notebook, timestamp))
                else:
                    self.log.warning("Could not find feedback for '{}/{}/{}' submitted at {}".format(
                        course, sub["assignment_id"], notebook, timestamp))

    def init_dest(self):
        self.dest_path = os.path.abspath(os.path.join(
            self.local_dir(self.coursedir.course_id, self.coursedir.assignment_id or "*"), "feedback"))

    def copy_files(self):
        for sub, notebook, timestamp in self.feedback_files:
            page, _headers = self.call("GET", sub["course_id"], "submissions", sub["assignment_id"], sub["student_id"],
                                       sub["id"], "feedback", notebook + ".html", raw=True)
            folder = os.path.join(os.path.abspath(self.local_dir(sub["course_id"], sub["assignment_id"])),
                                  "feedback", timestamp)
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".feedback-")
            with os.fdopen(fd, "wb") as f:
                f.write(page)
            os.chmod(tmp, 0o644)
            html_file = os.path.join(folder, notebook + ".html")
            os.replace(tmp, html_file)            # replaces a link at that name; never writes through it
            self.log.info("Fetched feedback: {}".format(html_file))
