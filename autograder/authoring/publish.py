"""`publish DEST`: the public student repository, written from the instructor's.

The instructor's repository (solutions/ with the hidden tests, the autograder, the grading data)
stays private; students and Binder use a public one holding only what a student needs:

    notebooks/  course_lib/  pyproject.toml  environment.yml  postBuild
    deploy/student-jupyter/  README.md  Makefile  .gitignore

README.md, Makefile and .gitignore come from deploy/student-repo/; the README's Binder link is
built from the repository named in pyproject.toml ([tool.course] student-repository), the same
setting the instructor's README link is checked against. Its course_lib holds no answer key
(autograder.authoring.student_build: the lesson's own truths as practice data). The tree is built in a temporary folder
and scanned for every hidden-test and solution line of solutions/ before it replaces DEST (a
folder written by an earlier publish, whose .git is kept, or an empty or new one).
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from autograder.cell_code import HIDDEN_BEGIN, HIDDEN_END
from autograder.authoring.cells import read_source
from autograder.authoring.student_build import strip_package

#: what the student repository holds from the instructor's checkout (folders and files)
COPIED = ("course_lib", "environment.yml", "postBuild", "deploy/student-jupyter")
TEMPLATES = {"README.md": "README.md", "Makefile": "Makefile", "gitignore": ".gitignore"}
MARKER = ".student-repository"
SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
REPOSITORY = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})/[A-Za-z0-9._-]{1,100}$")
IMPORT = re.compile(r"^(from\s+\S+\s+)?import\s")
MIN_LINE = 12      # shorter lines (")", "else:") are no secret and occur everywhere
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info", ".predictions.jsonl",
                              ".autograder", ".roofline-student.json")


@dataclass
class Published:
    dest: Path
    files: list
    binder_url: str


def student_repository(checkout: Path) -> str:
    """The public repository's GitHub owner/name, from pyproject.toml's [tool.course]."""
    import tomllib

    pyproject = Path(checkout) / "pyproject.toml"
    value = tomllib.loads(pyproject.read_text()).get("tool", {}).get("course", {}).get("student-repository")
    if not value:
        raise SystemExit(f"{pyproject}: set [tool.course] student-repository = \"OWNER/NAME\" (the public "
                         f"GitHub repository students and Binder use) or pass --repository")
    return check_repository(value)


def check_repository(value: str) -> str:
    if not REPOSITORY.match(value):
        raise SystemExit(f"{value!r}: expected a GitHub repository as OWNER/NAME")
    return value


def first_notebook(release: Path) -> str:
    """notebooks/<first assignment>/<its first notebook>.ipynb: lesson 1, where Binder opens."""
    found = sorted(Path(release).glob("*/*.ipynb"))
    if not found:
        raise SystemExit(f"no student notebooks in {release}: run `make release` first")
    return f"notebooks/{found[0].parent.name}/{found[0].name}"


def binder_url(repository: str, path: str) -> str:
    return f"https://mybinder.org/v2/gh/{repository}/HEAD?urlpath=lab/tree/{path}"


def _title(nb_path: Path) -> str:
    import nbformat

    nb = nbformat.read(str(nb_path), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return nb_path.stem.replace("_", " ")


def lessons_table(release: Path) -> str:
    rows = ["| # | lesson | notebook |", "|---|---|---|"]
    for i, nb in enumerate(sorted(Path(release).glob("*/*.ipynb")), 1):
        rel = f"notebooks/{nb.parent.name}/{nb.name}"
        rows.append(f"| {i} | {_title(nb)} | [`{rel}`]({rel}) |")
    return "\n".join(rows)


#: a hidden test of a question declared in course_lib.questions, whose truth is computed by the
#: public library: the line names the question and nothing else
DECLARED_CALL = re.compile(r'^grade\("[a-z]+_q\d+[a-z]?"\)$')


def secret_lines(source: Path, release: Path) -> set[str]:
    """Every line of a solution or hidden-test block in source/*/*.ipynb that no student notebook
    shows anyway; import lines name the public library and give nothing away, nor does the
    one-line hidden test of a declared question (``grade("phases_q3")``)."""
    import nbformat

    # a line that any student notebook shows is public, whichever lesson's block it is also in
    shown = "\n".join(c.source for public in sorted(Path(release).glob("*/*.ipynb"))
                      for c in nbformat.read(str(public), as_version=4).cells)
    secrets = set()
    for src in sorted(Path(source).glob("*/*.ipynb")):
        nb = read_source(src)
        for cell in nb.cells:
            inside = False
            for line in cell.source.splitlines():
                text = line.strip()
                if any(m in line for m in (SOLUTION_BEGIN, HIDDEN_BEGIN)):
                    inside = True
                elif any(m in line for m in (SOLUTION_END, HIDDEN_END)):
                    inside = False
                elif (inside and len(text) >= MIN_LINE and text not in shown and not IMPORT.match(text)
                      and not DECLARED_CALL.match(text)):
                    secrets.add(text)
    return secrets


