"""Benchmark: a class committing and revealing at once while one student floods (issue 44).

    .venv/bin/python benchmarks/service_flood_bench.py [--students 300] [--flood-threads 40]
                                                       [--ledger-mb 16] [--limit-s 120]

The course service (course_hub.service: ledger and answer key) runs in a process of its own on
127.0.0.1, behind a stand-in for the hub's token check (the hub's own check, one cached request
per token a minute, is not included). One client process plays `--students` students, each
committing one answer of hello_q1 (POST /events) and then asking its truth (POST /key/reveal), all
at once, from one event loop; a third process is the flooder, a student whose ledger holds
`--ledger-mb` MiB and who reads it (GET /events) from `--flood-threads` threads the whole time.
The class runs twice: quiet, then under the flood. Printed: commit and reveal p50/p95/max (ms)
and the flooder's answers by status.

On a hub each student's kernel is a peer of its own (its Unix user); here every student comes
from this one process, so the service's per-peer connection bound is raised for the run (the
request rate and the read limits are the service's defaults). Bounded: at most 2000 students,
every request and the whole run under `--limit-s`; nothing but 127.0.0.1 is addressed.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SERVICE = r"""
import asyncio, json, sys
from pathlib import Path
from course_hub.service import app as A, limits

store, port, tokens = Path(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])

class Auth:                         # the hub's token check, answered from the table
    async def user_for_token(self, token, sync=True):
        return tokens.get(token)

async def main():
    app = A.make_app(store, Auth(), "course", answer_key=True)
    server = limits.LimitedServer(app, max_per_peer=100000)     # every student is this one process here
    server.listen(port, address="127.0.0.1")
    print("LISTENING", flush=True)
    await asyncio.Event().wait()

asyncio.run(main())
"""

FLOOD = r"""
import sys, threading, time, urllib.error, urllib.request
url, token, seconds, threads = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
codes, stop = {}, time.monotonic() + seconds
def reader():
    while time.monotonic() < stop:
        try:
            with urllib.request.urlopen(urllib.request.Request(url + "/events", headers={"Authorization": "token " + token}),
                                        timeout=30) as r:
                r.read()
                code = r.status
        except urllib.error.HTTPError as e:
            code = e.code
        except OSError:
            code = 0
        codes[code] = codes.get(code, 0) + 1
import signal
signal.signal(signal.SIGTERM, lambda *_: (print(" ".join(f"{k}:{v}" for k, v in sorted(codes.items())), flush=True),
                                          sys.exit(0)))
ts = [threading.Thread(target=reader, daemon=True) for _ in range(threads)]
[t.start() for t in ts]
print("FLOODING", flush=True)
[t.join() for t in ts]
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def event_line(user: str) -> tuple[bytes, bytes]:
    """One commit of hello_q1, as a kernel posts it, and as the service stores it."""
    from course_hub.service import ledger as S
    from course_lib import ledger as L
    from course_lib.exercises import predictions as P

    e = P.make_event([], "hello_q1", "commit", {"q1_intensity": 0.5}, "because " * 40, t="2026-11-26T10:00:00.000Z")
    body = json.dumps(L.payload(e, Path("lesson"))).encode()
    stored = S._canonical({**S.check_event(body), "user": user, "received": "2026-11-26T10:00:00.000Z"}) + "\n"
    return body, stored.encode()


