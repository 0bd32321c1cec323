"""Write the course's Jupyter settings into an image (student.Dockerfile, instructor.Dockerfile).

    python jupyter_settings.py --kit DIR --prefix PREFIX --course-id ID
                               [--instructor-dir DIR --course-dir DIR]

What deploy/jupyterhub/setup.sh writes into the one-machine kit's environment, for an image:

* everyone, into PREFIX/etc/jupyter: nbgrader's settings with the course service as the exchange
  (course_hub.nbexchange; no shared exchange folder), the instructor tools (Formgrader, Create
  Assignment, Courses) off but not locked, the Formgrader allowed to frame itself, lessons served
  unmodified (deploy/student-jupyter/jupyter_server_config.json);
* with --instructor-dir (the instructors' image): a settings folder the hub points instructors at
  (JUPYTER_CONFIG_PATH), with the tools back on and nbgrader loading the course in --course-dir.

--kit is the course checkout's deploy/ folder (its jupyterhub/ templates and student-jupyter/).
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

# the same as setup.sh's INSTRUCTOR_SERVER_EXTENSIONS and INSTRUCTOR_LAB_PLUGINS (tests/test_kubernetes.py
# compares them): formgrader_guard takes out the Formgrader's buttons that bypass `python -m autograder`
INSTRUCTOR_SERVER_EXTENSIONS = ("nbgrader.server_extensions.formgrader", "nbgrader.server_extensions.course_list",
                                "autograder.outputs.formgrader_csp", "autograder.outputs.formgrader_guard")
INSTRUCTOR_LAB_PLUGINS = ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                          "@jupyter/nbgrader:course-list")
FRAME_SELF = {"ServerApp": {"tornado_settings": {"headers": {"Content-Security-Policy": "frame-ancestors 'self'"}}}}


def merge(a: dict, b: dict) -> dict:
    for k, v in b.items():
        a[k] = merge(a.get(k, {}), v) if isinstance(v, dict) and isinstance(a.get(k), dict) else v
    return a


def merge_json(path: Path, patch: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(merge(data, patch), indent=2) + "\n")


def tools(on: bool) -> tuple[dict, dict]:
    """(server extensions, lab plugins) settings with the instructor tools on or off."""
    server = {"ServerApp": {"jpserver_extensions": {e: on for e in INSTRUCTOR_SERVER_EXTENSIONS}}}
    lab = {"disabledExtensions": {p: not on for p in INSTRUCTOR_LAB_PLUGINS},
           # never locked: an instructor's settings folder switches them back on
           "lockedExtensions": {p: False for p in INSTRUCTOR_LAB_PLUGINS}}
    return server, lab


def everyone(kit: Path, etc: Path, course_id: str) -> None:
    template = (kit / "jupyterhub" / "nbgrader_config.student.py").read_text()
    etc.mkdir(parents=True, exist_ok=True)
    (etc / "nbgrader_config.py").write_text(
        template.replace("@COURSE_ID@", course_id).replace("@SERVICE_EXCHANGE@", "yes")
        .replace("@EXCHANGE@", "/nonexistent/no-exchange-folder"))
    server, lab = tools(False)
    merge_json(etc / "jupyter_server_config.d" / "roofline-hub.json", server)
    merge_json(etc / "labconfig" / "page_config.json", lab)
    merge_json(etc / "jupyter_server_config.json", FRAME_SELF)
    merge_json(etc / "jupyter_server_config.json",
               json.loads((kit / "student-jupyter" / "jupyter_server_config.json").read_text()))


def instructor(kit: Path, folder: Path, course_dir: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "nbgrader_config.py").write_text(
        (kit / "jupyterhub" / "nbgrader_config.instructor.py").read_text().replace("@COURSE_DIR@", course_dir))
    server, lab = tools(True)
    merge_json(folder / "jupyter_server_config.d" / "roofline-instructor.json", server)
    merge_json(folder / "labconfig" / "page_config.json", lab)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kit", required=True, type=Path, help="the course checkout's deploy/ folder")
    p.add_argument("--prefix", required=True, type=Path, help="the image's Python prefix (sys.prefix)")
    p.add_argument("--course-id", required=True)
    p.add_argument("--instructor-dir", type=Path, help="the instructors' settings folder (instructors' image)")
    p.add_argument("--course-dir", help="the course checkout in an instructor's home")
    args = p.parse_args(argv)
    if bool(args.instructor_dir) != bool(args.course_dir):
        p.error("--instructor-dir and --course-dir go together")
    everyone(args.kit, args.prefix / "etc" / "jupyter", args.course_id)
    if args.instructor_dir:
        instructor(args.kit, args.instructor_dir, args.course_dir)


if __name__ == "__main__":
    main()
