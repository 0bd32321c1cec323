"""python -m autograder release | collect | grade | manual | feedback | release-feedback | export |
report | publish | variants | lint | extend | late-policy | students

The course directory (nbgrader_config.py, solutions/, notebooks/, and the grading data: submitted/,
autograded/, feedback/, gradebook.db, reports/) is --course-dir, or $AUTOGRADER_ROOT, or the
nearest folder holding nbgrader_config.py from the working directory upward. --root moves the
grading data elsewhere; --source and --release-dir name other instructor / student notebook
folders. The exchange (release --exchange, release-feedback) is --exchange ROOT,
$AUTOGRADER_EXCHANGE, or nbgrader's configured Exchange.root.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

from autograder.course import COURSE_ID, Course, default_jobs
from autograder.locate import CONFIGURED, exchange_of, locate_course


def _course(args) -> Course:
    """The course the command works on: paths given on the command line, the rest from the
    course directory (autograder.locate), which is only looked for when something is missing."""
    where = None
    if not (args.root and args.source and args.release_dir):
        where = locate_course(args.course_dir)
    source = Path(args.source) if args.source else where.source
    if not source.is_dir():
        raise SystemExit(f"{source}: no such folder of instructor notebooks (--source)")
    return Course(root=Path(args.root) if args.root else where.path, source=source,
                  release=Path(args.release_dir) if args.release_dir else where.release,
                  course_id=where.course_id if where else COURSE_ID)


def _limits(args):
    from autograder.sandbox.bwrap import Limits

    return Limits(cell_timeout=args.timeout, notebook_timeout=args.notebook_timeout, memory_mb=args.memory,
                  tasks=args.tasks, home_mb=args.disk)


def _assignment_names(course: Course, names: list[str], all_: bool) -> list[str]:
    known = course.assignments()
    if all_:
        return known
    if not names:
        raise SystemExit("name an assignment (or --all): " + ", ".join(known))
    for n in names:
        if n not in known:
            raise SystemExit(f"unknown assignment {n!r}; the assignments are: {', '.join(known)}")
    return names


def cmd_release(args) -> int:
    from autograder.authoring.release import generate, release_to_exchange

    course = _course(args)
    names = _assignment_names(course, args.assignment, args.all)
    due = _due(args) if args.due else None
    from autograder.grading.deadlines import due_date, set_due

    for p in generate(dest=course.release, only=names, source=course.source):
        print(f"released {p}")
    if due is not None:
        for n in names:
            set_due(course, n, due)
            print(f"{n} is due {due.isoformat()} (in the gradebook: the Formgrader shows it)")
    if args.exchange is not None or os.environ.get("AUTOGRADER_EXCHANGE"):
        explicit = None if args.exchange in (None, CONFIGURED) else args.exchange
        exchange = exchange_of(explicit, course.root, must_exist=explicit is None)
        dues = {n: due_date(course, n) for n in names}       # this --due, or one recorded before
        for p in release_to_exchange(names, exchange, release=course.release, source=course.source,
                                     course_id=course.course_id, dues={n: d for n, d in dues.items() if d}):
            print(f"in the exchange: {p}")
        for n, d in dues.items():
            if d:
                print(f"{n}: its released notebooks open with its due date, {d.isoformat()}")
    return 0


def _due(args):
    """--due (and --tz) as an aware datetime, or a clear error."""
    from autograder.grading.deadlines import DeadlineError, parse_when

    try:
        return parse_when(args.due, args.tz)
    except DeadlineError as e:
        raise SystemExit(f"--due: {e}") from None


def cmd_unflag(args) -> int:
    from autograder.integrity.unflag import UnflagError, unflag

    course = _course(args)       # the assignment need only be in the gradebook: unflag says if not
    try:
        u = unflag(course, args.assignment, args.student, args.reason or "", args.notebook)
    except UnflagError as e:
        raise SystemExit(f"unflag: {e}") from None
    if not u.notebooks:
        print(f"{args.student}: {args.assignment} was not flagged; the reasons standing are recorded as looked at")
    else:
        print(f"{args.student}: {args.assignment} unflagged ({', '.join(u.notebooks)}); export --lms posts it now")
    for r in u.reasons:
        print(f"  cleared: {r.message}  (a regrade finding it again does not flag it)")
    return 0


def cmd_extend(args) -> int:
    from autograder.grading.deadlines import DeadlineError, due_date, extensions, grant, parse_when

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    if not args.student:
        due = due_date(course, args.assignment)
        print(f"{args.assignment} is due {due.isoformat() if due else '(no due date)'}")
        for s, e in sorted(extensions(course, args.assignment).items()):
            print(f"  {s}: until {e.until} ({e.reason}; by {e.by} at {e.at})")
        return 0
    if (args.until is None) == (not args.withdraw):
        raise SystemExit("give --until WHEN (with its time zone) or --withdraw")
    try:
        until = None if args.withdraw else parse_when(args.until, args.tz)
        e = grant(course, args.assignment, args.student, until, args.reason or "")
    except DeadlineError as err:
        raise SystemExit(f"extend: {err}") from None
    print(f"{args.student}: {args.assignment} " + (f"extended until {e.until}" if e.until else "extension withdrawn")
          + f" ({e.reason}); grade again to apply it: python -m autograder grade {args.assignment} "
            f"--student {args.student}")
    return 0


def cmd_late_policy(args) -> int:
    from autograder.grading import late

    course = _course(args)
    if args.none:
        late.write(course.root, None)
    elif args.percent_per_day is not None:
        try:
            late.write(course.root, late.LatePolicy(args.percent_per_day, args.cap, args.grace_minutes))
        except ValueError as e:
            raise SystemExit(f"late-policy: {e}") from None
    policy = late.read(course.root)
    print("late policy: " + (policy.text if policy else "none (late submissions cost nothing)")
          + f" ({late.path(course.root)}); it applies when a submission is graded")
    return 0


def cmd_collect(args) -> int:
    from autograder.intake.collect import collect

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    if (args.source_dir is None) == (args.exchange is None):
        raise SystemExit("collect from a folder or zip (SOURCE) or from the nbgrader exchange (--exchange [ROOT]), "
                         "one of the two")
    if args.exchange is not None:
        report = collect(course, args.assignment, exchange=args.exchange or None, from_exchange=True)
    else:
        report = collect(course, args.assignment, Path(args.source_dir))
    print(report.format())
    return 0


def cmd_manual(args) -> int:
    from autograder.grading import manual

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    if args.csv:
        changes = manual.enter(course, args.assignment, manual.read_csv(Path(args.csv)))
    elif args.student or args.cell or args.points is not None or args.comment is not None:
        if not (args.student and args.cell) or (args.points is None and args.comment is None):
            raise SystemExit("give --student, --cell and --points and/or --comment")
        changes = manual.enter(course, args.assignment,
                               [manual.Entry(args.student, args.notebook or "", args.cell, args.points, args.comment)])
    elif args.template:
        n = manual.write_template(course, args.assignment, Path(args.template), only_awaiting=args.awaiting)
        print(f"{n} row(s) written to {args.template}: fill in points (and comments), then "
              f"python -m autograder manual {args.assignment} --csv {args.template}")
        return 0
    else:
        rows = manual.status(course, args.assignment)
        todo = [r for r in rows if r["awaiting"]]
        for r in rows:
            if r["awaiting"] or not args.awaiting:
                got = ("awaiting" + (f" (review: {r['points']:g} was given to an earlier answer)"
                                     if r["points"] is not None else "") if r["awaiting"] else
                       "-" if r["points"] is None else f"{r['points']:g}")
                print(f"{r['student_id']:20s} {r['notebook']}/{r['grade_id']}: {got} of {r['max_points']:g}"
                      + (f"  ({r['comment'][:60]})" if r["comment"] else ""))
        print(f"{len(todo)} of {len(rows)} manually graded cell(s) still awaiting a score")
        return 0
    for c in changes:
        print(f"entered: {c}")
    print(f"{len(changes)} change(s); regenerate the feedback to show them: python -m autograder feedback {args.assignment}")
    return 0


def cmd_lint(args) -> int:
    from autograder.authoring.lint import lint

    source = Path(args.source) if args.source else locate_course(args.course_dir).source
    problems = lint(source, args.assignment or None)
    for p in problems:
        print(p)
    return 1 if problems else 0


def cmd_grade(args) -> int:
    from autograder.grading.grade import GradingRefused, grade
    from autograder.outputs.gradesheet import write_grades_csv
    from autograder.integrity.ledger import LedgerUnavailable

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    students = args.student or None
    if args.shard:
        from autograder.grading.shards import ShardRefused, for_shard

        try:
            course, students = for_shard(course, args.assignment, args.shard, students, args.submissions)
        except ShardRefused as e:
            print(e, file=sys.stderr)
            return 2
        print(f"shard {args.shard}: {len(students)} student(s), graded into {course.root} (merge: "
              f"python -m autograder merge {args.assignment})")
    if args.submissions:
        from autograder.intake.collect import collect

        print(collect(course, args.assignment, Path(args.submissions)).format())
    try:
        s = grade(course, args.assignment, students=students, jobs=args.jobs, limits=_limits(args),
                  force=args.force, sandbox=False if args.no_sandbox else None, progress=not args.quiet,
                  no_record=args.no_record, ledger=args.ledger, question=args.question, why=args.reason,
                  warm=not args.cold_kernels)
    except GradingRefused as e:
        print(e.message, file=sys.stderr)
        return 2
    except LedgerUnavailable as e:
        print(e, file=sys.stderr)
        return 2
    print(f"{args.assignment}: graded {len(s.graded)}, up to date {len(s.skipped)}, failed {len(s.failed)} "
          f"in {s.seconds:.1f} s with {s.jobs} worker(s); "
          + ("sandboxed (" + s.sandbox_reason + ")" if s.sandboxed else "NOT SANDBOXED"))
    if s.kernels:
        print("  kernels: " + "; ".join(f"{kind} ({n})" for kind, n in sorted(s.kernels.items()))
              + ("  [warm: forked from each worker's preloaded interpreter into a new sandbox]" if "warm" in s.kernels
                 else ""))
    if s.preflight_seconds:
        limit = (f"per-cell time limits from the solution's times (max({10} s, 20x)), e.g. up to "
                 f"{max(s.cell_timeouts.values())} s" if s.cell_timeouts else f"{args.timeout} s per cell (--timeout)")
        print(f"  preflight: the solution earned every autograded point in {s.preflight_seconds:.1f} s"
              + (" (the last run's: same sources, course_lib and limits; --force reruns it)" if s.preflight_reused
                 else "") + f"; {limit}")
    for student, why in sorted(s.stopped.items()):
        for nb, reason in why.items():
            print(f"  stopped early: {student} {nb}: {reason}")
    for label, per_student in (("repaired", s.notes), ("WARNING", s.warnings), ("predictions", s.predictions)):
        for student, lines in sorted(per_student.items()):
            for line in lines:
                print(f"  {label}: {student} {line}")
    for student, flags in sorted(s.flags.items()):
        for f in flags:
            print(f"  VERDICTS DIFFER: {student} {f['notebook']}/{f['cell']}: the kernel gave {f['kernel']}, the "
                  f"re-verification from the recorded answers {f['clean']:g} (scored){': ' + f['message'] if f['message'] else ''}"
                  " -- check this submission for tampering")
    for student, why in sorted(s.failed.items()):
        print(f"  FAILED: {student}: {why}  (log: {course.state / args.assignment / 'logs' / (student + '.log')})")
    from autograder.grading.regrade import log_path
    from autograder.grading.scoreboard import lines as score_lines

    for student, changes in sorted(s.changes.items()):
        print(f"  regrade changed {len(changes)} entr{'y' if len(changes) == 1 else 'ies'} of {student} "
              f"(logged in {log_path(course)}): " + ", ".join(c["cell"] for c in changes[:6])
              + (" ..." if len(changes) > 6 else ""))
    from autograder.authoring.variants import questions as variant_questions

    if s.graded and variant_questions(course, args.assignment):   # every student on their own numbers
        from autograder.integrity.copies import format_copies
        from autograder.integrity.copy_flags import check as check_copies

        for line in format_copies(check_copies(course, args.assignment)):
            print(line + "  (flagged in the Formgrader)")
    scored = score_lines(course, args.assignment, sorted(set(s.graded) | set(s.skipped)))
    if scored:
        print("scores (the gradebook's, late penalties taken):")
        print("\n".join(scored))
    if args.out:
        print(f"grades written to {write_grades_csv(course, Path(args.out), args.assignment)}")
    return 1 if s.failed else 0


def cmd_feedback(args) -> int:
    from autograder.outputs.feedback import feedback

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    r = feedback(course, args.assignment, students=args.student or None, jobs=args.jobs)
    print(f"{args.assignment}: {len(r['written'])} feedback page(s) in {course.feedback}")
    for s, why in sorted(r["failed"].items()):
        print(f"  FAILED: {s}: {why}")
    for page, lines in sorted(r["leaks"].items()):
        print(f"  WITHHELD {page}: it still showed hidden-test lines ({len(lines)})")
    return 1 if r["failed"] or r["leaks"] else 0


def cmd_release_feedback(args) -> int:
    from autograder.outputs.release_feedback import release_feedback

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    exchange = exchange_of(args.exchange, course.root)
    r = release_feedback(course, args.assignment, exchange, students=args.student or None)
    print(f"{args.assignment}: feedback released to {exchange} for {len(r.released)} student(s)")
    for student, why in sorted(r.skipped.items()):
        print(f"  NOT RELEASED: {student}: {why}")
    return 1 if r.skipped else 0


def cmd_publish(args) -> int:
    from autograder.authoring.publish import publish

    where = locate_course(args.course_dir)
    out = publish(where.path, Path(args.release_dir) if args.release_dir else where.release,
                  Path(args.source) if args.source else where.source, Path(args.dest), repository=args.repository)
    print(f"student repository written to {out.dest}: {len(out.files)} files; Binder: {out.binder_url}")
    return 0


def cmd_export(args) -> int:
    from autograder.outputs.export import export

    course = _course(args)
    from autograder.lms import command as lms   # issue 35: grades to the LMS, its own module

    if lms.wanted(args):
        return lms.run(course, args)
    out = Path(args.out) if args.out else course.root / "grades.csv"
    print(f"grades written to {export(course, out, with_max=not args.no_max)}")
    from autograder.intake.roster import names_missing

    if names_missing(course):
        print("  the name and e-mail columns are empty: the gradebook has no names (a hub with PAM accounts "
              "knows only user names); add them with python -m autograder students import roster.csv, or "
              "--from-accounts (the accounts' full names)")
    return 0


def cmd_students(args) -> int:
    from autograder.intake.roster import import_accounts, import_roster

    course = _course(args)
    if (args.roster is None) == (not args.from_accounts):
        raise SystemExit("students import: give a ROSTER.csv or --from-accounts")
    if args.from_accounts:
        n = import_accounts(course)
        print(f"{n} student(s) named from their accounts' full names in {course.db}")
    else:
        n = import_roster(course, Path(args.roster))
        print(f"{n} student(s) recorded in {course.db} (names and e-mails for the export and the report)")
    return 0


def cmd_report(args) -> int:
    from autograder.outputs.report import format_report, report

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    print(format_report(report(course, args.assignment, Path(args.out) if args.out else None)))
    return 0


def cmd_variants(args) -> int:
    import csv

    from autograder.authoring import variants

    course = _course(args)
    if args.init_secret:
        print(f"variant secret written to {variants.init_secret(course)} (keep it: a new one gives every "
              "student new numbers; never put it in the student repository)")
        if not args.assignment:
            return 0
    if not args.assignment:
        raise SystemExit("name an assignment, e.g. python -m autograder variants 03_two_phases --from-gradebook")
    _assignment_names(course, [args.assignment], False)
    students = list(args.students or [])
    if args.from_gradebook:

        with course.gradebook() as gb:
            students += [st.id for st in gb.students if st.id not in students]
    students += [s for s in course.students(args.assignment) if s not in students]
    if not students:
        raise SystemExit("no students: name them (--students a b c), or --from-gradebook, or collect submissions first")
    secret = variants.load_secret(course)
    if secret is None:
        print(f"no variant secret ({variants.secret_path(course)}): every student gets the lesson's own numbers "
              "(python -m autograder variants --init-secret)", file=sys.stderr)
    rows = variants.table(course, args.assignment, students)
    if args.keys:
        w = csv.writer(sys.stdout)
        w.writerow(["student", "variant_key"])
        for s in students:
            w.writerow([s, variants.key_for(secret, s)])
        return 0
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["student", "question", "variant", "givens", "canonical"])
            w.writeheader()
            w.writerows(rows)
        print(f"{len(rows)} rows written to {args.csv}")
        return 0
    for r in rows:
        print(f"{r['student']:20s} {r['question']:12s} {r['variant']}")
    return 0


def _common() -> argparse.ArgumentParser:
    """The options every subcommand takes: where the course and its data are."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--course-dir", help="the course directory (default: $AUTOGRADER_ROOT, or the nearest "
                                             "folder with nbgrader_config.py from here upward)")
    common.add_argument("--root", help="where the grading data lives (default: the course directory)")
    common.add_argument("--source", help="the instructor notebooks (default: <course>/solutions/)")
    common.add_argument("--release-dir", help="the student release (default: <course>/notebooks/)")
    common.add_argument("-v", "--verbose", action="store_true")
    return common


