"""A synthetic class, generated from the student release, for the tests and the benchmark
(tests/test_autograder_class.py, benchmarks/grade_bench.py).

Each student is the release of every notebook of the assignment with its answer cells filled in:
* correct: the solution's answer (the solution cell without its delimiters);
* wrong: the WRONG source of a<assignment>.py in the answers folder the caller names (right
  form, wrong value; the course keeps these files with its tests);
plus the hostile and broken ones, which attack the first notebook (the others are answered
correctly). `make_class` writes SOURCE/<student>/<notebook>.ipynb and returns a manifest with the
exact score every test cell must get and the answer each student planted (for the report).

Scoring model (the notebooks' spec): each answer cell <p>_qN_* feeds the test cells <p>_qN_*:
correct -> every test passes; wrong -> the visible (form) tests pass, the hidden ones fail;
blank or broken (the variables never get defined) -> every test of the question fails.
Manually graded cells score 0 before manual grading.
"""
from __future__ import annotations

import copy
import importlib.util
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

from course_lib.exercises.question_ids import metadata, question_of

from autograder.authoring.cells import read_source
from autograder.cell_code import HIDDEN_BEGIN
from autograder.authoring.release import SOURCE

#: every kind of student make_class knows, in a default class
KINDS = ("correct", "wrong", "blank", "syntax_error", "infinite_loop", "memory_bomb", "stubborn_loop",
         "hostile", "deletes_test", "edits_locked", "warnings", "not_a_notebook")


def wrong_answers(assignment: str, answers_dir: Path) -> dict:
    """`WRONG` of answers_dir/a<assignment>.py: answer grade_id -> a wrong answer's source."""
    path = Path(answers_dir) / f"a{assignment}.py"
    if not path.is_file():
        raise FileNotFoundError(f"no wrong answers for {assignment}: {path}")
    spec = importlib.util.spec_from_file_location(f"_answers_{assignment}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return dict(mod.WRONG)


def solution_source(source: str) -> str:
    return "\n".join(l for l in source.splitlines()
                     if l.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))


_meta = metadata       # a cell's nbgrader metadata (course_lib.exercises.question_ids)


@dataclass
class NotebookParts:
    name: str
    release: nbformat.NotebookNode
    solutions: dict                    # answer grade_id -> solution source (no delimiters)
    answers: list                      # answer grade_ids in order
    tests: dict                        # test grade_id -> (question, points, hidden?)

    def questions(self, answer_id):
        return question_of(answer_id)


def notebook_parts(release_nb: Path, solution_nb: Path) -> NotebookParts:
    rel = nbformat.read(str(release_nb), as_version=4)
    sol = read_source(solution_nb)
    sols = {_meta(c).get("grade_id"): solution_source(c.source) for c in sol.cells
            if c.cell_type == "code" and _meta(c).get("solution") and not _meta(c).get("grade")}
    hidden = {_meta(c).get("grade_id") for c in sol.cells if c.cell_type == "code" and HIDDEN_BEGIN in c.source}
    answers, tests = [], {}
    for c in rel.cells:
        m = _meta(c)
        if c.cell_type == "code" and m.get("solution") and not m.get("grade"):
            answers.append(m["grade_id"])
        if c.cell_type == "code" and m.get("grade") and not m.get("solution"):
            tests[m["grade_id"]] = (question_of(m["grade_id"]), float(m.get("points", 0)), m["grade_id"] in hidden)
    return NotebookParts(release_nb.stem, rel, sols, answers, tests)


@dataclass
class Plan:
    """What one notebook of one student gets."""
    states: dict = field(default_factory=dict)      # answer id -> correct | wrong | blank | broken
    prefix: dict = field(default_factory=dict)      # answer id -> code put before the answer
    suffix: dict = field(default_factory=dict)      # answer id -> code put after the answer
    delete: set = field(default_factory=set)        # test ids removed from the notebook
    edit: dict = field(default_factory=dict)        # locked cell id -> (new source, new points)
    raw: bytes | None = None                        # the file is these bytes, not a notebook


def build(parts: NotebookParts, plan: Plan, wrong: dict) -> bytes:
    if plan.raw is not None:
        return plan.raw
    nb = copy.deepcopy(parts.release)
    cells = []
    for c in nb.cells:
        gid = _meta(c).get("grade_id")
        if gid in plan.delete:
            continue
        if gid in parts.answers:
            state = plan.states.get(gid, "correct")
            body = {"correct": parts.solutions.get(gid, ""), "wrong": wrong.get(gid, ""),
                    "blank": c.source, "broken": parts.solutions.get(gid, "")}[state]
            pieces = [plan.prefix.get(gid, ""), body, plan.suffix.get(gid, "")]
            c.source = "\n".join(p for p in pieces if p)
        if gid in plan.edit:
            src, points = plan.edit[gid]
            c.source = src
            if points is not None:
                c.metadata["nbgrader"]["points"] = points
        cells.append(c)
    nb.cells = cells
    return nbformat.writes(nb).encode()


