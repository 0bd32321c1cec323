"""Every file a README names (in `code` spans: a path with a folder and a file name with an
extension) is there, relative to the README's folder or the repository's root: a renamed or
deleted file cannot leave a README pointing at nothing (issue 48: autograder/README.md named a
Kubernetes manifest the kit did not have)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
EXTENSIONS = (".py", ".yaml", ".yml", ".md", ".json", ".sh", ".toml", ".Dockerfile", ".service", ".csv", ".ipynb",
              ".js", ".txt", ".cfg", ".ini")


def readmes() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "*README.md"], cwd=REPO, capture_output=True, text=True, check=True)
    return [REPO / line for line in out.stdout.split()]


def named_files(text: str) -> set[str]:
    """The repository files a README's `code` spans name."""
    found = set()
    for span in re.findall(r"`([^`\n]+)`", text):
        span = span.strip().rstrip(":,.")
        if " " in span or not re.fullmatch(r"[\w./-]+", span):
            continue                # a command, a pattern, a placeholder
        if span.startswith(("/", "~", "-")) or "://" in span or "..." in span:
            continue                # a path on a server, in an image or a pod, not in the repository
        if "/" not in span or not span.endswith(EXTENSIONS):
            continue                # a bare name (which folder it is in, the text around says), a folder
        found.add(span)
    return found


def missing(readme: Path) -> list[str]:
    out = []
    for name in sorted(named_files(readme.read_text())):
        # beside the README, from the root, or in a top-level folder (`01_x/x.ipynb` in notebooks/)
        candidates = [readme.parent / name, REPO / name, *(d / name for d in REPO.iterdir() if d.is_dir())]
        if not any(c.exists() for c in candidates):
            out.append(name)
    return out


@pytest.mark.parametrize("readme", readmes(), ids=lambda p: str(p.relative_to(REPO)))
def test_every_file_a_readme_names_is_there(readme):
    assert missing(readme) == []


def test_a_missing_file_is_caught(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("See `deploy/kubernetes/grading-shards.yaml`, `deploy/kubernetes/values.yaml`; `make test`.")
    assert named_files(readme.read_text()) == {"deploy/kubernetes/grading-shards.yaml", "deploy/kubernetes/values.yaml"}
    assert missing(readme) == ["deploy/kubernetes/grading-shards.yaml"]