def _add_release(sub, common) -> None:
    r = sub.add_parser("release", parents=[common], help="student notebooks into notebooks/ (and the exchange)")
    r.add_argument("assignment", nargs="*")
    r.add_argument("--all", action="store_true", help="every assignment in solutions/")
    r.add_argument("--due", metavar="WHEN", help="the due date, with its time zone: 2027-02-01T23:59+01:00, "
                                                 "...Z, or with --tz; set in nbgrader's gradebook")
    r.add_argument("--tz", metavar="ZONE", help="the time zone of a --due without an offset, e.g. Europe/Berlin")
    r.add_argument("--exchange", nargs="?", const=CONFIGURED, metavar="ROOT",
                   help="also release into the nbgrader exchange: ROOT, or $AUTOGRADER_EXCHANGE, or the "
                        "Exchange.root nbgrader is configured with")
    r.set_defaults(func=cmd_release)


def _add_collect(sub, common) -> None:
    c = sub.add_parser("collect", parents=[common],
                       help="submissions from SOURCE/<student>/<notebook>.ipynb, an LMS download (zip or folder: "
                            "Moodle, Canvas) or the nbgrader exchange")
    c.add_argument("assignment")
    c.add_argument("source_dir", metavar="SOURCE", nargs="?")
    c.add_argument("--exchange", nargs="?", const="", metavar="ROOT",
                   help="collect from nbgrader's exchange inbound (ROOT default: $AUTOGRADER_EXCHANGE, else the "
                        "course config's Exchange.root)")
    c.set_defaults(func=cmd_collect)


