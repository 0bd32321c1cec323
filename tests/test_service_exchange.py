"""The service exchange, conformance and trust: every nbgrader exchange plugin class of
course_hub.nbexchange, driven as nbgrader drives them (ExchangeFactory, CourseDirectory,
Authenticator, .start()), against the real course service (course_hub.service, in a thread behind a
stand-in for the hub's token check, as in tests/test_ledger.py), one instructor and two students,
each call with that user's environment (COURSE_SERVICE_URL, JUPYTERHUB_API_TOKEN). Then what a
student tries with their own token over plain HTTP, and the archives a hostile client sends."""
from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import os
import re
import socket
import stat
import tarfile
import zipfile
from pathlib import Path

import nbformat
import pytest
import requests
from nbgrader.auth import Authenticator
from nbgrader.coursedir import CourseDirectory
from nbgrader.exchange import ExchangeFactory
from nbgrader.exchange.abc import ExchangeError
from nbgrader.utils import parse_utc
from traitlets.config import Config

from course_hub import archives, nbexchange
from course_hub.service import exchange as X
from service_thread import running

SERVICE = "course"
ACCESS = [f"access:services!service={SERVICE}"]
TOKENS = {
    "tok-teacher": {"kind": "user", "name": "teacher", "scopes": ACCESS},
    "tok-ann": {"kind": "user", "name": "ann", "scopes": ACCESS},
    "tok-bob": {"kind": "user", "name": "bob", "scopes": ["access:services"]},
    "tok-noaccess": {"kind": "user", "name": "eve", "scopes": ["access:servers!user=eve"]},
}
USERS = {"teacher": "tok-teacher", "ann": "tok-ann", "bob": "tok-bob"}
COURSE, ASSIGNMENT = "roofline", "ps1"
EPOCH = dt.datetime(2031, 3, 4, 10, 0, 0, 123456, tzinfo=dt.timezone.utc)   # the service's clock, not the client's


@pytest.fixture
def clock(monkeypatch):
    """The service's clock: EPOCH, one minute later at each reading."""
    ticks = []

    def now():
        ticks.append(1)
        return EPOCH + dt.timedelta(minutes=len(ticks) - 1)

    monkeypatch.setattr(X, "_now", now)
    return ticks


@pytest.fixture
def service(tmp_path, clock):
    """The course service on 127.0.0.1 in a thread: (its URL, its exchange folder)."""
    store = tmp_path / "store"
    store.mkdir()
    with running(store, TOKENS, SERVICE, instructors={"teacher"}) as url:
        yield f"{url}/services/{SERVICE}", store / "exchange"


class Term:
    """The course's folders: the instructor's course root, each student's home."""

    def __init__(self, tmp_path: Path, url: str, monkeypatch):
        self.tmp, self.url, self.mp = tmp_path, url, monkeypatch
        self.course = tmp_path / "course"
        release = self.course / "release" / ASSIGNMENT
        (release / "data").mkdir(parents=True)
        nbformat.write(notebook("x = ..."), str(release / "lesson.ipynb"))
        (release / "data" / "specs.csv").write_text("chip,bandwidth\nH100,3.35\n")
        for user in ("ann", "bob"):
            (tmp_path / "home" / user).mkdir(parents=True)

    def home(self, user) -> Path:
        return self.tmp / "home" / user

    def mine(self, user) -> Path:
        return self.home(user) / COURSE / ASSIGNMENT

    def run(self, user: str, op: str, **options):
        """nbgrader's way: the factory's class for `op`, configured, as `user` (their environment)."""
        self.mp.setenv("COURSE_SERVICE_URL", self.url)
        self.mp.setenv("JUPYTERHUB_API_TOKEN", USERS[user])
        self.mp.setenv("JUPYTERHUB_USER", user)
        c = Config()
        nbexchange.configure(c)
        c.CourseDirectory.root = str(self.course)
        c.CourseDirectory.course_id = COURSE
        c.CourseDirectory.assignment_id = options.pop("assignment", ASSIGNMENT)
        if "student" in options:
            c.CourseDirectory.student_id = options.pop("student")
        c.Exchange.assignment_dir = str(self.home(user)) if user != "teacher" else str(self.course)
        c.Exchange.path_includes_course = True
        for key, value in options.items():
            setattr(c[_SECTIONS[op]], key, value)
        factory = ExchangeFactory(config=c)
        app = getattr(factory, op)(coursedir=CourseDirectory(config=c), authenticator=Authenticator(config=c), config=c)
        assert type(app).__module__.startswith("course_hub.nbexchange"), type(app)
        return app.start()


