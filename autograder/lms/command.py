"""`export --lms` and `export --lms-csv FORMAT`: the command line's side (autograder.cli hooks it)."""
from __future__ import annotations

import sys
from pathlib import Path

from autograder.course import Course
from autograder.lms.errors import LmsError


def add_arguments(e) -> None:
    g = e.add_argument_group("grades to the LMS (deploy/lti.md)")
    g.add_argument("--lms", action="store_true",
                   help="post each student's score to the LMS line item (LTI Advantage Assignment and Grade Services)")
    g.add_argument("--lms-csv", choices=["canvas", "moodle"],
                   help="instead: the LMS's own gradebook import CSV (--out; default <root>/lms-<format>.csv)")
    g.add_argument("--lms-config", metavar="JSON", help="the LMS registration (default: <root>/lms.json)")
    g.add_argument("--assignment", action="append", metavar="NAME",
                   help="this assignment (repeatable; default: every assignment in the gradebook)")
    g.add_argument("--late", choices=["apply", "ignore"], default="apply",
                   help="the late penalty: subtracted (default) or not")
    g.add_argument("--flagged", choices=["hold", "comment"], default="hold",
                   help="flagged submissions: held back until unflagged (default) or posted with the flag as comment")


def wanted(args) -> bool:
    return bool(args.lms or args.lms_csv)


def run(course: Course, args) -> int:
    try:
        import pylti1p3  # noqa: F401
    except ImportError:
        raise SystemExit("export --lms needs pylti1p3: pip install 'course_lib[lms]' (pyproject's lms extra)") from None
    from autograder.lms import config as configs
    from autograder.lms import gradebook_csv, roster
    from autograder.lms.post import export_to_lms, format_result
    from autograder.lms.rules import Flagged, Late, Rule

    if not course.db.is_file():
        raise SystemExit(f"no gradebook at {course.db}: grade something first")
    if args.lms and args.lms_csv:
        raise SystemExit("--lms posts to the LMS, --lms-csv writes its import file: choose one")
    rule = Rule(late=Late(args.late), flagged=Flagged(args.flagged))
    assignments = args.assignment or _graded(course)
    try:
        if args.lms_csv:
            fmt = gradebook_csv.Format(args.lms_csv)
            cfg_path = Path(args.lms_config) if args.lms_config else configs.default_path(course.root)
            r = roster.Roster()
            if cfg_path.is_file():
                cfg = configs.load(cfg_path)
                r = roster.read(cfg.roster_file, cfg.issuer, cfg.deployment_id)
            out = Path(args.out) if args.out else configs.import_csv_path(course.root, fmt.value)
            print(f"{fmt.value} gradebook import written to {gradebook_csv.write(course, assignments, rule, fmt, out, r)}")
            print(f"scoring rule: {rule.describe()}")
            return 0
        cfg = configs.load(Path(args.lms_config) if args.lms_config else configs.default_path(course.root))
        result = export_to_lms(course, cfg, assignments, rule)
    except LmsError as e:
        print(f"export --lms-csv: {e}" if args.lms_csv else f"export --lms: nothing posted: {e}", file=sys.stderr)
        return 2
    print(format_result(result))
    if result.error:
        print(f"export --lms: stopped: {result.error}", file=sys.stderr)
        return 2
    return 0


def _graded(course: Course) -> list[str]:
    with course.gradebook() as gb:
        names = sorted(a.name for a in gb.assignments)
    if not names:
        raise SystemExit(f"the gradebook {course.db} holds no assignment: grade something first")
    return names