async def one_class(url: str, students: int, body: bytes, limit_s: float) -> dict:
    """Every student commits, then asks for the truth, all at once: {"commit": [s], "reveal": [s], "failed": n}."""
    from tornado.httpclient import AsyncHTTPClient, HTTPClientError

    client = AsyncHTTPClient(force_instance=True, max_clients=students)
    times: dict = {"commit": [], "reveal": [], "failed": {}}
    reveal = json.dumps({"question": "hello_q1", "assignment": "hello", "notebook": "hello.ipynb"}).encode()

    async def student(i: int):
        headers = {"Authorization": f"token tok-s{i}", "Content-Type": "application/json"}
        for what, path, data in (("commit", "/events", body), ("reveal", "/key/reveal", reveal)):
            t0 = time.perf_counter()
            try:
                await client.fetch(url + path, method="POST", body=data, headers=headers, request_timeout=limit_s,
                                   connect_timeout=limit_s)
            except (HTTPClientError, OSError) as e:
                why = f"{what} {getattr(e, 'code', type(e).__name__)}"
                times["failed"][why] = times["failed"].get(why, 0) + 1
                return
            times[what].append(time.perf_counter() - t0)

    await asyncio.wait_for(asyncio.gather(*(student(i) for i in range(students))), limit_s)
    client.close()
    return times


def summary(name: str, seconds: list[float]) -> str:
    if not seconds:
        return f"{name}: none"
    ms = sorted(s * 1e3 for s in seconds)
    p95 = ms[min(len(ms) - 1, int(round(0.95 * (len(ms) - 1))))]
    return f"{name}: n={len(ms)} p50={statistics.median(ms):.1f} ms p95={p95:.1f} ms max={ms[-1]:.1f} ms"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--students", type=int, default=300)
    p.add_argument("--flood-threads", type=int, default=40)
    p.add_argument("--ledger-mb", type=int, default=16)
    p.add_argument("--limit-s", type=float, default=120.0)
    args = p.parse_args(argv)
    if not 1 <= args.students <= 2000 or not 1 <= args.flood_threads <= 200 or not 0 <= args.ledger_mb <= 16:
        p.error("expected 1-2000 students, 1-200 flood threads and a ledger of 0-16 MiB")
    access = ["access:services!service=course"]
    tokens = {f"tok-s{i}": {"kind": "user", "name": f"s{i}", "scopes": access} for i in range(args.students)}
    tokens["tok-eve"] = {"kind": "user", "name": "eve", "scopes": access}
    with tempfile.TemporaryDirectory() as tmp:
        store = Path(tmp) / "store"
        (store / "ledger").mkdir(parents=True)
        body, line = event_line("eve")
        (store / "ledger" / "eve.jsonl").write_bytes(line * (args.ledger_mb * 2**20 // len(line)))
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        service = subprocess.Popen([sys.executable, "-c", SERVICE, str(store), str(port), json.dumps(tokens)],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)   # (a line per 429)
        try:
            if service.stdout.readline().strip() != "LISTENING":
                raise SystemExit("the service did not start")
            print(f"{args.students} students, each a commit then a reveal of hello_q1, all at once "
                  f"(load before: {os.getloadavg()[0]:.1f})")
            quiet = asyncio.run(one_class(url, args.students, body, args.limit_s))
            print("quiet:   ", summary("commit", quiet["commit"]), "|", summary("reveal", quiet["reveal"]),
                  "| failed", quiet["failed"] or 0)
            for f in (store / "ledger").glob("s*.jsonl"):      # the class again, from empty ledgers
                f.unlink()
            flood = subprocess.Popen([sys.executable, "-c", FLOOD, url, "tok-eve", str(args.limit_s),
                                      str(args.flood_threads)], stdout=subprocess.PIPE, text=True)
            try:
                flood.stdout.readline()
                time.sleep(1.0)                                 # the flood under way
                flooded = asyncio.run(one_class(url, args.students, body, args.limit_s))
            finally:
                flood.terminate()                               # it prints its answers by status
                codes = flood.communicate(timeout=30)[0].replace("FLOODING", "").strip() or "(none counted)"
            print("flooded: ", summary("commit", flooded["commit"]), "|", summary("reveal", flooded["reveal"]),
                  "| failed", flooded["failed"] or 0)
            print(f"the flooder ({args.flood_threads} threads reading a {args.ledger_mb} MiB ledger): {codes}"
                  f" (load after: {os.getloadavg()[0]:.1f})")
        finally:
            service.kill()
            service.wait(30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
