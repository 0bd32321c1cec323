"""Where students are, without a hub: Binder's files, the public student repository, and
`python -m autograder` from an installed copy (the hub's shared environment installs it so).

"Fresh environment" below: a new virtual environment that has the packages environment.yml
lists, as Binder's image has them before postBuild runs: borrowed from the environment running
the tests (a .pth file for the modules; a copy of etc/jupyter and links into share/jupyter for the
settings and data files those packages install, nbgrader's extensions enabled among them), but
not this checkout: course_lib and autograder (and the course's JupyterLab extension) are there
only once something installs them into it. pip never reaches an index (PIP_NO_INDEX).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import nbformat
import pytest

from autograder.locate import CourseNotFound, configured_exchange, exchange_root, locate_course
from autograder.authoring.publish import binder_url, student_repository
from test_labextension import NAME as LABEXTENSION, assert_installed_as_shipped

from autograder.authoring.cells import read_source

REPO = Path(__file__).resolve().parent.parent
SOLUTIONS = REPO / "solutions"
RELEASE = REPO / "notebooks"
ASSIGNMENTS = sorted(p.parent.name for p in SOLUTIONS.glob("*/*.ipynb"))
INSTRUCTOR_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment")
ENABLED_SERVER_EXTENSIONS = """
from jupyter_core.paths import jupyter_config_path
from jupyter_server.extension.config import ExtensionConfigManager
on = ExtensionConfigManager(read_config_path=jupyter_config_path()).get_jpserver_extensions()
print(sorted(name for name, enabled in on.items() if enabled))
"""


def run(cmd, **kw) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, **kw)
    assert p.returncode == 0, f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def fresh_env(where: Path) -> tuple[Path, dict]:
    """A fresh environment (see the module's docstring) and the process environment to use it."""
    venv = where / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "environment-yml-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    shutil.copytree(Path(sys.prefix) / "etc" / "jupyter", venv / "etc" / "jupyter")
    # share/jupyter's entries linked one by one, so that an install writes into this environment,
    # never through a link into the borrowed one; the course's extension is not borrowed
    borrowed, jupyter = Path(sys.prefix) / "share" / "jupyter", venv / "share" / "jupyter"
    (jupyter / "labextensions").mkdir(parents=True)
    for entry in borrowed.iterdir():
        if entry.name != "labextensions":
            (jupyter / entry.name).symlink_to(entry)
    for ext in (borrowed / "labextensions").iterdir():
        if ext.name != LABEXTENSION:
            (jupyter / "labextensions" / ext.name).symlink_to(ext)
    (where / "home").mkdir(exist_ok=True)
    env = {"PATH": f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin", "HOME": str(where / "home"), "LANG": "C.UTF-8",
           "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "MPLBACKEND": "Agg"}
    return venv, env


def python(venv: Path, code: str, env: dict, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env,
                          cwd=cwd)


# ---- the public student repository ------------------------------------------------------------------
@pytest.fixture(scope="module")
def student_repo(tmp_path_factory):
    """`python -m autograder publish DEST`, run from the repository root as `make student-repo` does."""
    dest = tmp_path_factory.mktemp("published") / "roofline-students"
    p = run([sys.executable, "-m", "autograder", "publish", dest], cwd=REPO)
    assert str(dest) in p.stdout
    return dest


def block_lines(source: str, begin: str, end: str) -> list[str]:
    out, inside = [], False
    for line in source.splitlines():
        if begin in line:
            inside = True
        elif end in line:
            inside = False
        elif inside:
            out.append(line)
    return out


def private_lines() -> dict[str, list[str]]:
    """notebook -> every hidden-test line and every solution line of solutions/ that its student
    release does not show anyway (an import names the public library; very short lines such as
    `)` are everywhere)."""
    out = {}
    # a line some student notebook shows (say `h100 = Hardware.H100`) is public, whichever
    # lesson's solution block also holds it
    shown = "\n".join(c.source for nb in sorted(RELEASE.glob("*/*.ipynb"))
                      for c in nbformat.read(str(nb), as_version=4).cells)
    for src in sorted(SOLUTIONS.glob("*/*.ipynb")):
        lines = set()
        for cell in read_source(src).cells:
            for begin, end in (("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"),
                               ("### BEGIN SOLUTION", "### END SOLUTION")):
                lines |= {l.strip() for l in block_lines(cell.source, begin, end)}
        out[str(src.relative_to(REPO))] = sorted(
            l for l in lines if len(l) >= 12 and l not in shown and not re.match(r"^(from\s+\S+\s+)?import\s", l)
            # a declared question's hidden test names the question; course_lib computes its truth
            and not re.match(r'^grade\("[a-z]+_q\d+[a-z]?"\)$', l))
    return out


def grep_tree(tree: Path, lines: set[str]) -> dict[str, list[str]]:
    found = {}
    for f in sorted(tree.rglob("*")):
        if not f.is_file():
            continue
        text = f.read_text(errors="replace")
        if f.suffix == ".ipynb":      # JSON escapes quotes: look at the cells' text as well
            text += "\n".join(c.source for c in nbformat.reads(text, as_version=4).cells)
        hits = sorted(l for l in lines if l in text)
        if hits:
            found[str(f.relative_to(tree))] = hits
    return found


def test_student_repository_holds_what_students_need_and_nothing_else(student_repo):
    top = {p.name for p in student_repo.iterdir()}
    assert top == {"README.md", "Makefile", ".gitignore", ".student-repository", "pyproject.toml", "environment.yml",
                   "postBuild", "course_lib", "notebooks", "deploy"}, top
    assert {p.name for p in (student_repo / "deploy").iterdir()} == {"student-jupyter"}
    for private in ("solutions", "autograder", "course_hub", "tests", "benchmarks", "nbgrader_config.py",
                    "deploy/jupyterhub"):
        assert not (student_repo / private).exists(), private
    assert not list(student_repo.rglob("__pycache__"))
    for nb in RELEASE.glob("*/*.ipynb"):
        assert (student_repo / "notebooks" / nb.relative_to(RELEASE)).read_bytes() == nb.read_bytes()
    assert os.access(student_repo / "postBuild", os.X_OK)
    packages = (student_repo / "pyproject.toml").read_text().split("[tool.setuptools.packages.find]")[1]
    assert "autograder" not in packages and "course_hub" not in packages
    makefile = (student_repo / "Makefile").read_text()
    assert "JUPYTER_CONFIG_PATH=deploy/student-jupyter" in makefile and "jupyter lab" in makefile


def test_student_repository_shows_no_hidden_test_and_no_solution(student_repo, tmp_path):
    private = private_lines()
    assert set(private) == {str(p.relative_to(REPO)) for p in SOLUTIONS.glob("*/*.ipynb")}
    empty = [nb for nb, lines in private.items() if not lines]
    assert not empty, f"no hidden-test or solution lines found in {empty}: nothing to look for"
    everything = {l for lines in private.values() for l in lines}
    assert not grep_tree(student_repo, everything)
    markers = {"BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"}
    assert not grep_tree(student_repo, markers)
    # the search finds a leak where there is one: a solution notebook slipped into a copy
    leaky = tmp_path / "leaky"
    shutil.copytree(student_repo, leaky)
    src = next(SOLUTIONS.glob("*/*.ipynb"))
    shutil.copy(src, leaky / "notebooks" / src.parent.name / src.name)
    assert set(grep_tree(leaky, set(private[str(src.relative_to(REPO))]))) == \
        {f"notebooks/{src.parent.name}/{src.name}"}


def test_publish_refuses_a_folder_it_did_not_write_and_replaces_its_own(student_repo, tmp_path):
    other = tmp_path / "someone-elses"
    other.mkdir()
    (other / "thesis.tex").write_text("keep me")
    p = subprocess.run([sys.executable, "-m", "autograder", "publish", str(other)], cwd=REPO, capture_output=True,
                       text=True)
    assert p.returncode != 0 and "was not written by publish" in p.stderr and len(p.stderr.strip().splitlines()) == 1
    assert (other / "thesis.tex").read_text() == "keep me"
    again = tmp_path / "again"
    shutil.copytree(student_repo, again)
    (again / ".git").mkdir()
    (again / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (again / "stale.txt").write_text("from an older publish")
    run([sys.executable, "-m", "autograder", "publish", again], cwd=REPO)
    assert not (again / "stale.txt").exists() and (again / ".git" / "HEAD").exists()
    assert (again / "README.md").read_text() == (student_repo / "README.md").read_text()


# ---- Binder ----------------------------------------------------------------------------------------
def test_postbuild_is_strict_installs_without_dependencies_and_uses_the_student_settings():
    text = (REPO / "postBuild").read_text()
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith("#")]
    assert text.startswith("#!/usr/bin/env bash\n") and lines[0] == "set -euo pipefail"
    assert os.access(REPO / "postBuild", os.X_OK)
    installs = [l for l in lines if "pip install" in l]
    assert installs and all("--no-deps" in l for l in installs), installs
    assert "deploy/student-jupyter" in text
    assert not re.search(r"\b(curl|wget|git clone)\b", text)


def test_binder_links_open_lesson_one_of_the_configured_student_repository(student_repo):
    repository = student_repository(REPO)
    first = sorted(RELEASE.glob("*/*.ipynb"))[0]
    url = binder_url(repository, f"notebooks/{first.parent.name}/{first.name}")
    assert url.endswith(f"?urlpath=lab/tree/notebooks/{ASSIGNMENTS[0]}/{first.name}")
    for readme in (REPO / "README.md", student_repo / "README.md"):
        text = readme.read_text()
        links = re.findall(r"https://mybinder\.org/\S+?(?=\))", text)
        assert links == [url], f"{readme}: Binder links {links}, expected [{url}] (from [tool.course] in pyproject.toml)"
        assert "OWNER/REPO" not in text
    assert f"https://github.com/{repository}.git" in (student_repo / "README.md").read_text()


@pytest.fixture(scope="module")
def binder_image(student_repo, tmp_path_factory):
    """postBuild's steps, in a copy of the student repository, with a fresh environment."""
    where = tmp_path_factory.mktemp("binder")
    repo = where / "repo"
    shutil.copytree(student_repo, repo)
    venv, env = fresh_env(where)
    before = python(venv, "import course_lib", env, where)
    assert before.returncode != 0, "course_lib was importable before postBuild installed it"
    # as installed, nbgrader's instructor extensions are on: postBuild is what turns them off
    assert "nbgrader.server_extensions.formgrader" in python(venv, ENABLED_SERVER_EXTENSIONS, env, where).stdout
    assert not (venv / "share" / "jupyter" / "labextensions" / LABEXTENSION).exists()
    run(["bash", repo / "postBuild"], cwd=repo, env=env)
    return {"repo": repo, "venv": venv, "env": env, "where": where}


def test_postbuild_installs_course_lib_into_the_environment(binder_image):
    venv, env = binder_image["venv"], binder_image["env"]
    p = python(venv, "import course_lib, sys; print(course_lib.__file__); import autograder", env, binder_image["where"])
    assert p.returncode != 0 and "No module named 'autograder'" in p.stderr, p.stderr
    assert Path(p.stdout.strip()).is_relative_to(venv), p.stdout


def test_postbuild_installs_the_course_jupyterlab_extension(binder_image):
    assert_installed_as_shipped(binder_image["venv"] / "bin" / "python", env=binder_image["env"],
                                cwd=binder_image["where"])


def test_postbuild_serves_notebooks_with_the_kernels_language_info(binder_image):
    """Binder's Jupyter serves each lesson with the kernel's language_info (course_lib.jupyter_contents),
    so JupyterLab opens it unmodified (tests/test_browser_unmodified.py checks the page)."""
    venv, env = binder_image["venv"], binder_image["env"]
    config = json.loads((venv / "etc" / "jupyter" / "jupyter_server_config.json").read_text())
    cls = config["ServerApp"]["contents_manager_class"]
    code = f"""
import asyncio, platform, importlib
module, name = {cls!r}.rsplit(".", 1)
cm = getattr(importlib.import_module(module), name)(root_dir={str(binder_image["repo"] / "notebooks")!r})
model = asyncio.run(cm.get("01_hello_roofline/hello_roofline.ipynb"))
assert model["content"]["metadata"]["language_info"]["version"] == platform.python_version()
print("ok")
"""
    p = python(venv, code, env, binder_image["where"])
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-3000:]


def test_the_student_repositorys_notebooks_run_on_its_course_lib(binder_image):
    """Lesson 1's opening cells (up to the first answer) run in the Binder environment, with
    course_lib from it."""
    repo, venv, env = binder_image["repo"], binder_image["venv"], binder_image["env"]
    first = sorted((repo / "notebooks").glob("*/*.ipynb"))[0]
    code = f"""
import nbformat, nbclient, sys
nb = nbformat.read({str(first)!r}, as_version=4)
cells = []
for c in nb.cells:
    if c.get("metadata", {{}}).get("nbgrader", {{}}).get("solution"):
        break
    cells.append(c)
assert any(c.cell_type == "code" for c in cells), "no code before the first answer"
nb.cells = cells + [nbformat.v4.new_code_cell("import course_lib; print(course_lib.__file__)")]
nbclient.NotebookClient(nb, timeout=120, resources={{"metadata": {{"path": {str(first.parent)!r}}}}}).execute()
errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
assert not errors, errors
print(nb.cells[-1].outputs[0]["text"].strip())
"""
    p = python(venv, code, env, first.parent)
    assert p.returncode == 0, p.stderr[-3000:]
    assert Path(p.stdout.strip().splitlines()[-1]).is_relative_to(venv), p.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_binder_jupyter_has_validate_but_no_instructor_tools(binder_image):
    """A JupyterLab from the Binder environment on 127.0.0.1: no Formgrader (404), instructor
    plugins and the Assignment List disabled, Validate there."""
    import requests

    venv, env = binder_image["venv"], binder_image["env"]
    port, token = free_port(), "binder-test"
    cmd = [str(venv / "bin" / "python"), "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           f"--IdentityProvider.token={token}", "--ServerApp.open_browser=False"]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    proc = subprocess.Popen(cmd, cwd=binder_image["repo"], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if requests.get(f"{base}/api/status", params={"token": token}, timeout=5).status_code == 200:
                    break
            except requests.ConnectionError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "JupyterLab did not start"
            time.sleep(0.2)
        assert requests.get(f"{base}/formgrader", params={"token": token}, timeout=30).status_code == 404
        assert requests.get(f"{base}/assignments", params={"token": token, "course_id": "roofline"},
                            timeout=30).status_code == 404
        lab = requests.get(f"{base}/lab", params={"token": token}, timeout=30).text
        config = json.loads(re.search(r'<script id="jupyter-config-data" type="application/json">(.*?)</script>',
                                      lab, re.S).group(1))
        disabled = set(config.get("disabledExtensions", []))
        assert set(INSTRUCTOR_PLUGINS) | {"@jupyter/nbgrader:assignment-list"} <= disabled, disabled
        assert "@jupyter/nbgrader:validate-assignment" not in disabled
        assert LABEXTENSION in {e["name"] for e in config["federated_extensions"]}
        validate = requests.post(f"{base}/assignments/validate", params={"token": token}, timeout=120,
                                 data={"path": str(next((binder_image["repo"] / "notebooks").glob("*/*.ipynb"))
                                                   .relative_to(binder_image["repo"]))})
        assert validate.status_code == 200 and "success" in validate.json()
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# ---- python -m autograder from an installed copy ------------------------------------------------------
@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The course package installed (not editable) into a fresh environment, and a course
    directory elsewhere: a copy of nbgrader_config.py, solutions/ and notebooks/."""
    where = tmp_path_factory.mktemp("installed")
    src = where / "src"
    src.mkdir()
    for rel in ("pyproject.toml", "README.md", "course_lib", "autograder", "course_hub"):
        (shutil.copytree if (REPO / rel).is_dir() else shutil.copy)(REPO / rel, src / rel)
    venv, env = fresh_env(where)
    assert not (venv / "share" / "jupyter" / "labextensions" / LABEXTENSION).exists()
    run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", src],
        env=env, cwd=where)
    shutil.rmtree(src)
    course = where / "course"
    course.mkdir()
    for rel in ("nbgrader_config.py", "solutions", "notebooks"):
        (shutil.copytree if (REPO / rel).is_dir() else shutil.copy)(REPO / rel, course / rel)
    for package in ("autograder", "course_hub"):        # what the hub's shared environment installs
        p = python(venv, f"import {package}; print({package}.__file__)", env, where)
        assert Path(p.stdout.strip()).is_relative_to(venv / "lib"), p.stdout + p.stderr
    return {"venv": venv, "env": env, "where": where, "course": course}


def autograder_cli(installed, *args, cwd, **env):
    return subprocess.run([str(installed["venv"] / "bin" / "python"), "-m", "autograder", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env={**installed["env"], **env})


def test_installed_copy_has_the_course_jupyterlab_extension(installed):
    """A plain (not editable) install, as setup.sh gives the hub's shared environment, puts the
    extension where JupyterLab finds it."""
    assert_installed_as_shipped(installed["venv"] / "bin" / "python", env=installed["env"], cwd=installed["where"])


def test_installed_autograder_without_a_course_says_so_in_one_line(installed):
    p = autograder_cli(installed, "grade", ASSIGNMENTS[0], cwd=installed["where"])
    assert p.returncode != 0
    assert p.stderr.strip().splitlines() == [p.stderr.strip()], p.stderr
    assert "nbgrader_config.py" in p.stderr and "--course-dir" in p.stderr and "AUTOGRADER_ROOT" in p.stderr
    p = autograder_cli(installed, "grade", ASSIGNMENTS[0], cwd=installed["where"],
                       AUTOGRADER_ROOT=str(installed["where"]))
    assert p.returncode != 0 and len(p.stderr.strip().splitlines()) == 1 and "solutions/" in p.stderr, p.stderr


def test_installed_autograder_finds_the_course_upward_from_the_working_directory(installed, tmp_path):
    course = installed["course"]
    out = tmp_path / "release"
    p = autograder_cli(installed, "release", ASSIGNMENTS[0], "--release-dir", out,
                       cwd=course / "solutions" / ASSIGNMENTS[0])
    assert p.returncode == 0, p.stderr
    written = sorted(out.glob(f"{ASSIGNMENTS[0]}/*.ipynb"))
    assert [w.name for w in written] == [s.name for s in (course / "solutions" / ASSIGNMENTS[0]).glob("*.ipynb")]
    assert not (course / "gradebook.db").exists()        # releasing leaves no gradebook behind


@pytest.mark.parametrize("how", ["--course-dir", "AUTOGRADER_ROOT"])
def test_installed_autograder_takes_the_course_from_the_option_or_the_environment(installed, tmp_path, how):
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    args = ["release-feedback", ASSIGNMENTS[0], "--exchange", exchange]
    env = {}
    if how == "--course-dir":
        args += ["--course-dir", installed["course"]]
    else:
        env["AUTOGRADER_ROOT"] = str(installed["course"])
    p = autograder_cli(installed, *args, cwd=tmp_path, **env)
    assert p.returncode == 0, p.stderr
    assert f"feedback released to {exchange} for 0 student(s)" in p.stdout


# ---- locating the course and the exchange (in process) -------------------------------------------
def test_course_directory_precedence(tmp_path, monkeypatch):
    a, b, c = (tmp_path / n for n in "abc")
    for d in (a, b, c):
        (d / "solutions").mkdir(parents=True)
        (d / "nbgrader_config.py").write_text("c = get_config()\n")
    (c / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.source_directory = 'source'\n"
                                          "c.CourseDirectory.release_directory = 'release'\n")
    (c / "source").mkdir()
    (a / "deep" / "er").mkdir(parents=True)
    assert locate_course(a, environ={"AUTOGRADER_ROOT": str(b)}, cwd=c).path == a.resolve()
    assert locate_course(None, environ={"AUTOGRADER_ROOT": str(b)}, cwd=c).path == b.resolve()
    found = locate_course(None, environ={}, cwd=a / "deep" / "er")
    assert (found.path, found.source, found.release) == (a.resolve(), a.resolve() / "solutions",
                                                         a.resolve() / "notebooks")
    custom = locate_course(None, environ={}, cwd=c)
    assert (custom.source, custom.release) == (c.resolve() / "source", c.resolve() / "release")
    with pytest.raises(CourseNotFound, match="no course here"):
        locate_course(None, environ={}, cwd=Path("/"))
    with pytest.raises(CourseNotFound, match="is not a folder"):
        locate_course(tmp_path / "missing", environ={}, cwd=a)


def test_exchange_root_precedence(tmp_path, monkeypatch):
    configured, env_ex, explicit = (tmp_path / n for n in ("configured", "env", "explicit"))
    for d in (configured, env_ex, explicit):
        d.mkdir()
    etc = tmp_path / "etc-jupyter"
    etc.mkdir()
    (etc / "nbgrader_config.py").write_text(f"c = get_config()\nc.Exchange.root = {str(configured)!r}\n")
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(etc))
    monkeypatch.setenv("JUPYTER_CONFIG_DIR", str(tmp_path / "no-user-config"))
    assert configured_exchange() == configured
    assert exchange_root(None, environ={}) == configured.resolve()
    assert exchange_root(None, environ={"AUTOGRADER_EXCHANGE": str(env_ex)}) == env_ex.resolve()
    assert exchange_root(str(explicit), environ={"AUTOGRADER_EXCHANGE": str(env_ex)}) == explicit.resolve()
    with pytest.raises(SystemExit, match="does not exist"):
        exchange_root(str(tmp_path / "nowhere"), environ={})
    monkeypatch.setenv("JUPYTER_CONFIG_PATH", str(tmp_path / "empty"))
    with pytest.raises(SystemExit, match="no nbgrader exchange configured"):
        exchange_root(None, course_dir=tmp_path, environ={})


@pytest.mark.filterwarnings("ignore:Passing unrecognized arguments:DeprecationWarning")  # nbgrader's own typo
def test_release_feedback_files_pages_where_only_the_submitter_finds_them(tmp_path):
    """nbgrader's layout: exchange/<course>/feedback/<hash of the notebook name and the
    submission's secret>.html; a submission without a secret (not from the exchange) is reported."""
    from nbgrader.utils import notebook_hash

    from autograder.course import Course
    from autograder.outputs.release_feedback import release_feedback

    a = ASSIGNMENTS[0]
    nb = next((SOLUTIONS / a).glob("*.ipynb")).stem
    course = Course(root=tmp_path / "course", source=SOLUTIONS, release=RELEASE)
    for student, secret in (("ada", "s3cret-ada"), ("lms", None)):
        folder = course.feedback / student / a
        folder.mkdir(parents=True)
        (folder / f"{nb}.html").write_text(f"<html>feedback for {student}</html>")
        if secret:
            (folder / "timestamp.txt").write_text("2026-11-26 06:30:37.044650 UTC")
            (folder / "submission_secret.txt").write_text(secret)
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    r = release_feedback(course, a, exchange)
    assert r.released == ["ada"] and set(r.skipped) == {"lms"}
    assert "did not come through the exchange" in r.skipped["lms"]
    page = exchange / "roofline" / "feedback" / f"{notebook_hash(secret='s3cret-ada', notebook_id=nb)}.html"
    assert page.read_text() == "<html>feedback for ada</html>"
    assert [p.name for p in (exchange / "roofline" / "feedback").iterdir()] == [page.name]


# ---- the hub kit's files that no test here can run ------------------------------------------------
def test_setup_script_parses_and_documents_its_options():
    script = REPO / "deploy" / "jupyterhub" / "setup.sh"
    assert os.access(script, os.X_OK)
    run(["bash", "-n", script])
    usage = run([script, "--help"]).stdout
    options = set(re.findall(r'^\s+(--[a-z-]+)\)', script.read_text(), re.M))
    assert options and all(o in usage for o in options), options - set(re.findall(r"--[a-z-]+", usage))
