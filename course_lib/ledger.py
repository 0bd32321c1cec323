"""The hub's copy of the prediction record: each commit and reveal is also posted to the
course's ledger service (course_hub.service), which the student cannot write.

Only on a hub that advertises one: its spawner sets ``COURSE_SERVICE_URL`` and JupyterHub gives
every server (and so every kernel) ``JUPYTERHUB_API_TOKEN``, the user's own token, which the
service checks with the hub. On a laptop or Binder neither is set and nothing is posted.

A post that fails (the service down, a timeout) never stops the notebook: the event is kept in
the local record with ``"ledger": "unreachable"``, and the grader tells the instructor.

>>> e = {"v": 1, "q": "hello_q1", "kind": "commit", "values": {"q1": 2.0}, "hash": "x"}
>>> digest(e) == digest({**e, "ledger": UNREACHABLE, "hash": "y"})
True
"""
from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["URL_ENV", "TOKEN_ENV", "UNREACHABLE", "TIMEOUT", "advertised", "digest", "payload", "post"]

URL_ENV = "COURSE_SERVICE_URL"
TOKEN_ENV = "JUPYTERHUB_API_TOKEN"
UNREACHABLE = "unreachable"
TIMEOUT = 3.0              # seconds per post: a commit must not hang on a slow service
MAX_VALUES_BYTES = 2048    # values longer than this are posted as their hash only (the service's bound)


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def digest(event: dict) -> str:
    """What identifies an event in the ledger: sha256 of the event without its hash and its
    ledger note (so a note added after a failed post does not change what is compared)."""
    return hashlib.sha256(_canonical({k: v for k, v in event.items() if k not in ("hash", "ledger")})).hexdigest()


def advertised() -> tuple[str, str] | None:
    """(ledger URL, the user's token) where the hub advertises a ledger, else None."""
    url, token = os.environ.get(URL_ENV, "").strip(), os.environ.get(TOKEN_ENV, "").strip()
    if not url or not token or not url.startswith(("http://", "https://")):
        return None
    return url.rstrip("/"), token


def payload(event: dict, folder: Path) -> dict:
    """The body posted for `event`, made in `folder` (the assignment's folder)."""
    values = event.get("values") or {}
    body = {"assignment": Path(folder).name[:100], "notebook": notebook_name()[:200], "question": event.get("q"),
            "kind": event.get("kind"), "digest": digest(event),
            "values_hash": hashlib.sha256(_canonical(values)).hexdigest(),
            "t": event.get("t"), "seq": event.get("seq"), "n": event.get("n")}
    if len(_canonical(values)) <= MAX_VALUES_BYTES:
        body["values"] = values
    if isinstance(event.get("variant"), dict) and len(_canonical(event["variant"])) <= MAX_VALUES_BYTES:
        body["variant"] = event["variant"]        # the givens it was answered for (the digest covers them anyway)
    return body


def notebook_name() -> str:
    """The notebook's name where the server tells the kernel (jupyter_server sets JPY_SESSION_NAME)."""
    return Path(os.environ.get("JPY_SESSION_NAME", "")).stem


def post(event: dict, folder: Path) -> bool:
    """Post `event` to the advertised ledger; True when the service stored it."""
    where = advertised()
    if where is None:
        return False
    url, token = where
    request = urllib.request.Request(
        f"{url}/events", data=_canonical(payload(event, folder)), method="POST",
        headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            return 200 <= response.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False