_SECTIONS = {"List": "ExchangeList", "Collect": "ExchangeCollect", "Submit": "ExchangeSubmit",
             "ReleaseAssignment": "ExchangeReleaseAssignment", "FetchAssignment": "ExchangeFetchAssignment",
             "ReleaseFeedback": "ExchangeReleaseFeedback", "FetchFeedback": "ExchangeFetchFeedback"}


def notebook(source: str):
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_code_cell(source))
    return nb


def answer(path: Path, source: str) -> None:
    nbformat.write(notebook(source), str(path / "lesson.ipynb"))


@pytest.fixture
def term(tmp_path, service, monkeypatch):
    url, _store = service
    return Term(tmp_path, url, monkeypatch)


def http(method, url, token, **kw):
    headers = kw.pop("headers", {})
    if token:
        headers["Authorization"] = f"token {token}"
    return requests.request(method, url, headers=headers, timeout=20, **kw)


def service_times(url, student) -> list[str]:
    r = http("GET", f"{url}/exchange/{COURSE}/submissions", "tok-teacher", params={"student": student})
    assert r.status_code == 200, r.text
    return [s["timestamp"] for s in r.json()["submissions"]]


def stored_files(store: Path) -> list[Path]:
    return [p for p in store.rglob("*") if p.is_file()]


def archive_text(path: Path) -> bytes:
    """Every byte an archive of the store holds once unpacked (its members' contents and names)."""
    data = path.read_bytes()
    out = io.BytesIO()
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tf:
        for m in tf:
            out.write(m.name.encode() + b"\n")
            if m.isreg():
                out.write(tf.extractfile(m).read())
    return out.getvalue()


