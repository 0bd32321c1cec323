"""The course's image tag has one place: `singleuser.image.tag` in values.yaml. The hook gives
instructors `custom.roofline.instructorImage` with that tag; the plain manifests (course-service.yaml,
grading.yaml) name their image with the tag `from-values-yaml`, which this replaces on the way to
kubectl (a manifest applied without it names a tag no registry has, and fails to pull instead of
running last term's image).

    python deploy/kubernetes/image_tag.py                      # prints the tag (for docker build -t)
    python deploy/kubernetes/image_tag.py course-service.yaml | kubectl -n roofline apply -f -
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
MARK = "from-values-yaml"


def tag(values: Path = HERE / "values.yaml") -> str:
    """singleuser.image.tag, read without a YAML library (the admin's machine may lack one)."""
    text = values.read_text()
    m = re.search(r"^singleuser:\n(?:[ \t].*\n|\n)*?  image:\n(?:    .*\n)*?    tag: \"?([^\"\s#]+)\"?", text, re.M)
    if not m:
        raise SystemExit(f"{values}: no singleuser.image.tag")
    return m.group(1)


def render(manifest: str, value: str) -> str:
    return re.sub(rf"(image: \S+):{MARK}\b", rf"\1:{value}", manifest)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("manifest", nargs="?", type=Path, help="print this manifest with the course's tag")
    args = p.parse_args(argv)
    if args.manifest is None:
        print(tag())
    else:
        sys.stdout.write(render(args.manifest.read_text(), tag()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
