"""`python -m autograder export --lms` against a local LTI 1.3 platform (tests/lti_platform.py, on
127.0.0.1): the scores the gradebook holds reach the LMS line item once, a second run changes
nothing, and a wrong key, an expired token or a missing scope stops it before anything is posted.
Also the LMS's gradebook import CSV (Canvas, Moodle) and the hub's launch record format (issue 35).

The gradebook is a small synthetic one built with nbgrader's API (random scores, a late penalty,
a flag, an ungraded written answer, a failure, a missing submission); the expected scores are
read back from it with nbgrader's API, not written down here.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import random
import shutil
from urllib.parse import urlencode

import pytest

from autograder.cli import main
from autograder.course import Course
from autograder.grading import deadlines, late
from autograder.grading.status import status_path, write_json
from course_hub import lti as hub_lti
from lti_platform import AGS, AGS_CLAIM, CUSTOM_CLAIM, DEPLOYMENT_CLAIM, LEARNER, Platform, new_key, pem

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")

A = "01_hello_roofline"
#: student -> (LMS sub, what the gradebook holds for them)
CLASS = {
    "ann": ("sub-ann", "graded"),
    "bob": ("sub-bob", "late"),
    "cat": ("sub-cat", "flagged"),
    "dan": ("sub-dan", "manual"),
    "eve": ("sub-eve", "missing"),
    "fay": ("sub-fay", "failed"),
    "gus": (None, "graded"),          # never launched from the LMS
    "hal": ("sub-hal", "graded"),
}
CELLS = {"q1": 3.0, "q2": 2.0, "q3": 5.0}
DUE = dt.datetime(2027, 2, 1, 23, 59)     # naive UTC, as nbgrader keeps it


def build_gradebook(course: Course, seed: int) -> None:
    rng = random.Random(seed)
    course.root.mkdir(parents=True, exist_ok=True)
    late.write(course.root, late.LatePolicy(10))      # bob, an hour late, loses 10% of his score
    with course.gradebook() as gb:
        gb.add_assignment(A, duedate=DUE)
        gb.add_notebook("hello_roofline", A)
        for cell, top in CELLS.items():
            gb.add_grade_cell(cell, "hello_roofline", A, max_score=top, cell_type="code")
        gb.add_grade_cell("q4_explain", "hello_roofline", A, max_score=1.0, cell_type="markdown")
        for sid, (_, kind) in CLASS.items():
            gb.add_student(sid, first_name=sid.title(), last_name="Tester", email=f"{sid}@uni.example")
            if kind == "missing":
                continue
            gb.add_submission(A, sid, timestamp=DUE + dt.timedelta(hours=1 if kind == "late" else -1))
            for cell, top in CELLS.items():
                g = gb.find_grade(cell, "hello_roofline", A, sid)
                g.auto_score, g.needs_manual_grade = rng.choice([1.0, top / 2, top] if kind == "late" else
                                                                [0.0, 1.0, top / 2, top]), False
            explain = gb.find_grade("q4_explain", "hello_roofline", A, sid)
            explain.auto_score, explain.needs_manual_grade = None, kind == "manual"
            if kind != "manual":
                explain.manual_score = rng.choice([0.0, 1.0])
            nb = gb.find_submission_notebook("hello_roofline", A, sid)
            nb.flagged = kind == "flagged"
        gb.db.commit()
    deadlines.retake_penalties(course, A)         # as grading leaves them
    write_json(status_path(course, A, "fay"), {"status": "failed", "cause": "kernel died"})


def gradebook_scores(course: Course, late: bool = True) -> dict[str, float]:
    """What should be posted, read from the gradebook: the score minus the late penalty for each
    graded, unflagged, fully graded submission (the rule of autograder.lms.rules)."""

    out = {}
    with course.gradebook() as gb:
        for sub in gb.find_assignment(A).submissions:
            if sub.student.id == "fay" or sub.needs_manual_grade or any(nb.flagged for nb in sub.notebooks):
                continue
            penalty = sum(nb.late_submission_penalty or 0 for nb in sub.notebooks) if late else 0
            out[sub.student.id] = max(0.0, sub.score - penalty)
    return out


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """What every test starts from, made once (keys and a gradebook take seconds on a busy
    machine): the platform's and the tool's keys, a graded class."""
    base = tmp_path_factory.mktemp("lms")
    course = Course(root=base / "course", source=base / "src", release=base / "rel")
    build_gradebook(course, seed=random.randrange(1 << 30))
    return {"platform_key": new_key(), "tool_key": new_key(), "course": course.root}


@pytest.fixture
def lms(tmp_path, made):
    platform = Platform(key=made["platform_key"]).start()
    for sid, (sub, _) in CLASS.items():
        if sub:
            platform.add_person(sub, sid.title(), f"{sid}@uni.example", [LEARNER])
    key = made["tool_key"]
    (tmp_path / "tool-key.pem").write_bytes(pem(key))
    from autograder.lms.ags import tool_jwks

    jwk = tool_jwks((tmp_path / "tool-key.pem").read_text())["keys"][0]
    platform.register_tool(key.public_key(), jwk["kid"])
    (tmp_path / "src").mkdir()
    (tmp_path / "rel").mkdir()
    shutil.copytree(made["course"], tmp_path / "course")
    course = Course(root=tmp_path / "course", source=tmp_path / "src", release=tmp_path / "rel")
    record = tmp_path / "launches.jsonl"
    for sid, (sub, _) in CLASS.items():
        if sub:       # each student launched once from the LMS: the hub recorded it
            claims = {"iss": platform.issuer, "sub": sub, "name": sid.title(), "email": f"{sid}@uni.example",
                      DEPLOYMENT_CLAIM: platform.deployment_id, CUSTOM_CLAIM: {"lms_user_id": f"9{len(sid)}{sid}"},
                      AGS_CLAIM: {"scope": [AGS + "score"], "lineitems": platform.lineitems_url}}
            hub_lti.append_record(record, hub_lti.launch_record(sid, claims, False, None))
    config = {"client_id": platform.client_id, "token_url": platform.token_url, "private_key_file": "tool-key.pem",
              "roster_file": "launches.jsonl", "issuer": platform.issuer, "deployment_id": platform.deployment_id}
    (tmp_path / "lms.json").write_text(json.dumps(config))
    yield platform, course, tmp_path
    platform.stop()


def export(course: Course, tmp_path, *extra) -> int:
    return main(["export", "--root", str(course.root), "--source", str(course.source), "--release-dir",
                 str(course.release), "--lms-config", str(tmp_path / "lms.json"), *extra])


def posted(platform: Platform) -> dict[str, float]:
    """sub -> the score the LMS holds, on the assignment's own scale."""
    return {u: s["scoreGiven"] for u, s in platform.scores_of(A).items()}


