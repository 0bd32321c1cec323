"""The kit's hub configuration gives each spawner the per-student limits setup.sh was asked for.

tests/test_hub.py runs the local spawner on a real hub (a memory and a fork bomb contained). On a
machine where systemd runs, setup.sh --spawner systemd picks systemdspawner instead; systemd does
not run here, so this test stops at the boundary: it loads deploy/jupyterhub/jupyterhub_config.py
as JupyterHub does, runs the real SystemdSpawner.start() with the kit's pre-spawn hook, and reads
the unit properties it hands to `systemd-run`. Faked: systemd itself (is a unit running or failed,
start one) and what a running hub would supply (the server's API token and arguments, its poll).
"""
from __future__ import annotations

import asyncio
import json
import os
import pwd
import shutil
import types
from pathlib import Path

from traitlets.config import Config

KIT = Path(__file__).resolve().parents[1] / "deploy" / "jupyterhub"
ME = pwd.getpwuid(os.getuid()).pw_name


def load_config(tmp_path: Path, spawner: str, limits: dict, instructors: set[str], **more) -> tuple[Config, dict]:
    """The kit's jupyterhub_config.py, loaded next to a roofline_site.json as setup.sh writes it
    (`more`: further keys of it)."""
    shutil.copy(KIT / "jupyterhub_config.py", tmp_path / "jupyterhub_config.py")
    site = {"env": "/opt/roofline-env", "exchange": str(tmp_path / "exchange"), "state_dir": str(tmp_path),
            "proxy": "/opt/roofline/proxy/node_modules/.bin/configurable-http-proxy",
            "bind_url": "http://127.0.0.1:8000", "course_id": "roofline",
            "course_folder": "roofline-course", "students_group": "roofline-students",
            "instructors_group": "roofline-instructors", "spawner": spawner, "limits": limits,
            "hub_api_url": "http://127.0.0.1:8081", "proxy_api_url": "http://127.0.0.1:8001", "cull_idle": 3600,
            **more}
    (tmp_path / "roofline_site.json").write_text(json.dumps(site))
    c = Config()
    ns = {"get_config": lambda: c, "load_subconfig": lambda path: None,
          "__file__": str(tmp_path / "jupyterhub_config.py"), "__name__": "jupyterhub_config"}
    exec(compile((tmp_path / "jupyterhub_config.py").read_text(), "jupyterhub_config.py", "exec"), ns)
    # group membership is the machine's; the test decides who is an instructor
    ns["_members"] = lambda group: instructors if group == site["instructors_group"] else set()
    # a student's course folder is made in their home: here, one under tmp_path
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    real = pwd.getpwnam(ME)
    fake = types.SimpleNamespace(pw_dir=str(home), pw_uid=real.pw_uid, pw_gid=real.pw_gid)
    ns["pwd"] = types.SimpleNamespace(getpwnam=lambda name: fake)
    return c, ns


def systemd_run_properties(c: Config, ns: dict, monkeypatch) -> dict:
    """What the real SystemdSpawner.start() passes to systemd-run for user ME, after the hook."""
    from systemdspawner import systemd
    from systemdspawner.systemdspawner import SystemdSpawner

    seen = {}

    async def no(*args, **kw):
        return False

    async def start_transient_service(unit_name, **kw):
        seen.update(kw, unit_name=unit_name)

    monkeypatch.setattr(systemd, "service_running", no)
    monkeypatch.setattr(systemd, "service_failed", no)
    monkeypatch.setattr(systemd, "start_transient_service", start_transient_service)

    user = types.SimpleNamespace(name=ME, id=1, escaped_name=ME, url="/user/" + ME + "/")
    spawner = SystemdSpawner(config=c, user=user)
    monkeypatch.setattr(spawner, "get_env", lambda: dict(spawner.environment))   # the hub's API token etc.
    monkeypatch.setattr(spawner, "get_args", lambda: [])

    async def up():
        return None

    monkeypatch.setattr(spawner, "poll", up)
    c.Spawner.pre_spawn_hook(spawner)
    asyncio.run(spawner.start())
    return seen


LIMITS = {"memory": "2G", "tasks": 256, "cpu": 1.5, "nice": 10}


