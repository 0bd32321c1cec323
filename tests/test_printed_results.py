"""The solvers' printed results, as a student reads them, change only on purpose (issue 43).
tests/printed_results.py holds the grid and how to accept a deliberate change."""
from __future__ import annotations

import difflib

import printed_results


def test_what_the_solvers_print_has_not_changed():
    now = printed_results.render()
    before = printed_results.GOLDEN.read_text()
    if now != before:
        diff = "".join(list(difflib.unified_diff(before.splitlines(True), now.splitlines(True),
                                                 "golden", "now", n=1))[:80])
        raise AssertionError("what the solvers print changed. If it is meant to, run\n"
                             "  .venv/bin/python tests/printed_results.py --update\n"
                             "and review `git diff tests/golden/` before committing.\n" + diff)


def test_the_grid_covers_every_solver_and_prints_every_case():
    titles = [t for t, _ in printed_results.cases()]
    assert len(titles) == len(set(titles))
    assert {t.split("(")[0] for t in titles} == {"solve", "serve"}
    assert printed_results.render().count("\n## ") + 1 == len(titles)