# ---- the whole term, through every plugin class -------------------------------------------------------------
def test_release_fetch_submit_collect_feedback_through_every_plugin_class(term, service):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    with pytest.raises(ExchangeError, match="already exists, add --force"):
        term.run("teacher", "ReleaseAssignment")
    term.run("teacher", "ReleaseAssignment", force=True)

    listed = term.run("ann", "List")
    assert [(a["course_id"], a["assignment_id"], a["status"]) for a in listed] == [(COURSE, ASSIGNMENT, "released")]
    assert [nb["notebook_id"] for nb in listed[0]["notebooks"]] == ["lesson"]

    term.run("ann", "FetchAssignment")
    assert (term.mine("ann") / "lesson.ipynb").is_file()
    assert (term.mine("ann") / "data" / "specs.csv").read_text().startswith("chip,bandwidth")
    with pytest.raises(ExchangeError, match="already have a copy"):
        term.run("ann", "FetchAssignment")
    (term.mine("ann") / "data" / "specs.csv").unlink()
    term.run("ann", "FetchAssignment", replace_missing_files=True)
    assert (term.mine("ann") / "data" / "specs.csv").is_file()
    fetched = term.run("ann", "List")[0]
    assert fetched["status"] == "fetched" and fetched["path"] == str(term.mine("ann"))
    assert fetched["notebooks"] == [{"notebook_id": "lesson", "path": str(term.mine("ann") / "lesson.ipynb")}]

    answer(term.mine("ann"), "x = 1  # first try")
    term.run("ann", "Submit")
    answer(term.mine("ann"), "x = 2  # second try")
    term.run("ann", "Submit")
    term.run("bob", "FetchAssignment")
    answer(term.mine("bob"), "x = 'bob'")
    term.run("bob", "Submit")
    ann_times = service_times(url, "ann")
    assert len(ann_times) == 2 and all(t.startswith("2031-03-04T10:") for t in ann_times)

    mine = term.run("ann", "List", cached=True)
    assert [(a["student_id"], a["status"]) for a in mine] == [("ann", "submitted")]
    subs = mine[0]["submissions"]
    assert [parse_utc(s["timestamp"]) for s in subs] == [parse_utc(t) for t in ann_times]
    assert all(s["has_exchange_feedback"] is False and s["has_local_feedback"] is False
               and s["local_feedback_path"] is None and s["feedback_updated"] is False for s in subs)
    assert [nb["notebook_id"] for nb in subs[0]["notebooks"]] == ["lesson"]
    inbound = term.run("teacher", "List", inbound=True)
    assert [(a["student_id"], len(a["submissions"])) for a in inbound] == [("ann", 2), ("bob", 1)]

    term.run("teacher", "Collect")
    got = term.course / "submitted" / "ann" / ASSIGNMENT
    assert "second try" in (got / "lesson.ipynb").read_text()
    stamp = (got / "timestamp.txt").read_text()
    assert parse_utc(stamp) == parse_utc(ann_times[-1])            # the service's clock, not this machine's
    assert parse_utc(stamp).year == 2031
    assert (term.course / "submitted" / "bob" / ASSIGNMENT / "lesson.ipynb").is_file()

    # feedback, as generate_feedback leaves it: the page beside the submission's timestamp.txt
    for student in ("ann", "bob"):
        fb = term.course / "feedback" / student / ASSIGNMENT
        fb.mkdir(parents=True)
        (fb / "lesson.html").write_text(f"<html>feedback for {student}</html>")
        (fb / "timestamp.txt").write_text((term.course / "submitted" / student / ASSIGNMENT / "timestamp.txt").read_text())
    term.run("teacher", "ReleaseFeedback")
    ready = term.run("ann", "List", cached=True)[0]["submissions"]
    assert [s["has_exchange_feedback"] for s in ready] == [False, True]

    term.run("ann", "FetchFeedback")
    page = term.mine("ann") / "feedback" / ready[1]["timestamp"] / "lesson.html"
    assert page.read_text() == "<html>feedback for ann</html>"
    assert not (term.mine("ann") / "feedback" / ready[0]["timestamp"]).exists()
    done = term.run("ann", "List", cached=True)[0]["submissions"][1]
    assert done["has_local_feedback"] and done["has_exchange_feedback"] and not done["feedback_updated"]
    assert done["local_feedback_path"] == str(page)           # the page itself (course_hub.feedback_link)
    assert done["notebooks"][0]["local_feedback_path"] == str(page)

    (term.course / "feedback" / "ann" / ASSIGNMENT / "lesson.html").write_text("<html>regraded</html>")
    term.run("teacher", "ReleaseFeedback", student="ann")
    assert term.run("ann", "List", cached=True)[0]["submissions"][1]["feedback_updated"] is True
    term.run("ann", "FetchFeedback")
    assert page.read_text() == "<html>regraded</html>"
    term.run("bob", "FetchFeedback")
    assert "feedback for bob" in next((term.mine("bob") / "feedback").rglob("lesson.html")).read_text()

    # unrelease (the Formgrader's "unrelease"): the submissions stay
    term.run("teacher", "List", remove=True)
    assert term.run("ann", "List") == []
    assert len(service_times(url, "ann")) == 2
    with pytest.raises(ExchangeError, match="keeps every submission"):
        term.run("teacher", "List", inbound=True, remove=True)
    assert all(not p.is_symlink() for p in store.rglob("*"))


def test_collect_keeps_an_existing_copy_unless_update_and_takes_the_newest(term, service):
    url, _store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    answer(term.mine("ann"), "x = 1  # first")
    term.run("ann", "Submit")
    term.run("teacher", "Collect")
    got = term.course / "submitted" / "ann" / ASSIGNMENT
    first = (got / "timestamp.txt").read_text()
    answer(term.mine("ann"), "x = 2  # second")
    term.run("ann", "Submit")
    term.run("teacher", "Collect")
    assert "first" in (got / "lesson.ipynb").read_text() and (got / "timestamp.txt").read_text() == first
    term.run("teacher", "Collect", update=True)
    assert "second" in (got / "lesson.ipynb").read_text()
    assert parse_utc((got / "timestamp.txt").read_text()) == parse_utc(service_times(url, "ann")[-1])


