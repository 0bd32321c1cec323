"""A local LTI 1.3 platform (an LMS stand-in) on 127.0.0.1, for the tests: nothing leaves the machine.

What a real platform (Canvas, Moodle) does for a tool, in memory, over plain HTTP:
* its own RSA key pair and key set (GET /jwks) that signs each launch's id_token;
* a launch: GET /launch?user=ID&link=ID is the student clicking a link in the course; it answers a
  page that posts the OIDC third-party login initiation (iss, login_hint, target_link_uri,
  lti_message_hint) to the tool; the tool redirects to GET /auth (the authorization endpoint),
  which answers a page that posts the signed id_token (roles, the custom claim, the AGS claim)
  and the state back to the tool's redirect_uri (form_post);
* LTI Advantage Assignment and Grade Services: POST /token (client_credentials with a JWT
  assertion signed by the tool's key, checked against the tool's public key; tokens carry the
  granted scopes and an expiry), GET/POST /lineitems, GET /lineitems/N, POST /lineitems/N/scores,
  GET /lineitems/N/results. Every request is logged (`requests`), every score post kept (`posts`).

From the command line, for trying a hub or `export --lms` by hand (it serves until Ctrl-C, then
prints every score posted):

    python tests/lti_platform.py --port 8765 --tool-jwks course/lti-tool-jwks.json \
        --login-url http://127.0.0.1:8000/hub/lti13/oauth_login \
        --redirect-url http://127.0.0.1:8000/hub/lti13/oauth_callback \
        --person ann:"Ann Lee":ann@uni.example --person prof:"P. Rof":prof@uni.example:instructor \
        --link hello:lesson=01_hello_roofline [--write-jwks platform-jwks.json]

It prints its issuer, client id, deployment id, key set, token and line items URLs (what lti.json
and lms.json need), and each person's launch URL (open it in the browser to launch).
"""
from __future__ import annotations

import html
import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

