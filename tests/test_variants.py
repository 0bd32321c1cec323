"""Every student their own numbers (course_lib.questions.variants, autograder.authoring.variants).

* the draw: the same key always gives the same numbers, 200 students spread over every
  admissible variant of every question with a space, and no key gives the lesson's own;
* admissibility: every question's space has admissible variants, the canonical one among them;
  each admissible variant keeps every listed mistake outside 1.5 x the tolerance and its
  honest answers pass grade() under every STANDARD perturbation; the filter really rejects;
* lessons 4, 5 and 6 vary every question that can (at least 4 admissible variants; those that
  cannot are named, with why); a group of questions is asked on one request; a question graded
  against this machine's measurement is admitted without measuring;
* whose numbers: the grader's / hub's environment wins over a file a student set;
* commits record the variant, and the grader flags a commit made for other numbers;
* the secret never reaches the student repository;
* lessons 1, 2 and 6: every graded question has a space or a stated reason, at least 4 variants
  (or a stated fewer), no given cell states its variant's answer, and the leak test passes as
  students with keys.
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
from course_lib.questions.registry import lessons
from course_lib.sensitivity import STANDARD, perturb
from autograder.authoring.cells import read_source

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


#: questions of lessons 4 and 5 asked with the lesson's own numbers only, and why (their modules say more)
FIXED = {
    "mach_q1": "bytes per element do not depend on n, and the expression it is checked against is timed in fp64",
    "mach_q3": "a size's margin from this machine's ridge depends on the measurement; the kernels are read as timed",
    "mach_q4": "a size's margin from a cache boundary depends on the caches of the machine grading it",
}


@pytest.mark.parametrize("qid", sorted(q for q in all_questions()
                                       if lessons()[q.split("_", 1)[0]].min_admissible_variants))
def test_a_lesson_varies_every_question_that_can(qid):
    """At least the lesson's min_admissible_variants for each of its questions (lessons 4, 5 and 6
    ask for 4), except those in FIXED."""
    q, least = all_questions()[qid], lessons()[qid.split("_", 1)[0]].min_admissible_variants
    if qid in FIXED:
        assert not q.space, f"{qid} has a space though FIXED says it cannot vary: {FIXED[qid]}"
    else:
        assert len(V.admissible(qid)) >= least, f"{qid}: {len(V.admissible(qid))} admissible variants"


def test_a_group_is_asked_on_one_request():
    """Lesson 4's Q1-Q3 share one request: every student gets the same numbers for the three,
    only requests admissible for all three are drawn, and 200 students spread over them."""
    group = ["quant_q1", "quant_q2", "quant_q3"]
    keys = [student_key(SECRET, s) for s in STUDENTS]
    for k in keys:
        assert V.draw(k, group[0]) == V.draw(k, group[1]) == V.draw(k, group[2])
    assert len({json.dumps(V.draw(k, group[0]), sort_keys=True) for k in keys}) == len(V.admissible(group[0]))
    short = {"prompt": 2048, "output": 256}         # decode's W8A8 speedup within 1.5 x 2% of Q3's truth
    assert not V.problems("quant_q1", short) and V.problems("quant_q3", short)
    from course_lib.questions import get

    assert V.admissible("quant_q1") == V.admissible("quant_q3") and \
        all(not V.problems(q, g) for q in group for g in V.admissible(q))
    assert [m.id for m in V._members(get("quant_q2"))] == group


def test_a_group_must_share_its_space():
    from course_lib.exercises.answer_forms import Ratio
    from course_lib.questions import REGISTRY, Solution, Truth, question

    def solve(n):
        return Solution({"q1_x": Truth(float(n))})

    try:
        question("demo_q1", rule="prediction", specs={"q1_x": Ratio()}, givens={"n": 1}, space={"n": [1, 2]},
                 group="demo_pair")(solve)
        question("demo_q2", rule="prediction", specs={"q1_x": Ratio()}, givens={"n": 1}, space={"n": [1, 3]},
                 group="demo_pair")(solve)
        with pytest.raises(ValueError, match="different spaces"):
            V.admissible("demo_q1")
    finally:
        REGISTRY.pop("demo_q1", None), REGISTRY.pop("demo_q2", None)
        V._admissible.cache_clear()


def test_a_measured_question_is_admitted_without_measuring(monkeypatch):
    """Lesson 5's Q6 grades against this machine: which GPUs it may compare is settled without
    measuring (every machine draws the same variants), and a GPU whose fp16 ridge is below the
    A100's is refused by its assumption."""
    import course_lib.measure as M

    def no_measurement(*a, **k):
        raise AssertionError("admissibility measured the machine")

    monkeypatch.setattr(M, "this_machine", no_measurement)
    V._admissible.cache_clear()
    try:
        chips = [g["chip"] for g in V.admissible("mach_q6")]
        assert "A100" in chips and "V100" not in chips and len(chips) >= 4
        assert "V100" in all_questions()["mach_q6"].space["chip"]
        assert any("below the A100's" in why for why in V.problems("mach_q6", {"chip": "V100"}))
    finally:
        V._admissible.cache_clear()


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