def _add_grade(sub, common) -> None:
    g = sub.add_parser("grade", parents=[common], help="autograde every submission, in parallel, sandboxed")
    g.add_argument("assignment")
    g.add_argument("--submissions", help="collect from this folder / zip first")
    g.add_argument("--out", help="write this assignment's grades CSV here")
    g.add_argument("-j", "--jobs", type=int, default=default_jobs(), help="parallel workers (default: CPU cores)")
    g.add_argument("--student", action="append", help="grade only this student (repeatable)")
    g.add_argument("--force", action="store_true",
                   help="regrade submissions that are up to date, and rerun the solution's preflight")
    _add_limits(g)
    sb = g.add_mutually_exclusive_group()
    sb.add_argument("--no-sandbox", action="store_true",
                    help="run students' code without the sandbox, with your rights (as nobody when root); not advised")
    sb.add_argument("--require-sandbox", action="store_true", help="(the default: grading refuses without a sandbox)")
    g.add_argument("--cold-kernels", action="store_true",
                   help="start every submission's kernel in a new sandbox from nothing, instead of forking it from "
                        "the worker's preloaded interpreter into a new sandbox (slower; autograder/README.md)")
    g.add_argument("--no-record", choices=("final", "zero-predictions"), default="final",
                   help="a submission handed in without any prediction record (no .predictions.jsonl, outputs "
                        "cleared): graded on its final answers (final, the default) or with no correctness points "
                        "for its questions (zero-predictions); flagged either way")
    g.add_argument("--ledger", metavar="PATH_OR_URL",
                   help="check each prediction record against the hub's ledger (its folder, e.g. "
                        "/var/lib/roofline-ledger, or the service's URL, $COURSE_SERVICE_URL in a hub terminal); "
                        "a record that disagrees is flagged; without it submissions are 'not vouched'")
    g.add_argument("--question", metavar="ID",
                   help="regrade only this question (e.g. wall_q2) or grade cell: the notebook runs again, only "
                        "its cells' scores change (implies --force for the students graded)")
    g.add_argument("--reason", help="why you regrade: kept in the regrade log (regrades.jsonl) the report shows")
    g.add_argument("--shard", metavar="i/N",
                   help="grade only shard i (0 to N-1) of N: a fixed 1/N of the class, into its own gradebook "
                        "(<root>/shards/<assignment>/<i>-of-<N>/); `merge` combines the shards")
    g.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    g.set_defaults(func=cmd_grade)


