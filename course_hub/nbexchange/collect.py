"""`nbgrader collect` (and the Formgrader's Collect) on the service exchange: for each student (or
--student), their latest submission (with --before-duedate, the latest before the gradebook's due
date, as nbgrader's own collect), unpacked safely into submitted/<student>/<assignment>/ with
timestamp.txt written from the service's clock. A timestamp.txt inside the upload is left out:
the student never sets their own time. An existing folder is replaced only with --update (by a
newer submission) or --before-duedate, as nbgrader's own collect does."""
from __future__ import annotations

import os
import shutil

from nbgrader.exchange.abc import ExchangeCollect as ABCExchangeCollect
from nbgrader.utils import parse_utc

from .exchange import Exchange
from .fetch import unpack

SET_BY_THE_SERVICE = ("timestamp.txt",)


class ExchangeCollect(Exchange, ABCExchangeCollect):

    def init_src(self):
        course = self.require_course()
        assignment = self.coursedir.assignment_id
        if not assignment or assignment == "*":
            self.fail("No assignment specified: expected `nbgrader collect <assignment>`")
        student = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
        found = self.call("GET", course, "submissions", params={"assignment": assignment, "student": student,
                                                                      "inbound": "1"})
        by_student: dict[str, list] = {}
        for sub in found.get("submissions", []):
            sub["when"] = parse_utc(self.service_time(sub["timestamp"]))
            by_student.setdefault(sub["student_id"], []).append(sub)
        self.duedate = None
        if self.before_duedate:
            from nbgrader.api import Gradebook, MissingEntry

            with Gradebook(self.coursedir.db_url, course) as gb:
                try:
                    self.duedate = gb.find_assignment(assignment).duedate
                except MissingEntry:
                    self.duedate = None
        self.src_records = []
        for subs in by_student.values():
            subs.sort(key=lambda s: s["when"], reverse=True)
            if self.duedate is not None and self.before_duedate:
                before = [s for s in subs if s["when"] <= self.duedate]
                self.src_records.append(before[0] if before else subs[0])
            else:
                self.src_records.append(subs[0])

    def copy_files(self):
        course, assignment = self.coursedir.course_id, self.coursedir.assignment_id
        if not self.src_records:
            self.log.warning("No submissions of '{}' for course '{}' to collect".format(assignment, course))
        else:
            self.log.info("Processing {} submissions of '{}' for course '{}'".format(
                len(self.src_records), assignment, course))
        for rec in sorted(self.src_records, key=lambda r: r["student_id"]):
            student = rec["student_id"]
            dest_path = self.coursedir.format_path(self.coursedir.submitted_directory, student, assignment)
            copy = updating = False
            if os.path.isdir(dest_path):
                existing = self.coursedir.get_existing_timestamp(dest_path)
                if self.update and (existing is None or rec["when"] > existing):
                    copy = updating = True
                elif self.before_duedate and existing != rec["when"]:
                    copy = updating = True
            else:
                copy = True
            if not copy:
                self.log.info(("No newer submission to collect: {} {}" if self.update else
                               "Submission already exists, use --update to update: {} {}").format(student, assignment))
                continue
            self.log.info("{} submission: {} {}".format("Updating" if updating else "Collecting", student, assignment))
            self.collect_one(rec, dest_path, updating)

    def collect_one(self, rec: dict, dest_path: str, updating: bool) -> None:
        data, _headers = self.call("GET", rec["course_id"], "submissions", rec["assignment_id"], rec["student_id"],
                                   rec["id"], raw=True)
        left_out = []

        def skip(name):
            if name in SET_BY_THE_SERVICE:
                left_out.append(name)
                return True
            return False

        tmp, unpacked = unpack(self, data, os.path.dirname(dest_path), skip)
        try:
            with open(os.path.join(unpacked, "timestamp.txt"), "x") as fh:
                fh.write(self.format_time(rec["timestamp"]))
            if left_out:
                self.log.warning("%s's upload of %s held %s: left out (the time is the service's, %s)",
                                 rec["student_id"], rec["assignment_id"], ", ".join(left_out), rec["timestamp"])
            if updating:
                shutil.rmtree(dest_path)
            os.rename(unpacked, dest_path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
