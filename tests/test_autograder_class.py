"""End to end on a real course notebook: a synthetic class of 21 gradable submissions (plus one
that is not a notebook), generated from the student release by tests/synthetic.py, collected,
graded, fed back, reported and exported through `python -m autograder`, as an instructor would.

Expected scores are exact, per test cell. The hostile student tries to read the solutions, the
gradebook and another student's work, to write the gradebook and the course folder, to reach the
network (a listener of this test on the host's loopback), and to steal the answers; it prints
what it got, and the test reads that from its autograded notebook.
"""
from __future__ import annotations

import csv
import json
import socket
import sqlite3
import threading
from collections import Counter
from pathlib import Path

import nbformat
import pytest

from autograder.course import Course
from autograder.outputs.feedback import leaked_lines, source_secrets
from autograder.grading.grade import cell_scores
from autograder.authoring.release import assignments
from autograder.sandbox.bwrap import probe
from course_lib.exercises.question_ids import metadata
from synthetic import KINDS, default_roster, make_class
from tiny_course import run_cli

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
RELEASE = REPO / "notebooks"     # the committed release: test_notebooks checks it is what generate() makes
ANSWERS = REPO / "tests" / "answers"   # each lesson's wrong answers
CANDIDATES = [a for a in assignments() if (ANSWERS / f"a{a}.py").is_file()] if SOLUTIONS.is_dir() else []
A = CANDIDATES[0] if CANDIDATES else None
SANDBOX, WHY_NOT = probe()
CANARY = "AUTOGRADER_TEST_CANARY"

pytestmark = [
    pytest.mark.skipif(A is None, reason="no assignment with tests/answers/a<assignment>.py yet"),
    pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning"),
]


