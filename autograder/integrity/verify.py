"""Clean re-verification: every test's verdict recomputed from the recorded answers, in a fresh
Python process that no student code ever ran in.

In the student's kernel a test cell can be fooled: the submission may monkeypatch
course_lib.exercises.checks, builtins or sys.modules, install assert or pre/post-run hooks. What cannot
be fooled is the record of the answers taken right after each answer cell ran (plain JSON, by
course_lib.exercises.answers): here each test cell of the instructor's *source* notebook runs again, in a
fresh namespace seeded with the decoded answers, in a new Python started like the kernel (the
same interpreter, the same course_lib, sandboxed, as `nobody`) but with nothing of the student's
in it. Its verdict is the score; where the kernel disagreed, the instructor is told.

The seam: `grading_values(test, answers, nb)` chooses the values a test is re-verified with.
By default each name a test reads takes the value it had right after the last answer cell
before the test that assigns it. A predict-then-verify record (a prediction committed before the
truth was revealed) plugs in there.

A test cell can be re-verified when every name it reads without defining is an answer
variable (assigned in an answer cell); `plan()` says which are not. A hidden test that reads
anything else cannot be graded safely and stops grading (preflight) with the cell named.
"""
from __future__ import annotations

import enum
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple


from course_lib.exercises.question_ids import metadata

from autograder.cell_code import HIDDEN_BEGIN, assigned_names, free_names, named_answers
from autograder.integrity import verifier_program
from autograder.authoring.cells import read_source

#: a test cell that takes longer than this in the clean process has a problem of its own
VERIFY_TIMEOUT_PER_TEST = 30


@dataclass
class TestCell:
    """An autograded test cell of the instructor's source notebook."""

    notebook: str
    grade_id: str
    source: str
    points: float
    hidden: bool
    names: list                                    # names it reads without defining them
    sources: dict = field(default_factory=dict)    # name -> the answer cell (grade_id) that assigns it
    unknown: list = field(default_factory=list)    # names no earlier answer cell assigns

    @property
    def verifiable(self) -> bool:
        return not self.unknown


_meta = metadata       # a cell's nbgrader metadata (course_lib.exercises.question_ids)


def test_cells(source_nb: Path, nb=None) -> list[TestCell]:
    """The autograded test cells of a source notebook (read from `source_nb` unless `nb` is
    given), each with the answer cell every name it reads comes from."""
    nb = nb if nb is not None else read_source(source_nb)
    assigned_by: dict[str, str] = {}        # name -> the last answer cell so far that assigns it
    out = []
    for cell in nb.cells:
        m = _meta(cell)
        if cell.cell_type != "code":
            continue
        if m.get("solution") and not m.get("grade"):
            for n in assigned_names(cell.source):
                assigned_by[n] = m["grade_id"]
        elif m.get("grade") and not m.get("solution"):
            free = free_names(cell.source)
            names = free + [n for n in named_answers(cell.source, assigned_by) if n not in free]
            out.append(TestCell(Path(source_nb).stem, m["grade_id"], cell.source, float(m.get("points", 0)),
                                HIDDEN_BEGIN in cell.source, names,
                                {n: assigned_by[n] for n in names if n in assigned_by},
                                [n for n in free if n not in assigned_by]))
    return out


def plan(source_dir: Path, notebooks: list[str]) -> dict:
    """What grading an assignment records and re-verifies:
    {"tests": {notebook: [TestCell...]}, "capture": {answer grade_id: [names]},
     "hidden": [hidden test grade_ids], "unverifiable": [(notebook, grade_id, [names])]}."""
    tests, capture, hidden, unverifiable = {}, {}, [], []
    for nb in notebooks:
        cells = test_cells(Path(source_dir) / f"{nb}.ipynb")
        tests[nb] = cells
        for t in cells:
            if t.hidden:
                hidden.append(t.grade_id)
            if not t.verifiable:
                unverifiable.append((nb, t.grade_id, t.unknown))
                continue
            for name, answer in t.sources.items():
                if name not in capture.setdefault(answer, []):
                    capture[answer].append(name)
    return {"tests": tests, "capture": capture, "hidden": hidden, "unverifiable": unverifiable}


