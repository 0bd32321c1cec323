"""pytest: the two test tiers, and no prediction record written into the repository.

`make test` runs the fast tier (`-m "not slow"`): the library, the checks, the lessons' logic,
the structure lint and the docs. `make test-all` runs everything. A test is fast unless it is
named here: SLOW_FILES (whole files) or SLOW_TESTS (single tests of a fast file) give it the
`slow` marker, and the `hub` and `browser` markers add `serial` too (they share a prefix in
/var/tmp and the machine's cores, so `make test-all` runs them after the parallel pass).
"""
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent / "tests"

#: whole files of the slow tier, and why
SLOW_FILES = {
    "test_autograder_class.py": "grades a synthetic class end to end",
    "test_autograder_trust.py": "grades tampered submissions end to end",
    "test_autograder_units.py": "grades the tiny course end to end",
    "test_grading_roundtrip.py": "grades every lesson with nbgrader",
    "test_prediction_grading.py": "grades through the nbgrader exchange",
    "test_deploy.py": "builds virtual environments and the student repository",
    "test_hub.py": "runs a JupyterHub",
    "test_browser.py": "drives JupyterLab in chromium",
    "test_autograder_attacks.py": "grades a class with ten attackers end to end",
    "test_exchange_owners.py": "makes real users and collects from an exchange",
    "test_prediction_rules.py": "runs kernels and grades the prediction rules end to end",
    "test_prediction_limits.py": "grades a class with tens of MB of hostile prediction records end to end",
    "test_variants_class.py": "grades a class with per-student variants end to end",
    "test_add_question.py": "adds a question to a copy of the course, releases it and grades it with nbgrader",
}
#: single tests of otherwise fast files: file -> test function names
SLOW_TESTS = {
    "test_notebooks.py": {"test_notebook_executes_cleanly"},
    "test_questions.py": {"test_reading_ahead_shows_no_answer",        # run every lesson in a kernel
                          "test_skipping_every_question_runs_the_rest_of_the_lesson"},
    # three full measurements of this machine, back to back (a stability check)
    "test_measure.py": {"test_the_graded_classifications_hold_and_are_stable_over_three_runs",
                        # two measurements and the benchmark's controls
                        "test_measure_bench_alternates_its_arms_and_judges_by_its_controls"},
}
SERIAL_MARKERS = ("hub", "browser")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run by `make test-all` only (assigned in conftest.py)")
    config.addinivalue_line("markers", "serial: run after the parallel pass of `make test-all`, alone")
    stale = sorted(f for f in (*SLOW_FILES, *SLOW_TESTS) if not (TESTS / f).is_file())
    if stale:
        raise pytest.UsageError(f"conftest.py names test files that do not exist: {', '.join(stale)}")


def pytest_collection_modifyitems(config, items):
    modules = {}
    for item in items:
        name = item.path.name
        func = getattr(item, "originalname", None) or item.name
        modules.setdefault(name, getattr(item, "module", None))
        if name in SLOW_FILES or func in SLOW_TESTS.get(name, ()):
            item.add_marker(pytest.mark.slow)
        if any(item.get_closest_marker(m) for m in SERIAL_MARKERS):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.serial)
    stale = sorted(f"{f}::{t}" for f, ts in SLOW_TESTS.items() if modules.get(f) for t in ts
                   if not hasattr(modules[f], t))
    if stale:
        raise pytest.UsageError(f"conftest.py's SLOW_TESTS names tests that do not exist: {', '.join(stale)}")


@pytest.fixture(autouse=True)
def _prediction_record_in_tmp(tmp_path, monkeypatch):
    # a passing form check commits the prediction to .predictions.jsonl in the working folder
    # (course_lib.exercises.predictions): here, a fresh temporary folder per test
    from course_lib.exercises import predictions

    monkeypatch.setattr(predictions, "_HERE", tmp_path)