# ---- who may do what ----------------------------------------------------------------------------------------
def test_a_student_can_neither_read_nor_replace_another_s_submission_or_feedback(term, service):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    answer(term.mine("ann"), "x = 'ann only'")
    term.run("ann", "Submit")
    sub = http("GET", f"{url}/exchange/{COURSE}/submissions", "tok-ann").json()["submissions"][0]
    base = f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}/ann/{sub['id']}"
    assert http("PUT", f"{base}/feedback/lesson.html", "tok-teacher", data=b"<html>ann's</html>").status_code == 201
    before = {p: p.read_bytes() for p in stored_files(store)}

    assert http("GET", base, "tok-ann").status_code == 200
    assert http("GET", f"{base}/feedback/lesson.html", "tok-ann").text == "<html>ann's</html>"
    for method, path, body in [("GET", base, None), ("GET", f"{base}/feedback/lesson.html", None),
                               ("PUT", f"{base}/feedback/lesson.html", b"<html>forged</html>"),
                               ("PUT", base, b"x"), ("POST", base, b"x"), ("DELETE", base, None)]:
        r = http(method, path, "tok-bob", data=body)
        assert r.status_code in (403, 404, 405), (method, path, r.status_code)
    r = http("GET", f"{url}/exchange/{COURSE}/submissions", "tok-bob", params={"student": "ann"})
    assert r.status_code == 403 and "own" in r.json()["error"]
    assert http("GET", f"{url}/exchange/{COURSE}/submissions", "tok-bob").json() == {"submissions": []}
    assert http("GET", f"{url}/exchange/{COURSE}/submissions", "tok-bob",
                params={"inbound": "1"}).status_code == 403
    # bob's own plugin classes see nothing of ann's
    assert term.run("bob", "List", cached=True) == []
    term.run("bob", "FetchFeedback")
    assert not (term.mine("bob") / "feedback").exists()
    assert {p: p.read_bytes() for p in stored_files(store)} == before


def test_a_student_cannot_release_unrelease_collect_or_release_feedback(term, service):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    term.run("ann", "Submit")
    before = {p: p.read_bytes() for p in stored_files(store)}
    # ann's own release folder, to release as an instructor would
    (term.course / "release" / "ps2").mkdir()
    answer(term.course / "release" / "ps2", "y = ...")
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "ReleaseAssignment", assignment="ps2")
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "ReleaseAssignment", force=True)
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "Collect")
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "List", inbound=True)
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "List", remove=True)
    fb = term.course / "feedback" / "ann" / ASSIGNMENT
    fb.mkdir(parents=True)
    (fb / "lesson.html").write_text("<html>I graded myself</html>")
    (fb / "timestamp.txt").write_text(term.run("ann", "List", cached=True)[0]["submissions"][0]["timestamp"])
    with pytest.raises(ExchangeError, match="403.*only an instructor"):
        term.run("ann", "ReleaseFeedback")
    assert not (term.course / "submitted").exists()
    assert {p: p.read_bytes() for p in stored_files(store)} == before


def test_every_request_needs_a_token_with_access_to_the_service(service):
    url, store = service
    for token in (None, "tok-unknown", "tok-noaccess"):
        r = http("GET", f"{url}/exchange/{COURSE}/assignments", token)
        assert r.status_code in (401, 403) and "error" in r.json(), (token, r.text)
        r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", token, data=b"\x1f\x8b")
        assert r.status_code in (401, 403), token
    assert stored_files(store) == []


# ---- what a student's folder holds ---------------------------------------------------------------------------
def test_a_symlink_in_a_submitted_folder_is_not_followed(term, service):
    url, store = service
    secret = term.tmp / "course_secret.txt"
    secret.write_text("TOPSECRET variant key")
    (term.course / "source").mkdir()
    (term.course / "source" / "solution.py").write_text("TOPSECRET solution")
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    os.symlink(secret, term.mine("ann") / "notes.txt")
    os.symlink(term.course / "source", term.mine("ann") / "solutions")
    os.symlink(secret, term.mine("ann") / "extra.ipynb")
    term.run("ann", "Submit")
    archive = next(store.rglob("submissions/ann/*/*/archive"))
    assert b"TOPSECRET" not in archive_text(archive)
    names = archives.members(archive.read_bytes())
    assert not {"notes.txt", "extra.ipynb"} & set(names) and not any(n.startswith("solutions") for n in names)
    term.run("teacher", "Collect")
    got = term.course / "submitted" / "ann" / ASSIGNMENT
    assert sorted(p.name for p in got.iterdir()) == ["data", "lesson.ipynb", "timestamp.txt"]
    assert all(b"TOPSECRET" not in p.read_bytes() for p in got.rglob("*") if p.is_file())
    assert all(not p.is_symlink() for p in list(store.rglob("*")) + list(got.rglob("*")))


