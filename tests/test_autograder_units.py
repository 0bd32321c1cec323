"""The autograder on a tiny course of its own (fast kernels): collect, sandbox limits, warnings,
feedback without hidden tests, grading without a sandbox (refused; --no-sandbox), crash safety,
export, release.

Where bubblewrap does not work, the tests that need it skip (saying why) and the others grade
with sandbox=False (--no-sandbox): `make test` passes with and without it; CI installs it.

The big end-to-end class on a real course notebook is tests/test_autograder_class.py.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import time
import zipfile
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.grading.autograde import read_submission
from autograder.intake.collect import collect
from autograder.course import Course
from autograder.outputs.feedback import feedback, leaked_lines, source_secrets
from autograder.grading.grade import cell_scores, grade
from autograder.grading.merge import merge_submission
from autograder.grading.preflight import saved_preflight
from autograder.sandbox.bwrap import Limits
from autograder.grading.status import status_path
from course_lib.exercises.question_ids import cell_id
from tiny_course import (FAST, NO_SANDBOX_FLAG, PY, REPO, SANDBOX, SANDBOX_ARG, run_cli, student_nb,
                         write_class)

pytestmark = pytest.mark.filterwarnings("ignore::sqlalchemy.exc.SAWarning")


@pytest.fixture(scope="module")
def course(tiny):
    """The session's tiny course (tests/conftest.py): read-only here, copied where a test changes it."""
    return tiny


# ---------------------------------------------------------------------------------------------
# collect
# ---------------------------------------------------------------------------------------------
def _tree(path: Path) -> dict:
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(path.rglob("*")) if p.is_file()}


