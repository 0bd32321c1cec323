"""The hub kit remembers its options (issue 34): deploy/jupyterhub/setup.sh --show-config prints the
options an install would run with, changing nothing, so these checks need neither root nor a hub.
A run applies the flags it is given over what the install's CONFIG_DIR/setup.conf remembers, and
says what it changes; the install's defaults are named by its course id. tests/test_hub_installs.py
runs setup.sh for real (a second run with only --student keeps every option)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

SETUP = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub" / "setup.sh"


def show(*args) -> tuple[dict, list[str], subprocess.CompletedProcess]:
    """setup.sh ARGS --show-config: (the options, the changes it would make, the process)."""
    p = subprocess.run(["bash", str(SETUP), *map(str, args), "--show-config"], capture_output=True, text=True,
                       timeout=30)
    lines = p.stdout.splitlines()
    options = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
    changes = [line[len("# would change "):] for line in lines if line.startswith("# would change ")]
    return options, changes, p


def test_a_new_install_shows_the_defaults(tmp_path):
    options, changes, p = show("--config-dir", tmp_path)
    assert p.returncode == 0, p.stderr
    assert changes == []
    assert (options["COURSE_ID"], options["HUB_API_PORT"], options["PROXY_API_PORT"]) == ("roofline", "8081", "8001")
    assert options["CULL_IDLE"] == "3600" and options["PREFIX"] == "/opt/roofline"
    assert not (tmp_path / "setup.conf").exists()        # --show-config writes nothing


def test_the_course_id_names_a_second_installs_defaults(tmp_path):
    options, _, p = show("--config-dir", tmp_path, "--course-id", "perf2")
    assert p.returncode == 0, p.stderr
    assert options["PREFIX"] == "/opt/perf2" and options["UNIT"] == "jupyterhub-perf2"
    assert (options["STUDENTS_GROUP"], options["INSTRUCTORS_GROUP"]) == ("perf2-students", "perf2-instructors")
    assert (options["LEDGER_USER"], options["KEY_GROUP"]) == ("perf2-ledger", "perf2-key")
    assert options["STATE_DIR"] == "/var/lib/jupyterhub-perf2"
    # without --config-dir the course id names the configuration folder too
    _, _, p = show("--course-id", "perf2")
    assert p.stdout.startswith("# /etc/jupyterhub-perf2/setup.conf"), p.stdout


def test_a_later_run_keeps_what_it_is_not_told_and_says_what_it_changes(tmp_path):
    first, _, p = show("--config-dir", tmp_path, "--course-id", "perf2", "--hub-api-port", "18081",
                       "--proxy-api-port", "18001", "--cull-idle", "600", "--jupyterhub-version", "5.5.*",
                       "--no-service", "--exchange-folder")
    assert p.returncode == 0, p.stderr
    # what setup.sh writes on a real run: the same lines
    (tmp_path / "setup.conf").write_text("# remembered\n" + "".join(f"{k}={v}\n" for k, v in first.items()))
    again, changes, p = show("--config-dir", tmp_path, "--student", "dave")
    assert p.returncode == 0, p.stderr
    assert again == first and changes == []
    assert again["JUPYTERHUB_VERSION"] == "5.5.*" and again["SERVICE"] == "no" and again["SERVICE_EXCHANGE"] == "no"
    # a flag given changes only its own option, and the run says so
    moved, changes, _ = show("--config-dir", tmp_path, "--hub-api-port", "28081", "--service")
    assert changes == ["HUB_API_PORT: 18081 -> 28081", "SERVICE: no -> auto"]
    assert {k: v for k, v in moved.items() if k not in ("HUB_API_PORT", "SERVICE")} == \
        {k: v for k, v in first.items() if k not in ("HUB_API_PORT", "SERVICE")}


def test_bad_values_are_refused_with_what_was_expected(tmp_path):
    for args, expected in ((("--cull-idle", "5"), "at least 10 seconds"),
                           (("--cull-idle", "soon"), "expected a number of seconds"),
                           (("--hub-api-port", "80800"), "expected a TCP port number"),
                           (("--hub-api-port", "9000", "--proxy-api-port", "9000"), "are both 9000"),
                           (("--jupyterhub-version", "latest"), "expected a version (5.5.*"),
                           (("--course-id", "Roof Line"), "expected a short lower-case name"),
                           (("--bind-url", 'http://x"y'), "expected a URL")):
        _, _, p = show("--config-dir", tmp_path, *args)
        assert p.returncode != 0 and expected in p.stderr, (args, p.stderr)
    # a remembered file is read as text and checked as the flags are
    (tmp_path / "setup.conf").write_text("HUB_API_PORT=$(touch /tmp/pwned)\n")
    _, _, p = show("--config-dir", tmp_path)
    assert p.returncode != 0 and "expected a TCP port number" in p.stderr, p.stderr
    (tmp_path / "setup.conf").write_text("SOMETHING=1\n")
    _, _, p = show("--config-dir", tmp_path)
    assert p.returncode != 0 and "unknown setting SOMETHING" in p.stderr, p.stderr


def test_the_course_id_comes_from_the_course_folder(tmp_path):
    """setup.sh --course-id writes <course>/.autograder/course-id in each instructor's copy; the
    course's nbgrader_config.py (the Formgrader, `nbgrader`) and `python -m autograder` read it."""
    import shutil

    from traitlets.config.loader import PyFileConfigLoader

    from autograder.locate import CourseNotFound, course_id_of

    repo = SETUP.parents[2]
    shutil.copy(repo / "nbgrader_config.py", tmp_path / "nbgrader_config.py")
    (tmp_path / "solutions").mkdir()

    def configured() -> str:
        return PyFileConfigLoader("nbgrader_config.py", str(tmp_path)).load_config().CourseDirectory.course_id

    assert course_id_of(tmp_path) == "roofline" == configured()
    (tmp_path / ".autograder").mkdir()
    (tmp_path / ".autograder" / "course-id").write_text("perf2\n")
    assert course_id_of(tmp_path) == "perf2" == configured()
    from autograder.locate import locate_course

    assert locate_course(tmp_path).course_id == "perf2"
    (tmp_path / ".autograder" / "course-id").write_text("../other\n")
    try:
        course_id_of(tmp_path)
    except CourseNotFound as e:
        assert "expected one short lower-case course id" in str(e)
    else:
        raise AssertionError("a course id with a path in it was accepted")