def _add_extend(sub, common) -> None:
    x = sub.add_parser("extend", parents=[common], help="a student's extension of an assignment's due date")
    x.add_argument("assignment")
    x.add_argument("student", nargs="?", help="(without: list the extensions)")
    x.add_argument("--until", metavar="WHEN", help="the student's own deadline, with its time zone")
    x.add_argument("--tz", metavar="ZONE", help="the time zone of an --until without an offset")
    x.add_argument("--reason", help="why (required; recorded with who granted it and when)")
    x.add_argument("--withdraw", action="store_true", help="withdraw the student's extension")
    x.set_defaults(func=cmd_extend)


def _add_unflag(sub, common) -> None:
    u = sub.add_parser("unflag", parents=[common],
                       help="clear a submission's flag after looking (its reasons are not flagged again)")
    u.add_argument("assignment")
    u.add_argument("student")
    u.add_argument("--notebook", help="only this notebook (default: every one)")
    u.add_argument("--reason", help="why it is fine (required; recorded with who and when)")
    u.set_defaults(func=cmd_unflag)


def _add_late_policy(sub, common) -> None:
    lp = sub.add_parser("late-policy", parents=[common],
                        help="the course's late penalty: a percentage per day late, up to a cap")
    lp.add_argument("--percent-per-day", type=float, help="percent of the score per day late (or part of one)")
    lp.add_argument("--cap", type=float, default=100.0, help="the most taken, in percent (default 100)")
    lp.add_argument("--grace-minutes", type=float, default=0.0, help="minutes after the deadline that cost nothing")
    lp.add_argument("--none", action="store_true", help="no late penalty")
    lp.set_defaults(func=cmd_late_policy)


