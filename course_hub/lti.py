"""LTI 1.3 launch into the course's hub (issue 35): students and instructors come from the LMS.

jupyterhub_config.py calls `configure(c, path, site)` when the hub's LTI file exists
(setup.sh --lti-config FILE installs it as <config dir>/lti.json). It selects CourseLTI13Authenticator
(jupyterhub-ltiauthenticator's LTI13Authenticator, which checks the OIDC launch and the
id_token's signature against the platform's key set) and adds what the course needs:

* a hub user name that is valid and stable: a readable part (the LMS's given name, else the
  e-mail's local part, else "lti"; lower-case a-z0-9, at most 16 characters) + "-" + 6 hex
  digits of sha256(issuer, sub): a valid Unix name, nbgrader student id and course-service
  name ([a-z][a-z0-9]{0,15}-[0-9a-f]{6}); the first name given to an (issuer, sub) is kept
  from the launch record, so a changed e-mail or name never makes a second account;
* only launches of the configured deployment(s) are accepted;
* the LTI roles Instructor, TeachingAssistant (context, or institution Instructor) -> the
  course's instructors group, as a hub group (manage_groups) and a Unix group; everyone else
  the students' group. A Unix user (home 0700) is created at the first launch, as setup.sh does;
* the launch is appended to the launch record (JSON lines, root-only): user, iss, sub,
  deployment, context, roles, the lesson, the AGS endpoint -- `export --lms` reads it to know
  which LMS user each student is and which line items the course has;
* a launch from an assignment link opens that lesson: the custom parameter `lesson=<assignment>`
  (or `lesson=` in the link's target_link_uri) sends the user to ~/<course>/<lesson>/ once
  fetched, else to ~/<course>/, where the Assignment List fetches it;
* /hub/lti13/jwks serves the tool's public key set (tool_jwks_file) for the LMS's AGS registration.
"""
from __future__ import annotations

import grp
import hashlib
import json
import os
import pwd
import re
import shutil
import subprocess
import unicodedata
from datetime import datetime, timezone
from pathlib import Path
from urllib.parse import parse_qs, quote, urlparse

from course_hub.names import ASSIGNMENT

#: the launch record's file name (names, e-mails, SIS ids: git-ignored wherever it is copied)
LAUNCH_RECORD = "launches.jsonl"
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
CONTEXT = "https://purl.imsglobal.org/spec/lti/claim/context"
TARGET = "https://purl.imsglobal.org/spec/lti/claim/target_link_uri"
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
#: the roles that make a course instructor: context (membership) roles of the launch's course only,
#: the short "Instructor" too (LTI 1.3 reads a short role as a context role). An institution or
#: system role (".../institution/person#Instructor": the person teaches somewhere in the
#: institution) says nothing about this course: a Learner here who holds one stays a student.
INSTRUCTOR_ROLES = frozenset({
    "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor",
    "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant",
    "http://purl.imsglobal.org/vocab/lis/v2/membership#TeachingAssistant",
    "Instructor", "TeachingAssistant",
})
NAME = re.compile(r"[a-z][a-z0-9]{0,15}-[0-9a-f]{6}")
LESSON = ASSIGNMENT
REQUIRED = ("issuer", "client_id", "deployment_ids", "authorize_url", "jwks_url")
MAX_RECORD_LINE = 64 * 1024


class LtiConfigError(ValueError):
    pass


def load_settings(path) -> dict:
    """The hub's lti.json: {"issuer", "client_id", "deployment_ids": [...], "authorize_url",
    "jwks_url"} (the LMS admin's values), optional "launch_record", "tool_jwks_file"."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise LtiConfigError(f"{path}: cannot read the LTI settings: {e}") from None
    if not isinstance(data, dict):
        raise LtiConfigError(f"{path}: a JSON object expected")
    missing = [k for k in REQUIRED if not data.get(k)]
    if missing:
        raise LtiConfigError(f"{path}: missing {', '.join(missing)} (deploy/lti.md lists where each comes from)")
    if not isinstance(data["deployment_ids"], list) or not all(isinstance(d, str) for d in data["deployment_ids"]):
        raise LtiConfigError(f"{path}: deployment_ids must be a list of strings")
    return data


def is_instructor(roles) -> bool:
    """Whether a launch's roles claim makes an instructor of this course (INSTRUCTOR_ROLES)."""
    return isinstance(roles, list) and any(isinstance(r, str) and r in INSTRUCTOR_ROLES for r in roles)


def readable_part(claims: dict) -> str:
    for text in (claims.get("given_name"), (claims.get("email") or "").split("@")[0], claims.get("name")):
        if isinstance(text, str):
            # accents dropped (Zoë -> zoe), everything else outside a-z0-9 too
            s = re.sub(r"[^a-z0-9]", "", unicodedata.normalize("NFKD", text).lower())
            s = s.lstrip("0123456789")
            if s:
                return s[:16]
    return "lti"


