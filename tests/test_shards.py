"""Grading in shards (`grade A --shard i/N`, then `merge A`) gives exactly the unsharded grades.

The partition tests are fast. The class test (slow tier) grades a small synthetic class of
lesson 1 (tests/synthetic.py: right, wrong, blank, broken, a deleted test, an edited locked cell,
warnings) once unsharded, then in N = 1, 2 and 3 shards run at the same time on one course folder,
merges them, and compares everything a grade is: every cell's score and comment, every
notebook's flag and late penalty, the status files (flags, prediction findings, disagreements),
the autograded notebooks' clean verdicts and recorded answers, and the feedback pages.
"""
from __future__ import annotations

import difflib
import json
import re
import subprocess
from pathlib import Path

import pytest

from autograder.authoring.release import assignments
from autograder.grading.shards import Shard, select, shard_of
from synthetic import make_class
from tiny_course import NO_SANDBOX_FLAG, PY, REPO, run_cli

ANSWERS = REPO / "tests" / "answers"
A = "01_hello_roofline"
ROSTER = [("correct_01", "correct"), ("correct_02", "correct"), ("wrong_all", "wrong_all"), ("wrong_01", "wrong"),
          ("blank", "blank"), ("syntax_error", "syntax_error"), ("deletes_test", "deletes_test"),
          ("edits_locked", "edits_locked"), ("warnings", "warnings")]
LIMITS = ["--memory", "2048", "-q", *NO_SANDBOX_FLAG]


# ---- the partition (fast) -----------------------------------------------------------------------
@pytest.mark.parametrize("text, expected", [("0/1", (0, 1)), ("2/3", (2, 3)), (" 0/4 ", (0, 4))])
def test_a_shard_is_written_i_slash_n(text, expected):
    s = Shard.parse(text)
    assert (s.index, s.count) == expected
    assert Shard.parse(str(s)) == s


@pytest.mark.parametrize("text", ["3/3", "1/0", "-1/2", "1", "1/2/3", "a/b", "", "1-of-2"])
def test_a_bad_shard_says_what_is_expected(text):
    with pytest.raises(ValueError, match=r"i/N|0 to N-1"):
        Shard.parse(text)


def test_the_shards_partition_the_class_whatever_else_handed_in():
    students = [f"s{i:03d}" for i in range(300)] + ["josé_ng", "ann-lee"]
    for n in (1, 2, 3, 7):
        parts = [select(students, Shard(i, n)) for i in range(n)]
        assert sorted(s for p in parts for s in p) == sorted(students)            # each exactly once
        # a student's shard depends on nothing but their id and N: not on who else handed in
        for i, p in enumerate(parts):
            assert select(list(reversed(students[:40])), Shard(i, n)) == [s for s in reversed(students[:40]) if s in p]
            assert all(shard_of(s, n) == i for s in p)
    # and it spreads a class: 300 students in 3 shards, none far from 100
    sizes = [len(select(students[:300], Shard(i, 3))) for i in range(3)]
    assert min(sizes) > 70, sizes


def test_grade_refuses_a_bad_shard_and_collecting_into_shards(tmp_path):
    p = run_cli("grade", A, "--root", tmp_path, "--shard", "2/2", check=False)
    assert p.returncode == 2 and "0 to N-1" in p.stderr
    p = run_cli("grade", A, "--root", tmp_path, "--shard", "0/2", "--submissions", tmp_path, check=False)
    assert p.returncode == 2 and "collect first" in p.stderr


# ---- the class (slow) ---------------------------------------------------------------------------
def _snapshot(root: Path) -> dict:
    """Everything a grade is, per student, without times."""
    from nbgrader.api import Gradebook

    out = {}
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        for sub in gb.find_assignment(A).submissions:
            out[sub.student.id] = {"notebooks": {nb.name: {
                "flagged": nb.flagged, "late_penalty": nb.late_submission_penalty,
                "grades": {g.name: (g.auto_score, g.manual_score, g.needs_manual_grade, g.max_score) for g in nb.grades},
                "comments": {c.name: c.auto_comment for c in nb.comments}} for nb in sub.notebooks}}
    state = root / "autograded" / ".autograder" / A
    for s in out:
        st = json.loads((state / f"{s}.json").read_text())
        for k in ("graded_at", "at", "seconds"):
            st.pop(k, None)
        out[s]["status"] = st
        books = sorted((root / "autograded" / s / A).glob("*.ipynb"))
        assert books, f"{s}: no autograded notebook in {root}"
        for p in books:
            meta = json.loads(p.read_text())["metadata"]["autograder"]
            kept = {k: meta.get(k) for k in ("verdicts", "answers", "predictions", "hidden_run_last", "stopped",
                                             "recorder")}
            # a message may say when the verifier's check committed an answer (its clock)
            out[s][p.name] = json.loads(re.sub(r"\d\d:\d\d:\d\d UTC", "<time> UTC", json.dumps(kept)))
        page = sorted((root / "feedback" / s / A).glob("*.html"))
        assert page, f"{s}: no feedback page in {root}"
        out[s]["feedback"] = [_page(p.read_text()) for p in page]
    return out