def cli(*args, env=None):
    return run_cli(*args, env=env, check=False)     # with env (the canary): a child process


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    base = tmp_path_factory.mktemp("class")
    root = base / "course"
    nb = sorted((SOLUTIONS / A).glob("*.ipynb"))[0].stem

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    connections = []
    stop = threading.Event()

    def accept():
        while not stop.is_set():
            try:
                connections.append(listener.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()

    targets = {
        "read": {"solution": str(SOLUTIONS / A / f"{nb}.ipynb"), "solutions_dir": str(SOLUTIONS),
                 "gradebook": str(root / "gradebook.db"), "gradebook_relative": "../../gradebook.db",
                 "other_student": str(root / "submitted" / "correct_01" / A / f"{nb}.ipynb"),
                 "other_autograded": str(root / "autograded" / "correct_01" / A / f"{nb}.ipynb"),
                 "course_root": str(root), "own_notebook": f"{nb}.ipynb"},
        "write": {"course_root": str(root / "PWNED"), "solutions": str(SOLUTIONS / "PWNED")},
        "net": {"host_loopback": ["127.0.0.1", port]},     # nothing here addresses anything but 127.0.0.1
        "gradebook": str(root / "gradebook.db"),
    }
    kinds = KINDS if SANDBOX else tuple(k for k in KINDS if k != "hostile")
    manifest = make_class(A, base / "class", release_dir=RELEASE, roster=default_roster(kinds=kinds),
                          targets=targets, answers_dir=ANSWERS)
    (base / "class" / "correct_01" / "notes.txt").write_text("not a notebook")
    (base / "class" / "README.md").write_text("a stray file")
    before = sorted(p.name for p in SOLUTIONS.iterdir())

    env = {CANARY: "s3cret-canary"}
    common = ["--root", root]
    grade = cli("grade", A, "--submissions", base / "class", "--timeout", 8, "--notebook-timeout", 90,
                "--memory", 2048, "--out", base / "grades.csv", "-q", *common, *([] if SANDBOX else ["--no-sandbox"]),
                env=env)
    again = cli("grade", A, "-q", *common, *([] if SANDBOX else ["--no-sandbox"]))
    fb = cli("feedback", A, *common)
    rep = cli("report", A, *common)
    exp = cli("export", "--out", base / "export.csv", *common)
    stop.set()
    thread.join()
    listener.close()
    return {"base": base, "root": root, "course": Course(root=root), "nb": nb, "manifest": manifest,
            "grade": grade, "again": again, "feedback": fb, "report": rep, "export": exp,
            "connections": connections, "solutions_before": before}


def test_the_commands_succeed(run):
    for step in ("grade", "again", "feedback", "report", "export"):
        p = run[step]
        assert p.returncode == 0, f"{step}: exit {p.returncode}\n{p.stdout}\n{p.stderr[-3000:]}"
    gradable = [s for s, e in run["manifest"]["students"].items() if e["gradable"]]
    assert len(gradable) >= 20
    assert f"graded {len(gradable)}, up to date 0, failed 0" in run["grade"].stdout
    assert ("sandboxed (" if SANDBOX else "NOT SANDBOXED") in run["grade"].stdout


def test_collect_reported_what_it_skipped(run):
    out = run["grade"].stdout
    assert "not_a_notebook: " in out and "not valid JSON" in out
    assert "correct_01: notes.txt: not a notebook" in out
    assert "README.md: not in a student folder" in out
    assert not (run["root"] / "submitted" / "not_a_notebook").exists()


def test_every_test_cell_scores_exactly_as_planted(run):
    scores = cell_scores(run["course"].db_url, A)
    m = run["manifest"]
    wrong = []
    for s, e in m["students"].items():
        if not e["gradable"]:
            assert s not in scores
            continue
        for nb, cells in e["expected"].items():
            for t, want in cells.items():
                got = scores[s].get(f"{nb}/{t}")
                if (got or 0.0) != want:
                    wrong.append((s, e["kind"], t, want, got))
    assert not wrong, wrong


def test_grades_csv_and_export(run):
    m = run["manifest"]
    gradable = {s: e for s, e in m["students"].items() if e["gradable"]}
    rows = {r["student_id"]: r for r in csv.DictReader((run["base"] / "grades.csv").open())}
    assert set(rows) == set(gradable)
    for s, e in gradable.items():
        assert float(rows[s]["total"]) == sum(e["total"].values())
    top = {r["max_score"] for r in rows.values()}
    rows = {r["student_id"]: r for r in csv.DictReader((run["base"] / "export.csv").open())}
    # the export ends with the maximum of each column (issue 34): the one assignment's max score
    assert [float(rows.pop("(max)")["total"])] == [float(t) for t in top]
    assert set(rows) == set(gradable)
    col = f"{A}/{run['nb']}"
    assert all(float(rows[s][col]) == e["total"][run["nb"]] for s, e in gradable.items())


def test_rerun_is_idempotent(run):
    n = sum(e["gradable"] for e in run["manifest"]["students"].values())
    assert f"graded 0, up to date {n}, failed 0" in run["again"].stdout
    con = sqlite3.connect(str(run["course"].db))
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_runaway_kernels_are_stopped_and_reported(run):
    assert "stopped early: stubborn_loop" in run["grade"].stdout
    book = nbformat.read(str(run["root"] / "autograded" / "infinite_loop" / A / f"{run['nb']}.ipynb"), as_version=4)
    assert any(o.get("ename") in ("KeyboardInterrupt", "CellTimeoutError")
               for c in book.cells if c.cell_type == "code" for o in c.get("outputs", []))
    bomb = nbformat.read(str(run["root"] / "autograded" / "memory_bomb" / A / f"{run['nb']}.ipynb"), as_version=4)
    assert any(o.get("ename") == "MemoryError" for c in bomb.cells if c.cell_type == "code" for o in c.get("outputs", []))


def test_warnings_cost_nothing(run):
    book = nbformat.read(str(run["root"] / "autograded" / "warnings" / A / f"{run['nb']}.ipynb"), as_version=4)
    stderr_in = Counter()
    for c in book.cells:
        m = metadata(c)
        if c.cell_type == "code" and any(o.get("name") == "stderr" for o in c.get("outputs", [])):
            stderr_in["test" if m.get("grade") else "other"] += 1
    assert stderr_in["other"] >= 1 and stderr_in["test"] == 0


def _attack_report(run):
    book = nbformat.read(str(run["root"] / "autograded" / "hostile" / A / f"{run['nb']}.ipynb"), as_version=4)
    for c in book.cells:
        for o in c.get("outputs", []):
            if "ATTACK-REPORT " in o.get("text", ""):
                return json.loads(o["text"].split("ATTACK-REPORT ", 1)[1].splitlines()[0])
    raise AssertionError("the hostile submission printed no report")


@pytest.mark.skipif(not SANDBOX, reason=f"no sandbox here: {WHY_NOT}")
def test_hostile_submission_reads_writes_and_reaches_nothing(run):
    r = _attack_report(run)
    for name, result in r["read"].items():
        if name == "own_notebook":      # its own submitted copy: allowed, and free of hidden tests
            assert result.startswith("read:") and "BEGIN HIDDEN TESTS" not in result and "BEGIN SOLUTION" not in result
        else:
            assert result.startswith("blocked:"), (name, result[:200])
    assert all(v.startswith("blocked:") for v in r["write"].values()), r["write"]
    assert all(v.startswith("blocked:") for v in r["net"].values()), r["net"]
    assert not run["connections"], "the sandbox reached a port on the host's loopback"
    assert CANARY not in r["env"], "the instructor's environment leaked into the kernel"
    # nothing was written where it aimed
    con = sqlite3.connect(str(run["course"].db))
    tables = {t for (t,) in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "pwned" not in tables
    assert con.execute("SELECT COUNT(*) FROM grade WHERE auto_score = 99").fetchone()[0] == 0
    assert not (run["root"] / "PWNED").exists()
    assert sorted(p.name for p in SOLUTIONS.iterdir()) == run["solutions_before"]
    # and it scored only the form points (exact scores: test_every_test_cell_scores_exactly_as_planted)
    e = run["manifest"]["students"]["hostile"]
    assert all(state == "wrong" for nb in e["planted"].values() for state in nb.values())


def test_feedback_without_hidden_tests(run):
    assert "WITHHELD" not in run["feedback"].stdout
    pages = sorted((run["root"] / "feedback").glob(f"*/{A}/*.html"))
    assert len(pages) == sum(e["gradable"] for e in run["manifest"]["students"].values())
    secrets = source_secrets(run["course"], A)
    assert secrets
    for page in pages:
        html = page.read_text()
        assert "BEGIN HIDDEN TESTS" not in html and not leaked_lines(html, secrets), page
    wrong = (run["root"] / "feedback" / "wrong_all" / A / f"{run['nb']}.html").read_text()
    # a failed check is an AssertionError (course_lib.exercises.checks.CheckFailed) and shows its message
    assert ("AssertionError" in wrong or "CheckFailed" in wrong) and "hidden tests: not shown" in wrong


def test_report_counts_are_the_planted_predictions(run):
    m = run["manifest"]
    out = run["root"] / "reports" / A
    rows = list(csv.DictReader((out / "misconceptions.csv").open()))
    assert (out / "misconceptions.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    graded = {s: e for s, e in m["students"].items() if e["gradable"]}
    checked = 0
    for nb in m["notebooks"]:
        for answer in m["answers"][nb]:
            states = Counter(e["planted"][nb][answer] for e in graded.values())
            mine = [r for r in rows if r["notebook"] == nb and r["answer_cell"] == answer]
            for var in sorted({r["variable"] for r in mine}):
                rs = [r for r in mine if r["variable"] == var]
                counts = {r["answer"]: int(r["count"]) for r in rs}
                truth = [r["answer"] for r in rs if r["is_truth"] == "True"]
                assert len(truth) == 1 and counts[truth[0]] == states["correct"], (answer, var, counts, states)
                assert counts.get("(no answer)", 0) == states["blank"] + states["broken"], (answer, var, counts)
                others = [n for a, n in counts.items() if a not in (truth[0], "(no answer)")]
                assert sum(others) == states["wrong"], (answer, var, counts, states)
                share = float(rs[0]["share_wrong"])
                assert share == pytest.approx((len(graded) - states["correct"]) / len(graded), abs=1e-3)
                checked += 1
    assert checked >= 4
    scores = list(csv.DictReader((out / "scores.csv").open()))
    assert sorted(float(r["score"]) for r in scores) == sorted(sum(e["total"].values()) for e in graded.values())
