"""autograder/integrity/verifier_program.py, the clean re-verification program, run as the grader runs it
(`python -I -c <its source>`, here without the sandbox): verdicts for passing, failing,
partial-credit and warning-only tests, and nothing done on import."""
from __future__ import annotations

import json
import subprocess
import sys

from autograder.integrity import verifier_program
from autograder.sandbox.execute import strip_warnings
from autograder.integrity.verify import program
from course_lib.exercises.answers import encode


def verdicts(tmp_path, tests: list[dict]) -> dict:
    p = subprocess.run([sys.executable, "-I", "-c", program()], input=json.dumps({"tests": tests}) + "\n",
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert lines[0] == {"ready": True}, p.stdout + p.stderr
    return lines[1]["results"]


def job(key: str, source: str, points: float = 1.0, **values) -> dict:
    return {"key": key, "grade_id": key, "source": source, "points": points,
            "values": {n: {"value": encode(v)} for n, v in values.items()}}


def test_the_program_gives_each_test_its_verdict(tmp_path):
    res = verdicts(tmp_path, [
        job("right", "assert answer == 42", answer=42),
        job("wrong", "assert answer == 42, 'not 42'", answer=41),
        job("partial", "0.5", points=2.0),
        job("warns", "import warnings\nwarnings.warn('old', DeprecationWarning)\nassert True"),
        job("stderr", "import sys\nsys.stderr.write('boom')"),
        {"key": "missing", "grade_id": "missing", "source": "assert x", "points": 1.0,
         "values": {"x": {"error": "unpicklable"}}},
    ])
    assert (res["right"]["passed"], res["right"]["score"]) == (True, 1.0)
    assert (res["wrong"]["passed"], res["wrong"]["ename"], res["wrong"]["message"]) == (False, "AssertionError", "not 42")
    assert (res["partial"]["passed"], res["partial"]["score"]) == (False, 0.5)
    assert res["warns"]["passed"], res["warns"]
    assert (res["stderr"]["ename"], res["stderr"]["message"]) == ("Stderr", "boom")
    assert res["missing"]["ename"] == "UnsupportedAnswer" and "could not be recorded" in res["missing"]["message"]


def test_importing_the_program_runs_nothing(tmp_path):
    p = subprocess.run([sys.executable, "-c", "import autograder.integrity.verifier_program"], input='{"tests": []}\n',
                       capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")


def test_one_strip_warnings_for_the_kernel_and_the_verifier():
    assert strip_warnings is verifier_program.strip_warnings
    text = "x.py:3: DeprecationWarning: old\n  warnings.warn('old')\nreal error\n"
    assert strip_warnings(text) == "real error\n"


def test_nothing_one_submissions_tests_write_reaches_the_next_ones(tmp_path):
    """Two submissions through one program (as a worker's verifier serves every submission it
    grades): the first's tests write a file in their working folder and commit a prediction
    (course_lib keeps the record in a file there, which its checks read back to say "answered
    before"); the second's see neither. Within one submission, a later test does see an earlier one's."""
    first = job("plant", "import course_lib.exercises.predictions as p\nopen('leak.txt', 'w').write('x')\n"
                         "p.commit('q1', {'q1_x': 1})\nassert p.committed_before('q1') is not None")
    seen = job("seen", "import os, course_lib.exercises.predictions as p\n"
                       "assert os.path.exists('leak.txt') and p.committed_before('q1') is not None")
    probe = job("probe", "import os, course_lib.exercises.predictions as p\n"
                         "assert not os.path.exists('leak.txt'), 'a file of the last submission'\n"
                         "assert p.committed_before('q1') is None, 'a commit of the last submission'")
    lines = json.dumps({"tests": [first, seen]}) + "\n" + json.dumps({"tests": [probe]}) + "\n"
    p = subprocess.run([sys.executable, "-I", "-c", program()], input=lines, capture_output=True, text=True,
                       cwd=tmp_path, timeout=120)
    out = [json.loads(line) for line in p.stdout.splitlines()]
    assert out[0] == {"ready": True}, p.stdout + p.stderr
    assert out[1]["results"]["plant"]["passed"] and out[1]["results"]["seen"]["passed"], out[1]
    assert out[2]["results"]["probe"]["passed"], out[2]
    assert list(tmp_path.iterdir()) == []          # and nothing left behind
