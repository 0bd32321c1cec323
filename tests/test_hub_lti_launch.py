"""From the LMS into the hub and back, end to end (issue 35): the kit (setup.sh --lti-config) with a
local LTI 1.3 platform on 127.0.0.1 (tests/lti_platform.py) in place of Canvas or Moodle.

In Debian's chromium (Playwright) a student and an instructor click the course's links in the
"LMS": OIDC login initiation at the hub, the platform's authorization endpoint, the signed
id_token posted back and validated by jupyterhub-ltiauthenticator. Checked: each becomes a hub
and Unix user with a valid, stable name (a second launch: the same user), the instructor in the
instructors' group (Unix and hub), the student not; the assignment link opens the student's
lesson. The student then fetches and submits lesson 1 from that browser session; the
instructor collects and grades it, and `export --lms` posts the student's score to the
platform's line item, where it is exactly the gradebook's.

Needs what tests/test_hub.py needs (root, node, npm) and chromium; skips without them unless
ROOFLINE_REQUIRE_HUB=1 (CI).
"""
from __future__ import annotations

import json
import os
import pwd
import re
import grp
import contextlib
import secrets
import signal
import sqlite3
import subprocess

import pytest

from course_hub import lti as hub_lti
from lti_platform import INSTRUCTOR, LEARNER, Platform, new_key, pem
from test_hub import (ASSIGNMENT, CHROMIUM, COURSE_ID, REPO, WHY_NOT, _pids_of, as_user,
                      hub_terminal_env, instructor, reflections, right_answers,
                      running_hub)

REQUIRED = os.environ.get("ROOFLINE_REQUIRE_HUB") == "1"
WHY = WHY_NOT or (None if os.path.exists(CHROMIUM) else f"needs chromium ({CHROMIUM})")
pytestmark = [pytest.mark.hub, pytest.mark.browser, pytest.mark.skipif(WHY is not None and not REQUIRED, reason=WHY or "")]


def test_students_and_instructors_launch_from_the_lms_and_grades_go_back(tmp_path):
    if WHY:
        pytest.fail(f"ROOFLINE_REQUIRE_HUB=1, but this test {WHY}")
    platform = Platform().start()
    tag = secrets.token_hex(2)
    student = platform.add_person(f"sub-student-{tag}", "Ada Student", f"rftlti{tag}s@uni.example", [LEARNER])
    teacher = platform.add_person(f"sub-teacher-{tag}", "Grace Teacher", f"rftlti{tag}t@uni.example", [INSTRUCTOR])
    platform.add_link("lesson-1", {"lesson": ASSIGNMENT})
    platform.add_link("course-home")
    tool_key = new_key()
    (tmp_path / "lti-tool-key.pem").write_bytes(pem(tool_key))
    from autograder.lms.ags import tool_jwks

    jwk = tool_jwks((tmp_path / "lti-tool-key.pem").read_text())["keys"][0]
    created: list[str] = []
    admin_token = secrets.token_hex(24)

    def lti_config(base, url):
        settings = {"issuer": platform.issuer, "client_id": platform.client_id,
                    "deployment_ids": [platform.deployment_id], "authorize_url": platform.url + "/auth",
                    "jwks_url": platform.url + "/jwks", "uri_scheme": "http"}
        path = base / "lti-settings.json"
        path.write_text(json.dumps(settings))
        # the kit's own instructor grades; with LTI there is no password login, so the test
        # makes the instructor's hub token through an admin service of its own
        (base / "etc").mkdir(exist_ok=True)
        (base / "etc" / "jupyterhub_config.local.py").write_text(
            f"c.JupyterHub.services.append({{'name': 'lti-test-admin', 'api_token': {admin_token!r}}})\n"
            "c.JupyterHub.load_roles.append({'name': 'lti-test-admin', 'scopes': ['admin:users', 'tokens'],"
            " 'services': ['lti-test-admin']})\n")
        platform.register_tool(tool_key.public_key(), jwk["kid"], login_url=url + "/hub/lti13/oauth_login",
                               redirect_url=url + "/hub/lti13/oauth_callback")
        return ("--lti-config", str(path))

    try:
        with running_hub([], setup_args=lti_config) as hub:
            record = hub["base"] / "state" / "lti" / "launches.jsonl"
            try:
                lms_to_hub_and_back(hub, platform, record, student, teacher, tag, tmp_path, admin_token)
            finally:           # every user a launch created goes at the end, even a launch that failed
                if record.exists():
                    created.extend({json.loads(l)["user"] for l in record.read_text().splitlines() if l.strip()})
    finally:
        platform.stop()
        for n in created:
            for pid in _pids_of(n):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            subprocess.run(["userdel", "--remove", n], capture_output=True)