# ---------------------------------------------------------------------------------------------
# The seam: which values a test is re-verified with
# ---------------------------------------------------------------------------------------------
def grading_values(test: TestCell, answers: dict, nb=None) -> dict[str, dict]:
    """{name: record entry} that `test` is re-verified with. An entry is what
    course_lib.exercises.answers.record wrote: {"value": <encoded>}, {"error": why} or {"missing": True}.

    `answers` is the autograded notebook's record, {answer grade_id: {name: entry}}, taken right
    after each answer cell ran; `nb` is the autograded notebook itself (for records of other
    kinds). Default: each name's value right after the answer cell that assigns it (the last
    one before the test in the source notebook). A name with no record at all is missing (the
    answer cell never ran).

    With `nb` holding prediction decisions (metadata.autograder.predictions, see
    autograder.integrity.predictions), a hidden test of a graded question reads the answer committed
    before the truth was revealed, or is withheld ({"withheld": why}) where the rule grades
    nothing (changed after the reveal, the truth shown before any commit, no record under
    --no-record zero-predictions)."""
    out = {}
    for name in test.names:
        cell = test.sources.get(name)
        entry = (answers.get(cell) or {}).get(name) if cell else None
        out[name] = entry if isinstance(entry, dict) else {"missing": True}
    decisions = ((nb.metadata.get("autograder", {}) if nb is not None else {}).get("predictions") or {}) \
        .get("questions") or {}
    if test.hidden and decisions:
        from autograder.integrity.predictions import Decision, Rule, answer_question

        for name in test.names:
            q = answer_question(test.sources.get(name) or "")
            d = Decision.from_json(decisions[q]) if q and decisions.get(q) else None
            if d is None:
                continue
            if d.withheld or d.rule is Rule.CHANGED:
                out[name] = {"withheld": d.message, "rule": d.rule.value}
            elif d.rule is Rule.COMMITTED and name in (d.committed or {}):
                out[name] = {"value": d.committed[name]}
    return out


# ---------------------------------------------------------------------------------------------
# The clean process
# ---------------------------------------------------------------------------------------------
# Runs as `python -I -c <the source of autograder/integrity/verifier_program.py>` in a sandbox of its own:
# only the Python install and course_lib are visible there, not this package, so the module's
# source text is sent rather than its name.
def program() -> str:
    """The verifier program's source (autograder/integrity/verifier_program.py), read when it starts."""
    return Path(verifier_program.__file__).read_text()


class VerifyError(RuntimeError):
    """The clean process could not give verdicts (it did not start, crashed or timed out);
    `ename`: the class name of the exception that stopped it, where it reported one."""

    def __init__(self, message: str, ename: str = ""):
        super().__init__(message)
        self.ename = ename


class Verifier:
    """The clean process, started once per worker (sandboxed like a kernel, with nothing of any
    student in it) and asked for the verdicts of one submission at a time; each request runs in
    a child it forks, so every submission is checked by a fresh process."""

    def __init__(self, spec, log_file: Path | None = None):
        import subprocess

        from autograder.sandbox.line_process import LineProcess

        self.spec = spec
        cwd = spec.home if spec.enabled else spec.cwd
        self.log = open(log_file, "ab") if log_file else subprocess.DEVNULL
        self.proc = LineProcess(spec.command(["-I", "-c", program()]), env=dict(spec.env), cwd=cwd, stderr=self.log,
                                error=VerifyError, what="the clean re-verification")
        first = self.proc.read(60)
        if first.get("fatal"):
            self.close()
            raise VerifyError(f"the clean re-verification failed: {first['fatal']}", str(first.get("ename", "")))

    def run(self, tests: list[dict], env: dict | None = None) -> dict:
        self.proc.send({"tests": tests, "env": env or {}})
        out = self.proc.read(30 + VERIFY_TIMEOUT_PER_TEST * len(tests))
        if "fatal" in out:
            raise VerifyError(f"the clean re-verification failed: {out['fatal']}")
        return out["results"]

    def alive(self) -> bool:
        return self.proc.alive()

    def close(self) -> None:
        self.proc.close()


_VERIFIERS: dict = {}


def close_verifiers() -> None:
    """Stop this process's clean processes (the grader's own, before it forks workers)."""
    while _VERIFIERS:
        _VERIFIERS.popitem()[1].close()


def forget_verifiers() -> None:
    """In a forked worker: the parent's clean processes are not ours."""
    _VERIFIERS.clear()


class Values(enum.Enum):
    """Which answers a verification job runs a test with."""

    GRADED = "graded"          # what grading_values chooses: the verdict is the score
    FINAL = "final"            # the final answers, the kernel's (where they differ from the graded ones)
    COMMITTED = "committed"    # the predictions as committed (where a rule withheld them), for the report
    ONE_ANSWER = "one-answer"  # JobKey.variable the student's, the test's other answers the truth's