def derive_name(iss: str, sub: str, claims: dict, taken=frozenset()) -> str:
    """A new user's name (see the module's docstring); always matches NAME. A name in `taken`
    (another LMS user's, or a Unix user's of the machine) moves on to the digest's next 6 digits."""
    digest = hashlib.sha256(f"{iss}\0{sub}".encode()).hexdigest()
    base = readable_part(claims)
    for i in range(0, len(digest) - 5, 6):
        name = f"{base}-{digest[i:i + 6]}"
        if name not in taken:
            return name
    raise ValueError(f"no free user name for {base!r}")


def _unix_user_exists(name: str) -> bool:
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def known_names(record: Path) -> dict[tuple[str, str], str]:
    """(iss, sub) -> the hub name the launch record gave it first."""
    out: dict[tuple[str, str], str] = {}
    try:
        f = open(record, "rb")
    except FileNotFoundError:
        return out
    with f:
        for raw in f:
            if len(raw) > MAX_RECORD_LINE:
                continue
            try:
                rec = json.loads(raw)
            except ValueError:
                continue
            if isinstance(rec, dict) and all(isinstance(rec.get(k), str) for k in ("iss", "sub", "user")):
                out.setdefault((rec["iss"], rec["sub"]), rec["user"])
    return out


def lesson_of(claims: dict) -> str | None:
    """The lesson an assignment link asks for: custom `lesson`, else `lesson=` in target_link_uri."""
    custom = claims.get(CUSTOM) if isinstance(claims.get(CUSTOM), dict) else {}
    lesson = custom.get("lesson")
    if not lesson and isinstance(claims.get(TARGET), str):
        lesson = (parse_qs(urlparse(claims[TARGET]).query).get("lesson") or [None])[0]
    return lesson if isinstance(lesson, str) and LESSON.fullmatch(lesson) and ".." not in lesson else None


def launch_record(name: str, claims: dict, instructor: bool, lesson: str | None) -> dict:
    """One line of the launch record (autograder.lms.roster reads it)."""
    ags = claims.get(AGS_ENDPOINT) if isinstance(claims.get(AGS_ENDPOINT), dict) else {}
    custom = claims.get(CUSTOM) if isinstance(claims.get(CUSTOM), dict) else {}
    lis = claims.get(LIS) if isinstance(claims.get(LIS), dict) else {}
    context = claims.get(CONTEXT) if isinstance(claims.get(CONTEXT), dict) else {}
    rec = {"user": name, "iss": claims.get("iss"), "sub": claims.get("sub"),
           "deployment_id": claims.get(DEPLOYMENT), "context_id": context.get("id"),
           "instructor": instructor, "lesson": lesson, "lineitems": ags.get("lineitems"),
           "lineitem": ags.get("lineitem"), "name": claims.get("name"), "email": claims.get("email"),
           "lms_user_id": custom.get("lms_user_id"), "sis_id": lis.get("person_sourcedid"),
           "time": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    # what the LMS sent is bounded: strings only (cut to 2 KiB), anything else left out
    return {k: v[:2048] if isinstance(v, str) else v for k, v in rec.items() if isinstance(v, (str, bool))}


def append_record(record: Path, rec: dict) -> None:
    record.parent.mkdir(parents=True, exist_ok=True, mode=0o750)
    fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o640)
    with os.fdopen(fd, "a") as f:
        f.write(json.dumps(rec, sort_keys=True) + "\n")


