"""`students import`: names and e-mails into the gradebook from a roster or the accounts."""
from __future__ import annotations

import pwd
from types import SimpleNamespace

import pytest

from autograder.course import Course
from autograder.intake.roster import import_accounts, import_roster, names_missing


def _course(tmp_path) -> Course:
    return Course(root=tmp_path / "c", source=tmp_path, release=tmp_path)


def _people(course) -> dict:
    with course.gradebook() as gb:
        return {st.id: (st.first_name, st.last_name, st.email) for st in gb.students}


def test_a_roster_fills_in_names_and_refuses_what_is_not_one(tmp_path):
    course = _course(tmp_path)
    roster = tmp_path / "r.csv"
    roster.write_text("student_id,first_name,last_name,email,extra\nann,Ann,<i>Ng</i>,ann@example.org,x\nbob,,,,\n")
    assert import_roster(course, roster) == 2
    assert _people(course) == {"ann": ("Ann", "i Ng /i", "ann@example.org"), "bob": (None, None, None)}
    assert not names_missing(course)
    roster.write_text("name,email\nAnn,ann@example.org\n")
    with pytest.raises(SystemExit, match="no id column: expected a header with id"):
        import_roster(course, roster)
    roster.write_text("id\n../etc\n")
    with pytest.raises(SystemExit, match="not a student id"):
        import_roster(course, roster)


def test_accounts_name_the_students_who_have_none(tmp_path, monkeypatch):
    course = _course(tmp_path)
    course.root.mkdir(parents=True)
    with course.gradebook() as gb:
        for s in ("ann", "bob", "cyd"):
            gb.add_student(s)
        gb.update_or_create_student("cyd", first_name="Cy", last_name="D")
    assert names_missing(course) is False    # cyd has a name
    gecos = {"ann": "Ann Marie Ng,,,", "cyd": "Someone Else"}

    def getpwnam(name):
        if name not in gecos:
            raise KeyError(name)
        return SimpleNamespace(pw_gecos=gecos[name])

    monkeypatch.setattr(pwd, "getpwnam", getpwnam)
    assert import_accounts(course) == 1
    assert _people(course) == {"ann": ("Ann Marie", "Ng", None), "bob": (None, None, None), "cyd": ("Cy", "D", None)}
