"""What a submission or an LMS download supplies is read bounded and never trusted beyond what it
is (issue 16): submission times from the LMS's own metadata only, Moodle participants told
apart, unit strings checked before pint reads them, the prediction record capped, CSV cells that
a spreadsheet would run escaped, links and special files never opened."""
from __future__ import annotations

import datetime as dt
import io
import json
import os

import pytest

from autograder import csvsafe
from autograder.course import Course, ensure_assignment
from autograder.predictions import MAX_PROBLEMS, MAX_RECORD_BYTES, read_record
from autograder.safefiles import Refused, copy_tree, read_regular
from course_lib import Q_
from course_lib.exercises.answers import UnsupportedAnswer, decode, encode
from tiny_course import make_course, run_cli, student_nb

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("untrusted"))


def _course(course, tmp_path, due=None):
    from nbgrader.api import Gradebook

    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    c.root.mkdir(parents=True)
    ensure_assignment(c, "t1")
    if due:
        with Gradebook(c.db_url) as gb:
            gb.update_or_create_assignment("t1", duedate=due)
    return c, ["--root", c.root, "--source", c.source, "--release-dir", c.release]


def test_a_timestamp_in_a_canvas_upload_does_not_set_the_submission_time(course, tmp_path):
    due = dt.datetime(2030, 1, 1, 12, 0, 0)
    c, common = _course(course, tmp_path, due)
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    early = "2029-12-01 00:00:00.000000 UTC"
    for login, late in (("carol", ""), ("dave", "late_")):
        (canvas / f"{login}_{late}12_345_one.ipynb").write_bytes(student_nb(course, "t1", "one"))
        (canvas / f"{login}_{late}12_345_timestamp.txt").write_text(early)
    out = run_cli("collect", "t1", canvas, *common).stdout
    assert "collected 2" in out, out
    assert "carol: timestamp.txt: a timestamp.txt in an upload is not the submission time" in out, out
    assert not (c.submitted / "carol" / "t1" / "timestamp.txt").exists()
    # Canvas's own late marker still sets it: one second after the due date, not the forged time
    assert (c.submitted / "dave" / "t1" / "timestamp.txt").read_text().startswith("2030-01-01 12:00:01")


def _moodle(folder, names, course):
    for name in names:
        (folder / name).mkdir(parents=True)
        (folder / name / "one.ipynb").write_bytes(student_nb(course, "t1", "one"))


def test_moodle_participants_whose_names_give_one_id_are_refused_never_replaced(course, tmp_path):
    from nbgrader.api import Gradebook

    c, common = _course(course, tmp_path)
    first = tmp_path / "first"
    _moodle(first, ["Bob Smith_123_assignsubmission_file_", "Bob Smith!_124_assignsubmission_file_",
                    "Ann Lee_125_assignsubmission_file_"], course)
    out = run_cli("collect", "t1", first, *common).stdout
    assert "collected 1" in out and (c.submitted / "ann_lee" / "t1" / "one.ipynb").is_file(), out
    assert "'Bob Smith' (LMS id 123), 'Bob Smith!' (LMS id 124) give the same student id 'bob_smith'" in out, out
    assert not (c.submitted / "bob_smith").exists()
    # once the gradebook knows Bob Smith (participant 123) as bob_smith, he keeps it
    alone = tmp_path / "alone"
    _moodle(alone, ["Bob Smith_123_assignsubmission_file_"], course)
    run_cli("collect", "t1", alone, *common)
    with Gradebook(c.db_url) as gb:
        assert gb.find_student("bob_smith").lms_user_id == "123"
    again = tmp_path / "again"
    _moodle(again, ["Bob Smith_123_assignsubmission_file_", "Bob Smith!_124_assignsubmission_file_"], course)
    out = run_cli("collect", "t1", again, *common).stdout
    assert "collected 1" in out, out
    assert "'Bob Smith!' (LMS id 124) gives the student id 'bob_smith', which belongs to 'Bob Smith' (LMS id 123)" \
        in out, out
    assert (c.submitted / "bob_smith" / "t1" / "one.ipynb").is_file()


def test_a_unit_string_is_checked_before_pint_reads_it():
    bomb = {"type": "quantity", "magnitude": {"type": "int", "value": 1}, "units": "meter ** (9 ** 9 ** 9)"}
    with pytest.raises(UnsupportedAnswer, match="not a unit string of an answer record"):
        decode(bomb)       # evaluated, this would not return
    for units in ("meter ** 1e999", "__import__('os')", "meter" * 100):
        with pytest.raises(UnsupportedAnswer):
            decode({**bomb, "units": units})
    for q in (Q_(7.36, "ms"), Q_(0.153, "kFLOP/byte"), Q_(3, "m**2/s**2"), Q_(2, "1/s"), Q_(1, "byte/(FLOP*s)"),
              Q_(2, "degC"), Q_(1, "meter**0.5")):
        assert decode(encode(q)) == q


def test_a_hostile_prediction_record_is_bounded(tmp_path):
    big = tmp_path / "big"
    big.mkdir()
    (big / ".predictions.jsonl").write_text("{}\n" * (MAX_RECORD_BYTES // 3 + 1))
    r = read_record(big, "x", ["q1"])
    assert any("larger than 1 MB: not read" in p for p in r.problems), r.problems
    many = tmp_path / "many"
    many.mkdir()
    (many / ".predictions.jsonl").write_text("".join(json.dumps({"n": i}) + "\n" for i in range(5000)))
    r = read_record(many, "x", ["q1"])
    assert len(r.problems) == MAX_PROBLEMS + 1 and r.problems[-1].startswith("... and "), r.problems[-3:]
    assert len(set(r.problems)) == len(r.problems)


def test_csv_cells_that_would_start_a_formula_are_escaped():
    assert [csvsafe.cell(v) for v in ('=HYPERLINK("x")', "+1+2", "-A1", "@SUM(A1)", "\t=1", "ok", "-1.5", "+3",
                                      "1e-3", 4, -2.0)] == \
        ["'=HYPERLINK(\"x\")", "'+1+2", "'-A1", "'@SUM(A1)", "'\t=1", "ok", "-1.5", "+3", "1e-3", 4, -2.0]
    f = io.StringIO()
    csvsafe.Writer(f).writerow(["=cmd()", "-1"])
    assert f.getvalue().strip() == "'=cmd(),-1"
    assert csvsafe.unescape("'=cmd()") == "=cmd()" and csvsafe.unescape("'quoted") == "'quoted"


def test_links_and_special_files_are_never_opened(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "one.ipynb").write_text("{}")
    (src / "sub" / "data.csv").write_text("1,2")
    os.symlink("/etc/passwd", src / "passwd")
    os.symlink(tmp_path, src / "up")           # a link to a folder: not followed either
    os.mkfifo(src / "pipe")                    # opened, it would block the grader
    refused = copy_tree(src, tmp_path / "dst")
    assert sorted(refused) == [("passwd", "a symbolic link: refused"), ("pipe", "a FIFO: refused"),
                               ("up", "a symbolic link: refused")]
    assert sorted(str(p.relative_to(tmp_path / "dst")) for p in (tmp_path / "dst").rglob("*")) == \
        ["one.ipynb", "sub", "sub/data.csv"]
    with pytest.raises(Refused, match="a symbolic link"):
        read_regular(src / "passwd")
    assert read_regular(src / "one.ipynb") == b"{}"
