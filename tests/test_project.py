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
    proj = _pyproject()
    wanted = {_name(r) for r in proj["dependencies"] + proj["optional-dependencies"]["course"]}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_name(d) for d in env["dependencies"] if isinstance(d, str)} - {"python", "pip"}
    assert conda == wanted
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert any(p.startswith("-e .[course]") or p.startswith(".[course]") for p in pip)
    assert "python=3.11" in env["dependencies"]


def test_no_exact_pins_in_the_librarys_dependencies():
    proj = _pyproject()
    reqs = proj["dependencies"] + [r for extra in proj["optional-dependencies"].values() for r in extra]
    assert not [r for r in reqs if "==" in r]


def test_ci_runs_make_test_and_readme_shows_the_two_commands_first():
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    readme = (ROOT / "README.md").read_text()
    first_block = readme.split("```")[1]
    assert "make lab" in first_block and "make test" in first_block
