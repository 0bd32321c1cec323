"""The LMS registration `export --lms` reads: a JSON file (default <course root>/lms.json).

    {"client_id": "10000000000042",                       the tool's client id in the LMS
     "token_url": "https://canvas.example.edu/login/oauth2/token",
     "token_audience": null,                               if the LMS wants another aud (Canvas: none)
     "private_key_file": "lti-tool-key.pem",               the tool's RSA key (relative: to this file)
     "lineitems_url": "https://.../api/lti/courses/7/line_items",   optional: else the launches' AGS claim
     "lineitems": {"01_hello_roofline": "https://.../line_items/3"}, optional: an assignment's own item
     "roster_file": "/var/lib/jupyterhub/lti/launches.jsonl",      optional: the hub's launch record
     "issuer": "https://canvas.instructure.com", "deployment_id": "1:abc"}   optional: which launches count
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from autograder.lms.errors import LmsError

#: the registration's file in the course folder (git-ignored: it names the tool's key)
FILE = "lms.json"
REQUIRED = ("client_id", "token_url", "private_key_file")
OPTIONAL = ("token_audience", "lineitems_url", "lineitems", "roster_file", "issuer", "deployment_id")
MAX_BYTES = 1 << 20


def default_path(root: Path) -> Path:
    """Where `export --lms` looks for the registration without --lms-config."""
    return Path(root) / FILE


def import_csv_path(root: Path, fmt: str) -> Path:
    """Where `export --lms-csv FMT` writes without --out (names and grades: git-ignored)."""
    return Path(root) / f"lms-{fmt}.csv"


@dataclass(frozen=True)
class LmsConfig:
    client_id: str
    token_url: str
    private_key_file: Path
    token_audience: str | None = None
    lineitems_url: str | None = None
    lineitems: dict = field(default_factory=dict)
    roster_file: Path | None = None
    issuer: str | None = None
    deployment_id: str | None = None

    def private_key(self) -> str:
        try:
            text = self.private_key_file.read_text()
        except OSError as e:
            raise LmsError(f"the tool's private key {self.private_key_file} cannot be read: {e.strerror}") from None
        if "PRIVATE KEY-----" not in text:
            raise LmsError(f"{self.private_key_file}: a PEM private key (-----BEGIN PRIVATE KEY-----) expected")
        return text


def load(path: Path) -> LmsConfig:
    path = Path(path)
    try:
        raw = path.read_bytes()[:MAX_BYTES + 1]
    except OSError as e:
        raise LmsError(f"no LMS configuration at {path} ({e.strerror}): write one (deploy/lti.md) "
                       "or name it with --lms-config") from None
    try:
        data = json.loads(raw) if len(raw) <= MAX_BYTES else None
    except ValueError as e:
        raise LmsError(f"{path}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise LmsError(f"{path}: a JSON object of at most 1 MiB expected")
    missing = [k for k in REQUIRED if not isinstance(data.get(k), str) or not data[k]]
    if missing:
        raise LmsError(f"{path}: missing {', '.join(missing)} (the values the LMS admin gives you: deploy/lti.md)")
    unknown = sorted(set(data) - set(REQUIRED) - set(OPTIONAL))
    if unknown:
        raise LmsError(f"{path}: unknown keys {', '.join(unknown)}; known: {', '.join(REQUIRED + OPTIONAL)}")
    for k in OPTIONAL:
        if k != "lineitems" and data.get(k) is not None and not isinstance(data[k], str):
            raise LmsError(f"{path}: {k} must be a string")
    items = data.get("lineitems") or {}
    if not isinstance(items, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in items.items()):
        raise LmsError(f'{path}: lineitems must map assignment names to line item URLs ({{"01_hello_roofline": "https://..."}})')
    for k in ("token_url", "lineitems_url"):
        if data.get(k) and not data[k].startswith(("https://", "http://")):
            raise LmsError(f"{path}: {k} must be an http(s) URL")

    def near(p):
        return (path.parent / p) if p else None

    return LmsConfig(client_id=data["client_id"], token_url=data["token_url"],
                     private_key_file=near(data["private_key_file"]), token_audience=data.get("token_audience"),
                     lineitems_url=data.get("lineitems_url"), lineitems=dict(items),
                     roster_file=near(data.get("roster_file")), issuer=data.get("issuer"),
                     deployment_id=data.get("deployment_id"))
