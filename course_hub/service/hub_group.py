"""Who the course's instructors are, from a JupyterHub group.

On one machine the service asks the Unix group (base.unix_group_members); on Kubernetes the
service runs in a pod of its own that shares no users or groups with anyone, and the course's
groups are the hub's. There the service asks the hub's API, with its own token, for the group's
members (its role needs the scope ``read:groups!group=<name>``: deploy/kubernetes/values.yaml)
and keeps the answer for `max_age` seconds.

A request's handler awaits ``refresh()`` before it asks ``is_instructor(user)``. When the hub
cannot be asked, the last answer stands; before any answer nobody is an instructor (fail closed).
"""
from __future__ import annotations

import json
import logging
import time
from urllib.parse import quote

log = logging.getLogger("course_hub.service")

#: a group's model is small; a larger answer is not the hub's
MAX_ANSWER = 4 * 2**20


class HubGroup:
    """``is_instructor`` for make_app: membership of the hub group `name`."""

    def __init__(self, name: str, api_url: str, token: str, max_age: float = 60.0, fetch=None, clock=time.monotonic):
        if not name:
            raise ValueError("a hub group's name is expected")
        self.name, self.api_url, self.token, self.max_age = name, api_url.rstrip("/"), token, max_age
        self._fetch = fetch or self._ask_the_hub
        self._clock = clock              # seconds, monotonic (a test moves its own)
        self.members: frozenset[str] = frozenset()
        self.fetched_at: float | None = None

    def __call__(self, user: str) -> bool:
        return user in self.members

    async def refresh(self) -> None:
        """Ask the hub again once the last answer is older than max_age."""
        now = self._clock()
        if self.fetched_at is not None and now - self.fetched_at < self.max_age:
            return
        try:
            members = await self._fetch()
        except Exception as e:      # the hub restarting: keep what we knew, ask again next time
            log.warning("could not ask the hub for the members of group %r: %s", self.name, e)
            return
        self.members, self.fetched_at = frozenset(members), now

    async def _ask_the_hub(self) -> list[str]:
        from tornado.httpclient import AsyncHTTPClient

        url = f"{self.api_url}/groups/{quote(self.name, safe='')}"
        r = await AsyncHTTPClient().fetch(url, headers={"Authorization": f"token {self.token}"},
                                          request_timeout=10)
        if len(r.body) > MAX_ANSWER:
            raise ValueError(f"the hub's answer is over {MAX_ANSWER} bytes")
        return members_of(json.loads(r.body))


def members_of(model) -> list[str]:
    """The user names of a hub group's model (GET /hub/api/groups/<name>)."""
    users = model.get("users") if isinstance(model, dict) else None
    if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
        raise ValueError("expected the hub's group model with a list of user names in 'users' "
                         "(does the service's role have read:groups for this group?)")
    return users