class JobKey(NamedTuple):
    """What a verification job's verdict is of: a test cell of a notebook, run with `values`."""

    notebook: str
    grade_id: str
    values: Values = Values.GRADED
    variable: str = ""         # the student's answer, for Values.ONE_ANSWER

    def __str__(self) -> str:
        what = {Values.GRADED: "", Values.ONE_ANSWER: f" ({self.variable} alone)"}.get(
            self.values, f" ({self.values.value} answers)")
        return f"{self.notebook}/{self.grade_id}{what}"


def run_clean(tests: list[dict], make_spec, key: str = "", log_file: Path | None = None,
              env: dict | None = None) -> dict:
    """Verdicts {JobKey: {passed, score, ename, message, label}} for `tests`
    ([{key: JobKey, grade_id, source, points, values}]) from this process's clean verifier
    (started by `make_spec()`, an autograder.sandbox.bwrap.SandboxSpec, when there is none yet or it
    died); `env`: variables set for these tests only (the graded student's variant,
    autograder.authoring.variants)."""
    if not tests:
        return {}
    v = _VERIFIERS.get(key)
    if v is None or not v.alive():
        v = _VERIFIERS[key] = Verifier(make_spec(), log_file)
    # the clean process sees each job by its place in the list: it only echoes the key
    results = v.run([{**t, "key": str(i)} for i, t in enumerate(tests)], env)
    missing = [str(t["key"]) for i, t in enumerate(tests) if str(i) not in results]
    if missing:
        raise VerifyError(f"the clean re-verification gave no verdict for {', '.join(missing)}")
    return {t["key"]: results[str(i)] for i, t in enumerate(tests)}


def verification_jobs(tests: dict, notebooks: dict, truth: dict | None = None) -> list[dict]:
    """The jobs for one submission ({key: JobKey, grade_id, source, points, values}): every
    verifiable test of every notebook, with the values `grading_values` chooses; for a hidden
    test that reads several answers, one more job per answer with the others set to the truth
    (the solution's record), so the report can tell which answer was wrong. `notebooks`:
    {notebook: autograded NotebookNode}."""
    jobs = []
    for nb_name, cells in tests.items():
        nb = notebooks.get(nb_name)
        if nb is None:
            continue
        answers = nb.metadata.get("autograder", {}).get("answers", {}) or {}
        truth_answers = (truth or {}).get(nb_name, {}).get("answers", {})
        for t in cells:
            if not t.verifiable:
                continue
            values = grading_values(t, answers, nb)
            base = {"grade_id": t.grade_id, "source": t.source, "points": t.points}
            jobs.append({**base, "key": JobKey(nb_name, t.grade_id), "values": values})
            final = grading_values(t, answers)
            if values != final:
                # the final answers too: the kernel ran with them (a disagreement with the kernel
                # means tampering only against this verdict), and the report judges a changed
                # prediction by the one committed
                jobs.append({**base, "key": JobKey(nb_name, t.grade_id, Values.FINAL), "values": final})
                committed = {n: (_committed(nb, t, n, final[n]) if "withheld" in e else e) for n, e in values.items()}
                if committed != values:
                    jobs.append({**base, "key": JobKey(nb_name, t.grade_id, Values.COMMITTED), "values": committed})
            if t.hidden and truth_answers and len(t.names) > 1:
                right = grading_values(t, truth_answers)
                for name in t.names:
                    mixed = {n: (values[n] if n == name else right[n]) for n in t.names}
                    jobs.append({**base, "key": JobKey(nb_name, t.grade_id, Values.ONE_ANSWER, name), "values": mixed})
    return jobs


def _committed(nb, test: TestCell, name: str, final: dict) -> dict:
    """The record entry of `name` as committed (the final one where nothing was committed)."""
    from autograder.integrity.predictions import Decision, answer_question

    q = answer_question(test.sources.get(name) or "")
    committed = Decision.from_json(nb.metadata["autograder"]["predictions"]["questions"][q]).committed or {}
    return {"value": committed[name]} if name in committed else final


def to_json(tests: dict) -> dict:
    return {nb: [asdict(t) for t in cells] for nb, cells in tests.items()}


def from_json(data: dict) -> dict:
    return {nb: [TestCell(**t) for t in cells] for nb, cells in data.items()}


def kernel_passed(cell) -> bool | None:
    """The kernel's verdict on a test cell, as nbgrader reads it (None: not run)."""
    outs = cell.get("outputs", [])
    if any(o.get("ename") == "CellNotRun" for o in outs):
        return None
    return not any(o.get("output_type") == "error" or (o.get("output_type") == "stream" and o.get("name") == "stderr")
                   for o in outs)

