"""What every route of the course service shares: who is asking (the user's hub token, checked
with the hub) and errors as JSON that say what was expected."""
from __future__ import annotations

import grp
import pwd
import re

from tornado import web

from ..names import UNIX_USER

#: a Unix user name: also the name of a user's files in the service's store
USER = UNIX_USER


def unix_group_members(group: str) -> set[str]:
    """The members of a Unix group (its member list and the users whose primary group it is)."""
    try:
        g = grp.getgrnam(group)
    except KeyError:
        return set()
    return set(g.gr_mem) | {p.pw_name for p in pwd.getpwall() if p.pw_gid == g.gr_gid}


class TokenHandler(web.RequestHandler):
    """A route for hub users: `self.user` is the name the hub gives the request's token.

    Every request needs ``Authorization: token <the user's JupyterHub token>`` (401 without one,
    403 for a token the hub does not know as a user's, or one without access to this service)."""

    def initialize(self, auth, service: str, is_instructor, rate=None, **extra):
        self.auth, self.service, self.is_instructor, self.rate = auth, service, is_instructor, rate
        self.user = None
        for key, value in extra.items():
            setattr(self, key, value)

    def write_error(self, status_code, **kw):
        exc = kw.get("exc_info", (None, None))[1]
        message = exc.log_message if isinstance(exc, web.HTTPError) and exc.log_message else self._reason
        self.finish({"error": message})

    def check_xsrf_cookie(self):        # token-authenticated API: no cookies, no XSRF
        pass

    async def prepare(self):
        header = self.request.headers.get("Authorization", "")
        m = re.fullmatch(r"(?:token|bearer)\s+(\S{1,512})", header.strip(), re.IGNORECASE)
        if not m:
            raise web.HTTPError(401, "expected the header Authorization: token <your JupyterHub API token>")
        model = await self.auth.user_for_token(m.group(1), sync=False)
        if not model or model.get("kind", "user") != "user" or not isinstance(model.get("name"), str):
            raise web.HTTPError(403, "the hub does not know this token as a user's")
        scopes = set(model.get("scopes") or ())
        if not scopes & {"access:services", f"access:services!service={self.service}"}:
            raise web.HTTPError(403, f"this token has no access to the {self.service} service")
        if not USER.fullmatch(model["name"]):
            raise web.HTTPError(403, f"user {model['name']!r}: not a Unix user name")
        self.user = model["name"]
        refresh = getattr(self.is_instructor, "refresh", None)
        if refresh is not None:         # instructors by hub group (hub_group.HubGroup): ask the hub now and then
            await refresh()
        if self.rate is not None and not self.is_instructor(self.user):
            self.rate.take(self.user)

    def require_instructor(self) -> None:
        if not self.is_instructor(self.user):
            raise web.HTTPError(403, "only an instructor of the course may do this")