LTI = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_CLAIM = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
CUSTOM_CLAIM = LTI + "custom"
DEPLOYMENT_CLAIM = LTI + "deployment_id"
AGS = "https://purl.imsglobal.org/spec/lti-ags/scope/"
ALL_SCOPES = frozenset(AGS + s for s in ("lineitem", "lineitem.readonly", "result.readonly", "score"))
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def pem(key: rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def public_jwk(key, kid: str) -> dict:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


@dataclass
class Person:
    sub: str
    name: str
    email: str
    roles: list = field(default_factory=lambda: [LEARNER])


@dataclass
class Link:
    """A resource link in the course (an assignment's link): its custom parameters."""
    id: str
    custom: dict = field(default_factory=dict)
    lineitem: str | None = None      # the line item the LMS made for it, if any


class Platform:
    """The platform; `start()` serves it on 127.0.0.1 (a free port), `stop()` ends it."""

    def __init__(self, client_id: str = "roofline-tool", deployment_id: str = "dep-1", context_id: str = "course-42",
                 key: rsa.RSAPrivateKey | None = None):
        self.client_id, self.deployment_id, self.context_id = client_id, deployment_id, context_id
        self.key, self.kid = key or new_key(), "platform-key-1"
        self.tool_public_keys: dict[str, object] = {}  # kid -> the tool's public key (registration)
        self.tool_login_url = self.tool_redirect_url = ""
        self.people: dict[str, Person] = {}
        self.links: dict[str, Link] = {}
        self.granted_scopes = set(ALL_SCOPES)  # what the tool's registration allows
        self.token_lifetime = 3600             # seconds; <= 0 issues tokens already expired
        self.tokens: dict[str, tuple[float, frozenset]] = {}
        self.lineitems: dict[int, dict] = {}
        self.results: dict[int, dict[str, dict]] = {}     # line item -> userId -> latest score
        self.posts: list[tuple[int, dict]] = []           # every score accepted
        self.requests: list[tuple[str, str]] = []         # (method, path) of every request
        self.launches: list[dict] = []                    # the id_tokens' claims, as sent
        self.pending: dict[str, dict] = {}                # login_hint -> (person, link)
        self.lock = threading.Lock()
        self.server = None

    # ---- serving -------------------------------------------------------------------------------
    def start(self, port: int = 0) -> "Platform":
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                platform.handle(self, "GET")

            def do_POST(self):
                platform.handle(self, "POST")

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def issuer(self) -> str:
        return self.url

    @property
    def token_url(self) -> str:
        return self.url + "/token"

    @property
    def lineitems_url(self) -> str:
        return self.url + "/lineitems"

    def register_tool(self, public_key, kid: str, login_url: str = "", redirect_url: str = "") -> None:
        self.tool_public_keys[kid] = public_key
        self.tool_login_url, self.tool_redirect_url = login_url, redirect_url

    def add_person(self, sub: str, name: str, email: str, roles=(LEARNER,)) -> Person:
        self.people[sub] = p = Person(sub, name, email, list(roles))
        return p

    def add_link(self, link_id: str, custom: dict | None = None) -> Link:
        self.links[link_id] = l = Link(link_id, dict(custom or {}))
        return l

    # ---- the requests ---------------------------------------------------------------------------
    def handle(self, h: BaseHTTPRequestHandler, method: str) -> None:
        u = urlparse(h.path)
        query = {k: v[-1] for k, v in parse_qs(u.query).items()}
        body = b""
        if method == "POST":
            body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        with self.lock:
            self.requests.append((method, u.path))
        parts = [p for p in u.path.split("/") if p]
        try:
            if method == "GET" and u.path == "/jwks":
                return _send(h, 200, {"keys": [public_jwk(self.key, self.kid)]})
            if method == "GET" and u.path == "/launch":
                return self._launch(h, query)
            if u.path == "/auth":
                form = query if method == "GET" else {k: v[-1] for k, v in parse_qs(body.decode()).items()}
                return self._auth(h, form)
            if method == "POST" and u.path == "/token":
                return self._token(h, {k: v[-1] for k, v in parse_qs(body.decode()).items()})
            if parts[:1] == ["lineitems"]:
                return self._ags(h, method, parts[1:], query, body)
            return _send(h, 404, {"error": "not found"})
        except _Refusal as r:
            return _send(h, r.status, {"error": r.error, "error_description": r.description})

    def _launch(self, h, query):
        person, link = self.people[query["user"]], self.links[query["link"]]
        hint = secrets.token_urlsafe(12)
        with self.lock:
            self.pending[hint] = {"person": person, "link": link}
        target = self.tool_redirect_url.rsplit("/hub/", 1)[0] + "/hub/"
        form = {"iss": self.issuer, "login_hint": hint, "target_link_uri": target,
                "lti_message_hint": link.id, "client_id": self.client_id, "lti_deployment_id": self.deployment_id}
        return _autopost(h, self.tool_login_url, form)

    def _auth(self, h, form):
        if form.get("client_id") != self.client_id or form.get("redirect_uri") != self.tool_redirect_url:
            raise _Refusal(400, "invalid_request", "unknown client or redirect_uri")
        with self.lock:
            pending = self.pending.pop(form.get("login_hint", ""), None)
        if pending is None:
            raise _Refusal(400, "login_required", "unknown login_hint")
        person, link = pending["person"], pending["link"]
        now = int(time.time())
        claims = {
            "iss": self.issuer, "aud": self.client_id, "azp": self.client_id, "sub": person.sub,
            "iat": now, "exp": now + 300, "nonce": form["nonce"],
            "name": person.name, "email": person.email,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": self.deployment_id,
            LTI + "target_link_uri": self.tool_redirect_url.rsplit("/hub/", 1)[0] + "/hub/",
            LTI + "resource_link": {"id": link.id},
            LTI + "roles": person.roles,
            LTI + "context": {"id": self.context_id, "label": "ROOF101", "title": "Roofline modeling"},
            LTI + "custom": link.custom,
            AGS_CLAIM: {"scope": sorted(self.granted_scopes), "lineitems": self.lineitems_url,
                        **({"lineitem": link.lineitem} if link.lineitem else {})},
        }
        self.launches.append(claims)
        token = jwt.encode(claims, self.key, algorithm="RS256", headers={"kid": self.kid})
        return _autopost(h, form["redirect_uri"], {"id_token": token, "state": form["state"]})

    def _token(self, h, form):
        if form.get("grant_type") != "client_credentials" or \
                form.get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer":
            raise _Refusal(400, "unsupported_grant_type", "client_credentials with a JWT assertion expected")
        assertion = form.get("client_assertion", "")
        try:
            kid = jwt.get_unverified_header(assertion).get("kid")
            key = self.tool_public_keys[kid]
            jwt.decode(assertion, key, algorithms=["RS256"], audience=self.token_url, issuer=self.client_id)
        except (KeyError, jwt.PyJWTError) as e:
            raise _Refusal(401, "invalid_client", f"client assertion not verified: {type(e).__name__}")
        asked = set((form.get("scope") or "").split())
        granted = frozenset(asked & self.granted_scopes)
        if not granted:
            raise _Refusal(400, "invalid_scope", "none of the scopes asked for is granted")
        token = secrets.token_urlsafe(24)
        with self.lock:
            self.tokens[token] = (time.time() + self.token_lifetime, granted)
        return _send(h, 200, {"access_token": token, "token_type": "Bearer",
                              "expires_in": self.token_lifetime, "scope": " ".join(sorted(granted))})

    def _bearer(self, h, *need: str) -> None:
        auth = h.headers.get("Authorization", "")
        entry = self.tokens.get(auth[len("Bearer "):]) if auth.startswith("Bearer ") else None
        if entry is None:
            raise _Refusal(401, "invalid_token", "unknown access token")
        expiry, scopes = entry
        if time.time() >= expiry:
            raise _Refusal(401, "invalid_token", "access token expired")
        if not any(s in scopes for s in need):
            raise _Refusal(403, "insufficient_scope", "needs " + " or ".join(need))

    def _ags(self, h, method, rest, query, body):
        read = (AGS + "lineitem", AGS + "lineitem.readonly")
        if not rest:
            if method == "GET":
                self._bearer(h, *read)
                items = [i for i in self.lineitems.values()
                         if all(i.get(k) == query[q] for q, k in (("resource_id", "resourceId"), ("tag", "tag"),
                                                                   ("resource_link_id", "resourceLinkId")) if q in query)]
                return _send(h, 200, items, "application/vnd.ims.lis.v2.lineitemcontainer+json")
            self._bearer(h, AGS + "lineitem")
            item = json.loads(body)
            if not isinstance(item.get("scoreMaximum"), (int, float)) or item["scoreMaximum"] <= 0 or not item.get("label"):
                raise _Refusal(400, "invalid_request", "a line item needs a label and scoreMaximum > 0")
            with self.lock:
                n = len(self.lineitems) + 1
                item["id"] = f"{self.lineitems_url}/{n}"
                self.lineitems[n] = item
                self.results[n] = {}
            return _send(h, 201, item, "application/vnd.ims.lis.v2.lineitem+json")
        n = int(rest[0])
        if n not in self.lineitems:
            raise _Refusal(404, "not_found", "no such line item")
        if len(rest) == 1 and method == "GET":
            self._bearer(h, *read)
            return _send(h, 200, self.lineitems[n], "application/vnd.ims.lis.v2.lineitem+json")
        if rest[1:] == ["scores"] and method == "POST":
            self._bearer(h, AGS + "score")
            if h.headers.get("Content-Type") != "application/vnd.ims.lis.v1.score+json":
                raise _Refusal(415, "invalid_request", "application/vnd.ims.lis.v1.score+json expected")
            score = json.loads(body)
            for k in ("userId", "timestamp", "activityProgress", "gradingProgress"):
                if k not in score:
                    raise _Refusal(400, "invalid_request", f"{k} missing")
            if score["userId"] not in self.people:
                raise _Refusal(400, "invalid_request", "no such user in the course")
            with self.lock:
                prev = self.results[n].get(score["userId"])
                if prev and prev["timestamp"] >= score["timestamp"]:
                    raise _Refusal(409, "conflict", "a score with a later timestamp exists")
                self.results[n][score["userId"]] = score
                self.posts.append((n, score))
            return _send(h, 200, {})
        if rest[1:] == ["results"] and method == "GET":
            self._bearer(h, AGS + "result.readonly")
            item = self.lineitems[n]
            out = [{"id": f"{item['id']}/results/{u}", "scoreOf": item["id"], "userId": u,
                    "resultScore": s["scoreGiven"] * item["scoreMaximum"] / s["scoreMaximum"] if "scoreGiven" in s else None,
                    "resultMaximum": item["scoreMaximum"], **({"comment": s["comment"]} if s.get("comment") else {})}
                   for u, s in sorted(self.results[n].items())]
            return _send(h, 200, out, "application/vnd.ims.lis.v2.resultcontainer+json")
        raise _Refusal(405, "invalid_request", "method not allowed")

    # ---- what the tests read --------------------------------------------------------------------
    def scores_of(self, label_or_resource: str) -> dict[str, dict]:
        """userId -> the latest score posted to the line item with this resourceId (or label)."""
        for n, item in self.lineitems.items():
            if label_or_resource in (item.get("resourceId"), item.get("label")):
                return dict(self.results[n])
        return {}


class _Refusal(Exception):
    def __init__(self, status: int, error: str, description: str):
        super().__init__(description)
        self.status, self.error, self.description = status, error, description


def _send(h, status: int, body, content_type: str = "application/json") -> None:
    data = json.dumps(body).encode()
    h.send_response(status)
    h.send_header("Content-Type", content_type)
    h.send_header("Content-Length", str(len(data)))
    h.end_headers()
    h.wfile.write(data)


def _autopost(h, url: str, form: dict) -> None:
    """The page an LMS answers to move the browser on: a form that posts itself."""
    fields = "".join(f'<input type="hidden" name="{html.escape(k)}" value="{html.escape(str(v))}">'
                     for k, v in form.items())
    page = (f'<!doctype html><html><head><title>LMS</title></head><body>'
            f'<form id="f" method="post" action="{html.escape(url)}">{fields}'
            f'<button type="submit">Continue</button></form>'
            f'<script>document.getElementById("f").submit()</script></body></html>').encode()
    h.send_response(200)
    h.send_header("Content-Type", "text/html; charset=utf-8")
    h.send_header("Content-Length", str(len(page)))
    h.end_headers()
    h.wfile.write(page)



# ---- the command line ----------------------------------------------------------------------------
def _tool_keys(path: str) -> dict:
    """{kid: public key} from a key set (lti-tool-jwks.json) or a PEM key (private or public)."""
    from pathlib import Path

    text = Path(path).read_text()
    if text.lstrip().startswith("{"):
        return {k.get("kid", "tool"): jwt.algorithms.RSAAlgorithm.from_jwk(json.dumps(k))
                for k in json.loads(text).get("keys", [])}
    data = text.encode()
    try:
        key = serialization.load_pem_private_key(data, password=None).public_key()
    except ValueError:
        key = serialization.load_pem_public_key(data)
    return {"tool": key}


def _person(text: str) -> tuple:
    parts = text.split(":")
    if len(parts) not in (3, 4) or not all(parts[:3]) or parts[3:] not in ([], ["instructor"]):
        raise SystemExit(f"--person SUB:NAME:EMAIL[:instructor], not {text!r}")
    return parts[0], parts[1], parts[2], [INSTRUCTOR if parts[3:] else LEARNER]


def _link(text: str) -> tuple:
    link, _, custom = text.partition(":")
    pairs = dict(p.split("=", 1) for p in custom.split(",") if "=" in p) if custom else {}
    if not link or (custom and not pairs):
        raise SystemExit(f"--link ID[:KEY=VALUE,...], not {text!r}")
    return link, pairs


def main(argv=None) -> int:
    import argparse

    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    p.add_argument("--client-id", default="roofline-tool")
    p.add_argument("--deployment-id", default="dep-1")
    p.add_argument("--tool-jwks", metavar="FILE", help="the tool's key set (lti-tool-jwks.json) or a PEM key")
    p.add_argument("--login-url", default="", help="the tool's OIDC login URL (the hub's /hub/lti13/oauth_login)")
    p.add_argument("--redirect-url", default="", help="the tool's redirect URL (the hub's /hub/lti13/oauth_callback)")
    p.add_argument("--person", action="append", default=[], metavar="SUB:NAME:EMAIL[:instructor]")
    p.add_argument("--link", action="append", default=[], metavar="ID[:KEY=VALUE,...]",
                   help="a resource link and its custom parameters (lesson=01_hello_roofline)")
    p.add_argument("--write-jwks", metavar="FILE", help="write the platform's public key set here")
    args = p.parse_args(argv)
    platform = Platform(client_id=args.client_id, deployment_id=args.deployment_id)
    for kid, key in (_tool_keys(args.tool_jwks) if args.tool_jwks else {}).items():
        platform.register_tool(key, kid, args.login_url, args.redirect_url)
    platform.tool_login_url, platform.tool_redirect_url = args.login_url, args.redirect_url
    for text in args.person:
        platform.add_person(*_person(text))
    for text in args.link:
        platform.add_link(*_link(text))
    platform.start(args.port)
    if args.write_jwks:
        from pathlib import Path

        Path(args.write_jwks).write_text(json.dumps({"keys": [public_jwk(platform.key, platform.kid)]}, indent=2))
    try:     # the settings, one line of JSON, printed once Ctrl-C stops it cleanly
        print(json.dumps({"issuer": platform.issuer, "client_id": platform.client_id,
                          "deployment_id": platform.deployment_id, "jwks_url": platform.url + "/jwks",
                          "auth_url": platform.url + "/auth", "token_url": platform.token_url,
                          "lineitems_url": platform.lineitems_url,
                          "launch_urls": {f"{sub} via {link}": f"{platform.url}/launch?user={sub}&link={link}"
                                          for sub in platform.people for link in platform.links}}), flush=True)
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        platform.stop()
        for item, score in platform.posts:
            print(f"posted to line item {item}: {score.get('userId')} {score.get('scoreGiven')} / "
                  f"{score.get('scoreMaximum')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
