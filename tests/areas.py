"""The test files by area, for a focused loop: `make test-quick AREA=library` runs one area's fast
tests (README "The test loop"). Every tests/test_*.py is in exactly one area (tests/test_docs.py
checks this and the README's table).

    python tests/areas.py AREA        the area's files, for pytest
    python tests/areas.py --time      each area's fast tests, timed one after another (a benchmark)
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

#: area -> (what it holds, its test files)
AREAS: dict[str, tuple[str, list[str]]] = {
    "library": ("course_lib's solvers, zoo, units and printed results", [
        "test_solve.py", "test_serve.py", "test_cnn.py", "test_topology.py", "test_units_and_errors.py",
        "test_hardware_and_models.py", "test_hardware_specs.py", "test_measurements_bound.py",
        "test_fidelity.py", "test_step_truth.py", "test_scaling_by_hand.py", "test_latency_range.py",
        "test_training.py", "test_training_by_hand.py",
        "test_printed_results.py",
        "test_measure.py", "test_module_boundaries.py"]),
    "questions": ("declared questions, their checks, variants and the prediction record", [
        "test_questions.py", "test_question_robustness.py", "test_variants.py", "test_checks.py",
        "test_answers.py", "test_answer_key.py", "test_predictions.py", "test_record_limits.py",
        "test_walkthrough.py"]),
    "lessons": ("the lessons: structure, release, lint, run, consistency, figures and widgets", [
        "test_authoring.py", "test_lint.py", "test_notebooks.py", "test_lesson_consistency.py",
        "test_plots_and_widgets.py", "test_add_question.py", "test_add_lesson.py", "test_docs.py", "test_project.py"]),
    "grading": ("the autograder: grading, sandbox, integrity, outputs, the term", [
        "test_autograder_units.py", "test_autograder_class.py", "test_autograder_trust.py",
        "test_autograder_attacks.py", "test_grading_roundtrip.py", "test_prediction_grading.py",
        "test_prediction_rules.py", "test_prediction_limits.py", "test_variants_class.py", "test_isolation.py",
        "test_zygote.py", "test_verifier_program.py", "test_shards.py", "test_term_grading.py",
        "test_deadlines.py", "test_flags.py", "test_untrusted_input.py", "test_cli_commands.py",
        "test_roster.py", "test_report_page.py", "test_feedback_link.py", "test_feedback_math.py",
        "test_page_safety.py", "test_lms_export.py", "test_copies.py", "test_course_gitignore.py",
        "test_feedback_page.py", "test_regrade_rules.py"]),
    "hub": ("the course service, the hub kit, LTI, Kubernetes and deployment", [
        "test_ledger.py", "test_service_exchange.py", "test_service_hub_group.py", "test_service_limits.py",
        "test_exchange_owners.py", "test_hub.py", "test_hub_installs.py", "test_hub_kit_options.py",
        "test_hub_lti.py", "test_hub_lti_launch.py", "test_hub_spawners.py", "test_kubernetes.py",
        "test_deploy.py", "test_formgrader_config.py", "test_formgrader_guard.py", "test_readme_files.py"]),
    "browser": ("JupyterLab, the Formgrader and the pages in chromium, axe-core", [
        "test_browser.py", "test_browser_predictions.py", "test_browser_unmodified.py",
        "test_formgrader_browser.py", "test_accessibility.py", "test_labextension.py"]),
}


def files(area: str) -> list[str]:
    if area not in AREAS:
        raise SystemExit(f"no test area {area!r}: expected one of {', '.join(AREAS)}")
    return [f"tests/{f}" for f in AREAS[area][1]]


def _time() -> None:
    root = TESTS.parent
    for area in AREAS:
        t0 = time.monotonic()
        p = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "not slow", "-p", "no:randomly",
                            *files(area)], cwd=root, capture_output=True, text=True)
        last = (p.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"{area:10s} {time.monotonic() - t0:6.1f} s  {last}", flush=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--time"]:
        _time()
    elif len(sys.argv) == 2:
        print(" ".join(files(sys.argv[1])))
    else:
        raise SystemExit(__doc__)
