"""pytest: the two test tiers, their time budget, and no prediction record written into the repository.

`make test` runs the fast tier (`-m "not slow"`): the library, the checks, the lessons' logic,
the structure lint and the docs. `make test-all` runs everything. A test is fast unless it is
named here: SLOW_FILES (whole files) or SLOW_TESTS (single tests of a fast file) give it the
`slow` marker, and the `hub` and `browser` markers add `serial` too (they share a prefix in
/var/tmp and the machine's cores, so `make test-all` runs them after the parallel pass).

SLOW_TESTS names a test function, a parametrized case by its full name (``test_x[05_your_machine]``)
or cases by a pattern in which ``*`` stands for any text (``test_x[mach_q6-*]``), or a doctest by
its dotted name under its module's path (``course_lib/measure/__init__.py``). Anything that
measures this machine (``course_lib.measure.this_machine``, lesson 5's setup cell and questions)
is slow: a quick measurement alone takes 5-7 s.

The fast tier's budget: no fast test over 5 s, its setup and call together (a module fixture's
setup counts in the test that first uses it), on an idle machine; a slower one gets cheaper or
moves here. When the fast tier runs (`-m "not slow"`), the terminal summary lists the fast tests
over 5 s. With FAST_TIER_BUDGET=<seconds> set (any `-m`), it lists those over that budget and the
run fails if there are any: `FAST_TIER_BUDGET=5 make test` on an idle machine. Only a report by
default, as a loaded machine (other jobs on its cores) stretches every test's time.
"""
import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
TESTS = ROOT / "tests"
#: the fast tier's budget per test (setup and call), in seconds; FAST_TIER_BUDGET overrides it
FAST_TEST_S = 5.0

