"""The prediction ledger: a JupyterHub-managed service that keeps every student's commits and
reveals where the student cannot write (a part of the course service,
course_hub.service, which the hub starts as its own Unix user).

A student's kernel posts each event of its prediction record (course_lib.ledger) with the
student's own hub token; the service asks the hub whose token it is and appends
``{user, assignment, notebook, question, kind, digest, values_hash, values, variant, t, seq, n,
received}`` to ``STORE/<user>.jsonl``, opened append-only (no request updates or removes a line;
``received`` is the service's clock, which no student sets). The grader reads the ledger
(autograder.integrity.ledger) by path or with an instructor's token:

    POST /events               one event (JSON, at most MAX_BODY bytes); 201 when stored
    GET  /events[?user=NAME]   {"events": {user: [entries]}}: an instructor (a member of
                               --instructors-group) any user's, anyone else their own

Nothing proportional to a ledger runs on the event loop: reads (parsing and encoding a ledger of
up to MAX_USER_BYTES) run in a pool of processes (a thread parsing would hold the interpreter's
lock the loop needs), appends (and the first count of a user's lines) in a pool of threads, so
one student reading a full ledger from many threads cannot hold up another's commit; a student's
reads are limited too, by bytes (limits.ReadLimit).

Every request needs ``Authorization: token <the user's JupyterHub token>`` (401 without one, 403
for a token the hub does not know or one without access to this service). Bad input gets a 4xx
with a JSON ``{"error": ...}`` saying what was expected.
"""
from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import re
import multiprocessing
import threading
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tornado import web

from ..names import RECORDED_NAME
from . import limits
from .base import USER as _USER, TokenHandler

# Reads and writes apart: a flood of reads queues behind reads only. Reads in processes (started
# when first needed, "spawn": the service has threads): parsing 16 MiB in a thread of the service
# held its interpreter's lock for seconds against the event loop (issue 44).
_WRITES = ThreadPoolExecutor(8, thread_name_prefix="ledger-write")
_READS: list[ProcessPoolExecutor] = []


