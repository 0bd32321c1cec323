"""Release: student notebooks generated from the nbgrader sources in solutions/.

`generate(dest)` runs nbgrader's generate_assignment in a throw-away course directory (so no
gradebook is left behind) and writes `dest/<assignment>/<notebook>.ipynb`. The committed
notebooks/ folder is exactly what `generate` produces; a test checks it.

The header every lesson shares ("Running this notebook") is kept once, in
solutions/running_this_notebook.md; a source notebook names it with the line HEADER_MARK,
which the release replaces with the file's text.
"""
from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from autograder.gradebook import open_gradebook, prepare

# The development checkout this package is imported from (an editable install: `make release`,
# the tests). An installed copy has no course next to it: the CLI locates the course instead
# (autograder.locate: --course-dir, $AUTOGRADER_ROOT, nbgrader_config.py upward).
REPO = Path(__file__).resolve().parent.parent.parent
SOURCE = REPO / "solutions"
RELEASE = REPO / "notebooks"
HEADER_FILE = "running_this_notebook.md"
HEADER_MARK = f"<!-- {HEADER_FILE}: the header all lessons share, put here by make release -->"


def assignments(source: Path = SOURCE) -> list[str]:
    """Assignment folders in solutions/, in course order."""
    return sorted(p.name for p in source.iterdir() if p.is_dir() and any(p.glob("*.ipynb")))


def nbgrader_config(root: Path, source="source", release="release", db: Path | None = None):
    """A traitlets Config for a course rooted at `root`."""
    from traitlets.config import Config

    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = "roofline"
    c.CourseDirectory.source_directory = source
    c.CourseDirectory.release_directory = release
    c.CourseDirectory.db_url = "sqlite:///" + str(db or (Path(root) / "gradebook.db"))
    c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
    c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
    c.Execute.timeout = 120
    # a submission that deletes a test cell is graded by the original test, put back
    c.OverwriteCells.add_missing_cells = True
    c.Exchange.root = str(Path(root) / "exchange")
    # a declared question's form check, hidden test, verify and given cells are generated
    from autograder.authoring.cells import configure

    configure(c)
    return c


def generate(dest: Path = RELEASE, only: list[str] | None = None, source: Path = SOURCE) -> list[Path]:
    """Generate the student release of each assignment into `dest`; returns the notebooks written."""
    from nbgrader.apps import NbGraderAPI

    dest = Path(dest)
    written = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        root = Path(tmp)
        # a prediction record left by running a notebook in the checkout is nobody's to hand out
        shutil.copytree(source, root / "source", ignore=shutil.ignore_patterns(".ipynb_checkpoints",
                                                                               ".predictions.jsonl"))
        header = source / HEADER_FILE
        for nb in (root / "source").glob("*/*.ipynb"):
            insert_header(nb, header.read_text() if header.is_file() else None)
        config = nbgrader_config(root)
        prepare(config.CourseDirectory.db_url)         # nbgrader's generate_assignment opens it
        api = NbGraderAPI(config=config)
        for a in only or assignments(source):
            result = api.generate_assignment(a, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader generate_assignment {a} failed:\n{result['log']}\n{result['error']}")
            out = dest / a
            if out.exists():
                shutil.rmtree(out)
            shutil.copytree(root / "release" / a, out)
            written += sorted(out.glob("*.ipynb"))
    return written


def insert_header(path: Path, header: str | None) -> None:
    """Replace the HEADER_MARK line of the notebook's markdown cells with `header` (in place);
    a notebook without the mark is left alone, one with it but no header file is an error."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    marked = [c for c in nb.cells if c.cell_type == "markdown" and HEADER_MARK in c.source]
    if not marked:
        return
    if header is None:
        raise FileNotFoundError(f"{path.name} asks for the shared header, but {HEADER_FILE} is not in the sources")
    for c in marked:
        c.source = c.source.replace(HEADER_MARK, header.rstrip("\n"))
    nbformat.write(nb, str(path))


#: the id of the cell that tells students when a released assignment is due (release_to_exchange)
DUE_CELL = "autograder-due-date"


def with_due_date(release: Path, names: list[str], dues: dict, dest: Path) -> Path:
    """A copy of `release` (the assignments `names`) in `dest`, each notebook of an assignment with
    a due date in `dues` {name: aware datetime} opening with a cell that says it: nbgrader's
    Assignment List shows students no due date (issue 47). A new, ungraded cell: no checksum of a
    graded or locked cell changes."""
    import nbformat

    for a in names:
        shutil.copytree(Path(release) / a, dest / a)
        due = dues.get(a)
        if due is None:
            continue
        for path in sorted((dest / a).glob("*.ipynb")):
            nb = nbformat.read(str(path), as_version=4)
            cell = nbformat.v4.new_markdown_cell(
                f"**Due {due:%A %d %B %Y, %H:%M} UTC** ({due.isoformat()}). Hand in with the Assignment "
                "List's *Submit* before then; an extension your instructor granted you moves it for you alone.")
            cell.id = DUE_CELL
            nb.cells = [c for c in nb.cells if c.get("id") != DUE_CELL]
            nb.cells.insert(0, cell)
            nbformat.write(nb, str(path))
    return dest


def release_to_exchange(names: list[str], exchange, release: Path = RELEASE, course_id: str = "roofline",
                        source: Path = SOURCE, dues: dict | None = None) -> list:
    """Release assignments to an nbgrader exchange (`nbgrader release_assignment`): a folder
    (<exchange>/<course_id>/outbound/<assignment>/, where students' `nbgrader fetch_assignment`
    finds them) or the plugin nbgrader's configuration selects (autograder.locate.PluginExchange:
    the hub's course service). The assignment is recorded in a throw-away gradebook (nbgrader
    checks it). `dues` {assignment: aware datetime}: each released notebook says its due date."""
    from nbgrader.apps import NbGraderAPI

    from autograder.locate import PluginExchange

    plugin = exchange if isinstance(exchange, PluginExchange) else None
    if plugin is None:
        exchange = Path(exchange)
        exchange.mkdir(parents=True, exist_ok=True)
    out = []
    with tempfile.TemporaryDirectory(prefix="release-") as tmp:
        release = with_due_date(release, names, dues or {}, Path(tmp) / "due-dated")
        c = nbgrader_config(Path(tmp), source=str(Path(source).resolve()), release=str(Path(release).resolve()))
        c.CourseDirectory.course_id = course_id
        if plugin is not None:
            plugin.apply(c)
        else:
            c.Exchange.root = str(exchange)
        c.Exchange.assignment_dir = tmp
        c.ExchangeReleaseAssignment.force = True     # releasing again replaces the old copy
        api = NbGraderAPI(config=c)
        for a in names:
            with open_gradebook(c.CourseDirectory.db_url, course_id) as gb:
                gb.update_or_create_assignment(a)
            result = api.release_assignment(a)
            if not result["success"]:
                raise RuntimeError(f"nbgrader release_assignment {a} failed:\n{result.get('log', '')}\n"
                                   f"{result.get('error', '')}")
            out.append(f"{course_id}/{a} ({plugin})" if plugin is not None else exchange / course_id / "outbound" / a)
    return out


if __name__ == "__main__":
    for p in generate():
        print(p.relative_to(REPO))