def _add_merge(sub, common) -> None:
    m = sub.add_parser("merge", parents=[common],
                       help="merge the shards of `grade --shard i/N` into the course gradebook")
    m.add_argument("assignment")
    m.add_argument("--out", help="write this assignment's grades CSV here")
    m.set_defaults(func=cmd_merge)


def cmd_merge(args) -> int:
    from autograder.grading.shards import merge_shards
    from autograder.outputs.gradesheet import write_grades_csv

    course = _course(args)
    _assignment_names(course, [args.assignment], False)
    m = merge_shards(course, args.assignment)
    if not m.shards:
        print(f"{args.assignment}: no shards to merge (grade --shard i/N writes them)", file=sys.stderr)
        return 2
    print(f"{args.assignment}: merged {len(m.graded)} graded and {len(m.failed)} failed from shard(s) "
          f"{', '.join(m.shards)}; {len(m.current)} already in the gradebook")
    for student, why in sorted(m.flags.items()):
        for line in why:
            print(f"  FLAGGED: {student}: {line}")
    for student, why in sorted(m.failed.items()):
        print(f"  FAILED: {student}: {why}")
    for student, shard in sorted(m.missing.items()):
        print(f"  NOT GRADED: {student}: no shard graded this submission (run its shard again: --shard {shard})")
    if args.out:
        print(f"grades written to {write_grades_csv(course, Path(args.out), args.assignment)}")
    return 1 if m.failed or m.missing else 0


