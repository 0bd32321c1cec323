"""Every `python -m autograder` command works from the environment's interpreter alone, as an
instructor types it without activating the venv (`.venv/bin/python -m autograder ...`): PATH has
no `alembic`, nbgrader's gradebook is created all the same (autograder.gradebook), on a course
whose first command is `students import` (issue 43: it ended in FileNotFoundError: 'alembic').
Each command runs as a child process with that PATH, on a copy of the tiny course."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess

import pytest

from autograder.cli import parser
from tiny_course import FAST, NO_SANDBOX_FLAG, PY, REPO, make_course, student_nb

A = "t3"
RIGHT = {"_q1_answer": "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'",
         "_q2_answer": "from course_lib import Q_\nq2_bytes = Q_(16, 'GB')",
         "_q2_reflection": "Disk vendors count in powers of ten."}


#: the commands run, in this order (_commands gives their arguments)
NAMES = ["students", "late-policy", "release", "extend", "collect", "lint", "variants", "grade", "grade --shard",
         "merge", "manual", "unflag", "feedback", "release-feedback", "report", "export", "export --lms-csv",
         "publish"]


def _bare_path() -> str:
    """PATH without the folder of this interpreter (the venv's bin/) nor anything holding alembic."""
    venv_bin = os.path.dirname(PY)
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and os.path.realpath(d) != os.path.realpath(venv_bin) and not os.path.exists(os.path.join(d, "alembic"))]
    return os.pathsep.join(keep or ["/usr/bin", "/bin"])


def _commands(base, course, args) -> list[tuple[str, list]]:
    roster = base / "roster.csv"
    roster.write_text("student_id,first_name,last_name,email\nann,Ann,Ng,ann@example.org\nbob,Bob,Li,\n")
    for i, s in enumerate(("ann", "bob") if course else ()):    # handed in through nbgrader's exchange
        d = base / "exchange" / "roofline" / "inbound" / f"{s}+{A}+2027-02-01 20:00:00.000000 UTC+{i:08x}"
        d.mkdir(parents=True)
        (d / "units.ipynb").write_bytes(student_nb(course, A, "units", answers=RIGHT))
        (d / "submission_secret.txt").write_text(f"secret-of-{s}")
    return [
        # first, on a course with no gradebook yet: the command of issue 43's bug report
        ("students", ["students", "import", roster, *args]),
        ("late-policy", ["late-policy", "--percent-per-day", "10", "--cap", "50", *args]),
        ("release", ["release", A, "--due", "2027-02-01T23:59Z", *args]),
        ("extend", ["extend", A, "bob", "--until", "2027-02-04T12:00Z", "--reason", "a note", *args]),
        ("collect", ["collect", A, "--exchange", base / "exchange", *args]),
        # the tiny course breaks lint's rules on purpose: lint the course's own first lesson
        ("lint", ["lint", "01_hello_roofline", "--course-dir", REPO]),
        ("variants", ["variants", A, *args]),
        ("grade", ["grade", A, *args, *FAST, *NO_SANDBOX_FLAG]),
        ("grade --shard", ["grade", A, "--shard", "0/1", "--force", "--reason", "cli test", *args, *FAST,
                           *NO_SANDBOX_FLAG]),
        ("merge", ["merge", A, *args]),
        ("manual", ["manual", A, "--template", base / "todo.csv", *args]),
        ("unflag", ["unflag", A, "ann", "--reason", "looked at it", *args]),
        ("feedback", ["feedback", A, *args]),
        ("release-feedback", ["release-feedback", A, "--exchange", base / "exchange", *args]),
        ("report", ["report", A, *args]),
        ("export", ["export", "--out", base / "grades.csv", *args]),
        ("export --lms-csv", ["export", "--lms-csv", "canvas", "--out", base / "canvas.csv", *args]),
        ("publish", ["publish", base / "students-repo", "--course-dir", REPO]),
    ]


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    base = tmp_path_factory.mktemp("cli")
    course = make_course(base)
    args = ["--root", course.root, "--source", course.source, "--release-dir", course.release]
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env["PATH"] = _bare_path()
    assert shutil.which("alembic", path=env["PATH"]) is None
    out = {}
    for name, argv in _commands(base, course, args):
        p = subprocess.run([PY, "-m", "autograder", *map(str, argv)], cwd=base, env=env, capture_output=True,
                           text=True, timeout=600)
        out[name] = p
    return base, course, out


def test_every_command_is_run_here(tmp_path):
    # a new command joins _commands, or this fails
    sub = next(a for a in parser()._actions if a.dest == "command")
    assert {name.split()[0] for name in NAMES} == set(sub.choices)
    assert [name for name, _ in _commands(tmp_path, None, [])] == NAMES


@pytest.mark.parametrize("name", NAMES)
def test_each_command_works_without_the_venv_on_path(ran, name):
    p = ran[2][name]
    assert p.returncode == 0, f"{name}: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-3000:]}"
    assert "alembic" not in p.stderr, p.stderr[-2000:]


def test_the_gradebook_they_made_is_nbgraders(ran):
    _, course, _ = ran
    from nbgrader.api import Gradebook

    from autograder.gradebook import migrations_head

    with sqlite3.connect(course.db) as db:
        assert db.execute("SELECT version_num FROM alembic_version").fetchall() == [(migrations_head(),)]
    with Gradebook(course.db_url) as gb:     # nbgrader opens it as its own, with the roster's names
        assert {(s.id, s.first_name) for s in gb.students} >= {("ann", "Ann"), ("bob", "Bob")}
        assert gb.find_assignment(A).submissions