def _page(html: str) -> str:
    """A feedback page without what differs between any two gradings of one notebook: when the page
    was made, when the grader's kernel committed each answer (its own clock), the addresses of
    objects a cell's output names (`<... object at 0x7f...>`), and the random id nbgrader gives a
    deleted test cell it puts back."""
    html = re.sub(r'id="cell-id=[0-9a-f]{8}"', 'id="cell-id=<random>"', html)
    html = re.sub(r"\d{4}-\d\d-\d\d[ T][\d:.+]+", "<time>", html)
    html = re.sub(r"\d\d:\d\d:\d\d UTC", "<time> UTC", html)
    return re.sub(r" at 0x[0-9a-f]+", " at 0x...", html)


def _submissions(root: Path) -> int:
    from nbgrader.api import Gradebook, MissingEntry

    if not (root / "gradebook.db").exists():
        return 0
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        try:
            return len(gb.find_assignment(A).submissions)
        except MissingEntry:
            return 0


@pytest.fixture(scope="module")
def whole(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    make_class(A, base / "class", release_dir=REPO / "notebooks", roster=ROSTER, answers_dir=ANSWERS)
    root = base / "whole"
    run_cli("grade", A, "--root", root, "--submissions", base / "class", *LIMITS)
    run_cli("feedback", A, "--root", root)
    return base, _snapshot(root)


@pytest.mark.skipif(A not in assignments(), reason=f"no {A} in solutions/")
@pytest.mark.parametrize("n", [1, 2, 3])
def test_n_shards_merge_to_exactly_the_unsharded_grades(whole, n):
    base, expected = whole
    assert len(expected) == len(ROSTER)
    root = base / f"shards-{n}"
    run_cli("collect", A, base / "class", "--root", root)
    # the shards at the same time, on one course folder, as an Indexed Job's pods would
    procs = [subprocess.Popen([PY, "-m", "autograder", "grade", A, "--root", str(root), "--shard", f"{i}/{n}",
                               "-j", "1", *LIMITS], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(n)]
    results = [(p.wait(timeout=900), *p.communicate()) for p in procs]
    for i, (rc, out, err) in enumerate(results):
        assert rc == 0, f"shard {i}/{n}: exit {rc}\n{out}\n{err[-3000:]}"
    counts = [int(re.search(r"shard \d+/\d+: (\d+) student", out).group(1)) for _, out, _ in results]
    assert sum(counts) == len(ROSTER), counts
    assert _submissions(root) == 0        # the shards wrote only their own folders, not the course's gradebook
    m = run_cli("merge", A, "--root", root)
    assert f"merged {len(ROSTER)} graded and 0 failed" in m.stdout, m.stdout
    run_cli("feedback", A, "--root", root)
    got = _snapshot(root)
    assert sorted(got) == sorted(expected)
    for s in expected:
        want, have = dict(expected[s]), dict(got[s])
        pages, pages_got = want.pop("feedback"), have.pop("feedback")
        assert have == want, f"{s} differs:\n" + "\n".join(difflib.unified_diff(
            json.dumps(want, indent=1, sort_keys=True).splitlines(), json.dumps(have, indent=1, sort_keys=True).splitlines(),
            lineterm="", n=1))[:4000]
        assert pages_got == pages, f"{s}'s feedback differs:\n" + "\n".join(difflib.unified_diff(
            "".join(pages).replace("><", ">\n<").splitlines(), "".join(pages_got).replace("><", ">\n<").splitlines(),
            lineterm="", n=0))[:3000]
    # merging again changes nothing, and the course's own `grade` finds every student up to date
    again = run_cli("merge", A, "--root", root)
    assert f"0 graded and 0 failed" in again.stdout and f"{len(ROSTER)} already" in again.stdout
    regrade = run_cli("grade", A, "--root", root, *LIMITS)
    assert f"graded 0, up to date {len(ROSTER)}, failed 0" in regrade.stdout, regrade.stdout
    if n == 2:
        # a submission collected after the shards ran: merge names it and its shard; that shard
        # grades it alone (the others are up to date), and merge takes it
        make_class(A, base / "late", release_dir=REPO / "notebooks", roster=[("late_01", "correct")],
                   answers_dir=ANSWERS)
        run_cli("collect", A, base / "late", "--root", root)
        shard = f"{shard_of('late_01', 2)}/2"
        m = run_cli("merge", A, "--root", root, check=False)
        assert m.returncode == 1 and f"NOT GRADED: late_01: no shard graded this submission (run its shard again: " \
                                     f"--shard {shard})" in m.stdout, m.stdout
        g = run_cli("grade", A, "--root", root, "--shard", shard, *LIMITS)
        assert "graded 1, up to date" in g.stdout, g.stdout
        m = run_cli("merge", A, "--root", root)
        assert "merged 1 graded and 0 failed" in m.stdout and "NOT GRADED" not in m.stdout, m.stdout
    if n == 1:
        # a student regraded unsharded since: the older shard result does not replace it
        run_cli("grade", A, "--root", root, "--student", "wrong_01", "--force", *LIMITS)
        newer = json.loads((root / "autograded" / ".autograder" / A / "wrong_01.json").read_text())["graded_at"]
        assert "merged 0 graded" in run_cli("merge", A, "--root", root).stdout
        assert json.loads((root / "autograded" / ".autograder" / A / "wrong_01.json").read_text())["graded_at"] == newer
