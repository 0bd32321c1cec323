"""Two installs of the hub kit on one machine (issue 34), one of them on JupyterHub 5.5 (issue 33).

Install A: the kit as tests/test_hub.py installs it (the shared test environment, JupyterHub 6.x,
course id roofline) with a short idle culler (--cull-idle). Install B: its own prefix, its own
course id, JupyterHub 5.5.* (--jupyterhub-version). Each gets its own free hub API, proxy API,
ledger and public ports, groups and users; both hubs run at once. Checked:
- each instructor's terminal on the hub (and login shell) runs its own install's Python;
- on B (JupyterHub 5.5, the other course id), a term end to end: the instructor releases lesson
  1, a student fetches, answers, validates and submits, the instructor collects and grades
  (sandboxed) and the gradebook holds the expected scores;
- on A, the Formgrader's side doors: Generate / Release / Unrelease / Collect / Autograde and
  creating an assignment answer 403 with the `python -m autograder` command to use, change
  nothing, and its list holds only the released lesson (no drafts); its page shows no such
  buttons;
- on A, a student's server left idle is stopped by the culler;
- setup.sh remembers: run again with only --config-dir and --student, B's options stay and the
  new student is made; `--show-config` prints them; `--uninstall` removes B's PATH file, its
  configuration and its environment, leaves A's, and says what it leaves.
"""
from __future__ import annotations

import re
import secrets
import subprocess
import time
from pathlib import Path

import pytest

from test_hub import (ASSIGNMENT, PREFIX, REQUIRED, WHY_NOT, Browser, _pids_of, _stop, collect_from_exchange,
                      expected_scores, gradebook_scores, hub_log_on_failure, instructor, right_answers, run,
                      running_hub, student_round_trip, KIT)

pytestmark = [pytest.mark.hub, pytest.mark.skipif(WHY_NOT is not None and not REQUIRED, reason=WHY_NOT or "")]

#: the second install's own environment: JupyterHub 5.5 (the version the Kubernetes image pins)
PREFIX_55 = Path(str(PREFIX) + "-jh55")
JUPYTERHUB_55 = "5.5.*"
#: install A stops a server idle this long (seconds); its hub reads the proxy's record of each
#: server's last request every 5 s (JupyterHub's default, 300 s, suits the kit's default hour)
CULL = 60
ACTIVITY = ("--JupyterHub.last_activity_interval=5",)


def login_shell_python(hub) -> str:
    """`command -v python` in the instructor's login shell (Debian's /etc/profile resets PATH)."""
    user = hub["users"]["instructor"]
    p = subprocess.run(["runuser", "-u", user, "--", "env", "-i", f"HOME={hub['home']['instructor']}", f"USER={user}",
                       "LANG=C.UTF-8", "PATH=/usr/bin:/bin", "bash", "-lc", "command -v python"],
                       capture_output=True, text=True, cwd="/")
    return p.stdout.strip()


