"""`nbgrader submit` (and the Assignment List's Submit) on the service exchange: the student's
assignment folder, packed (regular files only: a link is left out, never followed), posted to the
service, which records the submitter from the token and the time from its own clock, keeps every
submission, and refuses past its limits (413: too large; 429: too many)."""
from __future__ import annotations

import glob
import os

from nbgrader.exchange.abc import ExchangeSubmit as ABCExchangeSubmit

from .exchange import Exchange
from .release import packed


class ExchangeSubmit(Exchange, ABCExchangeSubmit):

    def init_src(self):
        root = self.local_dir(self.coursedir.course_id, self.coursedir.assignment_id)
        self.src_path = os.path.abspath(root)
        self.coursedir.assignment_id = os.path.split(self.src_path)[-1]
        if not os.path.isdir(self.src_path):
            self.fail("Assignment not found at: {}".format(self.src_path))

    def init_dest(self):
        course = self.require_course()
        self.check_access(course)

    def check_filename_diff(self, released: list[str]):
        submitted = sorted(os.path.splitext(os.path.basename(p))[0]
                           for p in glob.glob(os.path.join(glob.escape(self.src_path), "*.ipynb")))
        missing = [n for n in released if n not in submitted]
        extra = [n for n in submitted if n not in released]
        if not (missing or extra):
            return
        diff = "Expected:\n\t{}\nSubmitted:\n\t{}".format(
            "\n\t".join(f"{n}.ipynb: {'MISSING' if n in missing else 'FOUND'}" for n in released),
            "\n\t".join(f"{n}.ipynb: {'EXTRA' if n in extra else 'OK'}" for n in submitted))
        if missing and self.strict:
            self.fail("Assignment {} not submitted. There are missing notebooks for the submission:\n{}".format(
                self.coursedir.assignment_id, diff))
        self.log.warning("Possible missing notebooks and/or extra notebooks submitted for assignment {}:\n{}".format(
            self.coursedir.assignment_id, diff))

    def copy_files(self):
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        released = {a["assignment_id"]: a for a in self.call("GET", course, "assignments").get("assignments", [])}
        if assignment not in released:
            self.fail("Assignment not found: {}/{} (the course service has released no such assignment)".format(
                course, assignment))
        self.check_filename_diff(released[assignment].get("notebooks", []))
        self.log.info("Source: {}".format(self.src_path))
        self.log.info("Destination: {} (the course service)".format(self.service_url))
        data = packed(self, self.src_path)
        sub = self.call("POST", course, "submissions", assignment, data=data,
                        content_type="application/gzip")["submission"]
        self.timestamp = self.format_time(sub["timestamp"])
        self.log.info("Submitted as: {} {} {}".format(course, assignment, self.timestamp))
