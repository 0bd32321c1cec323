"""How the course service survives its students: bounded connections per peer, time-outs for
headers and bodies, and a request rate per user. One student flooding the service gets refused
alone; everyone else's commits go through.

A peer is the Unix user owning the other end of a loopback connection (the one-machine hub: every
student's kernel connects from 127.0.0.1, as its own uid, which the kernel's sock_diag tells), else the
peer's address (Kubernetes: every student's pod has its own)."""
from __future__ import annotations

import socket
import struct
import time

from tornado import web
from tornado.httpserver import HTTPServer

MAX_CONNECTIONS_PER_PEER = 64     # a kernel holds one at a time; a browser a few
HEADER_TIMEOUT = 10               # seconds to send the request's headers (an idle connection is closed then)
BODY_TIMEOUT = 60                 # seconds to send its body (a submission of MAX_BODY at a slow link)
MAX_HEADER_BYTES = 16 << 10
MAX_BODY_BYTES = 40 << 20         # the largest request: one submission (the exchange's own bound is lower)


# sock_diag (linux/inet_diag.h): one exact lookup of a TCP socket by its four-tuple, answered from
# the kernel's hash table, where reading /proc/net/tcp walks every socket of the machine (7.5 ms
# a connection under load, issue 43)
_NETLINK_SOCK_DIAG, _SOCK_DIAG_BY_FAMILY, _NLMSG_ERROR = 4, 20, 2
_NLM_F_REQUEST = 1
_INET_DIAG_NOCOOKIE = 0xFFFFFFFF
_TCP_LISTEN = 10
_DIAG_REQUEST_BYTES = 16 + 8 + 48  # nlmsghdr, inet_diag_req_v2 (its head, then its inet_diag_sockid)
_DIAG_UID_AT = 16 + 4 + 48 + 12      # nlmsghdr, inet_diag_msg's head and sockid, expires/rqueue/wqueue


def _ipv4(host: str) -> bytes | None:
    try:
        return socket.inet_aton(host)
    except OSError:
        return None


def loopback_uid(peer: tuple, local: tuple) -> int | None:
    """The uid owning the client end of the loopback TCP connection peer -> local (Linux, IPv4),
    else None: one sock_diag query for the socket whose own end is `peer`."""
    client, server = _ipv4(peer[0]), _ipv4(local[0])
    if client is None or server is None:
        return None
    # the socket's own end is the source (ports in network order), any state, no cookie to match
    request = (struct.pack("=IHHII", _DIAG_REQUEST_BYTES, _SOCK_DIAG_BY_FAMILY, _NLM_F_REQUEST, 1, 0)
               + struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xFFFFFFFF)
               + struct.pack("!HH16s16s", peer[1], local[1], client, server)
               + struct.pack("=III", 0, _INET_DIAG_NOCOOKIE, _INET_DIAG_NOCOOKIE))
    try:
        with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_SOCK_DIAG) as nl:
            nl.settimeout(1.0)
            nl.sendto(request, (0, 0))
            reply = nl.recv(8192)
    except (OSError, AttributeError):        # no netlink here (not Linux, or filtered): tell by address
        return None
    if len(reply) < _DIAG_UID_AT + 4 or struct.unpack_from("=H", reply, 4)[0] == _NLMSG_ERROR:
        return None                          # no such socket (it closed meanwhile)
    state, (dport,) = reply[17], struct.unpack_from("!H", reply, 22)
    if state == _TCP_LISTEN or dport != local[1]:
        return None                          # the lookup fell back on a listening socket: not this connection
    return struct.unpack_from("=I", reply, _DIAG_UID_AT)[0]


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


class ReadLimit:
    """A student's reads of their own ledger, charged by its size: at most `in_flight` at a time,
    and a bucket of `burst` bytes refilled at `per_second` bytes a second (a read costs time in
    proportion to the ledger, up to MAX_USER_BYTES, and nothing a student's kernel does reads
    it; a small ledger is read as often as the request rate allows). Instructors (the grader)
    are not limited. Beyond it: 429 at once, before any of the file is read."""

    def __init__(self, in_flight: int = 1, per_second: float = 2 << 20, burst: int = 40 << 20):
        if in_flight < 1 or per_second <= 0 or burst < 1:
            raise ValueError(f"expected in_flight >= 1, per_second > 0 and burst >= 1 (bytes), "
                             f"got {in_flight}, {per_second}, {burst}")
        self.in_flight, self.per_second, self.burst = in_flight, per_second, burst
        self.buckets: dict[str, tuple[float, float]] = {}
        self.open: dict[str, int] = {}

    def enter(self, user: str, cost: int) -> None:
        """Count one read of `cost` bytes by `user` (429 when over the limit); leave(user) when done."""
        if self.open.get(user, 0) >= self.in_flight:
            raise web.HTTPError(429, f"{user}: your ledger is already being read (one read at a time)")
        now = time.monotonic()
        level, then = self.buckets.get(user, (float(self.burst), now))
        level = min(self.burst, level + (now - then) * self.per_second)
        cost = min(max(cost, 1), self.burst)       # a ledger larger than the bucket can still be read, now and then
        if level < cost:
            self.buckets[user] = (level, now)
            raise web.HTTPError(429, f"{user}: you read your ledger more than {self.per_second / 2**20:g} MiB a "
                                "second (wait a moment)")
        self.buckets[user] = (level - cost, now)
        self.open[user] = self.open.get(user, 0) + 1

    def leave(self, user: str) -> None:
        left = self.open.get(user, 1) - 1
        if left > 0:
            self.open[user] = left
        else:
            self.open.pop(user, None)