def _add_limits(g) -> None:
    """grade's limits on each kernel (autograder.sandbox.bwrap.Limits, read back by _limits)."""
    g.add_argument("--timeout", type=int, default=None,
                   help="seconds per cell (default: max(10 s, 20x the solution's time for that cell))")
    g.add_argument("--notebook-timeout", type=int, default=None,
                   help="seconds per notebook (default: max(300 s, 20x the solution's whole run))")
    g.add_argument("--memory", type=int, default=4096, help="MB of address space per kernel (default 4096)")
    g.add_argument("--tasks", type=int, default=256, help="threads + processes per kernel (default 256)")
    g.add_argument("--disk", type=int, default=256, help="MB a sandboxed kernel may write into its home (default "
                   "256; memory-backed, like its private /tmp)")


def _add_feedback(sub, common) -> None:
    f = sub.add_parser("feedback", parents=[common], help="HTML feedback per student, hidden tests removed")
    f.add_argument("assignment")
    f.add_argument("--student", action="append")
    f.add_argument("-j", "--jobs", type=int, default=default_jobs())
    f.set_defaults(func=cmd_feedback)


def _add_release_feedback(sub, common) -> None:
    rf = sub.add_parser("release-feedback", parents=[common],
                        help="put the feedback pages into the exchange, where students fetch them")
    rf.add_argument("assignment")
    rf.add_argument("--exchange", metavar="ROOT",
                    help="default: $AUTOGRADER_EXCHANGE, or the Exchange.root nbgrader is configured with")
    rf.add_argument("--student", action="append", help="only this student (repeatable)")
    rf.set_defaults(func=cmd_release_feedback)