def expected_scores(parts: NotebookParts, plan: Plan) -> dict:
    """{test id: points} the plan must earn."""
    if plan.raw is not None:
        return {}
    by_q = {}
    for gid in parts.answers:
        by_q.setdefault(question_of(gid), []).append(plan.states.get(gid, "correct"))
    out = {}
    for tid, (q, points, hidden) in parts.tests.items():
        if tid in plan.delete:
            out[tid] = 0.0
            continue
        states = by_q.get(q, ["correct"])
        if any(s in ("blank", "broken") for s in states):
            out[tid] = 0.0
        elif any(s == "wrong" for s in states):
            out[tid] = 0.0 if hidden else points
        else:
            out[tid] = points
    return out


# ---------------------------------------------------------------------------------------------
# the hostile code
# ---------------------------------------------------------------------------------------------
ATTACK = r'''
import json as _json, os as _os, socket as _socket
_targets = {targets}
_report = {{"read": {{}}, "write": {{}}, "net": {{}}, "env": sorted(_os.environ)}}
def _try_read(p):
    try:
        if _os.path.isdir(p):
            return "listed:" + ",".join(sorted(_os.listdir(p))[:50])
        with open(p, "rb") as f:
            return "read:" + f.read().decode("latin-1")[:100000]
    except Exception as e:
        return "blocked:" + type(e).__name__
for _k, _p in _targets["read"].items():
    _report["read"][_k] = _try_read(_p)
def _try_write(k, fn):
    try:
        fn()
        _report["write"][k] = "WROTE"
    except Exception as e:
        _report["write"][k] = "blocked:" + type(e).__name__
def _pwn_gradebook():
    import sqlite3
    if not _os.path.exists(_targets["gradebook"]):
        raise FileNotFoundError(_targets["gradebook"])
    con = sqlite3.connect(_targets["gradebook"])
    con.execute("CREATE TABLE pwned (x)")
    con.execute("UPDATE grade SET auto_score = 99")
    con.commit()
_try_write("gradebook", _pwn_gradebook)
for _k, _p in _targets["write"].items():
    _try_write(_k, lambda: open(_p, "w").write("pwned"))
for _k, (_h, _port) in _targets["net"].items():
    try:
        _socket.create_connection((_h, _port), timeout=3).close()
        _report["net"][_k] = "CONNECTED"
    except Exception as e:
        _report["net"][_k] = "blocked:" + type(e).__name__
print("ATTACK-REPORT " + _json.dumps(_report))
'''

STEAL = r'''
try:   # were the solutions readable, this would swap in the right answer
    _src = next("".join(_c["source"]) for _c in __import__("json").load(open({solution!r}))["cells"]
                if _c.get("metadata", {{}}).get("nbgrader", {{}}).get("grade_id") == {gid!r})
    exec(_src)
except Exception:
    pass
'''

WARNINGS = r'''
import sys as _sys, warnings as _warnings
import numpy as _np
_warnings.simplefilter("always")
_warnings.warn("this API is deprecated", DeprecationWarning)
_warnings.warn("careful with units", UserWarning)
_np.float64(1.0) / 0.0
print("a message on stderr", file=_sys.stderr)
'''


