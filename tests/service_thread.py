"""The course service (course_hub.service) for tests: on 127.0.0.1 in a thread, behind a stand-in
for the hub's token check."""
from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
from pathlib import Path

from course_hub.service import app as A
from course_hub.service import limits


class FakeHubAuth:
    """Answers as the hub's /hub/api/user does for a token (None: unknown)."""

    def __init__(self, tokens: dict):
        self.tokens = tokens

    async def user_for_token(self, token, sync=True):
        return self.tokens.get(token)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def running(store: Path, tokens: dict, service: str, instructors=(), **app_kw):
    """The service over `store` while the block runs: yields its URL."""
    port = free_port()
    loop = asyncio.new_event_loop()
    app = A.make_app(store, FakeHubAuth(tokens), service, is_instructor=lambda user: user in instructors, **app_kw)
    started = threading.Event()
    servers = []

    def run():
        asyncio.set_event_loop(loop)

        async def start():
            server = limits.LimitedServer(app)
            server.listen(port, address="127.0.0.1")
            servers.append(server)
            started.set()

        loop.run_until_complete(start())
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert started.wait(10)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
