"""Every course notebook in solutions/: it runs clean, it is committed clean, its student release
in notebooks/ is exactly what the release step makes of it and gives nothing away, and it has
the structure the grading relies on.

Generic over the assignments: a new solutions/<assignment>/<notebook>.ipynb is covered as soon
as it exists. The grading itself (nbgrader autograde round trips) is tested in
test_grading_roundtrip.py.
"""
from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
import pytest

from autograder.cli import main
from autograder.authoring.lint import disagreeing_verifies, lint_notebook, split_blocks
from course_lib.exercises.question_ids import cell_id
from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
RELEASE = REPO / "notebooks"
SOURCES = sorted(SOLUTIONS.glob("*/*.ipynb"))
COMMITTED_RELEASES = sorted(RELEASE.glob("*/*.ipynb"))
IDS = [p.parent.name for p in SOURCES]

MAX_SECONDS = 60
BLOCK_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")

pytestmark = pytest.mark.skipif(not SOURCES, reason="no notebooks in solutions/ yet")


# ---- helpers ------------------------------------------------------------------------------
def rel(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def describe(nb, index: int) -> str:
    """'cell 12 (hello_q3_verify)' or 'cell 12 ("first line ...")' for error messages."""
    cell = nb.cells[index]
    gid = cell_id(cell)
    if gid:
        return f"cell {index} ({gid})"
    first = cell.source.strip().splitlines()[0][:60] if cell.source.strip() else "<empty>"
    return f"cell {index} ({first!r})"


def meaningful(line: str) -> bool:
    """Long enough to identify a solution: skip blank lines and lines like ')' or 'pass'."""
    return len(line) >= 6 and sum(ch.isalnum() for ch in line) >= 4


def kernel_config():
    """Encrypt the kernel's ZMQ transport where possible, so ipykernel does not warn on stderr."""
    from traitlets.config import Config

    c = Config()
    try:
        import zmq

        if zmq.has("curve"):
            c.KernelManager.transport_encryption = "auto"
    except Exception:  # pragma: no cover - older jupyter_client: just no encryption
        pass
    return c


@pytest.fixture(scope="module")
def warm_matplotlib():
    """Build matplotlib's font cache here, once, so no kernel prints 'building the font cache'."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.font_manager  # noqa: F401


@pytest.fixture(scope="module")
def generated_release():
    """The student release generated from solutions/ into a temporary folder, with nbgrader."""
    from autograder.authoring.release import generate

    with tempfile.TemporaryDirectory(prefix="release-check-") as tmp:
        written = generate(Path(tmp))
        yield Path(tmp), {p.parent.name: p for p in written}


def _other_lessons_revealed(nb, work, monkeypatch):
    """Another lesson's questions that a cell of `nb` waits for (lesson 4's reality check waits
    for lesson 2's Q6, read from that lesson's record beside it): committed and revealed in their
    lesson's sibling folder, as for a student who has done that lesson, so that every gate opens."""
    from course_lib.exercises import predictions
    from course_lib.questions.registry import lessons

    own = {c.metadata.get("nbgrader", {}).get("grade_id", "").split("_", 1)[0] for c in nb.cells}
    others = {q for c in nb.cells if c.cell_type == "code"
              for call in re.findall(r"\b(?:after|revealed)\(([^)]*)\)", c.source)
              for q in re.findall(r"[\"']([a-z]+_q\d+[a-z]?)[\"']", call) if q.split("_", 1)[0] not in own}
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    for qid in sorted(others):
        folder = work.parent / lessons()[qid.split("_", 1)[0]].assignment
        folder.mkdir(exist_ok=True)
        monkeypatch.setattr(predictions, "_HERE", folder)
        predictions.commit(qid, {"answer": 1.0}, "that lesson's own notebook, done before this one")
        predictions.reveal(qid)
    monkeypatch.setattr(predictions, "_HERE", None)