def _add_publish(sub, common) -> None:
    pb = sub.add_parser("publish", parents=[common],
                        help="write the public student repository (no solutions, no hidden tests) to DEST")
    pb.add_argument("dest", metavar="DEST")
    pb.add_argument("--repository", help="its GitHub owner/name, for the Binder link "
                                         "(default: [tool.course] student-repository in pyproject.toml)")
    pb.set_defaults(func=cmd_publish)


def _add_manual(sub, common) -> None:
    mg = sub.add_parser("manual", parents=[common], help="points and comments for the manually graded cells")
    mg.add_argument("assignment")
    mg.add_argument("--student")
    mg.add_argument("--cell", metavar="GRADE_ID")
    mg.add_argument("--notebook", help="only needed if the grade id is ambiguous")
    mg.add_argument("--points", type=float)
    mg.add_argument("--comment")
    mg.add_argument("--csv", help="enter the points and comments of this CSV (see --template)")
    mg.add_argument("--template", metavar="CSV", help="write a CSV to fill in, with each student's answer")
    mg.add_argument("--awaiting", action="store_true", help="only the cells nobody has graded yet")
    mg.set_defaults(func=cmd_manual)


def _add_export(sub, common) -> None:
    e = sub.add_parser("export", parents=[common], help="grades CSV: a row per student, a column per notebook")
    e.add_argument("--out", help="default: <root>/grades.csv")
    e.add_argument("--with-max", action="store_true", help="(the default) a last row with the maximum scores")
    e.add_argument("--no-max", action="store_true", help="leave out the last row with the maximum scores")
    from autograder.lms.command import add_arguments as add_lms_arguments

    add_lms_arguments(e)                       # issue 35: --lms, --lms-csv (autograder.lms)
    e.set_defaults(func=cmd_export)


