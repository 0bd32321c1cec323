"""Project hygiene: environment.yml and pyproject.toml agree; no exact pins; CI calls make test."""
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
