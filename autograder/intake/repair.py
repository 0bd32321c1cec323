"""Submissions that nbgrader would choke on, made gradable without guessing.

* A UTF-8 byte-order mark (Windows editors write one): removed.
* Cells whose nbgrader metadata was stripped (answers copied into a fresh notebook, an editor
  that drops unknown metadata): each release cell that has metadata is matched to a cell of the
  submission without it, and the metadata is put back:
  - a locked or test cell, by its source (the same text);
  - an answer cell, by its answer variables: the one cell that assigns all of them (between the
    neighbouring matched cells if several do);
  - a written-answer (markdown) cell, by position: the one unmatched markdown cell that is not
    the release's own text, between the neighbouring matched cells.
  Where a match is not unique the notebook is not graded, and the reason says which cells.
* Two cells with one grade_id (a copied cell; nbgrader would crash on it): the first keeps it, a
  later one becomes an ordinary cell (it still runs, it is not graded), and it is said; so does a
  repeated cell id, which gets a new one.
"""
from __future__ import annotations

import copy

import nbformat

from course_lib.exercises.question_ids import metadata

from autograder.cell_code import assigned_names

BOM = b"\xef\xbb\xbf"


class Unrepairable(ValueError):
    """A notebook whose cells cannot be matched to the release unambiguously."""


def strip_bom(data: bytes) -> tuple[bytes, bool]:
    if data.startswith(BOM):
        return data[len(BOM):], True
    return data, False


_meta = metadata       # a cell's nbgrader metadata (course_lib.exercises.question_ids)


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def repair(nb, release, answer_vars: dict) -> list[str]:
    """Put the release's nbgrader metadata back on the cells of `nb` that lost it (in place).
    `answer_vars`: {answer grade_id: [the variables its tests read]}. Returns what was done
    (empty when nothing was missing); raises Unrepairable."""
    dedupe = unique_grade_ids(nb)
    have = {_meta(c).get("grade_id") for c in nb.cells if _meta(c).get("grade_id")}
    rel = [c for c in release.cells]
    missing = [c for c in rel if _meta(c).get("grade_id") and _meta(c)["grade_id"] not in have]
    bare = [i for i, c in enumerate(nb.cells) if not _meta(c)]
    notes = dedupe
    for key in ("kernelspec", "language_info"):
        if key not in nb.metadata and key in release.metadata:
            nb.metadata[key] = copy.deepcopy(release.metadata[key])
    if not missing or not bare:
        return notes

    match: dict[str, int] = {}          # release grade_id -> index in nb
    taken: set[int] = set()
    _match_by_source(nb, missing, bare, match, taken)
    _match_answers(nb, rel, missing, bare, match, taken, answer_vars)
    _match_written(nb, rel, missing, bare, match, taken)
    if not match:
        return notes
    _put_back(nb, missing, match)
    notes.append(f"nbgrader metadata put back on {len(match)} cell(s) that had lost it, matched to the "
                 f"release by source, answer variable and position")
    return notes


def _match_by_source(nb, missing: list, bare: list, match: dict, taken: set) -> None:
    """1. locked and test cells: the same source, once"""
    for rc in missing:
        m = _meta(rc)
        if m.get("solution"):
            continue
        same = [i for i in bare if i not in taken and nb.cells[i].cell_type == rc.cell_type
                and _norm(nb.cells[i].source) == _norm(rc.source)]
        if len(same) == 1:
            match[m["grade_id"]] = same[0]
            taken.add(same[0])


def _window(nb, rel: list, match: dict, rc) -> tuple[int, int]:
    """Indices of the submission between the nearest located release cells around rc."""
    # where every release cell sits in the submission, as far as known now
    def position_of(gid):
        if gid in match:
            return match[gid]
        for i, c in enumerate(nb.cells):
            if _meta(c).get("grade_id") == gid:
                return i
        return None

    k = rel.index(rc)
    lo, hi = -1, len(nb.cells)
    for prev in reversed(rel[:k]):
        p = position_of(_meta(prev).get("grade_id")) if _meta(prev).get("grade_id") else None
        if p is not None:
            lo = p
            break
    for nxt in rel[k + 1:]:
        p = position_of(_meta(nxt).get("grade_id")) if _meta(nxt).get("grade_id") else None
        if p is not None:
            hi = p
            break
    return lo, hi


