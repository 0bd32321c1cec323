"""The answer key lives with the course service, not in a student's kernel (issue 30).

A student's copy of course_lib (autograder.authoring.student_build) has no solver, no take-aways
and no secret; its verify cells ask the course service, which refuses an uncommitted question,
records the reveal before it answers, and solves the student's own variant. Here the copy runs in
a real interpreter (a subprocess with only that copy importable as course_lib) against the
service in a thread."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests

from autograder.authoring import student_build as B
from course_hub.service.ledger import Store
from course_lib import ledger as L
from course_lib.questions import get, variants
from course_lib.questions.registry import LESSON_MODULES
from service_thread import running

SERVICE = "course"
ACCESS = [f"access:services!service={SERVICE}"]
TOKENS = {"tok-ann": {"kind": "user", "name": "ann", "scopes": ACCESS},
          "tok-bob": {"kind": "user", "name": "bob", "scopes": ACCESS}}
SECRET = b"0123456789abcdef0123456789abcdef"
QID = "wall_q1"          # a prediction with per-student variants and a plain-number answer


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    """{"hub": the hub's student copy (no practice data), "practice": the student repository's}."""
    out = {}
    for kind in ("hub", "practice"):
        dest = tmp_path_factory.mktemp(kind)
        B.write(dest, practice=kind == "practice")
        out[kind] = dest
    return out


KERNEL = r"""
import json, os, sys
from course_lib.questions import check_form, get, grade, show, takeaways
answers = json.loads(sys.argv[1])
globals().update(answers)
qid = sys.argv[2]
def attempt(what, fn):
    try:
        fn()
        print(f"[{what}] ok")
    except Exception as e:
        print(f"[{what}] {type(e).__name__}: {e}")
if "skip-reveal" in sys.argv:         # the attack: the kernel's own record of the reveal switched off
    import course_lib.exercises.checks as C
    C.reveal = lambda *q: None
attempt("solution", lambda: get(qid).solution())
attempt("grade", lambda: grade(qid, namespace=answers))
if "no-commit" not in sys.argv:
    check_form(qid)
attempt("show", lambda: show(qid, namespace=answers))
"""


def kernel(copy: Path, cwd: Path, answers: dict, *args, env: dict | None = None) -> str:
    """Run what a student's cells do, with only the student's copy of course_lib importable."""
    cwd.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", L.URL_ENV, L.TOKEN_ENV,
                                                            variants.KEY_ENV, variants.STUDENT_ENV)}
    p = subprocess.run([sys.executable, "-c", KERNEL, json.dumps(answers), QID, *args], cwd=cwd,
                       env={**base, "PYTHONPATH": str(copy), **(env or {})}, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in p.stderr, p.stderr
    return p.stdout


def truth_for(user: str) -> float:
    q = get(QID)
    return q.solution(**variants.draw(variants.student_key(SECRET, user), QID)).truths["q1_speedup"].value


def hub_env(url: str, token: str, user: str) -> dict:
    """What the hub's spawner gives a student's server: the service's URL, the user's token, the
    student's variant key (never the secret)."""
    return {L.URL_ENV: url, L.TOKEN_ENV: token, variants.KEY_ENV: variants.student_key(SECRET, user),
            variants.STUDENT_ENV: user}


def test_the_student_copy_holds_no_solver_no_takeaways_no_secret(copies):
    import course_lib

    assert B.key_problems(Path(course_lib.__file__).parent), "the instructor's copy holds the key: the check can fail"
    assert B.key_problems(copies["hub"] / "course_lib", practice=False) == []
    assert B.key_problems(copies["practice"] / "course_lib", practice=True) == []
    for module in set(LESSON_MODULES.values()):
        text = (copies["hub"] / "course_lib" / "questions" / f"{module}.py").read_text()
        if module == "mach":          # lesson 5 measures the kernel's machine: its solvers stay (ANSWER_KEY_IN_KERNEL)
            assert "ANSWER_KEY_IN_KERNEL = " in text and "Truth(" in text
        else:
            assert "Truth(" not in text and "held(" in text, module
    assert not (copies["hub"] / "course_lib" / "questions" / "practice.json").exists()


def test_a_student_copy_draws_the_same_numbers_as_the_instructor_s(copies):
    """Drawing checks each variant by solving; the copy reads the admissible variants as data."""
    keys = [variants.student_key(SECRET, f"s{i}") for i in range(8)]
    script = ("import json, sys\nfrom course_lib.questions import all_questions, variants\n"
              "print(json.dumps({q: [variants.draw(k, q) for k in sys.argv[1:]] for q, d in all_questions().items() "
              "if d.space}))")
    p = subprocess.run([sys.executable, "-c", script, *keys], env={**os.environ, "PYTHONPATH": str(copies["hub"])},
                       capture_output=True, text=True, timeout=120, cwd=copies["hub"])
    drawn = json.loads(p.stdout)
    from course_lib.questions import all_questions

    expected = {q: [variants.draw(k, q) for k in keys] for q, d in all_questions().items() if d.space}
    assert drawn == expected