def test_systemd_gives_a_student_server_its_memory_tasks_and_cpu_limits(tmp_path, monkeypatch):
    c, ns = load_config(tmp_path, "systemd", LIMITS, instructors=set())
    assert c.JupyterHub.spawner_class == "systemdspawner.SystemdSpawner"
    seen = systemd_run_properties(c, ns, monkeypatch)
    props = seen["properties"]
    assert props["MemoryMax"] == 2 * 1024**3
    assert props["CPUQuota"] == "150%"
    assert props["TasksMax"] == "256"
    assert props["PrivateTmp"] == "yes" and props["NoNewPrivileges"] == "yes"
    # the server is the shared environment's, with that environment first on PATH
    assert seen["cmd"] == ["/opt/roofline-env/bin/jupyterhub-singleuser"]
    assert seen["environment_variables"]["PATH"].startswith("/opt/roofline-env/bin:")
    # the pre-spawn hook ran: the student opens in their course folder, made for them
    assert (tmp_path / "home" / "roofline").is_dir()


def test_systemd_leaves_instructors_unlimited(tmp_path, monkeypatch):
    c, ns = load_config(tmp_path, "systemd", LIMITS, instructors={ME})
    props = systemd_run_properties(c, ns, monkeypatch)["properties"]
    assert not {"MemoryMax", "CPUQuota", "TasksMax"} & set(props), props


def test_no_limits_means_the_plain_local_spawner(tmp_path):
    c, _ = load_config(tmp_path, "systemd", {}, instructors=set())
    assert c.JupyterHub.spawner_class == "localprocess"


def test_the_local_spawner_sets_rlimits_for_students_only(tmp_path):
    """Without systemd the kit's LocalProcessSpawner subclass sets the limits in the child before
    it drops to the student's uid (tests/test_hub.py shows them holding against real bombs)."""
    c, ns = load_config(tmp_path, "local", LIMITS, instructors={"prof"})
    cls = c.JupyterHub.spawner_class
    assert cls.__name__ == "LimitedLocalProcessSpawner"
    calls = []
    ns["resource"] = types.SimpleNamespace(
        RLIMIT_DATA="DATA", RLIMIT_NPROC="NPROC",
        setrlimit=lambda which, pair: calls.append((which, pair)))
    spawner = cls.__new__(cls)
    from jupyterhub.spawner import LocalProcessSpawner

    dropped = []
    original = LocalProcessSpawner.make_preexec_fn
    try:
        LocalProcessSpawner.make_preexec_fn = lambda self, name: (lambda: dropped.append(name))
        # a student: limits first, then the drop to their uid (nice is the process's own: skip it)
        ns["os"] = types.SimpleNamespace(nice=lambda n: calls.append(("nice", n)), path=os.path)
        cls.make_preexec_fn(spawner, "stu")()
        assert calls == [("DATA", (2 * 1024**3,) * 2), ("NPROC", (256, 256)), ("nice", 10)]
        assert dropped == ["stu"]
        calls.clear()
        cls.make_preexec_fn(spawner, "prof")()
        assert calls == [] and dropped == ["stu", "prof"]
    finally:
        LocalProcessSpawner.make_preexec_fn = original


def appended(value) -> list:
    """A list the config appended to (traitlets keeps the appends until the hub's default)."""
    return list(value.get_value([])) if hasattr(value, "get_value") else list(value)


def test_an_install_has_its_own_ports_proxy_and_idle_culler(tmp_path):
    """setup.sh's --hub-api-port, --proxy-api-port and --cull-idle reach the hub; the proxy is the
    one inside the install's prefix."""
    c, _ = load_config(tmp_path, "local", {}, instructors=set(), hub_api_url="http://127.0.0.1:18081",
                       proxy_api_url="http://127.0.0.1:18001", cull_idle=600)
    assert c.JupyterHub.hub_bind_url == "http://127.0.0.1:18081"
    assert c.ConfigurableHTTPProxy.api_url == "http://127.0.0.1:18001"
    assert c.ConfigurableHTTPProxy.command == ["/opt/roofline/proxy/node_modules/.bin/configurable-http-proxy"]
    culler = [s for s in appended(c.JupyterHub.services) if s["name"] == "idle-culler"]
    assert len(culler) == 1 and culler[0]["command"][:3] == ["/opt/roofline-env/bin/python", "-m",
                                                              "course_hub.idle_culler"]
    assert "--timeout=600" in culler[0]["command"] and "--cull-every=150" in culler[0]["command"]
    role = [r for r in appended(c.JupyterHub.load_roles) if r["name"] == "idle-culler"]
    assert role == [{"name": "idle-culler", "services": ["idle-culler"],
                     "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]}]
    # 0: no culler at all
    c, _ = load_config(tmp_path, "local", {}, instructors=set(), cull_idle=0)
    assert not [s for s in appended(c.JupyterHub.services) if s["name"] == "idle-culler"]
    assert not [r for r in appended(c.JupyterHub.load_roles) if r["name"] == "idle-culler"]
