"""The course service's instructors from a JupyterHub group (course_hub.service.hub_group), as on
Kubernetes (deploy/kubernetes/course-service.yaml: --instructors-hub-group): asked of a stand-in
for the hub's API on 127.0.0.1 with the service's own token, kept for a while, failing closed."""
from __future__ import annotations

import asyncio
import json

import pytest
from tornado import web
from tornado.httpclient import AsyncHTTPClient, HTTPClientError
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from course_hub.service import app as A
from course_hub.service.hub_group import HubGroup, members_of

SERVICE_TOKEN = "s" * 32


class GroupHandler(web.RequestHandler):
    """GET /hub/api/groups/<name> as the hub answers it, for the service's token only."""

    def initialize(self, hub):
        self.hub = hub

    def get(self, name):
        self.hub["asked"] += 1
        if self.request.headers.get("Authorization") != f"token {SERVICE_TOKEN}":
            raise web.HTTPError(403)
        if self.hub["down"] or name not in self.hub["groups"]:
            raise web.HTTPError(503 if self.hub["down"] else 404)
        self.finish({"kind": "group", "name": name, "users": sorted(self.hub["groups"][name])})


def fake_hub() -> tuple[dict, str, HTTPServer]:
    hub = {"groups": {"instructors": {"alice"}}, "asked": 0, "down": False}
    server, port = serve(web.Application([(r"/hub/api/groups/([^/]+)", GroupHandler, {"hub": hub})]))
    return hub, f"http://127.0.0.1:{port}/hub/api", server


def serve(app) -> tuple[HTTPServer, int]:
    """`app` on a free port of 127.0.0.1, on the running event loop."""
    [sock] = bind_sockets(0, "127.0.0.1")
    server = HTTPServer(app)
    server.add_sockets([sock])
    return server, sock.getsockname()[1]


def test_members_come_from_the_hub_are_kept_and_survive_an_outage():
    # the group's own clock, moved by the test: no sleep that a loaded machine could outlast (issue 43)
    from types import SimpleNamespace

    clock = SimpleNamespace(now=1000.0)

    async def scenario():
        hub, api, server = fake_hub()
        try:
            group = HubGroup("instructors", api, SERVICE_TOKEN, max_age=60, clock=lambda: clock.now)
            assert not group("alice")                       # nothing asked yet: nobody
            await group.refresh()
            assert group("alice") and not group("ada") and hub["asked"] == 1
            hub["groups"]["instructors"].add("ada")
            await group.refresh()                           # within max_age: not asked again
            assert not group("ada") and hub["asked"] == 1
            clock.now += 61
            await group.refresh()
            assert group("ada") and hub["asked"] == 2
            hub["down"] = True
            clock.now += 61
            await group.refresh()                           # the hub restarting: the last answer stands
            assert group("alice") and group("ada") and hub["asked"] == 3
            wrong = HubGroup("instructors", api, "not-the-service-token")
            await wrong.refresh()                           # refused: still nobody
            assert not wrong("alice")
        finally:
            server.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize("model", [{"name": "instructors"}, {"users": "alice"}, {"users": [1]}, []])
def test_a_group_model_without_user_names_is_refused(model):
    with pytest.raises(ValueError, match="users"):
        members_of(model)


class FakeHubAuth:
    def __init__(self, tokens: dict):
        self.tokens = tokens

    async def user_for_token(self, token, sync=True):
        return self.tokens.get(token)


def test_the_service_lets_the_hub_groups_instructors_read_every_ledger(tmp_path):
    """Through the service's routes: alice (in the hub group) reads ada's ledger, ada not alice's."""
    scopes = ["access:services!service=course"]
    tokens = {"ta": {"kind": "user", "name": "alice", "scopes": scopes},
              "tb": {"kind": "user", "name": "ada", "scopes": scopes}}

    async def scenario():
        hub, api, hub_server = fake_hub()
        app = A.make_app(tmp_path, FakeHubAuth(tokens), "course", HubGroup("instructors", api, SERVICE_TOKEN))
        server, port = serve(app)
        url = f"http://127.0.0.1:{port}/events"
        client = AsyncHTTPClient()
        try:
            r = await client.fetch(url + "?user=ada", headers={"Authorization": "token ta"})
            assert json.loads(r.body) == {"events": {"ada": []}}
            with pytest.raises(HTTPClientError) as e:
                await client.fetch(url + "?user=alice", headers={"Authorization": "token tb"})
            assert e.value.code == 403
            assert hub["asked"] == 1                        # one question for both requests
        finally:
            server.stop()
            hub_server.stop()

    asyncio.run(scenario())
