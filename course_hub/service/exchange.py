"""The nbgrader exchange, served: assignments, submissions and feedback kept in the service's own
folder (STORE/exchange, written by the service's Unix user only; no student process opens it).
The client is course_hub.nbexchange (nbgrader's exchange plugin classes).

    GET    /exchange/courses                          {"courses": [ids with a released assignment]}
    GET    /exchange/<course>/assignments             {"assignments": [{assignment_id, notebooks, released, size, sha256}]}
    GET    /exchange/<course>/assignments/<a>         the released archive (fetch)
    PUT    /exchange/<course>/assignments/<a>[?force=1]  release an archive (instructor; 409 if there, unless force)
    DELETE /exchange/<course>/assignments/<a>         unrelease (instructor); submissions stay
    GET    /exchange/<course>/submissions[?assignment=a][&student=s][&mine=1]
                                                      {"submissions": [...]}: a student's own, an instructor's any
                                                      (mine=1: the token user's own; inbound=1:
                                                      an instructor's view, 403 for anyone else)
    POST   /exchange/<course>/submissions/<a>         submit an archive (201 {"submission": ...})
    GET    /exchange/<course>/submissions/<a>/<student>/<id>                   that submission's archive
    GET    /exchange/<course>/submissions/<a>/<student>/<id>/feedback/<nb>.html  its feedback page
    PUT    /exchange/<course>/submissions/<a>/<student>/<id>/feedback/<nb>.html  release it (instructor)

A submission's student is the token's user and its time the service's clock (`timestamp`, UTC,
ISO 8601 with microseconds; `id` the same time as a folder name): never a field or a file of the
upload. Every submission is kept (none is replaced or removed); a student reads only their own
submissions and feedback. An archive (tar.gz or zip) is checked bounded and never unpacked here
(course_hub.archives); the bytes stored are the bytes received, as a regular file, so no link can
exist in the store. Limits: MAX_SUBMISSION_BYTES per upload (413), MAX_SUBMISSIONS per student and
assignment and MAX_USER_BYTES per student and course (429); nothing is stored past them. Names are
checked against COURSE, ASSIGNMENT, NOTEBOOK (400 saying what was expected).

Store layout: <course>/released/<a>/{archive,meta.json};
<course>/submissions/<student>/<a>/<id>/{archive,meta.json,feedback/<nb>.html}.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tornado import web

from .. import archives, names
from ..names import COURSE_ID
from .base import USER, TokenHandler

MAX_SUBMISSION_BYTES = 32 << 20    # one upload (a submission or a release)
MAX_SUBMISSIONS = 50               # per student and assignment
MAX_USER_BYTES = 512 << 20         # per student and course, every submission together
MAX_FEEDBACK_BYTES = 16 << 20      # one feedback page

COURSE, ASSIGNMENT, NOTEBOOK = COURSE_ID, names.ASSIGNMENT, names.NOTEBOOK
SUBMISSION_ID = re.compile(r"\d{8}T\d{6}\.\d{6}Z")
_WHAT = {"course": (COURSE, names.WHAT[COURSE]),
         "assignment": (ASSIGNMENT, names.WHAT[ASSIGNMENT]),
         "notebook": (NOTEBOOK, names.WHAT[NOTEBOOK]),
         "student": (USER, "a student's user name (a Unix user name)"),
         "submission": (SUBMISSION_ID, "a submission id such as 20261126T100000.000000Z")}
_ID_FORMAT = "%Y%m%dT%H%M%S.%fZ"


def checked(kind: str, value: str) -> str:
    pattern, what = _WHAT[kind]
    if not isinstance(value, str) or not pattern.fullmatch(value):
        raise web.HTTPError(400, f"{kind} {value[:80]!r}: expected {what}" if isinstance(value, str) else
                            f"{kind}: expected {what}")
    return value


def _write_new(path: Path, data: bytes) -> None:
    """Write `data` to a new regular file at `path` (in a folder only the service writes), atomically."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o640)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _mkdirs(path: Path) -> None:
    """Make `path` and its missing parents, each 0750 (the service's user and group only)."""
    missing = []
    while not path.is_dir():
        missing.append(path)
        path = path.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o750)
        except FileExistsError:
            continue
        os.chmod(d, 0o750)


#: reading and storing an upload (up to MAX_SUBMISSION_BYTES, unpacked bounded to check it) runs here, off
#: the event loop, so that one student's upload never delays another's ledger commit
_WORKERS = ThreadPoolExecutor(max_workers=2, thread_name_prefix="exchange")