def test_the_kit_checks_a_course_id_with_the_grammar_the_tools_use():
    # setup.sh is bash: its copy of course_hub.names.COURSE_ID is compared here (issue 43)
    import re

    from course_hub.names import COURSE_ID

    (pattern,) = re.findall(r'course_id_ok\(\) \{ \[\[ "\$1" =~ \^(.+?)\$ \]\]', SETUP.read_text())
    assert pattern == COURSE_ID.pattern
def _installed(tmp_path) -> Path:
    """What uninstall finds of an install whose every path is under tmp_path, and none of whose
    groups, users or exchange exist (nothing of the machine's is named)."""
    etc, prefix, state = tmp_path / "etc", tmp_path / "opt", tmp_path / "state"
    for d in (etc, prefix / "env", state):
        d.mkdir(parents=True)
    (prefix / "used-by").write_text(f"{etc}\n")
    (state / "jupyterhub.sqlite").write_bytes(b"")
    (etc / "jupyterhub_config.py").write_text("# the kit's\n")
    (etc / "setup.conf").write_text("\n".join([
        "COURSE_ID=t47gone", f"PREFIX={prefix}", f"EXCHANGE={tmp_path / 'never-made'}", f"STATE_DIR={state}",
        "UNIT=t47gone-hub", "STUDENTS_GROUP=t47gone-s", "INSTRUCTORS_GROUP=t47gone-i", "KEY_GROUP=t47gone-k",
        "LEDGER_USER=t47gone-l", f"LEDGER_DIR={tmp_path / 'no-ledger'}"]) + "\n")
    return etc


@pytest.mark.skipif(os.geteuid() != 0, reason="setup.sh --uninstall runs as root")
def test_uninstall_refuses_while_its_hub_runs_and_then_lists_only_what_exists(tmp_path):
    """Issue 47: without systemd, uninstall removed the environment, database and configuration
    from under a running hub (which then ignored SIGTERM and orphaned its proxy, ledger and
    culler), and listed an exchange folder it never made."""
    etc = _installed(tmp_path)
    # a hub started by hand with this install's configuration (its command line is what counts)
    hub = subprocess.Popen(["bash", "-c", f'exec -a "jupyterhub -f {etc}/jupyterhub_config.py" sleep 60'])
    try:
        p = subprocess.run(["bash", str(SETUP), "--uninstall", "--config-dir", str(etc)], capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1 and f"is running (pid {hub.pid})" in p.stderr, (p.stdout, p.stderr)
        assert (etc / "setup.conf").is_file() and (tmp_path / "opt" / "env").is_dir()     # nothing removed
    finally:
        hub.kill()
        hub.wait()
    p = subprocess.run(["bash", str(SETUP), "--uninstall", "--config-dir", str(etc)], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert not (tmp_path / "opt").exists() and not etc.exists()
    assert "removed the hub's jupyterhub.sqlite" in p.stdout
    for absent in ("never-made", "no-ledger", "t47gone-l", "t47gone-s", "left in place"):
        assert absent not in p.stdout, p.stdout


def test_a_checkout_other_users_can_read_is_made_private(tmp_path):
    """Issue 44: the checkout setup.sh runs from holds the solutions (and, once built, a build/ copy
    of the solvers); cloned with umask 022 every student of the machine could read it. setup.sh
    makes it private (o-rwx) and says so; --show-config says it would."""
    checkout = tmp_path / "course"
    (checkout / "deploy" / "jupyterhub").mkdir(parents=True)
    setup = checkout / "deploy" / "jupyterhub" / "setup.sh"
    setup.write_bytes(SETUP.read_bytes())

    def shown():
        p = subprocess.run(["bash", str(setup), "--config-dir", str(tmp_path / "etc"), "--show-config"],
                           capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        return [line for line in p.stdout.splitlines() if "private" in line]

    checkout.chmod(0o755)
    assert shown() == [f"# would make the checkout {checkout} private (mode 755: other users can read the "
                       "solutions; chmod o-rwx)"]
    checkout.chmod(0o750)
    assert shown() == []
