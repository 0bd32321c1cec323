"""The course's JupyterLab extension (course_lib/labextension/): this environment has it where
JupyterLab looks, as the repository ships it and enabled, and its one plugin opens nbgrader's
feedback pages and nothing else. The browser sees it work in tests/test_feedback_link.py; the
installs of setup.sh and Binder's postBuild are checked in tests/test_deploy.py."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "course_lib" / "labextension"
NAME = json.loads((SOURCE / "package.json").read_text())["name"]
FILES = ("package.json", "install.json", "static/remoteEntry.js")

#: run by the environment's own Python: what JupyterLab's server finds and hands the page
DISCOVER = """
import json, sys
from jupyter_core.paths import jupyter_path
from jupyterlab_server.config import get_federated_extensions, get_page_config
paths = jupyter_path("labextensions")
config = get_page_config(paths, logger=None)
print(json.dumps({"prefix": sys.prefix, "found": get_federated_extensions(paths).get(sys.argv[1]),
                  "loaded": [e for e in config["federated_extensions"] if e["name"] == sys.argv[1]],
                  "disabled": list(config.get("disabledExtensions", []))}))
"""


def assert_installed_as_shipped(python: Path, **run) -> None:
    """The environment of `python` serves the course's extension from its own
    share/jupyter/labextensions, with the repository's files, and does not disable it."""
    p = subprocess.run([str(python), "-c", DISCOVER, NAME], capture_output=True, text=True, **run)
    assert p.returncode == 0, p.stderr[-3000:]
    got = json.loads(p.stdout)
    found = got["found"]
    assert found, f"JupyterLab finds no {NAME} extension in the environment of {python}"
    assert Path(found["ext_dir"]).resolve() == (Path(got["prefix"]) / "share" / "jupyter" / "labextensions").resolve()
    assert [(e["load"], e.get("extension")) for e in got["loaded"]] == [("static/remoteEntry.js", "./extension")]
    assert NAME not in got["disabled"] and f"{NAME}:open-feedback" not in got["disabled"], got["disabled"]
    for rel in FILES:
        assert (Path(found["ext_path"]) / rel).read_bytes() == (SOURCE / rel).read_bytes(), rel


def test_this_environment_has_the_extension_where_jupyterlab_finds_it():
    assert_installed_as_shipped(Path(sys.executable))


def test_pyproject_installs_every_file_of_the_extension():
    """What pyproject's data-files install is the whole extension folder, nothing left out."""
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["data-files"]
    installed = {f"{dest}/{Path(src).name}" for dest, srcs in data.items() for src in srcs}
    shipped = {f"share/jupyter/labextensions/{NAME}/{rel}" for rel in FILES}
    assert installed == shipped
    assert {p.relative_to(SOURCE).as_posix() for p in SOURCE.rglob("*") if p.is_file()} == set(FILES)


#: runs remoteEntry.js as JupyterLab's page would (a `window`, then init and get("./extension")),
#: activates the plugin on a stand-in app and reports which commands it ran for each go-to-path
HARNESS = r"""
const vm = require("vm"), fs = require("fs");
const [file, name, cases] = [process.argv[1], process.argv[2], JSON.parse(process.argv[3])];
const window = {};
vm.runInNewContext(fs.readFileSync(file, "utf8"), {window, console, Promise});
(async () => {
  const container = window._JUPYTERLAB[name];
  await container.init({});
  const module = (await container.get("./extension"))();
  let missing = null;
  await container.get("./nothing").catch(e => { missing = String(e); });
  const plugins = module.default;
  const listeners = [], executed = [];
  const app = {commands: {
    commandExecuted: {connect: f => listeners.push(f)},
    execute: (id, args) => { executed.push({id, args}); return Promise.resolve(); },
  }};
  plugins.forEach(p => p.activate(app));
  const out = {esModule: module.__esModule, plugins: plugins.map(p => ({id: p.id, autoStart: p.autoStart})),
               missing, cases: []};
  for (const c of cases) {
    executed.length = 0;
    let settle;
    const result = new Promise((ok, fail) => { settle = c.fails ? fail : ok; });
    listeners.forEach(f => f(app.commands, {id: c.id, args: c.args, result}));
    await new Promise(r => setTimeout(r, 10));
    const before = executed.length;
    settle(new Error("go-to-path failed"));
    await new Promise(r => setTimeout(r, 10));
    out.cases.push({before, executed: executed.slice()});
  }
  console.log(JSON.stringify(out));
})().catch(e => { console.error(e); process.exit(1); });
"""

PAGE = "c/a/feedback/2026-11-26 10:00:00.000000 UTC/extra.html"
GO = "filebrowser:go-to-path"


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node (CI installs it)")
def test_the_plugin_opens_feedback_pages_after_the_browser_moved_and_nothing_else():
    opens = [{"id": GO, "args": {"path": PAGE}},
             {"id": GO, "args": {"path": "a/feedback/2026-11-26 10:00:00.000000 UTC/lesson.html"}}]
    leaves = [{"id": GO, "args": {"path": "c/a/feedback/2026-11-26 10:00:00.000000 UTC"}},   # the folder
              {"id": GO, "args": {"path": "c/a/feedback/2026-11-26 10:00:00.000000 UTC/extra.ipynb"}},
              {"id": GO, "args": {"path": "c/a/feedback/2026-11-26 10:00:00.000000 UTC/x/extra.html"}},
              {"id": GO, "args": {"path": "c/a/feedback/extra.html"}},
              {"id": GO, "args": {"path": "c/a/myfeedback/t/extra.html"}},
              {"id": GO, "args": {"path": "notes/page.html"}},
              {"id": GO, "args": {}},
              {"id": "filebrowser:open-path", "args": {"path": PAGE}},
              {"id": "docmanager:open", "args": {"path": PAGE}},
              {"id": GO, "args": {"path": PAGE}, "fails": True}]
    p = subprocess.run(["node", "-e", HARNESS, str(SOURCE / "static" / "remoteEntry.js"), NAME,
                        json.dumps(opens + leaves)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = json.loads(p.stdout)
    assert got["esModule"] is True and got["plugins"] == [{"id": f"{NAME}:open-feedback", "autoStart": True}]
    assert "nothing" in got["missing"]
    for case, result in zip(opens, got["cases"]):
        # nothing before go-to-path has finished (the file browser has moved), then the HTML viewer
        assert result == {"before": 0, "executed": [
            {"id": "docmanager:open", "args": {"path": case["args"]["path"], "factory": "HTML Viewer"}}]}, case
    for case, result in zip(leaves, got["cases"][len(opens):]):
        assert result == {"before": 0, "executed": []}, case