# ---- the lessons' givens cells compute from the student's variant ------------------------------------
def _run_cells(path, ids, ns) -> str:
    import contextlib
    import io

    import nbformat
    from lesson_questions import strip_delimiters

    cells = {c.get("id"): c for c in read_source(path).cells}
    out = io.StringIO()
    for cid in ids:
        with contextlib.redirect_stdout(out):
            exec(compile(strip_delimiters(cells[cid].source), cid, "exec"), ns)
    return out.getvalue()


def _other_numbers(qids) -> str:
    """A key whose variant of every question in `qids` differs from the lesson's own."""
    keys = (student_key(SECRET, s) for s in STUDENTS)
    return next(k for k in keys if all(V.draw(k, q) != all_questions()[q].givens for q in qids))


def test_lesson_4s_givens_are_the_students_own(no_identity, monkeypatch):
    """Run as a student with other numbers for every question, lesson 4's givens cells print and
    compute that student's request, chip, context and batch; the by-hand Q2 solved from what they
    print passes the hidden test of the student's own variant."""
    qids = ["quant_q1", "quant_q4", "quant_q5", "quant_q6"]
    key = _other_numbers(qids)
    monkeypatch.setenv(V.KEY_ENV, key)
    monkeypatch.setenv(V.STUDENT_ENV, "dana")
    mine = {q: V.draw(key, q) for q in qids}
    ns: dict = {"__name__": "__lesson__"}
    out = _run_cells(REPO / "solutions" / "04_quantization" / "quantization.ipynb",
                     ["quant-setup", "quant-q1-given", "quant-givens-decode", "quant-q4-given", "quant-givens-kv",
                      "quant-q5-given", "quant-givens-batch", "quant-q6-given"], ns)
    assert (ns["P"], ns["T"]) == (mine["quant_q1"]["prompt"], mine["quant_q1"]["output"])
    assert (ns["chip"], ns["ctx"]) == (mine["quant_q4"]["chip"], mine["quant_q4"]["context"])
    assert ns["batch"] == mine["quant_q5"]["batch"]
    for q in qids:
        assert V.describe(q, mine[q]) in out
    assert f"mean context c = {ns['P']} + {ns['T']}/2" in out and f"fp16 weights, batch {ns['batch']}:" in out
    _run_cells(REPO / "solutions" / "04_quantization" / "quantization.ipynb", ["quant-q2-prediction"], ns)
    grade("quant_q2", namespace=ns)
    with pytest.raises(CheckFailed):                      # the lesson's own request is not this student's
        grade("quant_q2", namespace=ns, givens=all_questions()["quant_q2"].givens)


