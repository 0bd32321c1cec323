"""Merge one graded submission into the course gradebook, in one transaction per student (a
crash leaves every student either fully merged or untouched), following nbgrader's own rules."""
from __future__ import annotations

from autograder.grading.status import WHOLE
from autograder.gradebook import open_gradebook, submission_or_none


def _add_submission(db, assignment, student) -> None:
    """nbgrader's Gradebook.add_submission without its commit: the new submission mirrors the
    assignment (a Grade per grade cell, a Comment per solution cell), flushed but uncommitted."""
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook

    with db.no_autoflush:
        sub = SubmittedAssignment(assignment=assignment, student=student)
        for notebook in assignment.notebooks:
            nb = SubmittedNotebook(notebook=notebook, assignment=sub)
            for cell in notebook.grade_cells:
                Grade(cell_id=cell.id, notebook=nb)
            for cell in notebook.solution_cells:
                Comment(cell_id=cell.id, notebook=nb)
            for cell in notebook.task_cells:
                Comment(cell_id=cell.id, notebook=nb)
                Grade(cell_id=cell.id, notebook=nb)
        db.add(sub)
    db.flush()
    db.expire_all()    # so that the new rows load their relationships (a Grade's cell, its name)


def merge_submission(db_url: str, assignment: str, student: str, data: dict) -> None:
    from nbgrader import utils
    from nbgrader.api import MissingEntry, Student

    with open_gradebook(db_url) as gb:
        db = gb.db
        try:
            try:
                st = gb.find_student(student)
            except MissingEntry:
                st = Student(id=student)
                db.add(st)
            try:
                sub = gb.find_submission(assignment, student)
            except MissingEntry:
                _add_submission(db, gb.find_assignment(assignment), st)
                sub = gb.find_submission(assignment, student)
            if data.get("timestamp"):
                sub.timestamp = utils.parse_utc(data["timestamp"])
            for nb in sub.notebooks:
                new = data["notebooks"].get(nb.name)
                if new is None:
                    continue
                for g in nb.grades:
                    ng = new["grades"].get(g.name)
                    if ng is None:
                        continue
                    g.auto_score = ng["auto_score"]
                    # nbgrader: flag for review when there is no auto score or a manual one exists
                    g.needs_manual_grade = bool(g.auto_score is None or g.manual_score is not None)
                for c in nb.comments:
                    nc = new["comments"].get(c.name)
                    if nc is not None:
                        c.auto_comment = nc["auto_comment"]
                nb.late_submission_penalty = new["late_submission_penalty"]
            db.commit()
        except BaseException:
            db.rollback()
            raise


def flag_submission(db_url: str, assignment: str, student: str, reasons: dict) -> list[str]:
    """Set nbgrader's flag (the Formgrader's "Flagged?") on each notebook of the student's
    submission that `reasons` names ({notebook: [flags.Reason]}; status.WHOLE for every notebook). A flag is
    never cleared here: an instructor unflags in the Formgrader after looking. Returns the
    notebooks this flagged that were not flagged before (what a failed run may take back:
    unflag_failure)."""
    from nbgrader.api import MissingEntry

    if not reasons:
        return []
    newly = []
    with open_gradebook(db_url) as gb:
        try:
            sub = gb.find_submission(assignment, student)
        except MissingEntry:
            return []
        for nb in sub.notebooks:
            if reasons.get(nb.name) or reasons.get(WHOLE):
                if not nb.flagged:
                    newly.append(nb.name)
                nb.flagged = True
        gb.db.commit()
    return sorted(newly)


def unflag_failure(db_url: str, assignment: str, student: str, notebooks: list[str]) -> None:
    """Take back the flags a failed run set (`notebooks`, flag_submission's answer then) once the
    submission is graded again: the failure they reported is over, and a flag nobody set for a
    reason that still holds would hold the student from the LMS (issue 47). A notebook flagged
    before the failure is not in the list, so an instructor's or an earlier finding's flag stays;
    the new run's own reasons flag again right after."""
    if not notebooks:
        return
    with open_gradebook(db_url) as gb:
        sub = submission_or_none(gb, assignment, student)
        if sub is None:
            return
        for nb in sub.notebooks:
            if nb.name in notebooks:
                nb.flagged = False
        gb.db.commit()