def _tool(name: str) -> str:
    """useradd & co. live in /usr/sbin, which the hub's PATH (the kit's) does not hold."""
    found = shutil.which(name, path=os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"]))
    if not found:
        raise FileNotFoundError(f"{name} not found (Debian's passwd package): the hub creates LTI users with it")
    return found


def answer_key_group() -> str | None:
    """The group that alone may read the environment's course_lib (setup.sh's --key-group: the
    answer key), None when everyone may. An instructor's server imports it: they join that group."""
    import importlib.util

    spec = importlib.util.find_spec("course_lib")
    if spec is None or not spec.origin:
        return None
    st = os.stat(os.path.dirname(spec.origin))
    if st.st_mode & 0o005:
        return None
    try:
        return grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        return None


def ensure_unix_user(name: str, member_of: list[str], not_member_of: list[str]) -> None:
    """The user (created if missing, home 0700, as setup.sh's add_user) in each group of
    `member_of`, in none of `not_member_of` (a student who was a TA last term)."""
    if not NAME.fullmatch(name):
        raise ValueError(f"refusing to create the Unix user {name!r}")
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run([_tool("useradd"), "--create-home", "--user-group", "--shell", "/bin/bash", name], check=True)
    for group in member_of:
        if name not in grp.getgrnam(group).gr_mem:
            subprocess.run([_tool("usermod"), "-a", "-G", group, name], check=True)
    for group in not_member_of:
        try:
            if name in grp.getgrnam(group).gr_mem:
                subprocess.run([_tool("gpasswd"), "-d", name, group], check=True, stdout=subprocess.DEVNULL)
        except KeyError:
            pass
    home = pwd.getpwnam(name).pw_dir
    if os.path.isdir(home):
        os.chmod(home, 0o700)


def make_authenticator(settings: dict, site: dict):
    """The authenticator class for these settings and this hub's site (roofline_site.json)."""
    from jupyterhub.handlers import BaseHandler
    from ltiauthenticator.lti13.auth import LTI13Authenticator
    from ltiauthenticator.lti13.error import LoginError
    from ltiauthenticator.lti13.handlers import LTI13CallbackHandler

    record = Path(settings.get("launch_record") or os.path.join(site["state_dir"], "lti", LAUNCH_RECORD))
    instructors, students = site["instructors_group"], site["students_group"]
    jwks_file = settings.get("tool_jwks_file")

    class CallbackHandler(LTI13CallbackHandler):
        def get_next_url(self, user=None):
            return getattr(self, "lesson_url", None) or super().get_next_url(user)

    class JwksHandler(BaseHandler):
        async def get(self):
            if not jwks_file:
                self.set_status(404)
                return self.finish({"error": "no tool key set configured (tool_jwks_file in lti.json)"})
            self.set_header("Content-Type", "application/json")
            self.finish(Path(jwks_file).read_text())

    class CourseLTI13Authenticator(LTI13Authenticator):
        callback_handler = CallbackHandler

        def get_handlers(self, app):
            return super().get_handlers(app) + [("/lti13/jwks", JwksHandler)]

        async def authenticate(self, handler, data=None):
            claims = data or {}
            if claims.get(DEPLOYMENT) not in settings["deployment_ids"]:
                raise LoginError("this LMS deployment is not the course's (deployment_ids in lti.json)")
            iss, sub = claims.get("iss"), claims.get("sub")
            if not isinstance(sub, str) or not sub:
                raise LoginError("the launch names no user (sub)")
            known = known_names(record)
            name = known.get((iss, sub))
            if name is None:          # a first launch: a name nobody has, in the hub or on the machine
                taken = set(known.values())
                candidate = derive_name(iss, sub, claims, taken)
                while _unix_user_exists(candidate):
                    taken.add(candidate)
                    candidate = derive_name(iss, sub, claims, taken)
                name = candidate
            teaching = is_instructor(claims.get(ROLES))
            lesson = lesson_of(claims)
            if settings.get("create_system_users", True):
                teachers = [instructors] + [g for g in (answer_key_group(),) if g]
                ensure_unix_user(name, teachers if teaching else [students], [students] if teaching else teachers)
            append_record(record, launch_record(name, claims, teaching, lesson))
            handler.lesson_url = self.lesson_url(name, lesson, handler)
            return {"name": name, "auth_state": claims, "groups": [instructors] if teaching else [students]}

        def lesson_url(self, name, lesson, handler):
            if not lesson:
                return None
            base = handler.hub.base_url if hasattr(handler, "hub") else "/hub/"
            folder = site["course_id"]
            try:
                fetched = os.path.isdir(os.path.join(pwd.getpwnam(name).pw_dir, folder, lesson))
            except KeyError:
                fetched = False
            path = f"{folder}/{lesson}" if fetched else folder
            return f"{base}user-redirect/lab/tree/{quote(path)}"

    return CourseLTI13Authenticator


def configure(c, path, site: dict) -> None:
    """Make the hub log users in through the LMS (LTI 1.3) with the settings in `path`."""
    settings = load_settings(path)
    c.JupyterHub.authenticator_class = make_authenticator(settings, site)
    a = c.LTI13Authenticator
    a.issuer, a.authorize_url, a.jwks_endpoint = settings["issuer"], settings["authorize_url"], settings["jwks_url"]
    a.client_id = {settings["client_id"]} if isinstance(settings["client_id"], str) else set(settings["client_id"])
    a.username_key = "sub"
    if settings.get("uri_scheme"):
        a.uri_scheme = settings["uri_scheme"]
    # the LMS is the gate: whoever it launches from the course's deployment may log in
    c.Authenticator.allow_all = True
    c.Authenticator.manage_groups = True
    c.Authenticator.enable_auth_state = True
    c.CryptKeeper.keys = [crypt_key(Path(site["state_dir"]) / "jupyterhub_crypt_key")]


def crypt_key(path: Path) -> bytes:
    """The key that encrypts auth_state (created once, root only)."""
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        key = os.urandom(32)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(key.hex() + "\n")
        return key
