"""Who an LMS participant is: the student id each collected participant gets (its LMS id decides,
never its name), the names kept in the gradebook."""
from __future__ import annotations

import re

from autograder.course import Course

def _known_students(course: Course) -> dict:
    """{student id: (who, LMS id or "")} of every student the course has: in the gradebook (who:
    their name, else the id) and in submitted/ (folders only, no LMS id)."""
    known = {}
    if course.db.is_file():

        with course.gradebook() as gb:
            for st in gb.students:
                name = " ".join(n for n in (st.first_name, st.last_name) if n)
                known[st.id] = (name or st.id, str(st.lms_user_id or ""))
    if course.submitted.is_dir():
        for d in course.submitted.iterdir():
            if d.name not in known and not d.name.startswith(".") and d.is_dir() and not d.is_symlink():
                known[d.name] = (d.name, "")
    return known


def _who(label: str, lms: str) -> str:
    return f"{label!r} (LMS id {lms or 'none'})"


def identify(course: Course, by_student: dict, spelled: dict, infos: dict) -> dict:
    """{key: (student id, None)} for each participant to collect, {key: (id as spelled, why)} for
    each refused. An LMS participant the course knows by its LMS id keeps the student id it has;
    two participants with different LMS ids never share one (nor ids differing only in case):
    the course's holder of the id keeps it, and newcomers are refused; within one download,
    where the course holds none, all are refused."""
    known = _known_students(course)
    by_lms: dict[str, list] = {}
    by_case: dict[str, list] = {}
    for sid, (_, lms) in sorted(known.items()):
        by_case.setdefault(sid.casefold(), []).append(sid)
        if lms:
            by_lms.setdefault(lms, []).append(sid)

    def lms_of(key):
        return key[1] if key[0] == "lms" else ""

    def who(key):
        return _who(sorted(infos[key]["labels"])[0], lms_of(key))

    out, cand = {}, {}
    for key in by_student:
        names, lms = sorted(spelled[key]), lms_of(key)
        if lms and len(names) > 1:
            labels = ", ".join(map(repr, sorted(infos[key]["labels"])))
            out[key] = (names[0], f"LMS id {lms} comes under two names ({labels}) in one download: nothing "
                                  "collected for it, resolve by hand")
        elif lms and len(by_lms.get(lms, ())) > 1:
            out[key] = (names[0], f"{who(key)}: the gradebook has LMS id {lms} for more than one student "
                                  f"({', '.join(sorted(by_lms[lms]))}): not collected, resolve by hand")
        elif lms and lms in by_lms:
            cand[key] = by_lms[lms][0]
            if cand[key] != names[0]:       # said once collected
                infos[key]["renamed"] = (f"{who(key)}: collected as {cand[key]!r}, the student id the gradebook has "
                                         f"for LMS id {lms} (the name now gives {names[0]!r})")
        else:
            cand[key] = names[0]
    groups: dict[str, list] = {}
    for key, sid in cand.items():
        groups.setdefault(sid.casefold(), []).append(key)
    for cf, keys in groups.items():
        keys = sorted(keys, key=lambda k: (len(lms_of(k)), lms_of(k), cand[k]))
        holders = by_case.get(cf, [])
        owner = [k for k in keys if lms_of(k) and any(h == cand[k] and known[h][1] == lms_of(k) for h in holders)]
        for k in keys:
            sid, lms = cand[k], lms_of(k)
            taken = [h for h in holders if h != sid or (lms and known[h][1] and known[h][1] != lms)]
            if owner and k == owner[0] and not taken:
                out[k] = (sid, None)
            elif taken:
                h = taken[0]
                case = "" if h == sid else \
                    f"{'' if known[h][0] == h else f' as {h!r}'} (ids differing only in case are one student)"
                out[k] = (sid, f"{who(k)} gives the student id {sid!r}, which belongs to {_who(*known[h])}{case}: "
                               "not collected (collect it by hand under another id)")
            elif owner:
                out[k] = (sid, f"{who(k)} gives the student id {sid!r}, which belongs to {who(owner[0])}: not "
                               "collected (collect it by hand under another id)")
            elif len(keys) > 1:
                ids = sorted({cand[x] for x in keys})
                same = repr(ids[0]) if len(ids) == 1 else f"{' / '.join(map(repr, ids))} (one id but for case)"
                out[k] = (sid, f"{', '.join(who(x) for x in keys)} give the same student id {same}: nothing "
                               "collected for them (collect them by hand under distinct ids)")
            else:
                out[k] = (sid, None)
    return out


_NOT_IN_NAMES = re.compile(r"[<>&\"`\x00-\x1f\x7f]")


def display_name(name: str) -> str:
    """A name as the gradebook keeps it: nothing a page could read as markup (nbgrader's
    Formgrader writes names into its pages unescaped), at most 100 characters."""
    return re.sub(r"\s+", " ", _NOT_IN_NAMES.sub(" ", name)).strip()[:100]


def record_names(course: Course, names: dict) -> None:
    """First and last names (from Moodle folder names) and the LMS id (Moodle's participant id,
    Canvas's user id) into the gradebook, never overwriting."""
    if not names:
        return
    from nbgrader.api import MissingEntry

    with course.gradebook() as gb:
        for student, (full, lms_id) in names.items():
            first, _, last = full.rpartition(" ")
            new = {}
            try:
                st = gb.find_student(student)
                if full and not (st.first_name or st.last_name):
                    new.update(first_name=first or None, last_name=last or None)
                if lms_id and not st.lms_user_id:
                    new["lms_user_id"] = lms_id
            except MissingEntry:
                if full:
                    new.update(first_name=first or None, last_name=last or None)
                new["lms_user_id"] = lms_id or None
            if new:
                gb.update_or_create_student(student, **new)