def test_collect_reports_and_skips_bad_files_and_never_touches_others(course, tmp_path):
    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    good = student_nb(course, "t2", "first")
    good2 = student_nb(course, "t2", "second")
    v3 = json.dumps({"nbformat": 3, "nbformat_minor": 0, "worksheets": [], "metadata": {}}).encode()
    src = write_class(tmp_path / "in", course, "t2", {
        "ann": {"first.ipynb": good, "second.ipynb": good2, "notes.txt": b"my notes"},
        "bob": {"first.ipynb": good},                                   # missing second
        "cat": {"first.ipynb": good[: len(good) // 2], "second.ipynb": good2},   # truncated JSON
        "dan": {"first.ipynb": v3},                                     # nbformat 3 only
        "eve": {"first.ipynb": b"%PDF-1.4 not a notebook"},
        "Fay": {"first.ipynb": good, "second.ipynb": good2},
        "fay": {"first.ipynb": good, "second.ipynb": good2},           # the same student twice
        "bad id!": {"first.ipynb": good},
    })
    (src / "stray.ipynb").write_bytes(good)
    before = _tree(src)
    # fay was collected earlier: a duplicate in the new batch must not touch that copy
    (c.submitted / "fay" / "t2").mkdir(parents=True)
    (c.submitted / "fay" / "t2" / "first.ipynb").write_bytes(b"earlier copy")

    r = collect(c, "t2", src)
    assert _tree(src) == before, "collect modified the originals"
    assert sorted(r.collected) == ["ann", "bob", "cat"]
    assert r.collected["bob"] == ["first"] and r.collected["cat"] == ["second"]
    text = r.format()
    for needle in ("ann: notes.txt: not a notebook", "bob: second.ipynb: missing", "cat: first.ipynb: not valid JSON",
                   "dan: first.ipynb: nbformat 3", "eve: first.ipynb: not valid JSON", "the same student twice",
                   "not a usable student id", "stray.ipynb: not in a student folder"):
        assert needle in text, (needle, text)
    assert not (c.submitted / "dan").exists() and not (c.submitted / "eve").exists()
    assert (c.submitted / "fay" / "t2" / "first.ipynb").read_bytes() == b"earlier copy"
    assert not (c.submitted / "ann" / "t2" / "notes.txt").exists()
    assert (c.submitted / "ann" / "t2" / "first.ipynb").read_bytes() == good


def test_collect_from_an_lms_zip(course, tmp_path):
    c = Course(root=tmp_path / "c", source=course.source, release=course.release)
    good = student_nb(course, "t1", "one")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("submissions/ann/one.ipynb", good)                       # folder style
        z.writestr("submissions/ann/__MACOSX/._one.ipynb", b"junk")
        z.writestr("submissions/bob/one.ipynb", b"{not json")
        z.writestr("submissions/../../evil.ipynb", good)                   # zip-slip
    zpath = tmp_path / "folders.zip"
    zpath.write_bytes(buf.getvalue())
    r = collect(c, "t1", zpath)
    assert list(r.collected) == ["ann"]
    assert "unsafe path" in r.format() and "bob: one.ipynb: not valid JSON" in r.format()
    assert not (tmp_path / "evil.ipynb").exists()

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:                                    # Canvas: flat names
        z.writestr("carol_12_345_one.ipynb", good)
        z.writestr("dave_late_13_346_one-1.ipynb", good)
        z.writestr("readme.txt", b"?")
    zpath = tmp_path / "canvas.zip"
    zpath.write_bytes(buf.getvalue())
    r = collect(c, "t1", zpath)
    assert sorted(r.collected) == ["carol", "dave"]
    assert (c.submitted / "dave" / "t1" / "one.ipynb").read_bytes() == good


# ---------------------------------------------------------------------------------------------
# grading the tiny course
# ---------------------------------------------------------------------------------------------
THREADS = ("import threading, time\n_started = 0\n"
           "try:\n    for _ in range(2000):\n"
           "        threading.Thread(target=time.sleep, args=(5,), daemon=True).start(); _started += 1\n"
           "except RuntimeError:\n    pass\nprint('THREADS', _started)")
LEAK = "print('HISTORY')\nfor _src in In:\n    print(_src)"


@pytest.fixture(scope="module")
def graded(course, tmp_path_factory):
    """t1 graded once, sandboxed if this machine can."""
    base = tmp_path_factory.mktemp("tiny-graded")
    c = Course(root=base / "course", source=course.source, release=course.release)
    src = write_class(base / "in", course, "t1", {
        "right": {"one.ipynb": student_nb(course, "t1", "one")},
        "wrong": {"one.ipynb": student_nb(course, "t1", "one", "answer = 41", explore=LEAK)},
        "warny": {"one.ipynb": student_nb(course, "t1", "one",
                                          "import warnings\nwarnings.simplefilter('always')\n"
                                          "warnings.filterwarnings('error')\nanswer = 42")},
        "threads": {"one.ipynb": student_nb(course, "t1", "one", THREADS + "\nanswer = 42")},
        "blank": {"one.ipynb": student_nb(course, "t1", "one", "# YOUR CODE HERE\nraise NotImplementedError()")},
    })
    collect(c, "t1", src)
    summary = grade(c, "t1", limits=Limits(cell_timeout=20, notebook_timeout=120, memory_mb=2048, tasks=64),
                    progress=False, sandbox=SANDBOX_ARG)
    return c, summary


def _outputs(course, student, a, nb):
    book = nbformat.read(str(course.autograded / student / a / f"{nb}.ipynb"), as_version=4)
    return {cell_id(c) or c.source[:20]: c.get("outputs", [])
            for c in book.cells if c.cell_type == "code"}


def test_tiny_class_scores(graded):
    c, summary = graded
    assert not summary.failed and sorted(summary.graded) == ["blank", "right", "threads", "warny", "wrong"]
    scores = cell_scores(c.db_url, "t1")
    total = {s: sum(v or 0 for v in cells.values()) for s, cells in scores.items()}
    # right: 1 + 2 + 1 (the warning test cell passes in spite of its warnings)
    assert total == {"right": 4, "warny": 4, "threads": 4, "wrong": 2, "blank": 1}


def test_warnings_never_reach_a_test_cell(graded):
    c, _ = graded
    for s in ("right", "warny"):
        outs = _outputs(c, s, "t1", "one")
        assert not [o for o in outs["t1one_warns"] if o.get("name") == "stderr" or o["output_type"] == "error"]
    assert cell_scores(c.db_url, "t1")["warny"]["one/t1one_warns"] == 1.0


def test_process_limit_inside_the_sandbox(graded):
    c, _ = graded     # sandboxed or not, as root the kernel runs as nobody: the limit binds
    text = "".join(o.get("text", "") for o in _outputs(c, "threads", "t1", "one")["t1one_q1_answer"])
    started = int(text.split("THREADS", 1)[1].split()[0])
    assert started < 200, f"{started} threads started under a limit of 64 tasks"


def test_feedback_shows_no_hidden_test_and_only_outputs_that_never_saw_one(graded):
    c, _ = graded
    r = feedback(c, "t1")
    assert not r["failed"] and not r["leaks"] and len(r["written"]) == 5
    secrets = source_secrets(c, "t1")
    assert any("SECRET-HIDDEN-LINE" in s for s in secrets)
    for page in r["written"]:
        html = Path(page).read_text()
        assert "SECRET-HIDDEN-LINE" not in html and "_secret_truth_value = " not in html
        assert "BEGIN HIDDEN TESTS" not in html
        assert not leaked_lines(html, secrets)
    wrong = (c.feedback / "wrong" / "t1" / "one.html").read_text()
    assert "answer is not the right number" in wrong          # the assertion message stays
    assert "hidden tests: not shown" in wrong
    # the student printed the kernel's input history: the hidden tests had not run yet, so it
    # shows the cells before it and nothing of the hidden test (no scrubbing needed)
    history = wrong.split("HISTORY", 2)[-1]
    assert "answer = 41" in history and "_secret_truth_value" not in history and "removed" not in history


def test_rerun_skips_what_is_up_to_date_and_force_regrades_identically(graded):
    c, _ = graded
    before = cell_scores(c.db_url, "t1")
    s = grade(c, "t1", limits=Limits(cell_timeout=20, notebook_timeout=120, memory_mb=2048, tasks=64),
              progress=False, sandbox=SANDBOX_ARG)
    assert s.graded == [] and len(s.skipped) == 5
    s = grade(c, "t1", students=["wrong"], force=True,
              limits=Limits(cell_timeout=20, notebook_timeout=120, memory_mb=2048, tasks=64), progress=False,
              sandbox=SANDBOX_ARG)
    assert s.graded == ["wrong"] and not s.preflight_reused      # --force reruns the preflight too
    assert cell_scores(c.db_url, "t1") == before


def test_a_matching_preflight_is_reused_and_anything_else_reruns_it(graded, tmp_path):
    c, _ = graded
    before = cell_scores(c.db_url, "t1")
    limits = Limits(cell_timeout=20, notebook_timeout=120, memory_mb=2048, tasks=64)
    status_path(c, "t1", "wrong").unlink()           # no longer up to date: graded again
    s = grade(c, "t1", limits=limits, progress=False, sandbox=SANDBOX_ARG)
    assert s.graded == ["wrong"] and s.preflight_reused
    assert cell_scores(c.db_url, "t1") == before
    record = json.loads((c.state / "t1" / "_preflight.json").read_text())
    assert saved_preflight(c, "t1", SANDBOX, ("course_lib",), record["limits"]) == record
    # other preflight limits, another solution: not reused
    assert saved_preflight(c, "t1", SANDBOX, ("course_lib",), {**record["limits"], "memory_mb": 1024}) is None
    source = tmp_path / "source"
    shutil.copytree(c.source, source)
    one = source / "t1" / "one.ipynb"
    one.write_text(one.read_text().replace("answer = 42", "answer = 6 * 7"))
    changed = Course(root=c.root, source=source, release=c.release)
    assert saved_preflight(changed, "t1", SANDBOX, ("course_lib",), record["limits"]) is None


def test_merge_is_one_transaction(graded, tmp_path):
    """A merge that fails half-way leaves nothing of that student behind."""
    c, _ = graded
    data = read_submission(c.db_url, "t1", "right")
    data["notebooks"]["one"]["late_submission_penalty"] = object()   # cannot be stored: the flush fails
    dump_before = "\n".join(sqlite3.connect(str(c.db)).iterdump())
    with pytest.raises(Exception):
        merge_submission(c.db_url, "t1", "newcomer", data)
    assert "\n".join(sqlite3.connect(str(c.db)).iterdump()) == dump_before
    assert "newcomer" not in cell_scores(c.db_url, "t1")


def test_no_sandbox_flag_warns_and_grades_as_nobody(course, tmp_path, capsys):
    root = tmp_path / "c"
    whoami = "import os\nprint('UID', os.getuid())"
    src = write_class(tmp_path / "in", course, "t1", {
        "right": {"one.ipynb": student_nb(course, "t1", "one", explore=whoami)},
        "wrong": {"one.ipynb": student_nb(course, "t1", "one", "answer = 41")},
    })
    assert main(["grade", "t1", "--root", str(root), "--source", str(course.source), "--release-dir",
                 str(course.release), "--submissions", str(src), "--no-sandbox", *FAST]) == 0
    out = capsys.readouterr()
    assert "UNSANDBOXED" in out.out + out.err and "NOT SANDBOXED" in out.out
    scores = cell_scores("sqlite:///" + str(root / "gradebook.db"), "t1")
    assert {s: sum(v.values()) for s, v in scores.items()} == {"right": 4, "wrong": 2}
    outs = _outputs(Course(root=root, source=course.source, release=course.release), "right", "t1", "one")
    uid = [o for cell in outs.values() for o in cell if "UID" in o.get("text", "")]
    if os.geteuid() == 0:      # never the instructor's rights, even without the sandbox
        assert uid and uid[0]["text"].split()[1] == "65534", uid


def test_without_bubblewrap_grading_refuses_with_install_help(course, tmp_path):
    """A machine without bwrap (PATH without it, or AUTOGRADER_NO_SANDBOX): exit 2, the install
    instructions and --no-sandbox named, and nothing graded."""
    root = tmp_path / "c"
    src = write_class(tmp_path / "in", course, "t1", {"ann": {"one.ipynb": student_nb(course, "t1", "one")}})
    common = ["--root", root, "--source", course.source, "--release-dir", course.release]
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python").symlink_to(PY)
    for env in ({"PATH": str(bindir)}, {"AUTOGRADER_NO_SANDBOX": "1"}):
        p = run_cli("grade", "t1", "--submissions", src, *common, *FAST, env=env, check=False)
        assert p.returncode == 2, (env, p.stdout, p.stderr[-2000:])
        assert "apt-get install bubblewrap" in p.stderr and "--no-sandbox" in p.stderr, p.stderr
        assert not cell_scores("sqlite:///" + str(root / "gradebook.db"), "t1")


def test_probe_says_why_bubblewrap_is_missing(monkeypatch):
    import autograder.sandbox.bwrap as sb

    sb.probe.cache_clear()
    try:
        monkeypatch.setattr(sb, "bwrap_path", lambda: None)
        monkeypatch.delenv("AUTOGRADER_NO_SANDBOX", raising=False)
        works, why = sb.probe()
        assert not works and "bubblewrap" in why
    finally:
        sb.probe.cache_clear()


def test_export_has_a_column_per_notebook_and_the_total(course, tmp_path):
    root = tmp_path / "c"
    common = ["--root", root, "--source", course.source, "--release-dir", course.release]
    t2 = write_class(tmp_path / "t2", course, "t2", {
        "ann": {"first.ipynb": student_nb(course, "t2", "first"), "second.ipynb": student_nb(course, "t2", "second")},
        "bob": {"first.ipynb": student_nb(course, "t2", "first", "answer = 1")},          # no second notebook
    })
    t1 = write_class(tmp_path / "t1", course, "t1", {"bob": {"one.ipynb": student_nb(course, "t1", "one")}})
    assert main(["grade", "t2", "--submissions", str(t2), *map(str, common), *FAST, *NO_SANDBOX_FLAG]) == 0
    assert main(["grade", "t1", "--submissions", str(t1), *map(str, common), *FAST, *NO_SANDBOX_FLAG]) == 0
    out = tmp_path / "grades.csv"
    assert main(["export", "--out", str(out), "--no-max", *map(str, common)]) == 0
    rows = list(csv.DictReader(out.open()))
    assert [r["student_id"] for r in rows] == ["ann", "bob"]
    assert list(rows[0])[4:] == ["t1/one", "t1/status", "t1/flag", "t1/ledger", "t1/variant", "t1/late", "t1/copies",
                                 "t2/first", "t2/second", "t2/status", "t2/flag", "t2/ledger", "t2/variant",
                                 "t2/late", "t2/copies", "late_penalty", "total", "mean_percent"]
    # no due date: nothing to say about lateness; each assignment weighs the same (t1 missing: 0%)
    assert {r[c] for r in rows for c in ("t1/late", "t2/late", "t1/copies", "t2/copies")} == {""}
    assert (rows[0]["mean_percent"], rows[1]["mean_percent"]) == ("50.0", "62.5")
    # the tiny course's questions do not vary: nothing to say
    assert {r[c] for r in rows for c in ("t1/variant", "t2/variant")} == {""}
    ann, bob = rows
    assert (ann["t1/one"], ann["t2/first"], ann["t2/second"], ann["total"]) == ("", "4", "4", "8")
    assert (bob["t1/one"], bob["t2/first"], bob["t2/second"], bob["total"]) == ("4", "2", "0", "6")
    assert (ann["t1/status"], ann["t2/status"], bob["t1/status"]) == ("missing", "graded", "graded")
    # graded without the hub's ledger: "not vouched" (information), empty where nothing was graded
    assert (ann["t1/ledger"], ann["t2/ledger"], bob["t1/ledger"]) == ("", "not vouched", "not vouched")
    # the synthetic notebooks carry no prediction record: flagged as such (issue 15), and only that
    for flag in (ann["t1/flag"], ann["t2/flag"], bob["t1/flag"]):
        assert all("no prediction record" in part for part in flag.split("; ") if part), flag
    assert main(["export", "--out", str(out), *map(str, common)]) == 0     # the max row by default
    assert list(csv.DictReader(out.open()))[-1]["total"] == "12"


def test_a_crash_in_the_middle_leaves_a_consistent_gradebook(course, tmp_path):
    """Kill `grade` (and its workers) after the first student is merged; the gradebook holds
    whole students only, and running again finishes the job."""
    root = tmp_path / "c"
    students = {f"s{i}": {"one.ipynb": student_nb(course, "t1", "one", "answer = 42" if i % 2 else "answer = 1")}
                for i in range(6)}
    src = write_class(tmp_path / "in", course, "t1", students)
    cmd = [PY, "-m", "autograder", "grade", "t1", "--root", str(root), "--source", str(course.source),
           "--release-dir", str(course.release), "--submissions", str(src), "-j", "2",
           "--timeout", "20", "--memory", "2048", *NO_SANDBOX_FLAG]
    p = subprocess.Popen(cmd, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                         start_new_session=True)
    deadline = time.monotonic() + 120
    for line in p.stderr:
        if "grading t1 [" in line or time.monotonic() > deadline:
            break
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()
    db = root / "gradebook.db"
    assert sqlite3.connect(str(db)).execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    expected = {s: (4 if int(s[1:]) % 2 else 2) for s in students}
    partial = {s: sum(v or 0 for v in cells.values()) for s, cells in cell_scores("sqlite:///" + str(db), "t1").items()}
    assert 1 <= len(partial) < len(students)
    assert all(partial[s] == expected[s] for s in partial), partial      # whole students only
    run_cli(*cmd[3:])
    final = {s: sum(v or 0 for v in cells.values()) for s, cells in cell_scores("sqlite:///" + str(db), "t1").items()}
    assert final == expected


def test_release_writes_notebooks_and_the_exchange(course, tmp_path):
    out, ex = tmp_path / "release", tmp_path / "exchange"
    args = ["release", "t2", "--source", str(course.source), "--release-dir", str(out), "--exchange", str(ex)]
    assert main(args) == 0
    for nb in ("first", "second"):
        released = nbformat.read(str(out / "t2" / f"{nb}.ipynb"), as_version=4)
        text = json.dumps(released)
        assert "BEGIN HIDDEN TESTS" not in text and "answer = 42" not in text
        assert (ex / "roofline" / "outbound" / "t2" / f"{nb}.ipynb").is_file()
    assert main(args) == 0      # again: replaces the released copies


def test_a_released_notebook_tells_students_its_due_date(course, tmp_path):
    """Issue 47: nbgrader's Assignment List shows no due date; the exchange's copy opens with it
    (a new ungraded cell, once however often it is released), and the committed release has none."""
    from autograder.authoring.release import DUE_CELL

    out, ex, root = tmp_path / "release", tmp_path / "exchange", tmp_path / "course"
    args = ["release", "t2", "--source", str(course.source), "--release-dir", str(out), "--exchange", str(ex),
            "--root", str(root)]
    assert main(args + ["--due", "2027-02-01T23:59+01:00"]) == 0
    assert main(args) == 0      # released again without --due: the gradebook's due date stands
    for nb in ("first", "second"):
        book = nbformat.read(str(ex / "roofline" / "outbound" / "t2" / f"{nb}.ipynb"), as_version=4)
        dues = [c for c in book.cells if c.get("id") == DUE_CELL]
        assert len(dues) == 1 and book.cells[0] is dues[0]
        assert "Due Monday 01 February 2027, 22:59 UTC" in dues[0].source
        assert DUE_CELL not in json.dumps(nbformat.read(str(out / "t2" / f"{nb}.ipynb"), as_version=4))


def test_unknown_assignment_is_a_clear_error(course):
    with pytest.raises(SystemExit, match="unknown assignment 'nope'"):
        main(["grade", "nope", "--source", str(course.source)])


def test_the_release_grading_compares_with_is_the_one_students_have(tmp_path):
    """Grading regenerates the release (autograder.course.ensure_assignment): with the shared
    header in place, it is the committed student notebook, cell for cell."""
    from autograder.course import ensure_assignment

    a = sorted(p.parent.name for p in (REPO / "notebooks").glob("*/*.ipynb"))[0]
    ensure_assignment(Course(root=tmp_path / "c"), a, release=tmp_path / "release")
    for committed in sorted((REPO / "notebooks" / a).glob("*.ipynb")):
        regenerated = nbformat.read(str(tmp_path / "release" / a / committed.name), as_version=4)
        assert regenerated == nbformat.read(str(committed), as_version=4), committed.name
