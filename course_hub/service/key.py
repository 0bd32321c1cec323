"""The answer key, on the hub: a verify cell in a student's kernel asks here for the truth
(course_lib.questions.key). The service

* refuses a question the student has not committed to it (the kernel posts each commit to the
  ledger: no commit here, no truth);
* records the reveal in the student's ledger, with its own clock, **before** it answers: a kernel
  that skips its own record of the reveal still leaves one where it cannot write;
* solves the question for the student's own variant (the course secret is here, never in a
  student's kernel) and answers the truth, the arithmetic as text, and the lesson's own truth
  where the student's numbers differ (a copied answer is named as such).

    POST /key/reveal      {"question": "wall_q1", "assignment": ..., "notebook": ...}
    POST /key/takeaways   {"question": "wall_q0"}: the lesson's take-aways, once every question of
                          the lesson has been revealed to this student

Solving runs in one worker thread, off the event loop: one student's reveal never holds up
another's commit.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tornado import web

from ..names import RECORDED_NAME
from .base import TokenHandler
from .ledger import BadEvent, LedgerFull, Store, _now

MAX_BODY = 2048
_QUESTION = re.compile(r"[a-z]{1,16}_q[0-9]{1,2}[a-z]?")
_NAME = RECORDED_NAME


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class AnswerKey:
    """Truths for hub users: course_lib's solvers (this process's copy holds them) and the
    course's variant secret (None: everyone gets the lesson's own numbers)."""

    def __init__(self, ledger: Store, secret: bytes | None = None, secret_file: Path | None = None):
        self.ledger, self._secret, self.secret_file = ledger, secret, secret_file
        self._seen = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="answer-key")

    @property
    def secret(self) -> bytes | None:
        """The course secret: the one given, else `secret_file`'s (read again when it changes: the
        hub hands it over when the admin adds it, without a restart); None: the lesson's numbers."""
        if self.secret_file is None:
            return self._secret
        try:
            st = Path(self.secret_file).stat()
        except OSError:
            return None
        if self._seen != (st.st_mtime_ns, st.st_size):
            data = Path(self.secret_file).read_bytes().strip()
            self._secret = data if len(data) >= 16 else None
            self._seen = (st.st_mtime_ns, st.st_size)
        return self._secret

    # ---- what a request may ask -----------------------------------------------------------------
    def _question(self, qid: str):
        from course_lib.questions import get

        try:
            return get(qid)
        except (KeyError, ImportError, ModuleNotFoundError):
            raise Refused(404, f"{qid}: no such graded question") from None

    def _events(self, user: str, qid: str) -> list[dict]:
        return [e for e in self.ledger.read(user) if e.get("question") == qid]

    def givens(self, user: str, qid: str) -> dict:
        from course_lib.questions import variants

        key = variants.student_key(self.secret, user) if self.secret else ""
        return variants.draw(key, qid)

    # ---- answers ----------------------------------------------------------------------------------
    def reveal(self, user: str, qid: str, assignment: str | None, notebook: str | None) -> dict:
        from course_lib.questions import core
        from course_lib.questions.key import solution_data

        q = self._question(qid)
        import importlib

        from course_lib.questions import lesson_module

        if q.measured or getattr(importlib.import_module(lesson_module(qid)), "ANSWER_KEY_IN_KERNEL", ""):
            raise Refused(400, f"{qid}: its truth is measured on your own machine; your kernel computes it")
        if not any(e.get("kind") in ("commit", "revise") for e in self._events(user, qid)):
            label = qid.split("_", 1)[1].upper()
            raise Refused(409, f"{label}: the course service has no committed answer of yours yet. Run the form "
                               "check (the test cell below your answer): it commits your answer, then this cell "
                               "shows the truth.")
        mine = self.givens(user, qid)
        data = solution_data(q.solution(**mine), core._lessons_own(q, mine))   # solve before recording: a
        t = _now()                                                                # solver's error reveals nothing
        digest = hashlib.sha256(json.dumps(["service-reveal", user, qid, t]).encode()).hexdigest()
        try:
            self.ledger.append(user, {"assignment": assignment, "notebook": notebook, "question": qid,
                                      "kind": "reveal", "digest": digest, "by": "service", "variant": mine})
        except LedgerFull as e:
            raise Refused(429, str(e)) from None
        return data

    def takeaways(self, user: str, prefix: str) -> dict:
        import importlib

        from course_lib.questions import lesson_module, lesson_questions

        try:
            questions = lesson_questions(prefix)
        except (KeyError, ImportError, ModuleNotFoundError):
            raise Refused(404, f"{prefix}: no such lesson") from None
        shown = {e.get("question") for e in self.ledger.read(user) if e.get("kind") == "reveal"}
        pending = [q.id.split("_", 1)[1].upper() for q in questions if q.id not in shown]
        if pending:
            raise Refused(409, "the take-aways appear once every question's truth has been shown. Still to do: "
                               + ", ".join(pending) + ".")
        module = importlib.import_module(lesson_module(f"{prefix}_q0"))
        return {"text": getattr(module, "TAKEAWAYS", "") or ""}

    async def run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)


def _body(handler) -> dict:
    if len(handler.request.body) > MAX_BODY:
        raise web.HTTPError(413, f"expected a JSON object of at most {MAX_BODY} bytes")
    try:
        data = json.loads(handler.request.body)
    except (ValueError, UnicodeDecodeError):
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("question"), str) \
            or not _QUESTION.fullmatch(data["question"]):
        raise web.HTTPError(400, 'expected {"question": "<lesson>_q<N>", "assignment": ..., "notebook": ...}')
    for name in ("assignment", "notebook"):
        if data.get(name) is not None and (not isinstance(data[name], str) or not _NAME.fullmatch(data[name])):
            raise web.HTTPError(400, f"{name}: expected a name of at most 200 characters, no slashes")
    return data


class RevealHandler(TokenHandler):
    async def post(self, _prefix=None):
        data = _body(self)
        try:
            answer = await self.key.run(self.key.reveal, self.user, data["question"], data.get("assignment"),
                                        data.get("notebook"))
        except Refused as e:
            raise web.HTTPError(e.status, str(e)) from None
        except BadEvent as e:
            raise web.HTTPError(400, str(e)) from None
        self.finish(answer)


class TakeawaysHandler(TokenHandler):
    async def post(self, _prefix=None):
        data = _body(self)
        try:
            answer = await self.key.run(self.key.takeaways, self.user, data["question"].split("_", 1)[0])
        except Refused as e:
            raise web.HTTPError(e.status, str(e)) from None
        self.finish(answer)


def routes(prefix: str, common: dict, key: AnswerKey) -> list:
    args = {**common, "key": key}
    return [(prefix + r"/key/reveal/?", RevealHandler, args), (prefix + r"/key/takeaways/?", TakeawaysHandler, args)]