def test_a_forged_timestamp_txt_does_not_change_the_recorded_time(term, service):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    (term.mine("ann") / "timestamp.txt").write_text("2020-01-01 00:00:00.000000 UTC")
    term.run("ann", "Submit")
    (recorded,) = service_times(url, "ann")
    assert recorded.startswith("2031-03-04T10:")
    listed = term.run("ann", "List", cached=True)[0]["submissions"][0]
    assert parse_utc(listed["timestamp"]) == parse_utc(recorded)
    term.run("teacher", "Collect")
    stamp = (term.course / "submitted" / "ann" / ASSIGNMENT / "timestamp.txt").read_text()
    assert parse_utc(stamp) == parse_utc(recorded) and "2020" not in stamp
    # nor does a submission's form field or header
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}?timestamp=2020-01-01&student=bob",
             "tok-ann", data=tgz({"lesson.ipynb": b"{}"}), headers={"X-Submitted-At": "2020-01-01"})
    assert r.status_code == 201 and r.json()["submission"]["student_id"] == "ann"
    assert r.json()["submission"]["timestamp"].startswith("2031-")


# ---- limits -------------------------------------------------------------------------------------------------
def test_a_submission_over_the_size_limit_gets_413_and_nothing_is_stored(term, service, monkeypatch):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    monkeypatch.setattr(X, "MAX_SUBMISSION_BYTES", 4096)
    (term.mine("ann") / "big.bin").write_bytes(os.urandom(20000))
    with pytest.raises(ExchangeError, match="413"):
        term.run("ann", "Submit")
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-ann", data=os.urandom(5000))
    assert r.status_code == 413 and "at most" in r.json()["error"]
    assert not (store / COURSE / "submissions").exists()


def test_past_the_count_or_total_limit_gets_429_and_nothing_is_stored(term, service, monkeypatch):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    monkeypatch.setattr(X, "MAX_SUBMISSIONS", 2)
    term.run("ann", "Submit")
    term.run("ann", "Submit")
    with pytest.raises(ExchangeError, match="429.*ann has submitted ps1 2 times"):
        term.run("ann", "Submit")
    assert len(service_times(url, "ann")) == 2
    assert len(list(store.rglob("submissions/ann/*/*/archive"))) == 2
    term.run("bob", "FetchAssignment")
    term.run("bob", "Submit")                   # a limit per student: bob is not refused for ann's
    monkeypatch.setattr(X, "MAX_SUBMISSIONS", 50)
    used = sum(p.stat().st_size for p in store.rglob("submissions/bob/*/*/archive"))
    monkeypatch.setattr(X, "MAX_USER_BYTES", used + 10)
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-bob", data=tgz({"lesson.ipynb": b"{}"}))
    assert r.status_code == 429 and "in all" in r.json()["error"]
    assert len(service_times(url, "bob")) == 1


def test_a_submission_to_an_assignment_not_released_is_refused(term, service):
    url, store = service
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-ann", data=tgz({"lesson.ipynb": b"{}"}))
    assert r.status_code == 404 and "not released" in r.json()["error"]
    assert stored_files(store) == []