#: whole files of the slow tier, and why
SLOW_FILES = {
    "test_autograder_class.py": "grades a synthetic class end to end",
    "test_autograder_trust.py": "grades tampered submissions end to end",
    "test_autograder_units.py": "grades the tiny course end to end",
    "test_cli_commands.py": "runs every autograder command as a child process on the tiny course",
    "test_grading_roundtrip.py": "grades every lesson with nbgrader",
    "test_prediction_grading.py": "grades through the nbgrader exchange",
    "test_deploy.py": "builds virtual environments and the student repository",
    "test_hub.py": "runs a JupyterHub",
    "test_hub_installs.py": "runs two JupyterHubs side by side, one of them 5.5",
    "test_hub_lti_launch.py": "runs a JupyterHub, launched from a local LTI platform in chromium",
    "test_browser.py": "drives JupyterLab in chromium",
    "test_autograder_attacks.py": "grades a class with ten attackers end to end",
    "test_exchange_owners.py": "makes real users and collects from an exchange",
    "test_prediction_rules.py": "runs kernels and grades the prediction rules end to end",
    "test_prediction_limits.py": "grades a class with tens of MB of hostile prediction records end to end",
    "test_variants_class.py": "grades a class with per-student variants end to end",
    "test_term_grading.py": "grades the tiny course's term (due date, extension, regrade) end to end",
    "test_add_question.py": "adds a question to a copy of the course, releases it and grades it with nbgrader",
    "test_add_lesson.py": "adds a lesson to a copy of the course, runs its per-lesson tests, releases it and grades it",
    "test_isolation.py": "grades two hostile submissions back to back in one worker",
    "test_answer_key.py": "writes two students' copies of course_lib (solving every variant) and runs kernels on them",
}
#: single tests of otherwise fast files: file -> test function names, cases or doctests
SLOW_TESTS = {
    # one student reads a full ledger from 40 threads for 4 s while another commits
    "test_service_limits.py": {"test_a_student_reading_a_full_ledger_from_many_threads_leaves_another_s_commit_alone"},
    # the hub's start-up (JupyterHub.initialize) for every overlay, an LTI launch, and the students'
    # image's build stage (student_build, a wheel) simulated on a temporary tree
    "test_kubernetes.py": {"test_every_overlay_starts_the_hub[*", "test_load_groups_with_manage_groups_is_refused_at_start_up",
                           "test_under_lti_the_lms_roles_decide_the_image_and_the_variant_key",
                           "test_the_student_image_holds_no_answer",
                           "test_the_culler_stops_students_servers_only_and_homes_outlive_users"},
    # loads the course's nbgrader_config.py, which imports nbgrader and the autograder's exporters
    "test_hub_kit_options.py": {"test_the_course_id_comes_from_the_course_folder"},
    "test_notebooks.py": {"test_notebook_executes_cleanly"},
    # grades a synthetic class unsharded and in 1, 2 and 3 shards
    "test_shards.py": {"test_n_shards_merge_to_exactly_the_unsharded_grades"},
    "test_measure.py": {
        # three full measurements of this machine, back to back (a stability check)
        "test_the_graded_classifications_hold_and_are_stable_over_three_runs",
        # two measurements and the benchmark's controls
        "test_measure_bench_alternates_its_arms_and_judges_by_its_controls",
        # a quick measurement of this machine (the module fixture `machine`), read five ways
        "test_measured_figures_are_physically_plausible",
        "test_the_peaks_are_the_fastest_of_repeats_taken_in_three_bursts",
        "test_memory_levels_are_ordered",
        "test_every_kernel_ran_and_is_placed",
        "test_the_machine_works_in_solve_plots_and_the_explorer",
        # a quick measurement in a subprocess under the grader's conditions
        "test_under_the_graders_conditions_the_answers_are_the_same",
    },
    # lesson 5's questions are solved against this machine, measured (once per process) when
    # one is first solved or the lesson's setup cell runs
    "test_questions.py": {"test_reading_ahead_shows_no_answer",        # run every lesson in a kernel
                          "test_skipping_every_question_runs_the_rest_of_the_lesson",
                          "test_no_tolerance_accepts_a_listed_mistake[mach_q3]",
                          "test_no_tolerance_accepts_a_listed_mistake[mach_q6]",
                          "test_a_question_declares_what_its_cells_need[mach_q3]",
                          "test_a_question_declares_what_its_cells_need[mach_q6]",
                          "test_nothing_above_an_answer_cell_gives_its_answer_away[05_your_machine]",
                          "test_printed_numbers_read_as_words_not_python[05_your_machine]",
                          "test_nor_in_a_students_own_variant[05_your_machine]"},
    "test_variants.py": {"test_an_admissible_variant_keeps_the_course_margins[mach_q6-*]",
                         "test_no_given_cell_states_its_variants_answer[mach_q6]",
                         "test_lesson_5s_givens_are_the_students_own"},
    "test_walkthrough.py": {"test_the_solution_passes_every_hidden_and_form_test[05_your_machine]",
                            "test_an_unanswered_question_is_named[05_your_machine]",
                            "test_a_classic_mistake_gets_its_message[05-*]"},   # lesson 5's namespace
    "test_question_robustness.py": {"test_graded_regimes_choices_and_ratios_survive[05_your_machine-*]",
                                    "test_the_measured_machine_sees_the_perturbation",
                                    # re-solves every variant of every question at four fusion factors
                                    "test_every_variant_holds_over_the_fusion_range"},
    "test_lesson_consistency.py": {  # the module fixture `lesson5`: lesson 5's setup, measuring
        "test_l5_q3_and_q5_verify_compare_the_same_run",
        "test_l5_q1_to_q3_claim_no_size_the_measurement_may_not_use",
        "test_l5_q6_chart_draws_each_chip_in_the_questions_precision",
        "test_l5_l1_story_holds_here_numpy_per_call_cost_limits_small_arrays"},
    # the doctests of this_machine() measure this machine (quick mode)
    "course_lib/measure/__init__.py": {"course_lib.measure", "course_lib.measure.this_machine"},
}
SERIAL_MARKERS = ("hub", "browser")


def _file_key(path: Path) -> str:
    """SLOW_FILES' and SLOW_TESTS' key of a file: its name in tests/, else its path in the repository."""
    if path.parent == TESTS or not path.is_relative_to(ROOT):
        return path.name
    return path.relative_to(ROOT).as_posix()


def _listed(item, names) -> bool:
    func = getattr(item, "originalname", None) or item.name
    return func in names or item.name in names or any(
        "*" in n and re.fullmatch(".*".join(map(re.escape, n.split("*"))), item.name) for n in names)