def _add_students(sub, common) -> None:
    st = sub.add_parser("students", parents=[common], help="the students' names and e-mails into the gradebook")
    st.add_argument("action", choices=["import"])
    st.add_argument("roster", metavar="ROSTER.csv", nargs="?",
                    help="a CSV with a header: id (or student_id, username), first_name, last_name, email")
    st.add_argument("--from-accounts", action="store_true",
                    help="name each gradebook student who has an account here from its full name (GECOS)")
    st.set_defaults(func=cmd_students)


def _add_lint(sub, common) -> None:
    ln = sub.add_parser("lint", parents=[common], help="check the structure grading relies on in the source notebooks")
    ln.add_argument("assignment", nargs="*", help="default: every assignment")
    ln.set_defaults(func=cmd_lint)


def _add_report(sub, common) -> None:
    m = sub.add_parser("report", parents=[common], help="misconception report and score distribution")
    m.add_argument("assignment")
    m.add_argument("--out", help="folder (default: <root>/reports/<assignment>/)")
    m.set_defaults(func=cmd_report)


def _add_variants(sub, common) -> None:
    v = sub.add_parser("variants", parents=[common], help="which numbers each student gets (per-student variants)")
    v.add_argument("assignment", nargs="?")
    v.add_argument("--students", nargs="+", metavar="ID", help="these student ids")
    v.add_argument("--from-gradebook", action="store_true", help="every student in the gradebook")
    v.add_argument("--keys", action="store_true",
                   help="print each student's variant key (CSV) to hand out for laptops/Binder (set_student)")
    v.add_argument("--csv", help="write the table to this CSV")
    v.add_argument("--init-secret", action="store_true", help="create the course's variant secret")
    v.set_defaults(func=cmd_variants)


#: the subcommands, in the order --help lists them
SUBCOMMANDS = (_add_release, _add_collect, _add_grade, _add_merge, _add_feedback, _add_release_feedback, _add_publish,
               _add_manual, _add_export, _add_lint, _add_report, _add_variants, _add_extend, _add_late_policy,
               _add_students, _add_unflag)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m autograder", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    common = _common()
    sub = p.add_subparsers(dest="command", required=True)
    for add in SUBCOMMANDS:
        add(sub, common)
    return p


def quiet_nbgrader(verbose: bool = False) -> None:
    """nbgrader logs every step (and a warning for each hidden-test cell, whose checksum differs
    from the release by design) to the console; each student's log is kept in
    autograded/.autograder/<assignment>/logs/ instead."""
    import warnings

    try:
        from sqlalchemy.exc import SAWarning

        warnings.filterwarnings("ignore", category=SAWarning)
    except ImportError:  # pragma: no cover
        pass
    if not verbose:
        # course_lib's unit registry redefines pint's "b" (bits get a dimension): said once, not news
        logging.getLogger("pint").setLevel(logging.ERROR)
        tl = logging.getLogger("traitlets")
        tl.propagate = False
        if not any(isinstance(h, logging.NullHandler) for h in tl.handlers):
            tl.addHandler(logging.NullHandler())


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    quiet_nbgrader(args.verbose)
    return args.func(args) or 0


if __name__ == "__main__":
    sys.exit(main())