def _read_pool() -> ProcessPoolExecutor:
    if not _READS:
        _READS.append(ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn")))
    return _READS[0]


def encoded_events(root: str, users: list[str]) -> bytes:
    """The body of GET /events for `users` (all of the store's when empty), in a read process."""
    store = Store(Path(root))
    users = users or store.users()
    return json.dumps({"events": {u: store.read(u) for u in users}}).encode()

MAX_BODY = 8192                  # one event; course_lib.ledger posts far less
MAX_VALUES_BYTES = 2048          # an answer's values (course_lib.ledger.MAX_VALUES_BYTES)
MAX_EVENTS_PER_USER = 20000      # a term is a few hundred per student
MAX_USER_BYTES = 16 << 20
KINDS = ("commit", "revise", "reveal")
_QUESTION = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_NAME = RECORDED_NAME                                     # an assignment or notebook name
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z")


class BadEvent(ValueError):
    """What is wrong with a posted event (the service answers 400 with it)."""


def _canonical(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def check_event(body: bytes) -> dict:
    """The entry a posted body makes (only the known fields), or BadEvent saying what was expected."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise BadEvent("expected a JSON object") from None
    if not isinstance(data, dict):
        raise BadEvent("expected a JSON object")
    unknown = sorted(set(data) - {"assignment", "notebook", "question", "kind", "digest", "values_hash", "values",
                                  "variant", "t", "seq", "n"})
    if unknown:
        raise BadEvent(f"unknown field(s) {unknown[:5]}")

    def text(key, pattern, what, required=True):
        v = data.get(key)
        if v is None and not required:
            return None
        if not isinstance(v, str) or not pattern.fullmatch(v):
            raise BadEvent(f"{key}: expected {what}")
        return v

    def count(key):
        v = data.get(key)
        if v is None:
            return None
        if not isinstance(v, int) or isinstance(v, bool) or not 0 <= v < 10**6:
            raise BadEvent(f"{key}: expected a whole number from 0 to 999999")
        return v

    def small(key):
        v = data.get(key)
        if v is None:
            return None
        if not isinstance(v, dict) or len(_canonical(v)) > MAX_VALUES_BYTES:
            raise BadEvent(f"{key}: expected a JSON object of at most {MAX_VALUES_BYTES} bytes")
        return v

    entry = {"assignment": text("assignment", _NAME, "a folder name (at most 200 characters, no slashes)", False),
             "notebook": text("notebook", _NAME, "a notebook name (at most 200 characters, no slashes)", False),
             "question": text("question", _QUESTION, "a question id such as hello_q1"),
             "kind": data.get("kind"),
             "digest": text("digest", _HEX64, "the event's sha256 (64 hex digits)"),
             "values_hash": text("values_hash", _HEX64, "sha256 of the values (64 hex digits)", False),
             "values": small("values"), "variant": small("variant"),
             "t": text("t", _TIME, "the event's UTC time such as 2026-11-26T10:00:00.000Z", False),
             "seq": count("seq"), "n": count("n")}
    if entry["kind"] not in KINDS:
        raise BadEvent(f"kind: expected one of {', '.join(KINDS)}")
    return entry


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Store:
    """One append-only file per user under `root` (0640 files in a folder only the service
    writes). Bounded: MAX_EVENTS_PER_USER lines, MAX_USER_BYTES bytes per user."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._counts: dict[str, int] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._locks_lock = threading.Lock()

    def _lock(self, user: str) -> threading.Lock:
        with self._locks_lock:
            return self._locks.setdefault(user, threading.Lock())

    def path(self, user: str) -> Path:
        if not _USER.fullmatch(user):
            raise BadEvent(f"user {user!r}: not a Unix user name")
        return self.root / f"{user}.jsonl"

    def read(self, user: str) -> list[dict]:
        path = self.path(user)
        if not path.is_file():
            return []
        out = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out

    def size(self, user: str) -> int:
        """The bytes of `user`'s ledger (0: none)."""
        try:
            return self.path(user).stat().st_size
        except FileNotFoundError:
            return 0

    def users(self) -> list[str]:
        return sorted(p.stem for p in self.root.glob("*.jsonl") if _USER.fullmatch(p.stem))

    def append(self, user: str, entry: dict) -> dict:
        """Append `entry` for `user` (with the user and the service's time); LedgerFull when the
        user's bound is reached."""
        path = self.path(user)
        with self._lock(user):         # appends run in a pool: one user's count and file one at a time
            return self._append(path, user, entry)

    def _append(self, path: Path, user: str, entry: dict) -> dict:
        line = (_canonical({**entry, "user": user, "received": _now()}) + "\n").encode()
        if user not in self._counts:
            # one event a line (the service writes whole lines): counted without parsing them
            self._counts[user] = path.read_bytes().count(b"\n") if path.is_file() else 0
        size = path.stat().st_size if path.exists() else 0
        if self._counts[user] >= MAX_EVENTS_PER_USER or size + len(line) > MAX_USER_BYTES:
            raise LedgerFull(f"the ledger holds its limit for {user} ({MAX_EVENTS_PER_USER} events, "
                             f"{MAX_USER_BYTES >> 20} MiB): ask the instructor")
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o640)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        self._counts[user] += 1
        return json.loads(line)


class LedgerFull(Exception):
    pass


class EventsHandler(TokenHandler):
    """/events: POST one event, GET the events (see the module's docstring)."""

    reads: limits.ReadLimit | None = None

    async def post(self, _prefix=None):
        if len(self.request.body) > MAX_BODY:
            raise web.HTTPError(413, f"expected one event of at most {MAX_BODY} bytes")
        try:
            entry = check_event(self.request.body)
            stored = await asyncio.get_running_loop().run_in_executor(_WRITES, self.store.append, self.user, entry)
        except BadEvent as e:
            raise web.HTTPError(400, str(e)) from None
        except LedgerFull as e:
            raise web.HTTPError(429, str(e)) from None
        self.set_status(201)
        self.finish({"stored": {k: stored[k] for k in ("user", "question", "kind", "digest", "received")}})

    async def get(self, _prefix=None):
        wanted = self.get_arguments("user")
        limited = not self.is_instructor(self.user)
        if limited:
            if any(u != self.user for u in wanted):
                raise web.HTTPError(403, "only an instructor reads another user's ledger")
            wanted = [self.user]
        try:
            for u in wanted:
                self.store.path(u)        # a bad name is refused here, not in a read process
        except BadEvent as e:
            raise web.HTTPError(400, str(e)) from None
        if limited and self.reads is not None:
            self.reads.enter(self.user, self.store.size(self.user))
        try:
            try:
                body = await asyncio.get_running_loop().run_in_executor(_read_pool(), encoded_events,
                                                                        str(self.store.root), wanted)
            except BrokenProcessPool:          # a read process died (killed, out of memory): a new pool, once
                _READS.pop().shutdown(wait=False)
                body = await asyncio.get_running_loop().run_in_executor(_read_pool(), encoded_events,
                                                                        str(self.store.root), wanted)
        except BadEvent as e:
            raise web.HTTPError(400, str(e)) from None
        finally:
            if limited and self.reads is not None:
                self.reads.leave(self.user)
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.finish(body)