class Exchange:
    """The exchange's folder and what lies in it (no HTTP here). Safe to call from worker threads:
    one student's submissions are checked against the limits and stored one at a time."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._locks: dict[tuple, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _lock(self, *key) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(key, threading.Lock())

    # -- released assignments
    def released_dir(self, course: str, assignment: str) -> Path:
        return self.root / course / "released" / assignment

    def courses(self) -> list[str]:
        if not self.root.is_dir():
            return []
        return sorted(p.name for p in self.root.iterdir()
                      if COURSE.fullmatch(p.name) and (p / "released").is_dir() and any((p / "released").iterdir()))

    def released(self, course: str) -> list[dict]:
        folder = self.root / course / "released"
        if not folder.is_dir():
            return []
        out = []
        for d in sorted(folder.iterdir()):
            meta = _read_json(d / "meta.json") if ASSIGNMENT.fullmatch(d.name) else None
            if meta:
                out.append(meta)
        return out

    def release(self, course: str, assignment: str, data: bytes, force: bool) -> dict:
        files = archives.members(data)
        d = self.released_dir(course, assignment)
        with self._lock(course, "release", assignment):
            return self._release(d, course, assignment, data, files, force)

    def _release(self, d: Path, course: str, assignment: str, data: bytes, files: dict, force: bool) -> dict:
        if (d / "meta.json").exists() and not force:
            raise web.HTTPError(409, f"{course}/{assignment} is already released: expected force=1 to replace it")
        _mkdirs(d)
        meta = {"course_id": course, "assignment_id": assignment, "format": archives.detect(data),
                "notebooks": archives.notebooks(files), "size": len(data), "sha256": _sha256(data),
                "released": _now().isoformat()}
        _write_new(d / "archive", data)
        _write_new(d / "meta.json", json.dumps(meta).encode())
        return meta

    def unrelease(self, course: str, assignment: str) -> bool:
        d = self.released_dir(course, assignment)
        if not d.is_dir():
            return False
        shutil.rmtree(d)
        return True

    # -- submissions
    def submission_dir(self, course: str, student: str, assignment: str, sub_id: str) -> Path:
        return self.root / course / "submissions" / student / assignment / sub_id

    def submissions(self, course: str, student: str | None = None, assignment: str | None = None) -> list[dict]:
        base = self.root / course / "submissions"
        if not base.is_dir():
            return []
        students = [student] if student else sorted(p.name for p in base.iterdir() if USER.fullmatch(p.name))
        out = []
        for s in students:
            sdir = base / s
            if not sdir.is_dir():
                continue
            names = [assignment] if assignment else sorted(p.name for p in sdir.iterdir() if ASSIGNMENT.fullmatch(p.name))
            for a in names:
                adir = sdir / a
                if not adir.is_dir():
                    continue
                for sub in sorted(adir.iterdir()):
                    meta = _read_json(sub / "meta.json") if SUBMISSION_ID.fullmatch(sub.name) else None
                    if meta:
                        meta["feedback"] = self._feedback_of(sub)
                        out.append(meta)
        return out

    @staticmethod
    def _feedback_of(sub: Path) -> dict:
        folder = sub / "feedback"
        if not folder.is_dir():
            return {}
        out = {}
        for page in sorted(folder.glob("*.html")):
            meta = _read_json(page.with_suffix(".json")) or {}
            out[page.name[:-5]] = meta.get("sha256", "")
        return out

    def submit(self, course: str, student: str, assignment: str, data: bytes) -> dict:
        if not (self.released_dir(course, assignment) / "meta.json").is_file():
            raise web.HTTPError(404, f"{course}/{assignment} is not released: expected an assignment the "
                                     "instructor has released")
        files = archives.members(data)
        with self._lock(course, "submit", student):
            return self._submit(course, student, assignment, data, files)

    def _submit(self, course: str, student: str, assignment: str, data: bytes, files: dict) -> dict:
        mine = self.submissions(course, student)
        count = sum(1 for m in mine if m["assignment_id"] == assignment)
        if count >= MAX_SUBMISSIONS:
            raise web.HTTPError(429, f"{student} has submitted {assignment} {count} times, the most this "
                                     f"exchange keeps ({MAX_SUBMISSIONS}): ask the instructor")
        used = sum(m.get("size", 0) for m in mine)
        if used + len(data) > MAX_USER_BYTES:
            raise web.HTTPError(429, f"{student}'s submissions to {course} would pass {MAX_USER_BYTES >> 20} MiB "
                                     "in all: ask the instructor")
        adir = self.root / course / "submissions" / student / assignment
        _mkdirs(adir)
        when = _now()
        while True:                        # one folder per submission, never an earlier one's
            sub_id = when.strftime(_ID_FORMAT)
            try:
                os.mkdir(adir / sub_id, 0o750)
                break
            except FileExistsError:
                when += dt.timedelta(microseconds=1)
        meta = {"course_id": course, "student_id": student, "assignment_id": assignment, "id": sub_id,
                "timestamp": when.isoformat(), "format": archives.detect(data), "size": len(data),
                "sha256": _sha256(data), "notebooks": archives.notebooks(files)}
        _write_new(adir / sub_id / "archive", data)
        _write_new(adir / sub_id / "meta.json", json.dumps(meta).encode())
        return meta

    def release_feedback(self, sub: Path, notebook: str, html: bytes) -> dict:
        folder = sub / "feedback"
        _mkdirs(folder)
        _write_new(folder / f"{notebook}.html", html)
        meta = {"notebook_id": notebook, "sha256": _sha256(html), "released": _now().isoformat()}
        _write_new(folder / f"{notebook}.json", json.dumps(meta).encode())
        return meta


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


async def _off_the_loop(fn, *args):
    return await asyncio.get_running_loop().run_in_executor(_WORKERS, fn, *args)


class _Handler(TokenHandler):
    """What every exchange route shares: the store and the names in its URL, checked."""

    def names(self, course, assignment=None, student=None, sub_id=None):
        checked("course", course)
        if assignment is not None:
            checked("assignment", assignment)
        if student is not None:
            checked("student", student)
        if sub_id is not None:
            checked("submission", sub_id)

    def send_file(self, path: Path, content_type: str, headers: dict | None = None):
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise web.HTTPError(404, "not found") from None
        self.set_header("Content-Type", content_type)
        for k, v in (headers or {}).items():
            self.set_header(k, v)
        self.finish(data)

    def own_or_instructor(self, student: str) -> None:
        if student != self.user and not self.is_instructor(self.user):
            raise web.HTTPError(403, "a student reads only their own submissions and feedback")


@web.stream_request_body
class _Upload(_Handler):
    """A route that takes a body of at most `limit()` bytes, refused (413) before it is read
    where Content-Length says so, and never held past the limit otherwise."""

    def limit(self) -> int:
        return MAX_SUBMISSION_BYTES

    async def prepare(self):
        self._chunks, self._size, self._too_big = [], 0, False
        await super().prepare()
        if self.request.method not in ("POST", "PUT"):
            return
        length = self.request.headers.get("Content-Length")
        if length is not None and (not length.isdigit() or int(length) > self.limit()):
            raise web.HTTPError(413, f"expected a body of at most {self.limit() >> 20} MiB "
                                     f"({self.limit()} bytes); this one is {length} bytes")

    def data_received(self, chunk):
        self._size += len(chunk)
        if self._size > self.limit():
            self._too_big, self._chunks = True, []
        elif not self._too_big:
            self._chunks.append(chunk)

    def body(self) -> bytes:
        if self._too_big:
            raise web.HTTPError(413, f"expected a body of at most {self.limit() >> 20} MiB ({self.limit()} bytes)")
        if not self._size:
            raise web.HTTPError(400, "expected a body (the archive or page)")
        return b"".join(self._chunks)


class CoursesHandler(_Handler):
    def get(self, _prefix=None):
        self.finish({"courses": self.store.courses()})


class AssignmentsHandler(_Handler):
    def get(self, _prefix, course):
        self.names(course)
        self.finish({"assignments": self.store.released(course)})


class AssignmentHandler(_Upload):
    def get(self, _prefix, course, assignment):
        self.names(course, assignment)
        d = self.store.released_dir(course, assignment)
        meta = _read_json(d / "meta.json")
        if not meta:
            raise web.HTTPError(404, f"{course}/{assignment} is not released")
        self.send_file(d / "archive", _TYPES[meta["format"]], {"X-Archive-Format": meta["format"]})

    async def put(self, _prefix, course, assignment):
        self.names(course, assignment)
        self.require_instructor()
        data = self.body()
        force = self.get_argument("force", "0") in ("1", "true")
        try:
            meta = await _off_the_loop(self.store.release, course, assignment, data, force)
        except archives.BadArchive as e:
            raise web.HTTPError(400, str(e)) from None
        self.set_status(201)
        self.finish({"released": meta})

    def delete(self, _prefix, course, assignment):
        self.names(course, assignment)
        self.require_instructor()
        if not self.store.unrelease(course, assignment):
            raise web.HTTPError(404, f"{course}/{assignment} is not released")
        self.finish({"removed": f"{course}/{assignment}"})


class SubmissionsHandler(_Upload):
    def get(self, _prefix, course, assignment=None):
        self.names(course, assignment)
        assignment = assignment or self.get_argument("assignment", None)
        if assignment:
            checked("assignment", assignment)
        student = self.get_argument("student", None)
        if student:
            checked("student", student)
        if self.get_argument("mine", "") in ("1", "true"):
            student = self.user
        if self.get_argument("inbound", "") in ("1", "true"):
            self.require_instructor()        # collect, release feedback, list --inbound
        if not self.is_instructor(self.user):
            if student and student != self.user:
                raise web.HTTPError(403, "a student lists only their own submissions")
            student = self.user
        self.finish({"submissions": self.store.submissions(course, student, assignment)})

    async def post(self, _prefix, course, assignment=None):
        if assignment is None:
            raise web.HTTPError(400, "expected POST /exchange/<course>/submissions/<assignment>")
        self.names(course, assignment)
        data = self.body()
        try:
            meta = await _off_the_loop(self.store.submit, course, self.user, assignment, data)
        except archives.BadArchive as e:
            raise web.HTTPError(400, str(e)) from None
        self.set_status(201)
        self.finish({"submission": meta})


class SubmissionHandler(_Handler):
    def get(self, _prefix, course, assignment, student, sub_id):
        self.names(course, assignment, student, sub_id)
        self.own_or_instructor(student)
        sub = self.store.submission_dir(course, student, assignment, sub_id)
        meta = _read_json(sub / "meta.json")
        if not meta:
            raise web.HTTPError(404, f"no submission {sub_id} of {assignment} by {student}")
        self.send_file(sub / "archive", _TYPES[meta["format"]],
                       {"X-Archive-Format": meta["format"], "X-Submitted-At": meta["timestamp"]})


class FeedbackHandler(_Upload):
    def limit(self) -> int:
        return MAX_FEEDBACK_BYTES

    def _sub(self, course, assignment, student, sub_id, notebook):
        self.names(course, assignment, student, sub_id)
        checked("notebook", notebook)
        sub = self.store.submission_dir(course, student, assignment, sub_id)
        if not (sub / "meta.json").is_file():
            raise web.HTTPError(404, f"no submission {sub_id} of {assignment} by {student}")
        return sub

    def get(self, _prefix, course, assignment, student, sub_id, notebook):
        self.own_or_instructor(student)
        sub = self._sub(course, assignment, student, sub_id, notebook)
        self.send_file(sub / "feedback" / f"{notebook}.html", "text/html; charset=utf-8")

    def put(self, _prefix, course, assignment, student, sub_id, notebook):
        self.require_instructor()
        sub = self._sub(course, assignment, student, sub_id, notebook)
        meta = self.store.release_feedback(sub, notebook, self.body())
        self.set_status(201)
        self.finish({"feedback": meta})


class NotFoundHandler(_Handler):
    def prepare(self):
        raise web.HTTPError(404, "expected /exchange/courses, /exchange/<course>/assignments[/<assignment>], "
                                 "/exchange/<course>/submissions[/<assignment>[/<student>/<id>[/feedback/<notebook>.html]]]")


_TYPES = {"tar.gz": "application/gzip", "zip": "application/zip"}
_SEG = r"([^/]+)"


def routes(prefix: str, common: dict, root: Path) -> list:
    """The exchange's routes under `prefix` (app.PREFIX), each handler given `common` (base.TokenHandler's
    arguments) and the store at `root`."""
    kw = {**common, "store": Exchange(root)}
    ex = prefix + r"/exchange"
    return [
        (ex + r"/courses/?", CoursesHandler, kw),
        (ex + rf"/{_SEG}/assignments/?", AssignmentsHandler, kw),
        (ex + rf"/{_SEG}/assignments/{_SEG}", AssignmentHandler, kw),
        (ex + rf"/{_SEG}/submissions/?", SubmissionsHandler, kw),
        (ex + rf"/{_SEG}/submissions/{_SEG}/?", SubmissionsHandler, kw),
        (ex + rf"/{_SEG}/submissions/{_SEG}/{_SEG}/{_SEG}", SubmissionHandler, kw),
        (ex + rf"/{_SEG}/submissions/{_SEG}/{_SEG}/{_SEG}/feedback/([^/]+)\.html", FeedbackHandler, kw),
        (ex + r"(?:/.*)?", NotFoundHandler, kw),
    ]