def test_lesson_5s_givens_are_the_students_own(no_identity, monkeypatch):
    """The same for lesson 5: Q2's matmul size and Q6's GPU, printed and tabulated."""
    qids = ["mach_q2", "mach_q6"]
    key = _other_numbers(qids)
    monkeypatch.setenv(V.KEY_ENV, key)
    monkeypatch.setenv(V.STUDENT_ENV, "dana")
    monkeypatch.setenv("COURSE_LIB_MEASURE", "quick")
    chip = V.draw(key, "mach_q6")["chip"]
    out = _run_cells(REPO / "solutions" / "05_your_machine" / "your_machine.ipynb",
                     ["mach-setup", "mach-q2-given", "mach-reality-givens", "mach-q6-given"], {"__name__": "__lesson__"})
    assert f"Your numbers for Q2 (dana): {V.describe('mach_q2', V.draw(key, 'mach_q2'))}." in out
    assert f"Your numbers for Q6 (dana): {V.describe('mach_q6', V.draw(key, 'mach_q6'))}." in out
    rows = {line[:26].strip() for line in out.splitlines()}      # the reality check's table: chip first
    assert chip in rows and "A100" not in rows                     # Q6's GPU, not the lesson's own


def test_lesson_6s_givens_are_the_students_own(no_identity, monkeypatch):
    """The same for lesson 6: every given cell prints the student's own model, chip, group and
    prompt; each verify's arithmetic is that variant's; the lesson's own answers fail the
    student's hidden tests where the truth differs, and the student's own truths pass."""
    qids = [f"scale_q{i}" for i in range(1, 6)]
    key = _other_numbers(qids)
    monkeypatch.setenv(V.KEY_ENV, key)
    monkeypatch.setenv(V.STUDENT_ENV, "dana")
    mine = {q: V.draw(key, q) for q in qids}
    out = _run_cells(REPO / "solutions" / "06_scaling_out" / "scaling_out.ipynb",
                     ["scale-setup", *(f"scale-q{i}-given" for i in range(1, 6))], {"__name__": "__lesson__"})
    for q in qids:
        assert f"Your numbers for {q.split('_')[1].upper()} (dana): {V.describe(q, mine[q])}." in out
    for q in qids:
        decl = all_questions()[q]
        own, lessons = decl.solution(**mine[q]), decl.solution()
        names = [n for n in decl.answer_names if n in own.truths]
        ns = {n: own.truths[n].value for n in names}
        ns = {n: (v.m_as(decl.specs[n].units) if hasattr(v, "m_as") else v) for n, v in ns.items()}
        grade(q, namespace={**ns, **{f"q{q[-1]}_reasoning": "my own numbers"}})
        theirs = {n: lessons.truths[n].value for n in names}
        theirs = {n: (v.m_as(decl.specs[n].units) if hasattr(v, "m_as") else v) for n, v in theirs.items()}
        if theirs != ns and all(not isinstance(v, str) for v in ns.values()):
            far = all(abs(theirs[n] / ns[n] - 1) > decl.specs[n].rel_tol for n in names)
            if far:
                with pytest.raises(CheckFailed):
                    grade(q, namespace={**theirs, **{f"q{q[-1]}_reasoning": "the lesson's numbers"}})
    import contextlib
    import io

    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        all_questions()["scale_q2"].solution(**mine["scale_q2"]).work()
    n = mine["scale_q2"]["gpus"]
    assert f"TPOT({n // 2}) / TPOT({n}) =" in printed.getvalue()


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
    from autograder.integrity.predictions import Record
    from autograder.authoring.variants import assigned, mismatches

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
    from autograder.authoring.publish import publish

    checkout = tmp_path / "course"
    for rel in ("course_lib", "deploy/student-jupyter", "deploy/student-repo"):
        shutil.copytree(REPO / rel, checkout / rel, ignore=shutil.ignore_patterns("__pycache__"))
    for rel in ("pyproject.toml", "environment.yml", "postBuild"):
        shutil.copy2(REPO / rel, checkout / rel)
    monkeypatch.delenv("AUTOGRADER_VARIANT_SECRET", raising=False)
    from autograder.authoring.variants import init_secret

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
    # nor the answer key: no solver, no take-aways; the lesson's own truths as practice data only
    from autograder.authoring.student_build import key_problems

    assert key_problems(out.dest / "course_lib", practice=True) == []
    assert key_problems(checkout / "course_lib"), "the instructor's copy holds the key: the check can fail"
    assert "course_lib/questions/practice.json" in out.files and "course_lib/questions/admissible.json" in out.files
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
                instructors_group="instructors", students_group="students",
                hub_api_url="http://127.0.0.1:8081", proxy_api_url="http://127.0.0.1:8001", cull_idle=0)
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


