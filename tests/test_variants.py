"""Every student their own numbers (course_lib.questions.variants, autograder.variants).

* the draw: the same key always gives the same numbers, 200 students spread over every
  admissible variant of every question with a space, and no key gives the lesson's own;
* admissibility: every question's space has admissible variants, the canonical one among them;
  each admissible variant keeps every listed mistake outside 1.5 x the tolerance and its
  honest answers pass grade() under every STANDARD perturbation; the filter really rejects;
* whose numbers: the grader's / hub's environment wins over a file a student set;
* commits record the variant, and the grader flags a commit made for other numbers;
* the secret never reaches the student repository.
"""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from course_lib.exercises.answer_forms import Number
from course_lib.exercises.misconceptions import CheckFailed
from course_lib.questions import all_questions, grade, student_key
from course_lib.questions import variants as V
from course_lib.sensitivity import STANDARD, perturb

REPO = Path(__file__).resolve().parent.parent
SECRET = b"a test course secret, 32 bytes.."
SPACED = sorted(q for q, d in all_questions().items() if d.space)
STUDENTS = [f"student{i:03d}" for i in range(200)]


@pytest.fixture
def no_identity(monkeypatch, tmp_path):
    """A kernel with no id: no environment, no file (the working folder and home are empty)."""
    monkeypatch.delenv(V.KEY_ENV, raising=False)
    monkeypatch.delenv(V.STUDENT_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    return tmp_path


def test_some_lesson_asks_with_variants():
    assert {"phases_q2", "phases_q3", "phases_q4", "phases_q5"} <= set(SPACED)


def test_the_key_depends_on_secret_and_student():
    k = student_key(SECRET, "alice")
    assert len(k) == 32 and k == student_key(SECRET, "alice")
    assert k != student_key(SECRET, "alice2") and k != student_key(SECRET[::-1], "alice")
    with pytest.raises(ValueError, match="at least 16 bytes"):
        student_key(b"short", "alice")


@pytest.mark.parametrize("qid", SPACED)
def test_same_key_same_numbers_and_200_students_see_every_variant(qid):
    options = V.admissible(qid)
    keys = [student_key(SECRET, s) for s in STUDENTS]
    assert [V.draw(k, qid) for k in keys] == [V.draw(k, qid) for k in keys]
    seen = Counter(json.dumps(V.draw(k, qid), sort_keys=True) for k in keys)
    assert set(seen) == {json.dumps(g, sort_keys=True) for g in options}, \
        f"{qid}: 200 students drew {len(seen)} of its {len(options)} admissible variants"
    assert min(seen.values()) >= 200 / len(options) / 3, f"{qid}: a lopsided draw {seen}"


def test_questions_draw_independently():
    """One student's Q3 does not decide their Q4: the pairs of 200 students spread out."""
    pairs = {(json.dumps(V.draw(k, "phases_q3")), json.dumps(V.draw(k, "phases_q4")))
             for k in (student_key(SECRET, s) for s in STUDENTS)}
    assert len(pairs) > max(len(V.admissible("phases_q3")), len(V.admissible("phases_q4")))


def test_no_key_is_the_lessons_own_numbers(no_identity):
    for qid in SPACED:
        q = all_questions()[qid]
        assert V.draw("", qid) == q.givens == V.current(qid)


@pytest.mark.parametrize("qid", SPACED)
def test_every_space_has_admissible_variants_the_canonical_one_among_them(qid):
    q = all_questions()[qid]
    options = V.admissible(qid)
    assert q.givens in options, f"{qid}: the lesson's own numbers are not admissible: {V.problems(qid, q.givens)}"
    assert len(options) >= 2, f"{qid}: a space with one admissible variant gives everyone the same numbers"


def _variant_cases():
    return [(qid, g) for qid in SPACED for g in V.admissible(qid)]


@pytest.mark.parametrize("qid,givens", _variant_cases(),
                         ids=[f"{q}-" + "-".join(str(g[k]) for k in all_questions()[q].space) for q, g in _variant_cases()])
def test_an_admissible_variant_keeps_the_course_margins(qid, givens):
    """Checked here independently of the filter: every listed mistake >= 1.5 x the tolerance
    away; the honest answers (this variant's truths, as computed without any change) pass the
    real hidden test under every standard perturbation where a regime, choice or ratio is
    graded, and a listed mistake fails it."""
    q = all_questions()[qid]
    sol = q.solution(**givens)
    honest = {n: t.value for n, t in sol.truths.items()}
    grade(qid, namespace=honest, givens=givens)
    for name in q.answer_names:
        spec, t = q.specs[name], sol.truths[name]
        if isinstance(spec, Number):
            truth = spec.read_truth(t.value)
            for label, vals in t.mistakes.items():
                for v in (vals if isinstance(vals, list) else [vals]):
                    off = abs(spec.read_truth(v) / truth - 1)
                    assert off >= 1.5 * spec.rel_tol, f"{qid} {givens} {name}: {label} only {off:.1%} off"
            label, vals = next(iter(t.mistakes.items()))
            with pytest.raises(CheckFailed):
                grade(qid, namespace={**honest, name: vals[0] if isinstance(vals, list) else vals}, givens=givens)
    robust = [n for n in q.answer_names if q.specs[n].kind in ("regime", "choice", "ratio")]
    if robust:
        for change in STANDARD:
            with perturb(**change):
                try:
                    grade(qid, namespace=honest, givens=givens)
                except CheckFailed as e:
                    if any(str(e).startswith(n) for n in robust):
                        raise AssertionError(f"{qid} {givens} under {change}: {e}") from None


def test_the_filter_rejects_what_the_course_would_not_ask():
    """Q2 with a 2048- and a 6144-token prompt: leaving attention out (3x) lands within 1.5 x 5%
    of the truth, so no student may get it."""
    why = V.problems("phases_q2", {"short": 2048, "long": 6144})
    assert why and "attention-ignored" in why[0]
    assert {"short": 2048, "long": 6144} not in V.admissible("phases_q2")
    assert {"short": 1024, "long": 8192} in V.admissible("phases_q2")


def test_a_space_must_hold_the_canonical_numbers():
    from course_lib.exercises.answer_forms import Ratio
    from course_lib.questions import question

    with pytest.raises(ValueError, match="not in its space"):
        question("demo_q9", rule="prediction", specs={"q9_x": Ratio()}, givens={"n": 3}, space={"n": [1, 2]})
    with pytest.raises(ValueError, match="not among its givens"):
        question("demo_q9", rule="prediction", specs={"q9_x": Ratio()}, givens={"n": 3}, space={"m": [1, 2]})


# ---- whose numbers ----------------------------------------------------------------------------
def test_set_student_once_then_every_lesson_has_the_numbers(no_identity, capsys):
    from course_lib.questions import givens, set_student

    key = student_key(SECRET, "alice")
    set_student("alice", key)
    lesson = no_identity / "notebooks" / "03_two_phases"
    lesson.mkdir(parents=True)
    import os

    os.chdir(lesson)
    assert V.identity()[:2] == ("alice", key)
    assert V.current("phases_q3") == V.draw(key, "phases_q3")
    capsys.readouterr()
    givens("phases_q3")
    assert capsys.readouterr().out.startswith("Your numbers for Q3 (alice): ")
    with pytest.raises(ValueError, match="32 hex digits"):
        set_student("alice", "not-a-key")


def test_the_graders_environment_wins_over_a_students_file(no_identity, monkeypatch):
    (no_identity / V.STUDENT_FILE).write_text(json.dumps({"student": "bob", "key": student_key(SECRET, "bob")}))
    assert V.identity()[0] == "bob"
    monkeypatch.setenv(V.KEY_ENV, "")                    # the grader without a secret: canonical
    assert V.current("phases_q3") == all_questions()["phases_q3"].givens
    monkeypatch.setenv(V.KEY_ENV, student_key(SECRET, "carol"))
    assert V.current("phases_q3") == V.draw(student_key(SECRET, "carol"), "phases_q3")


# ---- commits record their variant; the grader checks it -------------------------------------------
def test_a_commit_records_its_variant_and_a_mismatch_is_flagged(no_identity, monkeypatch):
    import course_lib.exercises.predictions as P
    from autograder.predictions import Record
    from autograder.variants import assigned, mismatches

    monkeypatch.setattr(P, "_HERE", no_identity)
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    bob = student_key(SECRET, "bob")
    monkeypatch.setenv(V.KEY_ENV, bob)
    P.commit("phases_q3", {"q3_prediction": 1.5}, "a reason long enough")
    P.commit("phases_q1", {"q1_prefill": "compute-bound"}, "a reason long enough")
    events = P.load_record(P.record_path())
    assert events[0]["variant"] == V.draw(bob, "phases_q3") and "variant" not in events[1]
    assert P.check_events(events) == []                 # the variant is under the hash
    record = Record(events, [], "file")
    assert mismatches({"two_phases": record}, assigned(bob, ["phases_q3"])) == []
    others = [s for s in STUDENTS if V.draw(student_key(SECRET, s), "phases_q3") != V.draw(bob, "phases_q3")]
    lines = mismatches({"two_phases": record}, assigned(student_key(SECRET, others[0]), ["phases_q3"]))
    assert len(lines) == 1 and "Q3 was answered for the numbers" in lines[0], lines


# ---- the secret stays with the instructor ------------------------------------------------------------
def test_publish_never_ships_the_variant_secret(tmp_path, monkeypatch):
    from autograder.publish import publish

    checkout = tmp_path / "course"
    for rel in ("course_lib", "deploy/student-jupyter", "deploy/student-repo"):
        shutil.copytree(REPO / rel, checkout / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("pyproject.toml", "environment.yml", "postBuild"):
        shutil.copy2(REPO / rel, checkout / rel)
    monkeypatch.delenv("AUTOGRADER_VARIANT_SECRET", raising=False)
    from autograder.variants import init_secret

    secret_file = init_secret(checkout)
    assert secret_file == checkout / ".autograder" / "variant-secret" and secret_file.stat().st_mode & 0o077 == 0
    secret = secret_file.read_bytes().strip()
    (checkout / "course_lib" / ".autograder").mkdir()
    shutil.copy2(secret_file, checkout / "course_lib" / ".autograder" / "variant-secret")
    source = tmp_path / "solutions"       # no solution lines to look for: this test is about the secret
    source.mkdir()
    out = publish(checkout, REPO / "notebooks", source, tmp_path / "students", repository="o/r")
    assert not [f for f in out.files if secret in (out.dest / f).read_bytes()]
    assert not any(".autograder" in f for f in out.files)
    (checkout / "course_lib" / "notes.txt").write_bytes(b"the key: " + secret)     # pasted by mistake
    with pytest.raises(SystemExit, match="variant secret"):
        publish(checkout, REPO / "notebooks", source, tmp_path / "students", repository="o/r")


def test_the_hub_gives_each_student_their_own_key_never_the_secret(tmp_path):
    """deploy/jupyterhub/jupyterhub_config.py, loaded as JupyterHub loads it: without a secret no
    variables (the lesson's own numbers); with one, the student's key and id, not the secret."""
    from traitlets.config import Config

    etc = tmp_path / "etc"
    etc.mkdir()
    shutil.copy2(REPO / "deploy" / "jupyterhub" / "jupyterhub_config.py", etc / "jupyterhub_config.py")
    site = {k: str(tmp_path) for k in ("env", "proxy", "state_dir")}
    site.update(bind_url="http://127.0.0.1:8000", course_id="roofline", course_folder="course",
                instructors_group="instructors", students_group="students")
    (etc / "roofline_site.json").write_text(json.dumps(site))

    def load():
        ns = {"get_config": Config, "load_subconfig": lambda path: None, "__file__": str(etc / "jupyterhub_config.py")}
        exec(compile((etc / "jupyterhub_config.py").read_text(), str(etc / "jupyterhub_config.py"), "exec"), ns)
        return ns["variant_env"]

    assert load()("alice") == {}
    (etc / "roofline_variant_secret").write_bytes(SECRET + b"\n")
    env = load()("alice")
    assert env == {V.STUDENT_ENV: "alice", V.KEY_ENV: student_key(SECRET, "alice")}
    assert SECRET.decode() not in json.dumps(env)