# ---- names and archives: bad input gets a 400 saying what was expected ---------------------------------------
@pytest.mark.parametrize("path, expected", [
    ("/exchange/-x/assignments", "course '-x': expected a course id"),
    ("/exchange/a%20b/assignments", "course 'a b': expected a course id"),
    (f"/exchange/{'c' * 65}/assignments", "expected a course id"),
    (f"/exchange/{COURSE}/assignments/%2E%2E", "assignment '..': expected an assignment id"),
    (f"/exchange/{COURSE}/assignments/.hidden", "expected an assignment id"),
    (f"/exchange/{COURSE}/submissions?assignment=a/b", "expected an assignment id"),
    (f"/exchange/{COURSE}/submissions/{ASSIGNMENT}/ANN/20310304T100000.000000Z", "expected a student's user name"),
    (f"/exchange/{COURSE}/submissions/{ASSIGNMENT}/ann/2020", "expected a submission id"),
    (f"/exchange/{COURSE}/submissions/{ASSIGNMENT}/ann/20310304T100000.000000Z/feedback/..%2Fx.html",
     "expected a notebook id"),
])
def test_bad_names_get_400(service, path, expected):
    url, store = service
    r = http("GET", url + path, "tok-teacher")
    assert r.status_code == 400 and expected in r.json()["error"], r.text
    r = http("GET", url + path, "tok-ann")
    assert r.status_code in (400, 403), r.text


def test_an_unknown_route_says_what_routes_there_are(service):
    url, _ = service
    r = http("GET", f"{url}/exchange/{COURSE}/elsewhere", "tok-ann")
    assert r.status_code == 404 and "/exchange/<course>/submissions" in r.json()["error"]


def tgz(files: dict, extra=()) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for info in extra:
            tf.addfile(info)
    return buf.getvalue()


def _special(name, kind, target=""):
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info


def zipped(entries) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in entries:
            info = zipfile.ZipInfo(name)
            info.create_system, info.external_attr = 3, mode << 16
            zf.writestr(info, data)
    return buf.getvalue()


def _bomb() -> bytes:
    info = tarfile.TarInfo("lesson.ipynb")
    info.size = 10 << 30                     # declares 10 GiB
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    return gzip.compress(header + b"\0" * (1 << 20))


HOSTILE = {
    "dotdot": (tgz({"../../escape.ipynb": b"{}"}), "'..' is not allowed"),
    "absolute": (tgz({"/etc/cron.d/x": b"x"}), "expected a relative name"),
    "symlink": (tgz({"lesson.ipynb": b"{}"}, [_special("notes.txt", tarfile.SYMTYPE, "/etc/shadow")]), "a link"),
    "hardlink": (tgz({"lesson.ipynb": b"{}"}, [_special("h", tarfile.LNKTYPE, "lesson.ipynb")]), "a link"),
    "device": (tgz({}, [_special("dev", tarfile.CHRTYPE)]), "a device"),
    "fifo": (tgz({}, [_special("fifo", tarfile.FIFOTYPE)]), "a device, FIFO"),
    "long name": (tgz({"x" * 256 + ".ipynb": b"{}"}), "at most 255 characters"),
    "twice": (tgz({"a.ipynb": b"1", "./a.ipynb": b"2"}), "appears twice"),
    "backslash": (tgz({"..\\..\\x": b"1"}), "without backslashes"),
    "zip symlink": (zipped([("lesson.ipynb", b"{}", 0o100644), ("link", b"/etc/shadow", 0o120777)]), "a link"),
    "zip dotdot": (zipped([("../x.ipynb", b"{}", 0o100644)]), "'..' is not allowed"),
    "not an archive": (b"#!/bin/sh\nrm -rf /\n", "expected a tar.gz or a zip"),
    "truncated": (tgz({"lesson.ipynb": b"{}" * 1000})[:60], "expected a readable tar.gz"),
    "bomb": (_bomb(), "MiB once unpacked"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_archive_is_refused_with_400_and_nothing_is_stored(term, service, kind):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    before = sorted(stored_files(store))
    data, expected = HOSTILE[kind]
    for method, path, token in [("POST", f"submissions/{ASSIGNMENT}", "tok-ann"),
                                ("PUT", "assignments/ps9", "tok-teacher")]:
        r = http(method, f"{url}/exchange/{COURSE}/{path}", token, data=data)
        assert r.status_code == 400 and expected in r.json()["error"], (method, r.text)
    assert sorted(stored_files(store)) == before


def test_too_many_members_are_refused(term, service, monkeypatch):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    monkeypatch.setattr(archives, "MAX_MEMBERS", 5)
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-ann",
             data=tgz({f"f{i}.txt": b"x" for i in range(6)}))
    assert r.status_code == 400 and "at most 5 files" in r.json()["error"]
    r = http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-ann",
             data=zipped([(f"f{i}.txt", b"x", 0o100644) for i in range(6)]))
    assert r.status_code == 400 and "at most 5 files" in r.json()["error"]