def test_export_posts_exactly_the_gradebook_scores_and_a_second_run_changes_nothing(lms, capsys):
    platform, course, tmp_path = lms
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    expected = gradebook_scores(course)
    assert set(expected) == {"ann", "bob", "gus", "hal"}        # the synthetic class is what it says
    subs = {sid: sub for sid, (sub, _) in CLASS.items() if sub}
    assert posted(platform) == pytest.approx({subs[s]: v for s, v in expected.items() if s in subs})
    assert len(platform.lineitems) == 1
    item = next(iter(platform.lineitems.values()))
    assert (item["resourceId"], item["scoreMaximum"]) == (A, sum(CELLS.values()) + 1)
    assert all(s["scoreMaximum"] == item["scoreMaximum"] and s["gradingProgress"] == "FullyGraded"
               for _, s in platform.posts)
    # the report says, per student, what was posted and why the others were not
    for sid in expected:
        verb = "posted" if sid != "gus" else "not posted: no LMS identity"
        assert f"{A} {sid}: {verb}" in out, out
    for sid, why in (("cat", "flagged"), ("dan", "written answers not graded"), ("eve", "no submission"),
                     ("fay", "grading failed (kernel died)")):
        assert f"{A} {sid}: not posted: {why}" in out
    assert "minus the late penalty" in out
    bob = platform.scores_of(A)["sub-bob"]
    assert f"late penalty {_penalty(course, 'bob'):g} applied" in bob["comment"]

    n_posts, before = len(platform.posts), platform.scores_of(A)
    assert export(course, tmp_path, "--lms") == 0
    again = capsys.readouterr().out
    assert len(platform.posts) == n_posts and len(platform.lineitems) == 1
    assert platform.scores_of(A) == before
    assert f"{len(platform.posts)} unchanged" in again and "0 posted; 0 updated" in again


