"""Submissions from nbgrader's exchange: an inbound folder (each student's latest, their own), or
the exchange plugin nbgrader's configuration selects (the hub's course service)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from autograder.course import COURSE_ID, Course
from autograder.gradebook import prepare
from autograder.intake.report import IGNORED, MAX_FILE, MAX_TOTAL, CollectReport
from autograder.intake.safefiles import walk

def exchange_entries(inbound: Path, assignment: str, report: CollectReport, course_id: str = COURSE_ID):
    """The latest submission of each student in an nbgrader inbound folder, as nbgrader's own
    collect picks it: <student>+<assignment>+<timestamp>+<random>, newest timestamp wins."""
    from nbgrader.utils import parse_utc

    if not inbound.is_dir():
        raise SystemExit(f"no nbgrader inbound folder at {inbound} (is --exchange right, and the course id "
                         f"{course_id!r}?)")
    latest: dict[str, tuple] = {}
    for d in sorted(inbound.iterdir()):
        parts = d.name.rsplit("+", 3)
        if len(parts) < 3 or parts[1] != assignment:
            continue
        if not d.is_dir() or d.is_symlink():
            report.problem(parts[0], d.name, "not a submission folder")
            continue
        try:
            when = parse_utc(parts[2])
        except Exception:
            report.problem(parts[0], d.name, "no readable timestamp in the folder name: skipped")
            continue
        why = not_owned_by(d, parts[0])
        if why:     # made in someone else's name: refused, and never hides their own latest one
            report.problem(parts[0], d.name, f"{why}: refused (another user may have made it in {parts[0]}'s name; "
                                             f"{parts[0]}'s own latest submission is collected instead)")
            continue
        if parts[0] not in latest or when > latest[parts[0]][0]:
            latest[parts[0]] = (when, d)
    for student, (when, d) in sorted(latest.items()):
        info = {"timestamp": str(when), "exchange": True}
        files, refused = walk(d, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
        for rel, why, _ in refused:
            report.problem(student, rel, why)
        for rel, data in files:
            yield student, rel, data, info


def plugin_entries(course: Course, assignment: str, plugin, report: CollectReport):
    """The latest submission of each student, as nbgrader's collect with the configured exchange
    plugin (the hub's course service) writes them into a throw-away course folder: their
    timestamp.txt is the exchange's (the service's clock; one in an upload is left out there)."""
    from nbgrader.apps import NbGraderAPI

    with tempfile.TemporaryDirectory(prefix="collect-") as tmp:
        c = course.config()
        c.CourseDirectory.root = tmp
        c.CourseDirectory.course_id = course.course_id
        c.CourseDirectory.db_url = f"sqlite:///{Path(tmp) / 'gradebook.db'}"
        plugin.apply(c)
        prepare(c.CourseDirectory.db_url)          # the service's collect opens it
        result = NbGraderAPI(config=c).collect(assignment, update=True)
        if not result.get("success"):
            raise SystemExit(f"collecting {assignment} from {plugin} failed:\n"
                             f"{(result.get('error') or result.get('log') or '').strip()[-2000:]}")
        submitted = Path(tmp) / "submitted"
        for d in sorted(submitted.iterdir()) if submitted.is_dir() else []:
            folder = d / assignment
            if not folder.is_dir() or folder.is_symlink():
                continue
            stamp = folder / "timestamp.txt"
            info = {"timestamp": stamp.read_text(errors="replace").strip() if stamp.is_file() else None,
                    "exchange": True}
            files, refused = walk(folder, MAX_FILE, MAX_TOTAL, skip=IGNORED | {".ipynb_checkpoints"})
            for rel, why, _ in refused:
                report.problem(d.name, rel, why)
            for rel, data in files:
                yield d.name, rel, data, info


def _user_name(uid: int) -> str:
    import pwd

    try:
        return f"user {pwd.getpwuid(uid).pw_name!r}"
    except KeyError:
        return f"uid {uid} (no such user)"


def not_owned_by(folder: Path, student: str) -> str | None:
    """Why `folder` (an exchange submission) cannot be `student`'s own, or None: it and
    everything in it must be owned by the student's uid, root, or the grader's own user."""
    import pwd

    trusted = {0, os.geteuid()}
    try:
        mine = pwd.getpwnam(student).pw_uid
    except KeyError:
        mine = None
    for dirpath, dirnames, filenames in os.walk(folder):
        for name in [None] + dirnames + filenames:
            p = dirpath if name is None else os.path.join(dirpath, name)
            if name is None and dirpath != str(folder):
                continue
            try:
                uid = os.lstat(p).st_uid
            except OSError:
                continue
            if uid in trusted or uid == mine:
                continue
            what = "the folder" if p == str(folder) else os.path.relpath(p, folder)
            if mine is None:
                return f"{what} belongs to {_user_name(uid)} and there is no user {student!r} here to own it"
            return f"{what} belongs to {_user_name(uid)}, not to {student!r}"
    return None