def _match_answers(nb, rel: list, missing: list, bare: list, match: dict, taken: set, answer_vars: dict) -> None:
    """2. answer cells: by their answer variables"""
    for rc in missing:
        m = _meta(rc)
        if not (m.get("solution") and rc.cell_type == "code"):
            continue
        names = set(answer_vars.get(m["grade_id"], []))
        if not names:
            continue
        cands = [i for i in bare if i not in taken and nb.cells[i].cell_type == "code"
                 and names <= set(assigned_names(nb.cells[i].source))]
        if len(cands) > 1:
            lo, hi = _window(nb, rel, match, rc)
            cands = [i for i in cands if lo < i < hi] or cands
        if len(cands) > 1:
            raise Unrepairable(f"cannot tell which cell answers {m['grade_id']}: cells "
                               f"{', '.join(str(i + 1) for i in cands)} all assign {', '.join(sorted(names))}")
        if cands:
            match[m["grade_id"]] = cands[0]
            taken.add(cands[0])


def _match_written(nb, rel: list, missing: list, bare: list, match: dict, taken: set) -> None:
    """3. written answers (markdown): by position, skipping the release's own texts"""
    texts = {_norm(c.source) for c in rel if c.cell_type == "markdown"}
    for rc in missing:
        m = _meta(rc)
        if not (m.get("solution") and rc.cell_type == "markdown"):
            continue
        lo, hi = _window(nb, rel, match, rc)
        cands = [i for i in bare if i not in taken and lo < i < hi and nb.cells[i].cell_type == "markdown"
                 and _norm(nb.cells[i].source) not in texts]
        if len(cands) > 1:
            raise Unrepairable(f"cannot tell which cell answers {m['grade_id']}: markdown cells "
                               f"{', '.join(str(i + 1) for i in cands)} all sit where it belongs")
        if cands:
            match[m["grade_id"]] = cands[0]
            taken.add(cands[0])


def _put_back(nb, missing: list, match: dict) -> None:
    """The release cell's nbgrader metadata, lock flags and (when free) cell id on each matched cell."""
    used_ids = {c.get("id") for c in nb.cells}
    by_gid = {_meta(c)["grade_id"]: c for c in missing}
    for gid, i in match.items():
        rc, cell = by_gid[gid], nb.cells[i]
        cell.metadata["nbgrader"] = copy.deepcopy(rc.metadata["nbgrader"])
        for flag in ("deletable", "editable"):
            if flag in rc.metadata:
                cell.metadata[flag] = rc.metadata[flag]
        if rc.get("id") and rc.get("id") not in used_ids:
            used_ids.discard(cell.get("id"))
            cell["id"] = rc["id"]
            used_ids.add(rc["id"])


def unique_grade_ids(nb) -> list[str]:
    """Make grade_ids and cell ids unique (in place): a later cell repeating a grade_id loses its
    nbgrader metadata, a repeated cell id is replaced. Returns what was done."""
    import uuid

    notes, seen_gid, seen_id = [], set(), set()
    for i, c in enumerate(nb.cells):
        gid = _meta(c).get("grade_id")
        if gid and gid in seen_gid:
            c.metadata.pop("nbgrader", None)
            notes.append(f"cell {i + 1} repeats grade_id {gid!r}: graded the first cell with it, this one ran as an "
                         "ordinary cell")
        elif gid:
            seen_gid.add(gid)
        cid = c.get("id")
        if cid is not None:
            if cid in seen_id:
                c["id"] = uuid.uuid4().hex[:12]
                notes.append(f"cell {i + 1} repeats cell id {cid!r}: given a new one")
            seen_id.add(c["id"])
    return notes


def fix_file(path, release_path, answer_vars: dict) -> list[str]:
    """Repair the notebook at `path` in place (a private copy): BOM, stripped metadata."""
    data = path.read_bytes()
    data, had_bom = strip_bom(data)
    notes = ["a UTF-8 byte-order mark removed"] if had_bom else []
    try:
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception as e:
        raise Unrepairable(f"not a readable notebook: {str(e).splitlines()[0][:200] if str(e) else type(e).__name__}") \
            from None
    more = repair(nb, nbformat.read(str(release_path), as_version=4), answer_vars) if release_path.is_file() \
        else unique_grade_ids(nb)
    if had_bom or more:
        path.write_text(nbformat.writes(nb))
    return notes + more