def scan(tree: Path, secrets: set[str]) -> dict[str, list[str]]:
    """Files under `tree` holding a secret line or an nbgrader solution/hidden-test marker."""
    markers = (SOLUTION_BEGIN, HIDDEN_BEGIN, SOLUTION_END, HIDDEN_END)
    found = {}
    for f in sorted(Path(tree).rglob("*")):
        if not f.is_file() or ".git" in f.relative_to(tree).parts:
            continue
        text = f.read_text(errors="replace")
        # notebooks are JSON: look at the decoded source too, whose quotes JSON escapes
        if f.suffix == ".ipynb":
            import nbformat

            text += "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
        hits = [s for s in secrets if s in text] + [m for m in markers if m in text]
        if hits:
            found[str(f.relative_to(tree))] = sorted(hits)
    return found


def _render(template: Path, values: dict) -> str:
    text = template.read_text()
    for key, value in values.items():
        text = text.replace(f"@{key}@", value)
    left = re.findall(r"@[A-Z_]+@", text)
    if left:
        raise SystemExit(f"{template}: no value for {', '.join(sorted(set(left)))}")
    return text


def _student_pyproject(text: str) -> str:
    """pyproject.toml without the autograder and course_hub packages (they are not in the student
    repository)."""
    new = text.replace('include = ["course_lib*", "autograder*", "course_hub*"]', 'include = ["course_lib*"]')
    if new == text:
        raise SystemExit('pyproject.toml: expected include = ["course_lib*", "autograder*", "course_hub*"] under '
                         '[tool.setuptools.packages.find]; update autograder/authoring/publish.py to match')
    # nor its package data (the feedback template)
    return "".join(line for line in new.splitlines(keepends=True) if not line.startswith("autograder = "))


def _check_dest(dest: Path, checkout: Path) -> None:
    dest, checkout = dest.resolve(), checkout.resolve()
    if dest == checkout or dest in checkout.parents:
        raise SystemExit(f"{dest}: the student repository cannot hold the course itself")
    if any(dest == checkout / p or (checkout / p) in dest.parents
           for p in ("solutions", "notebooks", "course_lib", "autograder", "course_hub", "deploy", "tests")):
        raise SystemExit(f"{dest}: inside a folder of the course; pick a folder of its own")
    if dest.exists() and not dest.is_dir():
        raise SystemExit(f"{dest} is a file, not a folder")
    if dest.exists() and not (dest / MARKER).exists() and any(p.name != ".git" for p in dest.iterdir()):
        raise SystemExit(f"{dest} is not empty and was not written by publish: give an empty folder, a new one, "
                         f"or an earlier publish (it has {MARKER})")


def build(checkout: Path, release: Path, source: Path, out: Path, repository: str) -> str:
    """Write the student tree into the empty folder `out`; returns the Binder link."""
    checkout = Path(checkout)
    for rel in COPIED:
        src = checkout / rel
        if not src.exists():
            raise SystemExit(f"{src} is missing: the student repository needs it")
        if src.is_dir():
            shutil.copytree(src, out / rel, ignore=SKIP)
        else:
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out / rel)
    # no answer key: solvers and take-aways out, the lesson's own truths kept as practice data
    strip_package(out / "course_lib", practice=True)
    shutil.copytree(release, out / "notebooks", ignore=SKIP)
    (out / "pyproject.toml").write_text(_student_pyproject((checkout / "pyproject.toml").read_text()))
    url = binder_url(repository, first_notebook(release))
    values = {"REPOSITORY": repository, "REPOSITORY_NAME": repository.split("/")[1], "BINDER_URL": url,
              "LESSONS": lessons_table(release)}
    templates = checkout / "deploy" / "student-repo"
    for name, target in TEMPLATES.items():
        (out / target).write_text(_render(templates / name, values))
    (out / MARKER).write_text("Written by `python -m autograder publish` from the instructor's repository: "
                              "regenerate it there rather than editing it here.\n")
    return url


def _variant_secret_in(tree: Path, checkout: Path) -> dict:
    """Files of the tree holding the course's variant secret (autograder.authoring.variants): with it a
    student could compute anyone's numbers."""
    from autograder.authoring.variants import load_secret

    secret = load_secret(checkout)
    if not secret:
        return {}
    return {str(p.relative_to(tree)): ["the variant secret"] for p in tree.rglob("*")
            if p.is_file() and secret in p.read_bytes()}


def publish(checkout: Path, release: Path, source: Path, dest: Path, repository: str | None = None) -> Published:
    """Build the student repository, check it holds no solution or hidden test, put it at `dest`."""
    checkout, dest = Path(checkout), Path(dest)
    repository = check_repository(repository) if repository else student_repository(checkout)
    _check_dest(dest, checkout)
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{dest.name}.publishing-", dir=dest.parent) as tmp:
        out = Path(tmp) / "tree"
        out.mkdir()
        url = build(checkout, Path(release), Path(source), out, repository)
        leaks = scan(out, secret_lines(source, release))
        leaks.update(_variant_secret_in(out, checkout))
        if leaks:
            raise SystemExit("not published: these files would show solutions, hidden tests or the variant secret: "
                             + "; ".join(f"{f} ({len(h)} lines)" for f, h in leaks.items()))
        dest.mkdir(exist_ok=True)
        for old in dest.iterdir():
            if old.name != ".git":
                shutil.rmtree(old) if old.is_dir() and not old.is_symlink() else old.unlink()
        for new in out.iterdir():
            shutil.move(str(new), str(dest / new.name))
    files = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() and ".git" not in
                   p.relative_to(dest).parts)
    return Published(dest, files, url)
