"""Due dates, extensions and the late policy (autograder.grading.deadlines, .late), without grading:
the grading itself is tests/test_term_grading.py."""
from __future__ import annotations

import datetime as dt
import json

import pytest

from autograder.course import Course
from autograder.grading import deadlines, late
from autograder.grading.deadlines import DeadlineError, parse_when
from tiny_course import run_cli

UTC = dt.timezone.utc


def test_a_due_date_must_say_its_time_zone():
    assert parse_when("2027-02-01T23:59+01:00") == dt.datetime(2027, 2, 1, 22, 59, tzinfo=UTC)
    assert parse_when("2027-02-01T23:59Z") == dt.datetime(2027, 2, 1, 23, 59, tzinfo=UTC)
    # February in Berlin is UTC+1
    assert parse_when("2027-02-01T23:59", "Europe/Berlin") == dt.datetime(2027, 2, 1, 22, 59, tzinfo=UTC)
    with pytest.raises(DeadlineError, match=r"no time zone.*\+01:00.*--tz"):
        parse_when("2027-02-01T23:59")
    with pytest.raises(DeadlineError, match="not a time zone name"):
        parse_when("2027-02-01T23:59", "Mars/Olympus")
    with pytest.raises(DeadlineError, match="not a date"):
        parse_when("next friday")
    with pytest.raises(DeadlineError, match="leave out --tz"):
        parse_when("2027-02-01T23:59Z", "UTC")


@pytest.mark.parametrize("late_s, pct", [(0, 0), (1, 10), (86400, 10), (86401, 20), (10 * 86400, 50), (600, 0)])
def test_the_late_policy_takes_a_share_per_started_day_up_to_its_cap(late_s, pct):
    policy = late.LatePolicy(10, cap_percent=50, grace_minutes=15 if late_s == 600 else 0)
    assert policy.penalty_percent(late_s) == pct
    plugin = late.PercentPerDay(percent_per_day=10, cap_percent=50, grace_minutes=policy.grace_minutes)
    assert plugin.late_submission_penalty("s", 8.0, late_s) == pytest.approx(8.0 * pct / 100)


def test_a_bad_late_policy_is_refused_saying_what_is_expected(tmp_path):
    with pytest.raises(ValueError, match="from 0 to 100"):
        late.LatePolicy(150)
    late.path(tmp_path).write_text('{"percent_per_day": "lots"}')
    with pytest.raises(SystemExit, match="percent_per_day"):
        late.read(tmp_path)


def test_the_policy_reaches_nbgraders_late_penalty_config(tmp_path):
    course = Course(root=tmp_path / "c", source=tmp_path, release=tmp_path)
    assert "AssignLatePenalties" not in course.user_config()
    late.write(course.root, late.LatePolicy(10, 30))
    c = course.user_config()
    assert c.AssignLatePenalties.plugin_class == "autograder.grading.late.PercentPerDay"
    assert (c.PercentPerDay.percent_per_day, c.PercentPerDay.cap_percent) == (10, 30)
    from nbgrader.preprocessors import AssignLatePenalties

    pp = AssignLatePenalties(config=c)
    pp.init_plugin()
    assert pp.plugin_inst.late_submission_penalty("s", 10.0, 2 * 86400) == pytest.approx(2.0)


def test_release_due_sets_the_gradebook_and_an_extension_is_recorded(tmp_path):
    import nbformat

    from tiny_course import tiny_notebook

    (tmp_path / "source" / "t1").mkdir(parents=True)      # one assignment: `release` generates only it
    nbformat.write(tiny_notebook("t1one"), str(tmp_path / "source" / "t1" / "one.ipynb"))
    course = Course(root=tmp_path / "course", source=tmp_path / "source", release=tmp_path / "release")
    args = ["--root", course.root, "--source", course.source, "--release-dir", course.release]
    p = run_cli("release", "t1", "--due", "2027-02-01T23:59", *args, check=False)
    assert p.returncode != 0 and "time zone" in p.stderr
    run_cli("release", "t1", "--due", "2027-02-01T23:59+01:00", *args)
    with course.gradebook() as gb:
        assert gb.find_assignment("t1").duedate == dt.datetime(2027, 2, 1, 22, 59)
    p = run_cli("extend", "t1", "bob", "--until", "2027-02-03T12:00Z", *args, check=False)
    assert p.returncode != 0 and "--reason" in p.stderr
    p = run_cli("extend", "t1", "bob", "--until", "2027-01-30T12:00Z", "--reason", "ill", *args, check=False)
    assert p.returncode != 0 and "not after the due date" in p.stderr
    run_cli("extend", "t1", "bob", "--until", "2027-02-03T12:00Z", "--reason", "medical note <b>", *args)
    rec = [json.loads(line) for line in deadlines.extensions_path(course).read_text().splitlines()]
    assert [(r["student"], r["until"], r["reason"]) for r in rec] == [
        ("bob", "2027-02-03T12:00:00+00:00", "medical note <b>")]
    assert rec[0]["by"] and rec[0]["at"]
    ext = deadlines.extensions(course, "t1")["bob"]
    assert deadlines.extension_delta(course, "t1", "bob") == dt.timedelta(days=1, hours=13, minutes=1)
    on_time = deadlines.lateness(course, "t1", "bob", "2027-02-02 10:00:00 UTC")
    assert on_time.seconds_late == 0 and on_time.extension == ext and "medical note" in on_time.text
    assert deadlines.lateness(course, "t1", "bob", "2027-02-03 13:00:00 UTC").seconds_late == 3600
    assert deadlines.lateness(course, "t1", "eve", "2027-02-02 00:59:00 UTC").seconds_late == 7200
    assert "bob: until 2027-02-03" in run_cli("extend", "t1", *args).stdout
    run_cli("extend", "t1", "bob", "--withdraw", "--reason", "granted by mistake", *args)
    assert deadlines.extensions(course, "t1") == {}