def test_a_changed_score_updates_the_same_line_item(lms, capsys):
    platform, course, tmp_path = lms
    assert export(course, tmp_path, "--lms") == 0
    with course.gradebook() as gb:
        g = gb.find_grade("q3", "hello_roofline", A, "ann")
        g.manual_score = 0.0 if (g.auto_score or 0) > 0 else 5.0
        gb.db.commit()
    n_posts = len(platform.posts)
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    assert len(platform.posts) == n_posts + 1 and len(platform.lineitems) == 1
    assert platform.posts[-1][1]["userId"] == "sub-ann"
    assert posted(platform)["sub-ann"] == pytest.approx(gradebook_scores(course)["ann"])
    assert f"{A} ann: updated" in out


def _penalty(course: Course, sid: str) -> float:

    with course.gradebook() as gb:
        return gb.find_submission_notebook("hello_roofline", A, sid).late_submission_penalty or 0.0


def test_a_hand_grade_entered_through_nbgraders_api_reaches_the_lms_with_its_penalty_taken_again(lms, capsys):
    """The Formgrader's hand grade (nbgrader's API handler: the manual score and the status, and
    nothing else) leaves the late penalty of the old score; export --lms takes it again from the
    score as it is (issue 47: 24.2 was posted where 24.3 was due)."""

    platform, course, tmp_path = lms
    with course.gradebook() as gb:
        g = gb.find_grade("q4_explain", "hello_roofline", A, "bob")
        g.manual_score = 0.0 if g.manual_score else 1.0     # as nbgrader's GradeHandler.put writes it
        g.needs_manual_grade = False
        gb.db.commit()
        score = gb.find_submission(A, "bob").score
    stale = _penalty(course, "bob")
    # what the Formgrader's grade handler does next (autograder.outputs.formgrader_guard)
    from autograder.outputs.formgrader_guard import after_hand_grade

    with course.gradebook() as gb:
        grade_id = gb.find_grade("q4_explain", "hello_roofline", A, "bob").id
    after_hand_grade(course.root, "sqlite:///elsewhere.db", grade_id)        # not this course's gradebook
    assert _penalty(course, "bob") == stale != pytest.approx(0.1 * score)
    after_hand_grade(course.root, course.db_url, grade_id)
    assert _penalty(course, "bob") == pytest.approx(0.1 * score)
    with course.gradebook() as gb:           # the stale one again: export takes it again itself
        gb.find_submission_notebook("hello_roofline", A, "bob").late_submission_penalty = stale
        gb.db.commit()
    assert export(course, tmp_path, "--lms") == 0
    capsys.readouterr()
    assert _penalty(course, "bob") == pytest.approx(0.1 * score)
    assert posted(platform)["sub-bob"] == pytest.approx(0.9 * score)
    csv_out = tmp_path / "grades.csv"
    assert main(["export", "--root", str(course.root), "--source", str(course.source), "--release-dir",
                 str(course.release), "--out", str(csv_out)]) == 0
    bob = {r["student_id"]: r for r in csv.DictReader(csv_out.open())}["bob"]
    assert float(bob["total"]) == pytest.approx(0.9 * score)


def test_a_failures_flag_is_taken_back_once_graded_again_and_no_other_flag_is(lms, capsys):
    """Issue 47: after a failed run and a successful regrade every student stayed flagged, held
    from the LMS. flag_submission says which notebooks it flagged anew; unflag_failure (what a
    successful merge calls with them) takes back only those, so a flag set before the failure
    (cat's: an instructor's, a standing finding) stays."""
    from autograder.grading.merge import flag_submission, unflag_failure
    from autograder.grading.status import WHOLE
    from autograder.integrity.flags import Flag, Reason

    platform, course, tmp_path = lms
    failed = {WHOLE: [Reason(Flag.GRADING_FAILED, "grading failed: the worker crashed")]}
    assert flag_submission(course.db_url, A, "ann", failed) == ["hello_roofline"]
    assert flag_submission(course.db_url, A, "ann", failed) == []          # a second failure adds none
    assert flag_submission(course.db_url, A, "cat", failed) == []          # flagged before the failure
    unflag_failure(course.db_url, A, "ann", ["hello_roofline"])
    unflag_failure(course.db_url, A, "cat", [])
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    assert f"{A} ann: posted" in out and f"{A} cat: not posted: flagged" in out