def _defined(module, name: str) -> bool:
    """Whether SLOW_TESTS' `name` names something `module` has: a test function (a pattern's part
    before "[", itself possibly a pattern; the cases are not checked) or a doctest's dotted name."""
    if module is None:                                     # a doctest: its object must still exist
        import pkgutil
        try:
            pkgutil.resolve_name(name)
        except (ImportError, AttributeError, ValueError):
            return False
        return True
    func = name.split("[", 1)[0]
    pattern = ".*".join(map(re.escape, func.split("*")))
    return any(re.fullmatch(pattern, attr) for attr in dir(module) if attr.startswith("test"))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: the slow tier, run by `make test-all` only (assigned in conftest.py)")
    config.addinivalue_line("markers", "serial: run after the parallel pass of `make test-all`, alone")
    stale = sorted(f for f in (*SLOW_FILES, *SLOW_TESTS) if not ((TESTS / f).is_file() or (ROOT / f).is_file()))
    if stale:
        raise pytest.UsageError(f"conftest.py names test files that do not exist: {', '.join(stale)}")


def pytest_collection_modifyitems(config, items):
    modules = {}
    for item in items:
        name = _file_key(item.path)
        if modules.get(name) is None:                      # a doctest item has no module
            modules[name] = getattr(item, "module", None)
        if name in SLOW_FILES or _listed(item, SLOW_TESTS.get(name, ())):
            item.add_marker(pytest.mark.slow)
        if any(item.get_closest_marker(m) for m in SERIAL_MARKERS):
            item.add_marker(pytest.mark.slow)
            item.add_marker(pytest.mark.serial)
    stale = sorted(f"{f}::{t}" for f, ts in SLOW_TESTS.items() if f in modules for t in ts
                   if not _defined(modules[f], t))
    if stale:
        raise pytest.UsageError(f"conftest.py's SLOW_TESTS names tests that do not exist: {', '.join(stale)}")


# ---- the fast tier's budget (see the docstring) -------------------------------------------------
def _budget(config):
    """(seconds, whether going over fails the run), or None where no check is asked for."""
    env = os.environ.get("FAST_TIER_BUDGET", "").strip()
    if env:
        return float(env), True
    if (config.getoption("markexpr", "") or "").strip() == "not slow":
        return FAST_TEST_S, False
    return None


#: nodeid -> seconds of setup and call, of each test without the slow marker
_FAST_TIMES: dict = {}


def pytest_runtest_logreport(report):
    # under pytest-xdist the workers' reports reach the controller's hook too
    if report.when in ("setup", "call") and "slow" not in report.keywords:
        _FAST_TIMES[report.nodeid] = _FAST_TIMES.get(report.nodeid, 0.0) + report.duration


def _over(config):
    budget = _budget(config)
    if budget is None or hasattr(config, "workerinput"):   # the controller reports, not each worker
        return None, []
    return budget, sorted(((s, n) for n, s in _FAST_TIMES.items() if s > budget[0]), reverse=True)


def pytest_sessionfinish(session, exitstatus):
    budget, over = _over(session.config)
    if over and budget[1] and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    budget, over = _over(config)
    if not over:
        return
    seconds, fails = budget
    terminalreporter.section(f"fast tests over {seconds:g} s (setup + call; conftest.py)",
                             red=fails, yellow=not fails)
    for s, nodeid in over:
        terminalreporter.write_line(f"{s:6.2f}s {nodeid}")
    terminalreporter.write_line(
        f"{len(over)} fast test(s) over the budget: make them cheaper or move them to the slow tier "
        + ("(FAST_TIER_BUDGET is set: the run fails)." if fails else
           "(a report only; a loaded machine stretches every test: FAST_TIER_BUDGET=5 fails the run)."))


@pytest.fixture(autouse=True)
def _prediction_record_in_tmp(tmp_path, monkeypatch):
    # a passing form check commits the prediction to .predictions.jsonl in the working folder
    # (course_lib.exercises.predictions): here, a fresh temporary folder per test
    from course_lib.exercises import predictions

    monkeypatch.setattr(predictions, "_HERE", tmp_path)
