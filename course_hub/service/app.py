"""The course service's application and its command: one tornado app on 127.0.0.1 (on
Kubernetes, its own pod), started by JupyterHub as a managed service running as its own user.

    python -m course_hub.service --store DIR [--instructors-group NAME | --instructors-hub-group NAME]
                                 [--answer-key [--secret-file F]]

Routes (each under /services/<name>/ too, as the hub's proxy forwards them):

    /events     the prediction ledger (course_hub.service.ledger)
    /exchange/  the nbgrader exchange (course_hub.service.exchange)
    /key/       the answer key: reveals and truths (course_hub.service.key)
"""
from __future__ import annotations

import argparse
import os
import resource
import signal
from pathlib import Path

from tornado import web

from . import ledger, limits

PREFIX = r"(/services/[\w.-]+)?"


class HomeHandler(web.RequestHandler):
    def initialize(self, answer_key: bool = False):
        self.answer_key = answer_key

    def get(self, _prefix=None):
        # answer_key: the truths students see come from here alone (the grader counts only these reveals)
        self.finish({"service": "course service", "api": ["/events", "/exchange/", "/key/"],
                     "answer_key": self.answer_key})


def make_app(store: Path, auth, service: str = "course", is_instructor=lambda user: False, *,
             rate: limits.Rate | None = None, reads: limits.ReadLimit | None = None, answer_key: bool = False, secret: bytes | None = None,
             secret_file: Path | None = None) -> web.Application:
    """The tornado application over the folder `store` (the ledger in store/ledger, the exchange
    in store/exchange); `auth` identifies a token (jupyterhub.services.auth.HubAuth or a stand-in
    with an async user_for_token(token, sync=False)); `is_instructor(user)` says who may read and
    collect every student's; `answer_key`: answer reveals (this process's course_lib must hold
    the solvers) with the variant `secret`, or the one in `secret_file` (read again when it
    changes; neither: everyone the lesson's own numbers); `rate`: requests per user, `reads`: a
    student's reads of their ledger."""
    store = Path(store)
    for sub in ("ledger", "exchange"):
        (store / sub).mkdir(mode=0o750, exist_ok=True)
    common = {"auth": auth, "service": service, "is_instructor": is_instructor, "rate": rate or limits.Rate()}
    events = ledger.Store(store / "ledger")
    routes = [(PREFIX + r"/events/?", ledger.EventsHandler,
               {**common, "store": events, "reads": reads or limits.ReadLimit()})]
    try:
        from . import exchange
    except ImportError:          # pragma: no cover - while the exchange is being written
        exchange = None
    if exchange is not None:
        routes += exchange.routes(PREFIX, common, store / "exchange")
    if answer_key:
        from . import key

        routes += key.routes(PREFIX, common, key.AnswerKey(events, secret, secret_file))
        # the grader reading the ledger's folder learns it the same way (autograder.integrity.ledger)
        (store / "ledger" / "ANSWER_KEY").write_text(
            "This course service is the answer key: the truths students see come from it alone, and the\n"
            "grader counts only its reveals (autograder.integrity.ledger.answers_from_service).\n")
    else:
        (store / "ledger" / "ANSWER_KEY").unlink(missing_ok=True)
    routes.append((PREFIX + r"/?", HomeHandler, {"answer_key": answer_key}))
    return web.Application(routes)


def _exit_cleanly(signum, _frame) -> None:
    raise SystemExit(0)


def _holds_the_key() -> None:
    """Refuse to start as the answer key with a student's copy of course_lib (its solvers are stubs)."""
    from course_lib.questions import all_questions
    from course_lib.questions.key import KeyHeld

    q = next(q for q in all_questions().values() if not q.measured)
    try:
        q.solution()
    except KeyHeld:
        import course_lib

        raise SystemExit(f"--answer-key: {course_lib.__file__} is a student's copy of course_lib (no solvers); "
                         "run the service with the instructors' environment") from None


def _more_files() -> None:
    """Let the service hold as many connections as the system allows it (the soft limit of open
    files up to the hard one): a flood of idle connections is closed by the time-outs before it
    can use them all."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def parser() -> argparse.ArgumentParser:
    """The service's command line (deploy/kubernetes/course-service.yaml passes it too)."""
    p = argparse.ArgumentParser(prog="python -m course_hub.service", description=__doc__.split("\n\n")[0])
    p.add_argument("--store", required=True, help="the folder the service keeps everything in (only it writes there)")
    who = p.add_mutually_exclusive_group()
    who.add_argument("--instructors-group", default="", help="the Unix group whose members are the course's instructors")
    who.add_argument("--instructors-hub-group", default="",
                     help="the JupyterHub group whose members are the course's instructors (on Kubernetes: "
                          "asked of the hub's API with this service's token; its role needs read:groups for it)")
    p.add_argument("--answer-key", action="store_true",
                   help="answer reveals: this interpreter's course_lib must hold the solvers (the instructors' copy)")
    p.add_argument("--secret-file", default="", help="the course's variant secret (each student their own numbers; "
                   "read again when it changes); without it everyone gets the lesson's own")
    return p


def main(argv=None) -> None:
    import asyncio
    from urllib.parse import urlsplit

    # A stop asked for while the service is still starting ends it cleanly (exit 0) too;
    # serve() replaces these with the event loop's own handlers before it listens.
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _exit_cleanly)

    from jupyterhub.services.auth import HubAuth

    from .base import unix_group_members
    from .hub_group import HubGroup

    args = parser().parse_args(argv)
    store = Path(args.store)
    if not store.is_dir() or not os.access(store, os.W_OK):
        raise SystemExit(f"{store}: expected a folder this service's user ({os.geteuid()}) can write")
    secret_file = Path(args.secret_file) if args.secret_file else None
    if args.answer_key:
        _holds_the_key()
    _more_files()
    url = urlsplit(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:8790"))
    service = os.environ.get("JUPYTERHUB_SERVICE_NAME", "course")
    group = args.instructors_group
    auth = HubAuth(cache_max_age=60)
    if args.instructors_hub_group:
        is_instructor = HubGroup(args.instructors_hub_group, auth.api_url, auth.api_token)
    elif group:
        is_instructor = lambda user: user in unix_group_members(group)   # noqa: E731
    else:
        is_instructor = lambda user: False   # noqa: E731
    app = make_app(store, auth, service, is_instructor,
                   answer_key=args.answer_key, secret_file=secret_file)

    async def serve():
        # The hub stops its services with SIGINT and waits 30 s before SIGTERM. A hub started where
        # SIGINT is ignored (a shell's background job) passes that on to the services it starts
        # before its own handlers are set, so Python's KeyboardInterrupt never comes: handle both,
        # and before listening, so that a signal sent as soon as the port answers stops it cleanly.
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        server = limits.LimitedServer(app)
        server.listen(url.port or 80, address=url.hostname or "127.0.0.1")
        await stop.wait()
        server.stop()

    asyncio.run(serve())