def test_on_the_hub_the_truth_comes_from_the_service_which_records_the_reveal_first(copies, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with running(store, TOKENS, SERVICE, answer_key=True, secret=SECRET) as url:
        truth = truth_for("ann")
        out = kernel(copies["hub"], tmp_path / "ann", {"q1_speedup": 1.0, "q1_reasoning": "bandwidth ratio"},
                     env=hub_env(url, "tok-ann", "ann"))
    # nothing in the kernel solves or grades: the oracle is gone
    assert "[solution] KeyHeld" in out, out
    assert "[grade] KeyUnavailable: wall_q1: the hidden check runs when your work is graded" in out, out
    # the verify cell shows ann's own truth, from the service
    assert "[show] ok" in out and f"{truth:.3g}" in out, out
    ledger = Store(store / "ledger").read("ann")
    kinds = [(e["kind"], e.get("by")) for e in ledger if e["question"] == QID]
    assert kinds[0] == ("commit", None) and ("reveal", "service") in kinds, kinds
    service_reveal = next(e for e in ledger if e.get("by") == "service")
    assert service_reveal["variant"] == variants.draw(variants.student_key(SECRET, "ann"), QID)


def test_a_kernel_that_skips_its_own_reveal_is_still_recorded_by_the_service(copies, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with running(store, TOKENS, SERVICE, answer_key=True, secret=SECRET) as url:
        out = kernel(copies["hub"], tmp_path / "bob", {"q1_speedup": 1.0, "q1_reasoning": "the bandwidth ratio decides decode"}, "skip-reveal",
                     env=hub_env(url, "tok-bob", "bob"))
    assert "[show] ok" in out, out
    local = (tmp_path / "bob" / ".predictions.jsonl").read_text()
    assert '"reveal"' not in local                      # the kernel's record says nothing was shown...
    assert any(e["kind"] == "reveal" and e.get("by") == "service" for e in Store(store / "ledger").read("bob"))


def test_the_service_refuses_a_question_not_committed_to_it_and_records_nothing(copies, tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    with running(store, TOKENS, SERVICE, answer_key=True, secret=SECRET) as url:
        r = requests.post(f"{url}/key/reveal", json={"question": QID}, headers={"Authorization": "token tok-ann"},
                          timeout=30)
        assert r.status_code == 409 and "no committed answer of yours" in r.json()["error"], r.text
        assert requests.post(f"{url}/key/reveal", json={"question": "wall_q99"},
                             headers={"Authorization": "token tok-ann"}, timeout=30).status_code == 404
        assert requests.post(f"{url}/key/reveal", json={"question": "../x"},
                             headers={"Authorization": "token tok-ann"}, timeout=30).status_code == 400
        assert requests.post(f"{url}/key/reveal", json={"question": QID}, timeout=30).status_code == 401
        r = requests.post(f"{url}/key/takeaways", json={"question": "wall_q0"},
                          headers={"Authorization": "token tok-ann"}, timeout=30)
        assert r.status_code == 409 and "Q1" in r.json()["error"], r.text
    assert Store(store / "ledger").read("ann") == []


def test_without_a_hub_the_practice_copy_shows_the_lesson_s_own_truth_and_no_other(copies, tmp_path):
    lesson = get(QID).solution().truths["q1_speedup"].value
    out = kernel(copies["practice"], tmp_path / "laptop", {"q1_speedup": 1.0, "q1_reasoning": "the bandwidth ratio decides decode"})
    assert "[show] ok" in out and f"{lesson:.3g}" in out, out
    # a student with their own numbers but no hub: no truth to show (the practice data is the lesson's own)
    key = variants.student_key(SECRET, "carol")
    if variants.draw(key, QID) != get(QID).givens:
        out = kernel(copies["practice"], tmp_path / "carol", {"q1_speedup": 1.0, "q1_reasoning": "the bandwidth ratio decides decode"},
                     env={variants.KEY_ENV: key})
        assert "[show] KeyUnavailable" in out, out
    # the hub's copy has no practice data: without a service it shows nothing
    out = kernel(copies["hub"], tmp_path / "nohub", {"q1_speedup": 1.0, "q1_reasoning": "the bandwidth ratio decides decode"})
    assert "[show] KeyUnavailable" in out, out
