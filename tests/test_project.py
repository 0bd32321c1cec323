"""Project hygiene: environment.yml and pyproject.toml agree; no exact pins; CI calls make test;
the installed package does not reach into tests/."""
import fnmatch
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def _name(req: str) -> str:
    return re.split(r"[<>=!~\[; ]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_environment_yml_names_the_same_dependencies_as_pyproject():
    """The library's dependencies, its `course` extra and the build requirements (postBuild
    builds the package without fetching anything): the same names as pyproject.toml."""
    toml = tomllib.loads((ROOT / "pyproject.toml").read_text())
    proj = toml["project"]
    wanted = {_name(r) for r in proj["dependencies"] + proj["optional-dependencies"]["course"]
              + toml["build-system"]["requires"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)} - {"python", "pip"}
    assert conda == wanted
    assert "python=3.11" in env["dependencies"]


def test_environment_yml_has_no_local_pip_reference():
    """repo2docker installs an environment.yml with a local pip line (`-e .`, `.`, a path) only
    after copying the repository, so every commit would rebuild it; postBuild installs the package."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = [line for d in env["dependencies"] if isinstance(d, dict) for line in d.get("pip", [])]
    local = [line for line in pip if re.match(r"^(-e\s+)?(\.|/|\.\.|file:)", line.strip())]
    assert not local, f"local pip references in environment.yml: {local}"


def test_no_exact_pins_in_the_librarys_dependencies():
    proj = _pyproject()
    reqs = proj["dependencies"] + [r for extra in proj["optional-dependencies"].values() for r in extra]
    assert not [r for r in reqs if "==" in r]


def test_ci_runs_make_test_and_readme_shows_the_two_commands_first():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```")[1]
    assert "make lab" in first_block and "make test" in first_block


def _shipped_files() -> list[Path]:
    """The files the package installs: every module of the packages pyproject.toml's
    packages.find includes, and their package data."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    patterns = tool["packages"]["find"]["include"]
    packages = sorted({p.parent for p in ROOT.glob("*/**/__init__.py")
                       if any(fnmatch.fnmatch(".".join(p.parent.relative_to(ROOT).parts), pat) for pat in patterns)})
    files = [f for pkg in packages for f in pkg.glob("*.py")]
    files += [f for pkg, globs in tool.get("package-data", {}).items() for g in globs
              for f in (ROOT / pkg.replace(".", "/")).glob(g) if f.is_file()]
    return files


def test_the_installed_package_does_not_reach_into_tests():
    """tests/ is not installed: a shipped module that reads it (or names a file in it) breaks
    outside a checkout of the repository."""
    files = _shipped_files()
    shipped = {f.relative_to(ROOT).as_posix() for f in files}
    assert {"course_lib/__init__.py", "course_lib/exercises/checks.py", "autograder/outputs/report.py",
            "course_hub/service/app.py"} <= shipped
    # test helpers and benchmarks live in tests/ and benchmarks/, never in a package
    assert not {"autograder/synthetic.py", "course_lib/bench.py"} & shipped
    reference = re.compile(r"""\btests/|/\s*["']tests["']""")
    found = [f"{f.relative_to(ROOT)}:{n}: {line.strip()}" for f in files
             for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1) if reference.search(line)]
    assert not found, "shipped files that refer to tests/:\n" + "\n".join(found)


def test_every_test_file_has_one_area_and_the_readme_lists_them():
    """tests/areas.py (make test-quick AREA=...) holds every test file once, and the README's
    table of the test loop names each area with its description (issue 43)."""
    import areas

    listed = [f for _, files in areas.AREAS.values() for f in files]
    assert sorted(listed) == sorted(p.name for p in (ROOT / "tests").glob("test_*.py"))
    readme = (ROOT / "README.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| ([\d.]+) \|$", readme, re.M)
    assert [(a, what) for a, what, _ in rows] == [(a, what) for a, (what, _) in areas.AREAS.items()]


def test_make_lab_takes_a_port_and_an_address_and_the_readme_says_how():
    """`make lab PORT=... IP=...` passes them to JupyterLab (a second server beside another, a
    remote machine), and without them passes neither (JupyterLab's defaults); the README says how."""
    import subprocess

    root = Path(__file__).parents[1]
    dry = lambda *a: subprocess.run(["make", "-n", "lab", *a], cwd=root,   # noqa: E731
                                    capture_output=True, text=True, check=True).stdout
    given, plain = dry("PORT=8890", "IP=0.0.0.0"), dry()
    assert "--ServerApp.port=8890" in given and "--ServerApp.ip=0.0.0.0" in given
    assert "--ServerApp.port" not in plain and "--ServerApp.ip" not in plain
    assert "make lab PORT=" in (root / "README.md").read_text(encoding="utf-8")