def test_two_installs_side_by_side_one_on_jupyterhub_5_5(capsys):
    other = f"rft{secrets.token_hex(3)}"
    timings = {}
    with running_hub(["idle"], ACTIVITY, setup_args=("--cull-idle", str(CULL))) as a, \
            running_hub(["right"], prefix=PREFIX_55, course_id=other,
                        setup_args=("--jupyterhub-version", JUPYTERHUB_55)) as b, \
            hub_log_on_failure(a), hub_log_on_failure(b):
        import requests

        # two hubs at once, on their own ports; B runs JupyterHub 5.5
        versions = {h["course_id"]: requests.get(f"{h['url']}/hub/api", timeout=10).json()["version"] for h in (a, b)}
        assert versions[other].startswith("5.5."), versions
        assert not versions[a["course_id"]].startswith("5.5."), versions
        assert a["ports"] != b["ports"] and a["url"] != b["url"]

        # A: the Formgrader's side doors are shut; what it lists is what students can see
        out = instructor(a, "release", ASSIGNMENT, "--exchange")
        assert f"in the exchange: {a['course_id']}/{ASSIGNMENT} (" in out, out
        # each instructor's terminal runs its own install's Python, on the hub and in a login shell
        teachers = {}
        # (A first: its culler stops a server idle for CULL s, and its Formgrader is next)
        for hub, mine, theirs in ((a, a, b), (b, b, a)):
            user = hub["users"]["instructor"]
            t = Browser(hub["url"], user, hub["course_id"])
            t.login(hub["passwords"][user])
            t.spawn()
            teachers[hub["course_id"]] = t
            out = t.terminal(["command -v python", "python -c 'import jupyterhub; print(\"JH\", jupyterhub.__version__)'",
                              "echo PY-$((6*7))"], until="PY-42")
            assert str(mine["env"] / "bin" / "python") in out, out
            assert str(theirs["env"]) not in out, out
            assert f"JH {versions[hub['course_id']]}" in out, out
            assert login_shell_python(hub) == str(mine["env"] / "bin" / "python")
        # (one PATH file per install, each for its own groups)
        assert a["profile"] != b["profile"] and a["profile"].is_file() and b["profile"].is_file()

        t = teachers[a["course_id"]]
        listed = t.get("formgrader/api/assignments")
        assert listed.status_code == 200, listed.text[:300]
        assert [x["name"] for x in listed.json()] == [ASSIGNMENT], listed.json()     # no drafts
        drafts = sorted(p.name for p in (a["course"] / "solutions").iterdir()
                        if p.is_dir() and p.name[:2].isdigit() and p.name != ASSIGNMENT)
        assert drafts, "the course has only one lesson: nothing to hide"
        released = Path(a["ledger"]["dir"]) / "exchange" / a["course_id"] / "released"
        assert (released / ASSIGNMENT).is_dir()           # where the service keeps a release
        for path, method, instead in ((f"assignment/{drafts[0]}/release", "POST", "autograder release"),
                                      (f"assignment/{drafts[0]}/assign", "POST", "autograder release"),
                                      (f"assignment/{ASSIGNMENT}/unrelease", "POST", "autograder release"),
                                      (f"assignment/{ASSIGNMENT}/collect", "POST", "autograder collect"),
                                      (f"submission/{ASSIGNMENT}/{a['users']['idle']}/autograde", "POST",
                                       "autograder grade"),
                                      ("assignment/made_in_the_formgrader", "PUT", "autograder release")):
            r = (t.post if method == "POST" else t.put)(f"formgrader/api/{path}", json={})
            assert r.status_code == 403 and instead in r.json()["error"], (path, r.status_code, r.text[:300])
        assert not (released / drafts[0]).exists() and (released / ASSIGNMENT).is_dir()
        assert not (a["course"] / "solutions" / "made_in_the_formgrader").exists()
        assert t.get(f"formgrader/api/assignment/{ASSIGNMENT}").status_code == 200     # reading still works
        page = t.get("formgrader/manage_assignments")
        assert page.status_code == 200 and "createAssignmentModal" not in page.text, page.text[:300]
        assert "python -m autograder" in page.text and "td.release a" in page.text

        # A: a student logs in and leaves; the culler stops the server (while B's term runs)
        idle = a["users"]["idle"]
        s = Browser(a["url"], idle)
        s.login(a["passwords"][idle])
        s.spawn()
        t_idle = time.monotonic()
        assert _pids_of(idle), "the idle student's server is not running"

        # B: a term on JupyterHub 5.5 with its own course id
        t0 = time.monotonic()
        out = instructor(b, "release", ASSIGNMENT, "--exchange")
        assert f"in the exchange: {other}/{ASSIGNMENT} (" in out, out
        right = student_round_trip(b, "right", right_answers())
        assert right["landed"].rstrip("/").endswith(f"/lab/tree/{other}"), right["landed"]
        collect_from_exchange(b)
        graded = instructor(b, "grade", ASSIGNMENT, "-q")
        assert "sandboxed" in graded and "failed 0" in graded, graded
        assert gradebook_scores(b, b["users"]["right"]) == expected_scores("right")
        timings["B: release, a student's round trip, collect, grade (JupyterHub 5.5)"] = time.monotonic() - t0

        # A: the idle server is gone
        deadline = time.monotonic() + CULL * 3 + 60
        while _pids_of(idle) and time.monotonic() < deadline:
            time.sleep(1)
        assert not _pids_of(idle), f"the idle student's server still runs {time.monotonic() - t_idle:.0f} s after spawn"
        timings["A: an idle server stopped after (s)"] = time.monotonic() - t_idle
        log = a["log"].read_text(errors="replace")
        assert re.search(rf"Culling server {idle}\b", log), log[-3000:]

        # B: setup.sh again with nothing but the install and a new student keeps every option
        conf = b["base"] / "etc" / "setup.conf"
        before = conf.read_text()
        assert f"COURSE_ID={other}" in before and f"JUPYTERHUB_VERSION={JUPYTERHUB_55}" in before, before
        shown = run([str(KIT / "setup.sh"), "--config-dir", str(b["base"] / "etc"), "--show-config"]).stdout
        assert before.split("\n", 1)[1].strip() in shown, shown
        late = f"{b['users']['right'][:-1]}z"
        b["users"]["late"] = late                  # (removed at the end with the others)
        again = run([str(KIT / "setup.sh"), "--config-dir", str(b["base"] / "etc"), "--student", late])
        assert "created user " + late in again.stdout and "changed" not in again.stdout, again.stdout
        assert "installing" not in again.stdout, again.stdout
        assert conf.read_text() == before
        assert late in subprocess.run(["getent", "group", f"{b['users']['instructor'][:-1]}-students"],
                                      capture_output=True, text=True).stdout

        # B: uninstall; A untouched
        _stop(b["hub_proc"], b["base"], b["users"])
        gone = run([str(KIT / "setup.sh"), "--uninstall", "--config-dir", str(b["base"] / "etc")]).stdout
        assert not b["profile"].exists() and a["profile"].is_file(), gone
        assert not conf.exists() and not (b["base"] / "etc" / "jupyterhub_config.py").exists(), gone
        assert not (PREFIX_55 / "env").exists(), gone
        assert "left in place" in gone and "homes" in gone, gone
        assert (a["env"] / "bin" / "python").exists() and (a["base"] / "etc" / "setup.conf").is_file()
        assert login_shell_python(a) == str(a["env"] / "bin" / "python")

    with capsys.disabled():
        print(f"\ntwo installs: JupyterHub {versions}")
        for k, v in timings.items():
            print(f"  {k:70s} {v:6.1f}")