def lms_to_hub_and_back(hub, platform, record, student, teacher, tag, tmp_path, admin_token) -> None:
    """The launches, the lesson, the grades: what the test's docstring says, on a running hub."""
    # the kit's own instructor (setup.sh --instructor) releases lesson 1, later grades it
    hub["instructor_token"] = user_token(hub, admin_token, hub["users"]["instructor"])
    instructor(hub, "release", ASSIGNMENT, "--exchange")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM,
                                     args=["--no-sandbox"] if os.geteuid() == 0 else [])
        try:
            names, pages = {}, {}
            for who, person, link in (("student", student, "lesson-1"), ("teacher", teacher, "course-home")):
                ctx = browser.new_context()
                page = ctx.new_page()
                page.goto(f"{platform.url}/launch?user={person.sub}&link={link}")
                landed(page, "**/user/*/lab**", hub)
                launches = [json.loads(l) for l in record.read_text().splitlines()]
                names[who] = [r["user"] for r in launches if r["sub"] == person.sub][-1]
                assert f"/user/{names[who]}/lab" in page.url, page.url
                pages[who] = (ctx, page)
            s, t = names["student"], names["teacher"]
            for n in (s, t):
                assert hub_lti.NAME.fullmatch(n) and pwd.getpwnam(n)
            assert s.startswith(f"rftlti{tag}s-")
            # the link of lesson 1 opened the course folder (nothing fetched yet)
            assert pages["student"][1].url.rstrip("/").endswith(f"/lab/tree/{COURSE_ID}")
            groups = hub_groups(hub["base"] / "state" / "jupyterhub.sqlite")
            instructors, students = (f"{hub_group(hub, 'instructors')}", f"{hub_group(hub, 'students')}")
            assert groups.get(t) == {instructors} and groups.get(s) == {students}, groups
            assert t in grp.getgrnam(instructors).gr_mem and s not in grp.getgrnam(instructors).gr_mem
            assert s in grp.getgrnam(students).gr_mem
            assert all(l.get("lineitems") == platform.lineitems_url for l in map(json.loads, record.read_text().splitlines()))

            # the student fetches and submits lesson 1 in that session (the browser's own
            # cookies: Playwright's request context shares them)
            api = ServerApi(pages["student"][0], hub["url"], s)
            listing = api.call("GET", f"assignments?course_id={COURSE_ID}")
            assert [a["status"] for a in listing["value"] if a["assignment_id"] == ASSIGNMENT] == ["released"], listing
            fetched = api.nbgrader("fetch")
            assert fetched["success"], fetched
            mine = api.call("GET", f"api/contents/{COURSE_ID}")
            assert ASSIGNMENT in [e["name"] for e in mine["content"]], (fetched, mine)
            folder = f"{COURSE_ID}/{ASSIGNMENT}"
            name = next((REPO / "notebooks" / ASSIGNMENT).glob("*.ipynb")).name
            nb = api.call("GET", f"api/contents/{folder}/{name}?content=1")["content"]
            answers = right_answers()
            for cell in nb["cells"]:
                gid = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
                if gid in answers:
                    cell["source"] = answers[gid]
            api.call("PUT", f"api/contents/{folder}/{name}",
                     data={"type": "notebook", "format": "json", "content": nb})
            api.call("POST", "assignments/validate", form={"path": f"{folder}/{name}"})
            assert api.nbgrader("submit")["success"]

            # a second launch: the same user, and now the lesson itself opens
            page = pages["student"][1]
            page.goto(f"{platform.url}/launch?user={student.sub}&link=lesson-1")
            landed(page, f"**/user/{s}/lab/tree/{COURSE_ID}/{ASSIGNMENT}**", hub)
            launches = [json.loads(l) for l in record.read_text().splitlines()]
            assert {r["user"] for r in launches if r["sub"] == student.sub} == {s}
        finally:
            browser.close()

    # grades back: the kit's instructor collects and grades; export --lms posts
    instructor(hub, "collect", ASSIGNMENT, "--exchange")
    instructor(hub, "grade", ASSIGNMENT, "-q")
    # the written answers, graded by hand (a score with ungraded ones is held back)
    for cell, points in reflections().items():
        instructor(hub, "manual", ASSIGNMENT, "--student", s, "--cell", cell, "--points", str(points / 2))
    course = hub["course"]
    key = course / "lti-tool-key.pem"
    key.write_bytes((tmp_path / "lti-tool-key.pem").read_bytes())
    roster_copy = course / "launches.jsonl"
    roster_copy.write_bytes(record.read_bytes())
    (course / "lms.json").write_text(json.dumps({
        "client_id": platform.client_id, "token_url": platform.token_url,
        "private_key_file": "lti-tool-key.pem", "roster_file": "launches.jsonl",
        "issuer": platform.issuer, "deployment_id": platform.deployment_id}))
    who = pwd.getpwnam(hub["users"]["instructor"])
    for p in (key, roster_copy, course / "lms.json"):
        os.chown(p, who.pw_uid, who.pw_gid)
    out = instructor(hub, "export", "--lms", "--assignment", ASSIGNMENT, "--flagged", "comment")
    assert f"{ASSIGNMENT} {s}: posted" in out, out
    p = as_user(hub["users"]["instructor"], hub["home"]["instructor"], hub["env"] / "bin",
                ["python", "-c", "import sys, json; from nbgrader.api import Gradebook\n"
                 "with Gradebook('sqlite:///gradebook.db') as gb:\n"
                 f"    sub = gb.find_submission({ASSIGNMENT!r}, {s!r})\n"
                 "    print(json.dumps([sub.score, sum(n.late_submission_penalty or 0 for n in sub.notebooks)]))"],
                cwd=course, env=hub_terminal_env(hub))
    score, penalty = json.loads(p.stdout)
    assert platform.scores_of(ASSIGNMENT)[student.sub]["scoreGiven"] == pytest.approx(max(0.0, score - penalty))
    assert len(platform.lineitems) == 1
    again = instructor(hub, "export", "--lms", "--assignment", ASSIGNMENT, "--flagged", "comment")
    assert f"{ASSIGNMENT} {s}: unchanged" in again and len(platform.posts) == 1


