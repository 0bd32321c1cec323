"""Who is who in the LMS: the hub's record of LTI launches (course_hub.lti writes it).

One JSON object per line, appended at each launch (the latest line of a user wins):
    {"user": "ada-3f9c2e", "iss": ..., "sub": ..., "deployment_id": ..., "context_id": ...,
     "instructor": false, "lesson": "01_hello_roofline", "lineitems": URL, "lineitem": URL or null,
     "name": ..., "email": ..., "lms_user_id": the custom lms_user_id ($User.id / $Canvas.user.id),
     "sis_id": the LIS claim's person_sourcedid}
The hub user name is the nbgrader student id; `sub` is the LMS's user id that scores are posted for.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.lms.errors import LmsError

MAX_LINE = 64 * 1024
MAX_BYTES = 64 << 20


@dataclass
class Roster:
    lms_id: dict[str, str] = field(default_factory=dict)        # hub user -> LMS user id (sub)
    lineitems_url: str | None = None                             # the course's line items (latest launch)
    lesson_lineitem: dict[str, str] = field(default_factory=dict)  # lesson -> the line item of its link
    people: dict[str, dict] = field(default_factory=dict)        # hub user -> name, email, lms_user_id, sis_id


def read(path: Path | None, issuer: str | None = None, deployment_id: str | None = None) -> Roster:
    """The roster of `path` (an empty one for None), only launches of this issuer / deployment."""
    out = Roster()
    if path is None:
        return out
    try:
        f = open(path, "rb")
    except OSError as e:
        raise LmsError(f"the hub's launch record {path} cannot be read ({e.strerror}); "
                       "roster_file in lms.json names it") from None
    with f:
        total = 0
        for raw in f:
            total += len(raw)
            if total > MAX_BYTES:
                raise LmsError(f"{path}: over {MAX_BYTES >> 20} MiB: not a launch record")
            if len(raw) > MAX_LINE:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue          # a line cut short by a crash: the next launch writes it again
            if not isinstance(rec, dict) or not all(isinstance(rec.get(k), str) for k in ("user", "sub")):
                continue
            if (issuer and rec.get("iss") != issuer) or (deployment_id and rec.get("deployment_id") != deployment_id):
                continue
            if not rec.get("instructor"):
                out.lms_id[rec["user"]] = rec["sub"]
                out.people[rec["user"]] = {k: rec[k] for k in ("name", "email", "lms_user_id", "sis_id")
                                           if isinstance(rec.get(k), str)}
            if isinstance(rec.get("lineitems"), str):
                out.lineitems_url = rec["lineitems"]
            if isinstance(rec.get("lesson"), str) and isinstance(rec.get("lineitem"), str):
                out.lesson_lineitem[rec["lesson"]] = rec["lineitem"]
    return out