def test_every_run_says_what_it_held_back_and_unflagging_is_one_step(lms, capsys):
    from autograder.grading.status import grading_status
    from autograder.integrity import unflag
    from autograder.integrity.flags import Flag, Reason

    platform, course, tmp_path = lms
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    assert "held back, flagged: 1 (cat); to post them: look, then `python -m autograder unflag A STUDENT`" in out
    assert "held back, written answers not graded yet: 1 (dan)" in out
    assert "held back, grading failed: 1 (fay)" in out and "held back, no submission: 1 (eve)" in out
    # cat's flag has a reason the grader recorded; the instructor looks and unflags, in one step
    edited = Reason(Flag.RECORD_EDITED, "the prediction record looks edited")
    write_json(status_path(course, A, "cat"), {"status": "graded", "flags": {"hello_roofline": [edited.to_json()]}})
    args = ["--root", str(course.root), "--source", str(course.source), "--release-dir", str(course.release)]
    assert main(["unflag", A, "cat", "--reason", "looked: the student's editor reformatted it", *args]) == 0
    said = capsys.readouterr().out
    assert "cat: 01_hello_roofline unflagged (hello_roofline)" in said and "cleared: the prediction record" in said
    assert grading_status(course, A, "cat")["flags"]            # the grader's record is kept as it was
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    assert f"{A} cat: posted" in out and "held back, flagged" not in out
    # a regrade finding the same reason does not flag again; a new finding does
    new = Reason(Flag.CHANGED_AFTER_REVEAL, "Q1 changed after its reveal")
    assert unflag.still_to_flag(course, A, "cat", {"hello_roofline": [edited, new]}) == {"hello_roofline": [new]}
    assert unflag.still_to_flag(course, A, "ann", {"hello_roofline": [edited]}) == {"hello_roofline": [edited]}
    with pytest.raises(SystemExit, match="say why"):
        main(["unflag", A, "cat", *args])
    with pytest.raises(SystemExit, match="eve has no submission"):
        main(["unflag", A, "eve", "--reason", "x", *args])


def test_after_a_comment_post_a_held_score_says_what_the_lms_still_shows(lms, capsys):
    platform, course, tmp_path = lms
    assert export(course, tmp_path, "--lms", "--flagged", "comment") == 0
    capsys.readouterr()
    assert export(course, tmp_path, "--lms") == 0
    out = capsys.readouterr().out
    cat = posted(platform)["sub-cat"]
    assert f"{A} cat: not posted: flagged" in out and f"the LMS still shows {cat:g} / " in out


def test_the_instructor_chooses_the_late_penalty_and_the_flagged_rule(lms, capsys):
    platform, course, tmp_path = lms
    assert export(course, tmp_path, "--lms", "--late", "ignore", "--flagged", "comment") == 0
    capsys.readouterr()
    no_late = gradebook_scores(course, late=False)
    assert posted(platform)["sub-bob"] == pytest.approx(no_late["bob"])
    cat = platform.scores_of(A)["sub-cat"]            # flagged: posted, the comment says so
    assert "flagged" in cat["comment"]


def test_without_the_results_scope_a_rerun_posts_the_same_scores_again_and_never_duplicates(lms, capsys):
    platform, course, tmp_path = lms
    platform.granted_scopes.discard(AGS + "result.readonly")
    assert export(course, tmp_path, "--lms") == 0
    first = platform.scores_of(A)
    assert export(course, tmp_path, "--lms") == 0
    assert f"{len(first)} posted; 0 updated; 0 unchanged" in capsys.readouterr().out.splitlines()[-1]
    assert len(platform.lineitems) == 1 and len(platform.posts) == 2 * len(first)
    assert {u: s["scoreGiven"] for u, s in platform.scores_of(A).items()} == {u: s["scoreGiven"] for u, s in first.items()}


@pytest.mark.parametrize("fault, message", [
    ("wrong key", "did not accept the tool's key"),
    ("expired token", "already expired"),
    ("missing scope", "did not grant the scope(s) " + AGS + "score"),
])
def test_a_refusal_posts_nothing_and_says_why(lms, capsys, fault, message):
    platform, course, tmp_path = lms
    if fault == "wrong key":
        (tmp_path / "tool-key.pem").write_bytes(pem(new_key()))
    elif fault == "expired token":
        platform.token_lifetime = 0
    else:
        platform.granted_scopes.discard(AGS + "score")
    assert export(course, tmp_path, "--lms") == 2
    err = capsys.readouterr().err
    assert "nothing posted" in err and message in err, err
    assert platform.posts == [] and platform.lineitems == {}
    assert not [r for r in platform.requests if r[0] == "POST" and r[1] != "/token"]


