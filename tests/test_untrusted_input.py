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

from autograder.outputs import csvsafe
from autograder.course import Course, ensure_assignment
from autograder.integrity.predictions import MAX_PROBLEMS, MAX_RECORD_BYTES, read_record
from autograder.intake.safefiles import Refusal, Refused, copy_tree, read_regular
from course_lib import Q_
from course_lib.exercises.answers import UnsupportedAnswer, decode, encode
from tiny_course import make_course, run_cli, student_nb

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    return make_course(tmp_path_factory.mktemp("untrusted"))


def _course(course, tmp_path, due=None):
    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    c.root.mkdir(parents=True)
    ensure_assignment(c, "t1")
    if due:
        with c.gradebook() as gb:
            gb.update_or_create_assignment("t1", duedate=due)
    return c, ["--root", c.root, "--source", c.source, "--release-dir", c.release]


def test_a_timestamp_in_a_canvas_upload_does_not_set_the_submission_time(course, tmp_path):
    due = dt.datetime(2030, 1, 1, 12, 0, 0)
    c, common = _course(course, tmp_path, due)
    canvas = tmp_path / "canvas"
    canvas.mkdir()
    early = "2029-12-01 00:00:00.000000 UTC"
    for login, late, user in (("carol", "", 12), ("dave", "late_", 13)):
        (canvas / f"{login}_{late}{user}_345_one.ipynb").write_bytes(student_nb(course, "t1", "one"))
        (canvas / f"{login}_{late}{user}_345_timestamp.txt").write_text(early)
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
    with c.gradebook() as gb:
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
    assert sorted(refused) == [("passwd", "a symbolic link: refused", Refusal.LINK),
                               ("pipe", "a FIFO: refused", Refusal.NOT_REGULAR),
                               ("up", "a symbolic link: refused", Refusal.LINK)]
    assert sorted(str(p.relative_to(tmp_path / "dst")) for p in (tmp_path / "dst").rglob("*")) == \
        ["one.ipynb", "sub", "sub/data.csv"]
    with pytest.raises(Refused, match="a symbolic link"):
        read_regular(src / "passwd")
    assert read_regular(src / "one.ipynb") == b"{}"


# ---- who a student is: the LMS's participant id, always (issue 28) ---------------------------------
def _zip(path, entries: dict):
    """A zip at `path` holding {name: bytes}, as an LMS download would."""
    import zipfile

    with zipfile.ZipFile(path, "w") as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return path


def _work(course, n):
    """A valid t1/one.ipynb that is recognisably the work of student `n`."""
    return student_nb(course, "t1", "one", answer=f"answer = {n}")


def _gradebook(c, student):
    with c.gradebook() as gb:
        st = gb.find_student(student)
        return st.first_name, st.last_name, st.lms_user_id