class ServerApi:
    """The user's server's REST API with the browser context's cookies (Playwright's request context)."""

    def __init__(self, ctx, base: str, user: str):
        self.ctx, self.base, self.user = ctx, base, user

    def call(self, method: str, path: str, **kw):
        xsrf = next((c["value"] for c in self.ctx.cookies() if c["name"] == "_xsrf"
                     and c["path"].startswith(f"/user/{self.user}")), "")
        r = self.ctx.request.fetch(f"{self.base}/user/{self.user}/{path}", method=method,
                                   headers={"X-XSRFToken": xsrf}, timeout=300_000, **kw)
        assert r.ok, f"{method} {path}: {r.status} {r.text()[:500]}"
        return r.json() if r.text() else None

    def nbgrader(self, action: str) -> dict:
        return self.call("POST", f"assignments/{action}", form={"course_id": COURSE_ID, "assignment_id": ASSIGNMENT})


def landed(page, pattern: str, hub) -> None:
    """Wait until the browser is at `pattern`; else say where it is, what it shows, what the hub logged."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_url(pattern, timeout=120_000)
    except PlaywrightTimeout:
        said = [l for l in hub["log"].read_text().splitlines()
                if not re.search(r"ServerApp\] (200 GET|204 PUT)", l)]      # not the other pages' polling
        raise AssertionError(f"the launch did not reach {pattern}: at {page.url}\n" + "\n".join(said[-80:])) from None


def user_token(hub, admin_token: str, user: str) -> str:
    """A hub token of `user` (created in the hub if needed), made with the test's admin service."""
    import requests

    h = {"Authorization": f"token {admin_token}"}
    api = f"{hub['url']}/hub/api/users/{user}"
    if requests.get(api, headers=h, timeout=30).status_code == 404:
        requests.post(api, headers=h, timeout=30).raise_for_status()
    r = requests.post(api + "/tokens", headers=h, json={"note": "the instructor's terminal"}, timeout=30)
    assert r.status_code in (200, 201), (r.status_code, r.text[:500])
    return r.json()["token"]


def hub_group(hub, kind: str) -> str:
    site = json.loads((hub["base"] / "etc" / "roofline_site.json").read_text())
    return site[f"{kind}_group"]


def hub_groups(db) -> dict[str, set]:
    """hub user -> the hub groups it is in, from the hub's database."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT users.name, groups.name FROM users JOIN user_group_map ON users.id = "
                           "user_group_map.user_id JOIN groups ON groups.id = user_group_map.group_id").fetchall()
    finally:
        con.close()
    out: dict[str, set] = {}
    for u, g in rows:
        out.setdefault(u, set()).add(g)
    return out
