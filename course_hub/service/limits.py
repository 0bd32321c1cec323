"""How the course service survives its students: bounded connections per peer, time-outs for
headers and bodies, and a request rate per user. One student flooding the service gets refused
alone; everyone else's commits go through.

A peer is the Unix user owning the other end of a loopback connection (the one-machine hub: every
student's kernel connects from 127.0.0.1, as its own uid, found in /proc/net/tcp), else the
peer's address (Kubernetes: every student's pod has its own)."""
from __future__ import annotations

import socket
import time

from tornado import web
from tornado.httpserver import HTTPServer

MAX_CONNECTIONS_PER_PEER = 64     # a kernel holds one at a time; a browser a few
HEADER_TIMEOUT = 10               # seconds to send the request's headers (an idle connection is closed then)
BODY_TIMEOUT = 60                 # seconds to send its body (a submission of MAX_BODY at a slow link)
MAX_HEADER_BYTES = 16 << 10
MAX_BODY_BYTES = 40 << 20         # the largest request: one submission (the exchange's own bound is lower)


def _hex_address(host: str, port: int) -> str | None:
    """An IPv4 address and port as /proc/net/tcp writes them ('0100007F:1F90'), else None."""
    try:
        packed = socket.inet_aton(host)
    except OSError:
        return None
    return f"{int.from_bytes(packed, 'little'):08X}:{port:04X}"


def loopback_uid(peer: tuple, local: tuple) -> int | None:
    """The uid owning the client end of the loopback TCP connection peer -> local (Linux), else None."""
    client, server = _hex_address(*peer[:2]), _hex_address(*local[:2])
    if client is None or server is None:
        return None
    try:
        with open("/proc/net/tcp") as f:
            next(f)
            for line in f:
                fields = line.split()
                if len(fields) > 7 and fields[1] == client and fields[2] == server:
                    return int(fields[7])
    except (OSError, ValueError, StopIteration):
        return None
    return None


def peer_key(stream, address) -> str:
    """Who is at the other end: 'uid:1001' on loopback where the kernel says, else the address."""
    host = address[0] if isinstance(address, tuple) and address else str(address)
    if host in ("127.0.0.1", "::1", "::ffff:127.0.0.1"):
        try:
            local = stream.socket.getsockname()
        except OSError:
            local = None
        uid = loopback_uid(address, local) if local else None
        if uid is not None:
            return f"uid:{uid}"
    return f"ip:{host}"


class LimitedServer(HTTPServer):
    """tornado's HTTP server with the time-outs above and at most MAX_CONNECTIONS_PER_PEER open
    connections per peer (a connection beyond that is closed at once; others are not touched)."""

    # tornado's HTTPServer is set up in initialize() (its __init__ does nothing)
    def initialize(self, app, max_per_peer: int = MAX_CONNECTIONS_PER_PEER, **kw):
        kw = {"idle_connection_timeout": HEADER_TIMEOUT, "body_timeout": BODY_TIMEOUT,
              "max_header_size": MAX_HEADER_BYTES, "max_body_size": MAX_BODY_BYTES, **kw}
        super().initialize(app, **kw)
        self.max_per_peer = max_per_peer
        self.open_per_peer: dict[str, int] = {}
        self._peer_of: dict[int, str] = {}

    def handle_stream(self, stream, address):
        key = peer_key(stream, address)
        if self.open_per_peer.get(key, 0) >= self.max_per_peer:
            stream.close()
            return
        self.open_per_peer[key] = self.open_per_peer.get(key, 0) + 1
        # (tornado's connection takes the stream's one close callback: counted down in on_close)
        self._peer_of[id(stream)] = key
        super().handle_stream(stream, address)

    def on_close(self, server_conn) -> None:
        key = self._peer_of.pop(id(getattr(server_conn, "stream", None)), None)
        if key is not None:
            left = self.open_per_peer.get(key, 1) - 1
            if left > 0:
                self.open_per_peer[key] = left
            else:
                self.open_per_peer.pop(key, None)
        super().on_close(server_conn)


class Rate:
    """Requests per user: a bucket of `burst` refilled at `per_second`; instructors are not limited."""

    def __init__(self, per_second: float = 20.0, burst: int = 200):
        self.per_second, self.burst = per_second, burst
        self.buckets: dict[str, tuple[float, float]] = {}

    def take(self, user: str) -> None:
        now = time.monotonic()
        level, then = self.buckets.get(user, (float(self.burst), now))
        level = min(self.burst, level + (now - then) * self.per_second)
        if level < 1:
            self.buckets[user] = (level, now)
            raise web.HTTPError(429, f"too many requests from {user}: at most {self.per_second:g} a second "
                                "(wait a moment and run the cell again)")
        self.buckets[user] = (level - 1, now)