def test_a_zip_release_is_stored_as_received_and_fetched_safely(term, service):
    url, store = service
    data = zipped([("lesson.ipynb", nbformat.writes(notebook("z = ...")).encode(), 0o100644),
                   ("data/", b"", 0o040755), ("data/a.csv", b"1,2\n", 0o100644)])
    r = http("PUT", f"{url}/exchange/{COURSE}/assignments/{ASSIGNMENT}", "tok-teacher", data=data)
    assert r.status_code == 201 and r.json()["released"]["notebooks"] == ["lesson"]
    assert (store / COURSE / "released" / ASSIGNMENT / "archive").read_bytes() == data
    got = http("GET", f"{url}/exchange/{COURSE}/assignments/{ASSIGNMENT}", "tok-ann")
    assert got.content == data and got.headers["X-Archive-Format"] == "zip"
    term.run("ann", "FetchAssignment")
    assert (term.mine("ann") / "data" / "a.csv").read_text() == "1,2\n"


# ---- unpacking on the client ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["dotdot", "absolute", "symlink", "hardlink", "device", "zip symlink", "zip dotdot",
                                  "bomb"])
def test_extract_writes_nothing_for_an_unsafe_archive(tmp_path, kind):
    data, expected = HOSTILE[kind]
    with pytest.raises(archives.BadArchive, match=re.escape(expected)):
        archives.extract(data, tmp_path / "out" / "x")
    assert not (tmp_path / "out").exists() and sorted(tmp_path.iterdir()) == []


def test_pack_leaves_out_links_and_special_files(tmp_path):
    folder = tmp_path / "a"
    folder.mkdir()
    (folder / "lesson.ipynb").write_text("{}")
    (tmp_path / "secret").write_text("TOPSECRET")
    os.symlink(tmp_path / "secret", folder / "link.txt")
    os.symlink(tmp_path, folder / "up")
    os.mkfifo(folder / "fifo")
    data, skipped = archives.pack(folder)
    assert sorted(skipped) == ["fifo", "link.txt", "up"]
    assert archives.members(data) == {"lesson.ipynb": 2}
    assert b"TOPSECRET" not in gzip.decompress(data)


def test_the_store_is_the_service_s_own(term, service):
    url, store = service
    term.run("teacher", "ReleaseAssignment")
    term.run("ann", "FetchAssignment")
    term.run("ann", "Submit")
    for p in store.rglob("*"):
        mode = stat.S_IMODE(p.lstat().st_mode)
        assert not p.is_symlink() and mode & 0o007 == 0, (p, oct(mode))
    meta = json.loads(next(store.rglob("submissions/ann/*/*/meta.json")).read_text())
    assert meta["student_id"] == "ann" and meta["timestamp"].startswith("2031-")


def test_the_formgrader_s_api_releases_lists_collects_and_unreleases_through_the_service(term, service):
    """nbgrader's NbGraderAPI (what the Formgrader's buttons call) with the service exchange selected."""
    from nbgrader.apps.api import NbGraderAPI

    url, _store = service

    def api():
        term.mp.setenv("COURSE_SERVICE_URL", url)
        term.mp.setenv("JUPYTERHUB_API_TOKEN", "tok-teacher")
        c = Config()
        nbexchange.configure(c)
        c.CourseDirectory.root, c.CourseDirectory.course_id = str(term.course), COURSE
        return NbGraderAPI(coursedir=CourseDirectory(config=c), config=c)

    a = api()
    assert a.exchange_missing is False and a.exchange_root == ""
    assert a.release_assignment(ASSIGNMENT)["success"], a.release_assignment(ASSIGNMENT)
    assert api().get_released_assignments() == {ASSIGNMENT}
    term.run("ann", "FetchAssignment")
    term.run("ann", "Submit")
    result = api().collect(ASSIGNMENT)
    assert result["success"], result
    assert parse_utc((term.course / "submitted" / "ann" / ASSIGNMENT / "timestamp.txt").read_text()).year == 2031
    assert api().unrelease(ASSIGNMENT)["success"]
    assert api().get_released_assignments() == set()
    term.mp.setenv("JUPYTERHUB_API_TOKEN", "tok-unknown")
    c = Config()
    nbexchange.configure(c, service_url=url)
    c.CourseDirectory.root, c.CourseDirectory.course_id = str(term.course), COURSE
    assert NbGraderAPI(coursedir=CourseDirectory(config=c), config=c).exchange_missing is True