def plans(kind: str, parts: NotebookParts, rng: random.Random, *, solution: str, targets: dict | None) -> Plan:
    answers = parts.answers
    first_q = question_of(answers[0])
    first_hidden = [t for t, (q, _, h) in parts.tests.items() if q == first_q and h]
    if kind == "correct":
        return Plan()
    if kind == "wrong_all":
        return Plan(states={a: "wrong" for a in answers})
    if kind == "wrong":
        k = rng.randint(1, max(1, len(answers) - 1))
        return Plan(states={a: "wrong" for a in rng.sample(answers, k)})
    if kind == "blank":
        return Plan(states={a: "blank" for a in answers})
    if kind == "syntax_error":
        return Plan(states={answers[0]: "broken"}, suffix={answers[0]: 'q_unfinished = ("an unclosed bracket'})
    if kind == "infinite_loop":
        a = answers[min(1, len(answers) - 1)]
        return Plan(states={a: "broken"}, prefix={a: "while True:\n    pass"})
    if kind == "memory_bomb":
        a = answers[min(2, len(answers) - 1)]
        return Plan(states={a: "broken"}, prefix={a: "_bomb = b'x' * (8 * 2**30)   # 8 GiB, touched"})
    if kind == "stubborn_loop":
        a = answers[-1]
        return Plan(states={a: "broken"}, prefix={a: "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                                                     "while True:\n    pass"})
    if kind == "hostile":
        plan = Plan(states={a: "wrong" for a in answers})
        for a in answers:
            plan.suffix[a] = STEAL.format(solution=solution, gid=a)
        plan.prefix[answers[0]] = ATTACK.format(targets=repr(targets or {"read": {}, "write": {}, "net": {},
                                                                          "gradebook": "/nonexistent"}))
        return plan
    if kind == "deletes_test":
        return Plan(states={answers[0]: "wrong"}, delete=set(first_hidden))
    if kind == "edits_locked":
        plan = Plan(states={answers[0]: "wrong"})
        for t in first_hidden:
            plan.edit[t] = ("# (edited by the student)\npass", 99)
        locked = [_meta(c).get("grade_id") for c in parts.release.cells
                  if c.cell_type == "code" and _meta(c).get("locked") and not _meta(c).get("grade")]
        if locked:
            orig = next(c.source for c in parts.release.cells if _meta(c).get("grade_id") == locked[0])
            plan.edit[locked[0]] = (orig + "\nimport course_lib.exercises.checks as _chk\n"
                                    "_chk.check_number = _chk.check_regime = lambda *a, **k: None",
                                    None)
        return plan
    if kind == "warnings":
        return Plan(prefix={answers[0]: WARNINGS})
    if kind == "not_a_notebook":
        return Plan(raw=b"%PDF-1.4\nThis is my essay about rooflines, exported as a PDF.\n")
    raise ValueError(f"unknown kind of student {kind!r}")


def default_roster(n_correct: int = 6, n_wrong: int = 6, kinds=KINDS) -> list[tuple[str, str]]:
    """[(student id, kind)]: at least 20 gradable students with the default numbers."""
    roster = []
    for kind in kinds:
        if kind == "correct":
            roster += [(f"correct_{i:02d}", "correct") for i in range(1, n_correct + 1)]
        elif kind == "wrong":
            roster += [("wrong_all", "wrong_all")] + [(f"wrong_{i:02d}", "wrong") for i in range(1, n_wrong)]
        else:
            roster.append((kind, kind))
    return roster


def make_class(assignment: str, out: Path, *, release_dir: Path, source: Path = SOURCE,
               answers_dir: Path, roster=None, targets: dict | None = None, seed: int = 4) -> dict:
    """Write out/<student>/<notebook>.ipynb for every student of the roster; return the manifest."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    notebooks = sorted(p.stem for p in (Path(source) / assignment).glob("*.ipynb"))
    parts = {nb: notebook_parts(Path(release_dir) / assignment / f"{nb}.ipynb",
                                Path(source) / assignment / f"{nb}.ipynb") for nb in notebooks}
    wrong = wrong_answers(assignment, answers_dir)
    missing = [a for p in parts.values() for a in p.answers if a not in wrong]
    if missing:
        raise ValueError(f"{Path(answers_dir) / f'a{assignment}.py'} has no WRONG source for {missing}")
    rng = random.Random(seed)
    manifest = {"assignment": assignment, "notebooks": notebooks,
                "max": {nb: sum(p for _, p, _ in parts[nb].tests.values()) for nb in notebooks},
                "tests": {nb: {t: {"question": q, "points": p, "hidden": h} for t, (q, p, h) in parts[nb].tests.items()}
                          for nb in notebooks},
                "answers": {nb: parts[nb].answers for nb in notebooks},
                "students": {}}
    for student, kind in roster or default_roster():
        d = out / student
        d.mkdir(parents=True, exist_ok=True)
        entry = {"kind": kind, "gradable": True, "expected": {}, "total": {}, "planted": {}}
        for i, nb in enumerate(notebooks):
            p = parts[nb]
            plan = plans(kind, p, rng, solution=str(Path(source) / assignment / f"{nb}.ipynb"),
                         targets=targets) if i == 0 or kind in ("wrong", "wrong_all", "blank") else Plan()
            (d / f"{nb}.ipynb").write_bytes(build(p, plan, wrong))
            if plan.raw is not None:
                entry["gradable"] = False
                continue
            entry["expected"][nb] = expected_scores(p, plan)
            entry["total"][nb] = sum(entry["expected"][nb].values())
            entry["planted"][nb] = {a: plan.states.get(a, "correct") for a in p.answers}
        manifest["students"][student] = entry
    return manifest


if __name__ == "__main__":   # python tests/synthetic.py ASSIGNMENT OUT ANSWERS_DIR
    import sys
    import tempfile

    from autograder.authoring.release import generate

    a, dest, answers = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
    with tempfile.TemporaryDirectory() as tmp:
        generate(dest=Path(tmp), only=[a])
        m = make_class(a, dest, release_dir=Path(tmp), answers_dir=answers)
    (dest.parent / f"{dest.name}-manifest.json").write_text(json.dumps(m, indent=1))
    print(f"{len(m['students'])} students in {dest}")
