"""The exchange cannot be spoofed (issue 16), with two real Unix users: mallory makes a later
submission in bob's name in a sticky inbound (as the hub kit sets it up); collect refuses it,
reports it and collects bob's own, and grading gives both students full marks. Needs root (it
creates the users); skips with the reason elsewhere, unless ROOFLINE_REQUIRE_HUB=1."""
from __future__ import annotations

import os
import pwd
import re
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.grading.grade import scores
from tiny_course import FAST, NO_SANDBOX_FLAG, PY, REPO, make_course, run_cli, student_nb

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

ROOT = os.geteuid() == 0 and shutil.which("useradd") and shutil.which("userdel")
if not ROOT and os.environ.get("ROOFLINE_REQUIRE_HUB") == "1":
    raise RuntimeError("ROOFLINE_REQUIRE_HUB=1 but this test needs root with useradd/userdel (it creates two users)")
USER_PY = shutil.which("python3", path="/usr/bin:/bin") or PY   # one the new users can run
needs_root = pytest.mark.skipif(not ROOT, reason="creates two real Unix users: needs root with useradd and userdel")

# what a student's nbgrader submit does, run as that student: a folder in the inbound, its files
SUBMIT = r"""
import os, sys
folder, data = sys.argv[1], sys.stdin.buffer.read()
os.mkdir(folder)
open(os.path.join(folder, "one.ipynb"), "wb").write(data)
open(os.path.join(folder, "timestamp.txt"), "w").write(sys.argv[2])
"""
# mallory then tries to get rid of bob's own submission: the sticky inbound forbids it
REMOVE = r"""
import os, sys
for op in (lambda: os.rename(sys.argv[1], sys.argv[1] + "-gone"), lambda: os.rmdir(sys.argv[1])):
    try:
        op()
        print("REMOVED")
    except OSError as e:
        print("REFUSED", e.errno)
"""


def _as(user: str, code: str, *args, data: bytes = b"") -> subprocess.CompletedProcess:
    pw = pwd.getpwnam(user)

    def drop():
        os.setgroups([])
        os.setgid(pw.pw_gid)
        os.setuid(pw.pw_uid)

    return subprocess.run([USER_PY, "-I", "-c", code, *map(str, args)], input=data, capture_output=True, preexec_fn=drop,
                          cwd="/", timeout=60)


@pytest.fixture()
def users():
    tag = secrets.token_hex(3)
    names = {"bob": f"agt16bob{tag}", "mallory": f"agt16mal{tag}"}
    for name in names.values():
        subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        yield names
    finally:
        for name in names.values():
            subprocess.run(["userdel", name], check=False)


def test_setup_makes_the_inbound_sticky():
    text = (REPO / "deploy" / "jupyterhub" / "setup.sh").read_text()
    assert re.findall(r'chmod (\d+) "\$cdir/inbound"', text) == ["1733", "1733"]


@needs_root
def test_a_submission_made_in_another_students_name_is_refused_and_theirs_kept(users, tmp_path):
    bob, mallory = users["bob"], users["mallory"]
    course = make_course(tmp_path / "tiny")
    exchange = Path(tempfile.mkdtemp(prefix="agt16-exchange-", dir="/tmp"))
    try:
        os.chmod(exchange, 0o755)
        inbound = exchange / "roofline" / "inbound"
        inbound.mkdir(parents=True)
        os.chmod(inbound.parent, 0o755)
        os.chmod(inbound, 0o1733)           # as deploy/jupyterhub/setup.sh leaves it
        t1, t2, t3 = ("2030-01-01 10:00:00.000000 UTC", "2030-01-01 11:00:00.000000 UTC",
                      "2030-01-01 12:00:00.000000 UTC")
        bobs = inbound / f"{bob}+t1+{t1}+b0b"
        for user, folder, when, data in (
                (bob, bobs, t1, student_nb(course, "t1", "one")),
                (mallory, inbound / f"{mallory}+t1+{t2}+ma1", t2, student_nb(course, "t1", "one")),
                (mallory, inbound / f"{bob}+t1+{t3}+f4k3", t3, student_nb(course, "t1", "one", "answer = 0"))):
            p = _as(user, SUBMIT, folder, when, data=data)
            assert p.returncode == 0, p.stderr.decode()
        assert pwd.getpwuid((inbound / f"{bob}+t1+{t3}+f4k3").stat().st_uid).pw_name == mallory
        tried = _as(mallory, REMOVE, bobs).stdout.decode().split("\n")
        assert tried[:2] == ["REFUSED 1", "REFUSED 1"], tried        # EPERM: the sticky inbound
        assert bobs.is_dir()

        c = Course(root=tmp_path / "c", source=course.source, release=course.release)
        common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
        out = run_cli("collect", "t1", "--exchange", exchange, *common).stdout
        assert "collected 2 submission(s)" in out, out
        assert re.search(rf"{bob}: {re.escape(bob)}\+t1\+.*\+f4k3: the folder belongs to user '{mallory}', not to "
                         rf"'{bob}': refused", out), out
        assert (c.submitted / bob / "t1" / "timestamp.txt").read_text() == t1
        assert "answer = 42" in (c.submitted / bob / "t1" / "one.ipynb").read_text()
        g = run_cli("grade", "t1", *common, *FAST, *NO_SANDBOX_FLAG)
        assert "graded 2, up to date 0, failed 0" in g.stdout, g.stdout
        got = scores(c, "t1")
        assert got == {bob: {"one": 4.0}, mallory: {"one": 4.0}}, got
    finally:
        shutil.rmtree(exchange, ignore_errors=True)