# ---- 1. runs top to bottom, quickly, without errors or stderr --------------------------------
@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_notebook_executes_cleanly(path, warm_matplotlib, tmp_path, monkeypatch):
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = read_source(path)
    # run in a copy of the assignment folder: a passing form check writes the prediction
    # record (.predictions.jsonl) beside the notebook, which must not land in solutions/
    work = tmp_path / path.parent.name
    shutil.copytree(path.parent, work, ignore=shutil.ignore_patterns(".ipynb_checkpoints", ".predictions.jsonl"))
    _other_lessons_revealed(nb, work, monkeypatch)
    client = NotebookClient(nb, timeout=2 * MAX_SECONDS, kernel_name="python3",
                            resources={"metadata": {"path": str(work)}},
                            config=kernel_config())
    kernel_log = tmp_path / "kernel-stderr.txt"
    start = time.perf_counter()
    with open(kernel_log, "w") as log:
        try:
            client.execute(stderr=log)   # the kernel process's own stderr (not cell output)
        except CellExecutionError as e:
            failed = [describe(nb, i) for i, c in enumerate(nb.cells) if c.cell_type == "code"
                      and any(o.get("output_type") == "error" for o in c.get("outputs", []))]
            pytest.fail(f"{rel(path)}: {', '.join(failed) or 'a cell'} raised an error:\n{e}\n"
                        f"kernel stderr:\n{kernel_log.read_text()[-2000:]}")
    elapsed = time.perf_counter() - start

    stderr = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        text = "".join(o.get("text", "") for o in cell.get("outputs", [])
                       if o.get("output_type") == "stream" and o.get("name") == "stderr")
        if text:
            stderr.append(f"{describe(nb, i)} wrote to stderr:\n{text[:800]}")
    assert not stderr, (f"{rel(path)}: nbgrader scores a test cell with stderr output 0, and "
                        "students read warnings as errors:\n" + "\n".join(stderr))
    assert elapsed <= MAX_SECONDS, f"{rel(path)} took {elapsed:.1f} s to run (limit {MAX_SECONDS} s)"
    locked = [describe(nb, i) for i, c in enumerate(nb.cells) if c.cell_type == "code" and any(
        "shown here once" in o.get("text", "") for o in c.get("outputs", []))]
    assert not locked, f"{rel(path)}: with every answer committed and shown, {', '.join(locked)} still hold back"
    disagreements = disagreeing_verifies(nb)      # the solution passes its hidden tests: verify agrees
    assert not disagreements, f"{rel(path)}:\n" + "\n".join(disagreements)


# ---- 2. committed without outputs ----------------------------------------------------------
@pytest.mark.parametrize("path", SOURCES + COMMITTED_RELEASES,
                         ids=[rel(p) for p in SOURCES + COMMITTED_RELEASES])
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    dirty = [describe(nb, i) for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, (f"{rel(path)} has outputs or execution counts in {', '.join(dirty)}: "
                       "clear them before committing (the source is built without outputs; "
                       "then run make release)")


# ---- 3. notebooks/ is exactly the generated release ----------------------------------------
def test_release_is_up_to_date(generated_release):
    _, generated = generated_release
    committed = {p.parent.name: p for p in COMMITTED_RELEASES}
    missing = sorted(set(generated) - set(committed))
    stale = sorted(set(committed) - set(generated))
    differ = []
    for a, path in sorted(generated.items()):
        if a in committed:
            new = nbformat.read(path, as_version=4)
            old = nbformat.read(committed[a], as_version=4)
            if new != old:
                differ.append(rel(committed[a]))
    problems = ([f"missing from notebooks/: {', '.join(missing)}"] if missing else []) + \
               ([f"in notebooks/ but not in solutions/: {', '.join(stale)}"] if stale else []) + \
               ([f"differ from their source in solutions/: {', '.join(differ)}"] if differ else [])
    assert not problems, "the student release is out of date; run make release.\n" + "\n".join(problems)


def test_the_shared_header_is_kept_once_and_released_in_every_lesson():
    from autograder.authoring.release import HEADER_FILE, HEADER_MARK

    header = (SOLUTIONS / HEADER_FILE).read_text().rstrip("\n")
    first_line = header.splitlines()[0]
    for path in SOURCES:
        cells = nbformat.read(path, as_version=4).cells
        marks = [i for i, c in enumerate(cells) if HEADER_MARK in c.source]
        assert marks == [0], f"{rel(path)}: the header mark belongs in the first cell, once (found in {marks})"
        assert not any(first_line in c.source for c in cells), f"{rel(path)} keeps its own copy of the header"
    for path in COMMITTED_RELEASES:
        first = nbformat.read(path, as_version=4).cells[0].source
        assert header in first and HEADER_MARK not in first, f"{rel(path)}: the header is not in its first cell"


# ---- 4. the release gives nothing away -----------------------------------------------------
@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_release_has_no_solutions_or_hidden_tests(path, generated_release):
    _, generated = generated_release
    a = path.parent.name
    source = read_source(path)
    secret, public = set(), set()
    for cell in source.cells:
        inside, outside = split_blocks(cell.source)
        secret.update(l for l in inside if meaningful(l))
        public.update(outside)
    secret -= public            # a line also visible outside the blocks gives nothing away

    releases = [generated[a]] + [p for p in COMMITTED_RELEASES if p.parent.name == a]
    for release in releases:
        nb = nbformat.read(release, as_version=4)
        for i, cell in enumerate(nb.cells):
            markers = [m for m in BLOCK_MARKERS if m in cell.source]
            assert not markers, f"{rel(release)} {describe(nb, i)} still contains {markers}"
            leaked = sorted(secret & {l.strip() for l in cell.source.splitlines()})
            assert not leaked, (f"{rel(release)} {describe(nb, i)} shows lines that are in a "
                                f"solution or hidden-test block of the source: {leaked[:3]}")


# ---- 5. the structure grading relies on: python -m autograder lint ---------------------------
@pytest.mark.parametrize("path", SOURCES, ids=IDS)
def test_grading_structure(path):
    problems = lint_notebook(read_source(path), rel(path))
    assert not problems, "\n".join(problems)


def test_lint_command_passes_every_lesson(capsys):
    assert main(["lint"]) == 0, capsys.readouterr().out
