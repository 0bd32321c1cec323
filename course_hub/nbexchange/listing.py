"""`nbgrader list` (and the Assignment List, and the Formgrader's view of what is released) on the
service exchange, with the dicts nbgrader's own ExchangeList returns:

* released (default): {course_id, assignment_id, status: released|fetched, path, notebooks:
  [{notebook_id, path}]}: 'fetched' where the student's copy exists (path: that folder);
* --cached (the Assignment List's submitted part: the student's own submissions) and --inbound
  (an instructor: every student's): {course_id, student_id, assignment_id, status: 'submitted',
  submissions: [{..., timestamp, notebooks: [{notebook_id, path, has_local_feedback,
  has_exchange_feedback, local_feedback_path, feedback_updated}], has_local_feedback,
  has_exchange_feedback, feedback_updated, local_feedback_path}]}, the timestamp the service's.

Feedback is 'updated' where the fetched page's sha256 differs from the service's. As with the
hub's FeedbackPageList (course_hub.feedback_link), a submission's local_feedback_path is its
feedback page, not only its folder. --remove unreleases (instructor); submissions are never
removed (the service keeps every one).
"""
from __future__ import annotations

import hashlib
import os

from nbgrader.exchange.abc import ExchangeList as ABCExchangeList

from ..feedback_link import point_at_pages
from .exchange import Exchange


def _sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


class ExchangeList(Exchange, ABCExchangeList):

    def init_dest(self):
        if self.coursedir.course_id:
            courses = [self.coursedir.course_id]
        else:
            courses = self.call("GET", "courses").get("courses", [])
        if self.coursedir.student_id and self.authenticator is not None:
            allowed = self.authenticator.get_student_courses(self.coursedir.student_id)
            if allowed is not None:
                courses = [c for c in courses if c in allowed]
        assignment = self.coursedir.assignment_id if self.coursedir.assignment_id not in ("", "*") else None
        self.assignments = []
        for course in courses:
            if self.inbound or self.cached:
                student = self.coursedir.student_id if self.coursedir.student_id not in ("", "*") else None
                params = {"assignment": assignment, "student": None if self.cached else student,
                          "mine": "1" if self.cached else None, "inbound": None if self.cached else "1"}
                found = self.call("GET", course, "submissions", params=params)
                self.assignments += [dict(s, kind="submission") for s in found.get("submissions", [])]
            else:
                found = self.call("GET", course, "assignments").get("assignments", [])
                self.assignments += [dict(a, kind="release") for a in found
                                     if assignment is None or a["assignment_id"] == assignment]

    def _released(self, item: dict) -> dict:
        course, assignment = item["course_id"], item["assignment_id"]
        local = self.local_dir(course, assignment)
        info = {"course_id": course, "assignment_id": assignment}
        if os.path.exists(local):
            info["status"], info["path"] = "fetched", os.path.abspath(local)
            names = sorted(n[:-6] for n in os.listdir(local) if n.endswith(".ipynb"))
        else:
            info["status"] = "released"
            info["path"] = f"{self.service_url.rstrip('/')}/exchange/{course}/assignments/{assignment}"
            names = item.get("notebooks", [])
        if self.remove:
            info["status"] = "removed"
        info["notebooks"] = [{"notebook_id": n, "path": os.path.join(info["path"], n + ".ipynb")
                              if info["status"] == "fetched" else f"{info['path']}/{n}.ipynb"} for n in names]
        return info

    def _submitted(self, item: dict) -> dict:
        course, assignment = item["course_id"], item["assignment_id"]
        timestamp = self.format_time(item["timestamp"])
        local = self.local_dir(course, assignment)
        path = f"{self.service_url.rstrip('/')}/exchange/{course}/submissions/{assignment}/{item['student_id']}/{item['id']}"
        info = {"course_id": course, "student_id": item["student_id"], "assignment_id": assignment,
                "timestamp": timestamp, "status": "submitted", "path": path, "submission_id": item["id"]}
        feedback = item.get("feedback") or {}
        info["notebooks"] = []
        for n in item.get("notebooks", []):
            page = os.path.join(local, "feedback", timestamp, f"{n}.html")
            has_local = os.path.isfile(page)
            nb = {"notebook_id": n, "path": f"{path}/{n}.ipynb", "has_local_feedback": has_local,
                  "has_exchange_feedback": n in feedback, "local_feedback_path": page if has_local else None,
                  "feedback_updated": bool(has_local and n in feedback and feedback[n] != _sha256(page))}
            info["notebooks"].append(nb)
        nbs = info["notebooks"]
        info["has_local_feedback"] = bool(nbs) and all(nb["has_local_feedback"] for nb in nbs)
        info["has_exchange_feedback"] = bool(nbs) and all(nb["has_exchange_feedback"] for nb in nbs)
        info["feedback_updated"] = any(nb["feedback_updated"] for nb in nbs)
        info["local_feedback_path"] = (os.path.join(os.path.abspath(local), "feedback", timestamp)
                                       if info["has_local_feedback"] else None)
        return info

    def parse_assignments(self):
        if not (self.inbound or self.cached):
            return [self._released(a) for a in self.assignments]
        groups: dict[tuple, list] = {}
        for item in self.assignments:
            info = self._submitted(item)
            groups.setdefault((info["course_id"], info["student_id"], info["assignment_id"]), []).append(info)
        out = []
        for key in sorted(groups):
            subs = sorted(groups[key], key=lambda s: s["submission_id"])
            out.append({"course_id": key[0], "student_id": key[1], "assignment_id": key[2],
                        "status": "submitted", "submissions": subs})
        return point_at_pages(out)

    def format_inbound_assignment(self, info):
        msg = "{course_id} {student_id} {assignment_id} {timestamp}".format(**info)
        if info["has_local_feedback"] and not info["feedback_updated"]:
            return msg + " (feedback already fetched)"
        if info["has_exchange_feedback"]:
            return msg + " (feedback ready to be fetched)"
        return msg + " (no feedback available)"

    def format_outbound_assignment(self, info):
        msg = "{course_id} {assignment_id}".format(**info)
        return msg + " (already downloaded)" if info["status"] == "fetched" else msg

    def list_files(self):
        assignments = self.parse_assignments()
        if self.inbound or self.cached:
            self.log.info("Submitted assignments:")
            for assignment in assignments:
                for info in assignment["submissions"]:
                    self.log.info(self.format_inbound_assignment(info))
        else:
            self.log.info("Released assignments:")
            for info in assignments:
                self.log.info(self.format_outbound_assignment(info))
        return assignments

    def remove_files(self):
        if self.inbound or self.cached:
            self.fail("The course service keeps every submission: nothing is removed")
        assignments = self.parse_assignments()
        self.log.info("Removing released assignments:")
        for info in assignments:
            self.log.info(self.format_outbound_assignment(info))
            self.call("DELETE", info["course_id"], "assignments", info["assignment_id"])
        return assignments