# ---- lessons 1, 2 and 6 ------------------------------------------------------------------------------
# The variant rule (each question of lessons 1, 2 and 6 has its own numbers, or says why; 200 students
# draw at least min_variants of them) is python -m autograder lint's: tests/test_authoring.py.


@pytest.mark.parametrize("qid", SPACED)
def test_no_given_cell_states_its_variants_answer(qid):
    """A given cell's words, for every admissible variant, hold no number that is the variant's
    answer (the leak test's rule, tests/test_questions.py)."""
    from test_questions import _gives_away, _numbers

    q = all_questions()[qid]
    for g in V.admissible(qid):
        text = V.describe(qid, g)
        sol = q.solution(**g)
        for name in q.answer_names:
            spec = q.specs[name]
            if not isinstance(spec, Number):
                continue
            truth = spec.read_truth(sol.truths[name].value)
            shown = [t for t, value, unit, result in _numbers(text) if _gives_away(spec, value, unit, result, truth)]
            assert not shown, f"{qid} {g}: {text!r} states {name} ({truth:.4g}): {shown}"


def _lessons(*prefixes):
    """The converted solution notebooks whose graded questions have these prefixes."""
    import nbformat
    from test_questions import CONVERTED

    from course_lib.exercises.question_ids import metadata

    return [p for p in CONVERTED if any(metadata(c).get("grade_id", "").split("_", 1)[0] in prefixes
                                        for c in read_source(p).cells)]


#: the lessons whose every question gives each student their own numbers (lesson 3 is not run here:
#: see the docstring below)
VARYING = tuple(p for p, lesson in lessons().items() if lesson.every_question_varies)


@pytest.mark.parametrize("student", ["student001", "student002"])
@pytest.mark.parametrize("path", _lessons(*VARYING), ids=lambda p: p.parent.name)
def test_a_students_lesson_shows_no_answer_before_its_commit(path, student, no_identity, monkeypatch):
    """The leak test of tests/test_questions.py, run as a student with a key: nothing above an
    answer cell (markdown, given cells, earlier verify cells) shows that student's own answer.
    (Lesson 3 is not run here: its theory's formulas, "= 2 (K and V)", "2^20", read to the
    heuristic as a stated ratio of 2 whenever a student's Q3 truth lies near 2.)"""
    import course_lib.exercises.predictions as P
    from test_questions import leaks

    monkeypatch.setattr(P, "_HERE", no_identity)
    monkeypatch.setenv(V.KEY_ENV, student_key(SECRET, student))
    monkeypatch.setenv(V.STUDENT_ENV, student)
    own = [q for q in SPACED if q.split("_")[0] in VARYING
           and V.current(q) != all_questions()[q].givens]
    assert own, f"{student} has the lesson's own numbers everywhere: pick another id"
    problems = leaks(path, lambda q: q.solution(**V.current(q.id)))
    assert not problems, "\n".join(problems)


def test_a_variant_student_who_submits_the_lessons_own_answer_is_told_so(capsys):
    """Not "a physics mistake": the answer is right for the lesson's own numbers, not for theirs
    (the hidden test's label, the message, and the verify cell's verdict)."""
    from course_lib.exercises.misconceptions import CheckFailed
    from course_lib.questions import get, grade

    q = get("wall_q2")
    mine = next(g for g in (V.draw(student_key(SECRET, s), "wall_q2") for s in STUDENTS) if g["chip"] != "A100")
    lessons = q.solution().truths["q2_ms"].value.m_as("ms")
    ns = {"q2_bytes_gb": q.solution(**mine).truths["q2_bytes_gb"].value.m_as("GB"), "q2_ms": lessons}
    with pytest.raises(CheckFailed) as e:
        grade("wall_q2", namespace=ns, givens=mine)
    assert e.value.label == "lesson-numbers"
    assert "q2_ms is the answer to the lesson's own numbers, not to the ones drawn for you" in str(e.value)
    ns["q2_ms"] = q.solution(**mine).truths["q2_ms"].value.m_as("ms")
    grade("wall_q2", namespace=ns, givens=mine)          # their own answer passes