def test_the_assignment_list_fetches_submits_and_fetches_feedback_through_the_service(term, service, monkeypatch):
    """nbgrader's Assignment List (the students' server extension's manager), configured by an
    nbgrader_config.py in the student's folder that selects the service exchange."""
    from nbgrader.server_extensions.assignment_list.handlers import AssignmentList

    url, _store = service
    term.run("teacher", "ReleaseAssignment")
    home = term.home("ann")
    (home / "nbgrader_config.py").write_text(
        "from course_hub.nbexchange import configure\n"
        f"configure(c)\nc.CourseDirectory.course_id = {COURSE!r}\nc.Exchange.path_includes_course = True\n")
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(term.tmp / "jupyter-config"))
    monkeypatch.setenv("COURSE_SERVICE_URL", url)
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "tok-ann")
    monkeypatch.chdir(home)
    manager = AssignmentList()
    manager.root_dir = str(home)

    listed = manager.list_assignments(course_id=COURSE)
    assert listed["success"], listed
    assert [(a["assignment_id"], a["status"]) for a in listed["value"]] == [(ASSIGNMENT, "released")]
    assert manager.fetch_assignment(COURSE, ASSIGNMENT)["success"]
    listed = manager.list_assignments(course_id=COURSE)["value"]
    assert listed[0]["status"] == "fetched" and listed[0]["path"] == os.path.join(COURSE, ASSIGNMENT)
    assert listed[0]["notebooks"][0]["path"] == os.path.join(COURSE, ASSIGNMENT, "lesson.ipynb")
    submitted = manager.submit_assignment(COURSE, ASSIGNMENT)
    assert submitted["success"], submitted
    listed = manager.list_assignments(course_id=COURSE)["value"]
    (group,) = [a for a in listed if a["status"] == "submitted"]
    assert group["student_id"] == "ann" and len(group["submissions"]) == 1

    term.run("teacher", "Collect")
    fb = term.course / "feedback" / "ann" / ASSIGNMENT
    fb.mkdir(parents=True)
    (fb / "lesson.html").write_text("<html>well done</html>")
    (fb / "timestamp.txt").write_text((term.course / "submitted" / "ann" / ASSIGNMENT / "timestamp.txt").read_text())
    term.run("teacher", "ReleaseFeedback")
    monkeypatch.setenv("JUPYTERHUB_API_TOKEN", "tok-ann")
    monkeypatch.chdir(home)
    assert manager.fetch_feedback(COURSE, ASSIGNMENT)["success"]
    sub = [a for a in manager.list_assignments(course_id=COURSE)["value"] if a["status"] == "submitted"][0]
    sub = sub["submissions"][0]
    assert sub["has_local_feedback"] and not sub["feedback_updated"]
    assert (home / sub["local_feedback_path"]).read_text() == "<html>well done</html>"


def test_concurrent_submissions_never_pass_the_count_limit(term, service, monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    url, store = service
    term.run("teacher", "ReleaseAssignment")
    monkeypatch.setattr(X, "MAX_SUBMISSIONS", 3)
    body = tgz({"lesson.ipynb": os.urandom(200_000)})

    def post(_):
        return http("POST", f"{url}/exchange/{COURSE}/submissions/{ASSIGNMENT}", "tok-ann", data=body).status_code

    with ThreadPoolExecutor(8) as pool:
        codes = sorted(pool.map(post, range(8)))
    assert codes == [201] * 3 + [429] * 5
    assert len(list(store.rglob("submissions/ann/*/*/archive"))) == 3
    assert len(set(service_times(url, "ann"))) == 3