def test_without_a_configuration_it_says_what_is_missing(lms, capsys):
    platform, course, tmp_path = lms
    (tmp_path / "lms.json").write_text(json.dumps({"client_id": "x"}))
    assert export(course, tmp_path, "--lms") == 2
    assert "missing token_url, private_key_file" in capsys.readouterr().err
    (tmp_path / "lms.json").unlink()
    assert export(course, tmp_path, "--lms") == 2
    assert "no LMS configuration" in capsys.readouterr().err
    assert platform.requests == []


def test_the_lms_import_csv_holds_the_same_scores(lms, capsys):
    platform, course, tmp_path = lms
    expected = gradebook_scores(course)
    assert export(course, tmp_path, "--lms-csv", "canvas", "--out", str(tmp_path / "canvas.csv")) == 0
    rows = list(csv.reader((tmp_path / "canvas.csv").open()))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", A]
    assert rows[1][0] == "Points Possible" and float(rows[1][5]) == sum(CELLS.values()) + 1
    by_name = {r[0]: r for r in rows[2:]}
    for sid, (sub, _) in CLASS.items():
        row = by_name[f"Tester, {sid.title()}"]
        assert row[1] == (f"9{len(sid)}{sid}" if sub else "")
        assert (float(row[5]) if row[5] else None) == (pytest.approx(expected[sid]) if sid in expected else None)
    assert export(course, tmp_path, "--lms-csv", "moodle", "--out", str(tmp_path / "moodle.csv")) == 0
    rows = list(csv.DictReader((tmp_path / "moodle.csv").open()))
    got = {r["Email address"]: r[A] for r in rows}
    assert got == {f"{s}@uni.example": (f"{expected[s]:g}" if s in expected else "") for s in CLASS}
    assert platform.requests == []      # the CSV needs no LMS


def test_keygen_writes_a_private_key_and_its_public_key_set(tmp_path, capsys):
    from autograder.lms.__main__ import main as lms_main

    assert lms_main(["keygen", str(tmp_path / "keys")]) == 0
    key = tmp_path / "keys" / "lti-tool-key.pem"
    assert oct(key.stat().st_mode & 0o777) == "0o600"
    jwks = json.loads((tmp_path / "keys" / "lti-tool-jwks.json").read_text())
    assert [k["kty"] for k in jwks["keys"]] == ["RSA"] and "d" not in jwks["keys"][0]
    with pytest.raises(SystemExit, match="exists"):
        lms_main(["keygen", str(tmp_path / "keys")])


def test_the_platform_runs_from_the_command_line_for_manual_tries(tmp_path):
    """tests/lti_platform.py as a program (issue 47: it had no command line): it prints what the
    tool's configuration needs, serves its key set and checks a client assertion with the tool's
    key set written by keygen, and stops on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    import jwt as pyjwt

    from autograder.lms.__main__ import keygen

    key, jwks = keygen(tmp_path)
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("lti_platform.py")), "--tool-jwks", str(jwks),
                             "--person", "ann:Ann Lee:ann@uni.example", "--person", "prof:P. Rof:p@uni.example:instructor",
                             "--link", "hello:lesson=01_hello_roofline", "--write-jwks", str(tmp_path / "platform.json")],
                            stdout=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        assert line, "the platform stopped before printing its settings"
        info = json.loads(line)
        assert set(info["launch_urls"]) == {"ann via hello", "prof via hello"}
        with urllib.request.urlopen(info["jwks_url"], timeout=10) as r:
            assert json.load(r) == json.loads((tmp_path / "platform.json").read_text())
        kid = json.loads(jwks.read_text())["keys"][0]["kid"]
        now = int(time.time())
        assertion = pyjwt.encode({"iss": info["client_id"], "sub": info["client_id"], "aud": info["token_url"],
                                  "iat": now, "exp": now + 60, "jti": "x"}, key.read_text(), algorithm="RS256",
                                 headers={"kid": kid})
        form = urlencode({"grant_type": "client_credentials", "client_assertion": assertion, "scope": AGS + "score",
                          "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"})
        with urllib.request.urlopen(info["token_url"], data=form.encode(), timeout=10) as r:
            assert json.load(r)["scope"] == AGS + "score"
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