def test_accented_twins_in_one_moodle_zip_are_both_refused_and_named(course, tmp_path):
    c, common = _course(course, tmp_path)
    z = _zip(tmp_path / "moodle.zip", {
        "José Ng_111_assignsubmission_file_/one.ipynb": _work(course, 1),
        "Jose Ng_222_assignsubmission_file_/one.ipynb": _work(course, 2),
        "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)})      # honest
    out = run_cli("collect", "t1", z, *common).stdout
    assert "collected 1 " in out and _work(course, 3) == (c.submitted / "kim_ode" / "t1" / "one.ipynb").read_bytes()
    assert "'José Ng' (LMS id 111), 'Jose Ng' (LMS id 222) give the same student id 'jose_ng'" in out, out
    assert not (c.submitted / "jose_ng").exists()
    assert _gradebook(c, "kim_ode") == ("Kim", "Ode", "333")


def test_an_accented_twin_in_a_later_moodle_zip_never_replaces_the_first(course, tmp_path):
    """The red team's attack: José (111) collected, then Jose (222) in a later download."""
    c, common = _course(course, tmp_path)
    run_cli("collect", "t1", _zip(tmp_path / "a.zip", {"José Ng_111_assignsubmission_file_/one.ipynb":
                                                       _work(course, 1)}), *common)
    assert _gradebook(c, "jose_ng") == ("José", "Ng", "111")
    later = _zip(tmp_path / "b.zip", {"Jose Ng_222_assignsubmission_file_/one.ipynb": _work(course, 2),
                                      "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)})
    out = run_cli("collect", "t1", later, *common).stdout
    assert "collected 1 " in out and (c.submitted / "kim_ode" / "t1" / "one.ipynb").read_bytes() == _work(course, 3)
    assert "'Jose Ng' (LMS id 222) gives the student id 'jose_ng', which belongs to 'José Ng' (LMS id 111)" \
        in out, out
    assert (c.submitted / "jose_ng" / "t1" / "one.ipynb").read_bytes() == _work(course, 1)
    assert _gradebook(c, "jose_ng") == ("José", "Ng", "111")


def test_case_twins_are_refused_in_one_zip_and_in_a_later_one(course, tmp_path):
    c, common = _course(course, tmp_path)
    # Moodle: 'Ann Lee' and 'ann lee' are two participants
    out = run_cli("collect", "t1", _zip(tmp_path / "m.zip", {
        "Ann Lee_401_assignsubmission_file_/one.ipynb": _work(course, 1),
        "ann lee_402_assignsubmission_file_/one.ipynb": _work(course, 2),
        "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)}), *common).stdout
    assert "'Ann Lee' (LMS id 401), 'ann lee' (LMS id 402) give the same student id 'ann_lee'" in out, out
    assert "collected 1 " in out and not (c.submitted / "ann_lee").exists()
    # Canvas: logins 'JDoe' (user 501) and 'jdoe' (user 502)
    out = run_cli("collect", "t1", _zip(tmp_path / "c.zip", {
        "JDoe_501_9001_one.ipynb": _work(course, 4),
        "jdoe_502_9002_one.ipynb": _work(course, 5),
        "carol_503_9003_one.ipynb": _work(course, 6)}), *common).stdout
    assert "'JDoe' (LMS id 501), 'jdoe' (LMS id 502) give the same student id" in out, out
    assert "collected 1 " in out and (c.submitted / "carol" / "t1" / "one.ipynb").read_bytes() == _work(course, 6)
    assert not (c.submitted / "JDoe").exists() and not (c.submitted / "jdoe").exists()
    # a twin arriving later: JDoe (501) collected alone, then jdoe (502), then a second 'JDoe' (503)
    run_cli("collect", "t1", _zip(tmp_path / "c1.zip", {"JDoe_501_9004_one.ipynb": _work(course, 4)}), *common)
    assert _gradebook(c, "JDoe")[2] == "501"
    for login, user in (("jdoe", 502), ("JDoe", 505)):
        out = run_cli("collect", "t1", _zip(tmp_path / f"c{user}.zip", {
            f"{login}_{user}_9005_one.ipynb": _work(course, 5),
            f"carol_late_503_9006_one.ipynb" if user == 502 else "dave_504_9006_one.ipynb": _work(course, 6)}),
            *common).stdout
        assert f"'{login}' (LMS id {user}) gives the student id '{login}', which belongs to 'JDoe' (LMS id 501)" \
            in out, out
        assert "collected 1 " in out, out
        assert (c.submitted / "JDoe" / "t1" / "one.ipynb").read_bytes() == _work(course, 4)
        assert not (c.submitted / "jdoe").exists() and _gradebook(c, "JDoe")[2] == "501"
    # ... and 'Ann Lee' later, once 'ann lee' (402) is in: refused the same way
    run_cli("collect", "t1", _zip(tmp_path / "m1.zip", {"ann lee_402_assignsubmission_file_/one.ipynb":
                                                        _work(course, 2)}), *common)
    out = run_cli("collect", "t1", _zip(tmp_path / "m2.zip", {"Ann Lee_401_assignsubmission_file_/one.ipynb":
                                                              _work(course, 1)}), *common).stdout
    assert "'Ann Lee' (LMS id 401) gives the student id 'ann_lee', which belongs to 'ann lee' (LMS id 402)" \
        in out, out
    assert (c.submitted / "ann_lee" / "t1" / "one.ipynb").read_bytes() == _work(course, 2)


def test_a_renamed_participant_with_the_same_lms_id_is_the_same_student(course, tmp_path):
    c, common = _course(course, tmp_path)
    run_cli("collect", "t1", _zip(tmp_path / "a.zip", {"Jose Ng_111_assignsubmission_file_/one.ipynb":
                                                       _work(course, 1),
                                                       "jdoe_501_9001_one.ipynb": _work(course, 4)}), *common)
    # Moodle now spells the name with its accent, or the student changed it; Canvas the login
    out = run_cli("collect", "t1", _zip(tmp_path / "b.zip", {
        "José Ng_111_assignsubmission_file_/one.ipynb": _work(course, 2),
        "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)}), *common).stdout
    assert "collected 2 " in out and "problem" not in out, out
    assert (c.submitted / "jose_ng" / "t1" / "one.ipynb").read_bytes() == _work(course, 2)
    assert _gradebook(c, "jose_ng") == ("Jose", "Ng", "111")       # names are never overwritten
    out = run_cli("collect", "t1", _zip(tmp_path / "c.zip", {
        "Joseph Ng_111_assignsubmission_file_/one.ipynb": _work(course, 5)}), *common).stdout
    assert "collected 1 " in out and "problem" not in out, out
    assert "'Joseph Ng' (LMS id 111): collected as 'jose_ng'" in out, out
    assert (c.submitted / "jose_ng" / "t1" / "one.ipynb").read_bytes() == _work(course, 5)
    assert not (c.submitted / "joseph_ng").exists()
    out = run_cli("collect", "t1", _zip(tmp_path / "d.zip", {"johnd_501_9002_one.ipynb": _work(course, 6)}),
                  *common).stdout
    assert "collected 1 " in out and "'johnd' (LMS id 501): collected as 'jdoe'" in out, out
    assert (c.submitted / "jdoe" / "t1" / "one.ipynb").read_bytes() == _work(course, 6)


def test_one_lms_id_under_two_names_in_one_download_is_refused(course, tmp_path):
    c, common = _course(course, tmp_path)
    out = run_cli("collect", "t1", _zip(tmp_path / "a.zip", {
        "Jose Ng_111_assignsubmission_file_/one.ipynb": _work(course, 1),
        "Joseph Ng_111_assignsubmission_file_/one.ipynb": _work(course, 2),
        "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)}), *common).stdout
    assert "LMS id 111 comes under two names ('Jose Ng', 'Joseph Ng')" in out, out
    assert "collected 1 " in out and not (c.submitted / "jose_ng").exists() and not (c.submitted / "joseph_ng").exists()


def test_bad_lms_input_is_refused_saying_what_was_expected(course, tmp_path):
    c, common = _course(course, tmp_path)
    out = run_cli("collect", "t1", _zip(tmp_path / "a.zip", {
        "Jose Ng_assignsubmission_file_/one.ipynb": _work(course, 1),      # no participant id
        "jdoe_one.ipynb": _work(course, 2),                                # no Canvas user and submission ids
        "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)}), *common).stdout
    assert "collected 1 " in out, out
    assert "Jose Ng_assignsubmission_file_: a Moodle folder without its participant id (expected " \
           "'<full name>_<participant id>_assignsubmission_file_')" in out, out
    assert "jdoe_one.ipynb: not in a student folder and not an LMS file name (expected <student>/<notebook>.ipynb, " \
           "Moodle's '<full name>_<participant id>_assignsubmission_file_/<file>' or Canvas's " \
           "'<login>_<user id>_<submission id>_<file>')" in out, out
    # a member whose bytes do not match its CRC: said, and the rest collected
    bad = _zip(tmp_path / "crc.zip", {"Lea Wu_444_assignsubmission_file_/one.ipynb": _work(course, 4),
                                      "Kim Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)})
    raw = bad.read_bytes()
    assert raw.count(b"answer = 4") == 1
    bad.write_bytes(raw.replace(b"answer = 4", b"answer = 5"))
    out = run_cli("collect", "t1", bad, *common).stdout
    assert "collected 1 " in out and "Lea Wu_444_assignsubmission_file_/one.ipynb: cannot be read from the zip " \
        "(Bad CRC-32" in out, out
    assert not (c.submitted / "lea_wu").exists()
    not_zip = tmp_path / "download.zip"
    not_zip.write_bytes(b"PK\x03\x04 truncated")
    p = run_cli("collect", "t1", not_zip, *common, check=False)
    assert p.returncode != 0 and "download.zip is not a readable zip file" in p.stderr, p
    p = run_cli("collect", "t1", tmp_path / "missing", *common, check=False)
    assert p.returncode != 0 and "no such file or folder" in p.stderr and "expected a folder or a zip" in p.stderr, p


def test_markup_in_an_lms_name_never_reaches_the_gradebook(course, tmp_path):
    """nbgrader's Formgrader writes names into its pages unescaped: a name is kept without
    markup characters, and collect says so."""
    c, common = _course(course, tmp_path)
    z = _zip(tmp_path / "moodle.zip", {
        '<img src=x onerror="alert(1)"> Ng_444_assignsubmission_file_/one.ipynb': _work(course, 4),
        "Kim O'Ode_333_assignsubmission_file_/one.ipynb": _work(course, 3)})      # an apostrophe is a name's
    out = run_cli("collect", "t1", z, *common).stdout
    assert "collected 2 " in out, out
    student = next(p.name for p in c.submitted.iterdir() if p.name.endswith("_ng"))
    first, last, lms = _gradebook(c, student)
    assert lms == "444" and not {"<", ">", '"'} & set(first + last), (first, last)
    assert "markup characters" in out and "is recorded as" in out, out
    assert _gradebook(c, "kim_o_ode") == ("Kim", "O'Ode", "333")
