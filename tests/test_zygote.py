"""Warm kernels (autograder.sandbox.zygote): what a forked kernel is, and is not, given.

Each test starts a worker's zygote on a spool of its own, has it fork a kernel for a submission
and asks that kernel, through jupyter_client, what it can see and do. The zygote's own
environment and the spool's other folders are planted with markers the kernel must not find.
(tests/test_isolation.py grades two hostile submissions in a row through the whole grader.)
"""
from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from autograder.sandbox import zygote
from autograder.sandbox.bwrap import Limits, make_spec, matplotlib_cache
from autograder.sandbox.kernel_manager import SandboxKernelManager
from tiny_course import needs_sandbox

pytestmark = needs_sandbox

SECRET = "ZYGOTE-SECRET-5be1"


@pytest.fixture
def spool(tmp_path):
    zygote.close_zygotes()
    sp = zygote.warm_spool(tmp_path / "work")
    other = sp / "other-submission"          # what another submission of this worker left in the spool
    other.mkdir()
    (other / "answers.txt").write_text(SECRET)
    yield sp
    zygote.close_zygotes()


async def _kernel(spool: Path, tmp_path: Path, name: str, env: dict | None = None):
    files = tmp_path / f"files-{name}"
    files.mkdir(exist_ok=True)
    (files / "mine.txt").write_text(name)
    spec = make_spec(spool / name, "a1", files, None, Limits(memory_mb=2048), True, ("course_lib",), tmp_path,
                     zygote=spool)
    spec.env.update(env or {})
    km = SandboxKernelManager(sandbox_spec=spec.to_json(), kernel_name="python3")
    await km.start_kernel()
    kc = km.client()
    kc.start_channels()
    await kc.wait_for_ready(timeout=60)
    return km, kc, spec


async def _ask(kc, code: str):
    """The JSON the kernel prints for `code` (which ends by printing one JSON line)."""
    out = []
    reply = await kc.execute_interactive(code, timeout=60, output_hook=out.append)
    assert reply["content"]["status"] == "ok", reply["content"]
    text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
    return json.loads(text.strip().splitlines()[-1])


async def _stop(km, kc):
    kc.stop_channels()
    await km.shutdown_kernel(now=True)


LOOK = f'''
import json, os, sys
_SECRET = {SECRET[:7]!r} + {SECRET[7:]!r}     # not written whole: the probe's own source is in IPython's history
def _walk(top):
    found = []
    for d, _, fs in os.walk(top):
        found += [os.path.join(d, f) for f in fs]
    return found
def _grep(paths):
    hits = []
    for p in paths:
        try:
            if _SECRET.encode() in open(p, "rb").read():
                hits.append(p)
        except OSError:
            pass
    return hits
status = dict(l.split(":", 1) for l in open("/proc/self/status") if ":" in l)
def _figure_hook():
    from matplotlib.figure import Figure
    try:
        return get_ipython().display_formatter.mimebundle_formatter.lookup_by_type(Figure).__name__
    except KeyError:
        return None
print(json.dumps({{
    "pid": os.getpid(), "uid": os.getuid(), "cwd": os.getcwd(), "home": sorted(os.listdir(os.path.expanduser("~/a1"))),
    "caps": [status[k].strip() for k in ("CapEff", "CapPrm", "CapBnd", "CapAmb")],
    "no_new_privs": status["NoNewPrivs"].strip(),
    "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "secret_files": _grep(_walk("/tmp") + _walk("/dev/shm") + _walk(os.path.expanduser("~")) + _walk("/run")),
    "spool": sorted(os.listdir({{spool!r}})),
    "env": {{k: v for k, v in os.environ.items() if k.startswith("ROOFLINE_") or _SECRET in v}},
    "preloaded": "course_lib" in sys.modules,
    "custom_exc": [e.__name__ for e in get_ipython().custom_exceptions],
    "figure_hook": _figure_hook(),
}}))
'''


def test_a_forked_kernel_is_pid_1_unprivileged_and_sees_only_its_own_files(spool, tmp_path):
    async def run():
        km, kc, spec = await _kernel(spool, tmp_path, "s1", {"ROOFLINE_STUDENT": "ada", "ROOFLINE_VARIANT_KEY": "k1"})
        try:
            return await _ask(kc, LOOK.replace("{spool!r}", repr(str(spool)))), spec
        finally:
            await _stop(km, kc)

    seen, spec = asyncio.run(run())
    assert seen["pid"] == 1                                     # its own pid namespace
    assert seen["procs"] == [1]                                # no process but its own
    if os.geteuid() == 0:
        assert seen["uid"] == spec.uid                         # the worker's sandbox uid, as cold
    assert seen["caps"] == ["0000000000000000"] * 4 and seen["no_new_privs"] == "1"
    assert seen["cwd"] == "/home/student/a1" and "mine.txt" in seen["home"]
    assert seen["secret_files"] == []
    assert seen["spool"] == ["s1"]                             # the other submission's folder is hidden
    assert seen["env"] == {"ROOFLINE_STUDENT": "ada", "ROOFLINE_VARIANT_KEY": "k1"}
    assert seen["preloaded"]                                   # course_lib came from the zygote, not a cell
    # ... and what it does at import in a kernel is done: figures with alt text, one-line errors
    assert seen["figure_hook"] == "figure_bundle" and seen["custom_exc"] == ["NotImplementedError"]


def test_the_next_kernel_starts_from_the_zygote_not_from_the_last_kernel(spool, tmp_path):
    async def run():
        km, kc, _ = await _kernel(spool, tmp_path, "s1", {"ROOFLINE_VARIANT_KEY": "k1"})
        try:
            await _ask(kc, "import course_lib, os, json\ncourse_lib.LEFT = 1\nos.environ['LEFT'] = '1'\n"
                           "open('/tmp/left', 'w').write('1')\nprint(json.dumps({}))")
        finally:
            await _stop(km, kc)
        km, kc, _ = await _kernel(spool, tmp_path, "s2", {"ROOFLINE_VARIANT_KEY": "k2"})
        try:
            return await _ask(kc, "import course_lib, os, json\nprint(json.dumps([hasattr(course_lib, 'LEFT'), "
                                  "'LEFT' in os.environ, os.path.exists('/tmp/left'), os.environ['ROOFLINE_VARIANT_KEY']]))")
        finally:
            await _stop(km, kc)

    assert asyncio.run(run()) == [False, False, False, "k2"]


def _processes(token: str) -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and token.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


@pytest.mark.parametrize("how", ["kill", "shutdown"])
def test_a_kernel_killed_or_shut_down_ends_everything_it_started(spool, tmp_path, how):
    token = f"zygote-orphan-{how}-31f"

    async def run():
        km, kc, _ = await _kernel(spool, tmp_path, "s1")
        try:
            # the child says it is up once it runs (its /proc/<pid>/cmdline is filled by then: a
            # Popen returns before the exec has, issue 43)
            await _ask(kc, "import subprocess, sys, json\np = subprocess.Popen([sys.executable, '-c', "
                           f"'import time; print(1, flush=True); time.sleep(300)  # {token}'], "
                           "start_new_session=True, stdout=subprocess.PIPE)\np.stdout.readline()\n"
                           "print(json.dumps({}))")
            assert _processes(token)                  # the probe can see it
            if how == "kill":
                km.kill_now()                         # the grader's notebook time limit
                deadline = time.monotonic() + 10
                while await km.is_alive() and time.monotonic() < deadline:
                    await asyncio.sleep(0.05)
                assert not await km.is_alive()
        finally:
            await _stop(km, kc)

    asyncio.run(run())
    deadline = time.monotonic() + 5
    while _processes(token) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes(token) == []


def test_where_the_zygote_cannot_make_a_kernels_namespaces_kernels_are_cold(spool, tmp_path, monkeypatch):
    # without CAP_SYS_ADMIN the zygote's trial kernel fails: it says so, and the kernel starts cold
    monkeypatch.setattr(zygote, "zygote_caps", lambda: ["--unshare-user", "--cap-drop", "ALL"])
    files = tmp_path / "f"
    files.mkdir()
    spec = make_spec(spool / "s1", "a1", files, None, Limits(memory_mb=2048), True, ("course_lib",), tmp_path,
                     zygote=spool)
    kind = zygote.kernel_kind(spec)
    assert kind.startswith("cold: ") and "could not be made" in kind
    assert zygote.zygote_for(spec, matplotlib_cache()) is None


# What a kernel leaves outside its home, /tmp and /dev/shm: a file in every folder of the shared
# root it can write to (an IPython kernel config in /etc/ipython runs code in every later kernel),
# and a key in its user keyring. The keyring syscalls by number (no keyutils in the sandbox).
KEYS = '''
import ctypes, platform
_libc = ctypes.CDLL(None, use_errno=True)
_NR = {"x86_64": (248, 250), "aarch64": (217, 219)}[platform.machine()]     # add_key, keyctl
_USER_KEYRING = -4
def _add_key(desc, payload):
    _libc.syscall.restype = ctypes.c_long
    return _libc.syscall(_NR[0], b"user", desc.encode(), payload, ctypes.c_size_t(len(payload)), _USER_KEYRING)
def _find_key(desc):
    _libc.syscall.restype = ctypes.c_long
    return _libc.syscall(_NR[1], 10, _USER_KEYRING, b"user", desc.encode(), 0)    # KEYCTL_SEARCH
'''

PLANT_EVERYWHERE = KEYS + '''
import json, os
written = []
for d in ("/", "/etc", "/etc/ipython", "/run", "/var", "/var/tmp", "/dev", "/usr", "/opt", "/srv", "/mnt"):
    try:
        os.makedirs(d, exist_ok=True)
        name = "ipython_kernel_config.py" if d == "/etc/ipython" else "zygote-plant"
        open(os.path.join(d, name), "w").write("c = get_config()\\nc.InteractiveShellApp.exec_lines = ['PLANTED = 1']\\n")
        written.append(os.path.join(d, name))
    except OSError:
        pass
key = _add_key("zygote-plant", b"planted")
if key > 0:
    _libc.syscall(_NR[1], 15, ctypes.c_long(key), 120)     # KEYCTL_SET_TIMEOUT: gone in 2 min whatever happens
print(json.dumps({"written": written, "key": key > 0, "found": _find_key("zygote-plant") > 0}))
'''

FIND_PLANTS = KEYS + '''
import json, os
print(json.dumps({
    "files": [p for p in ("/zygote-plant", "/etc/zygote-plant", "/etc/ipython/ipython_kernel_config.py", "/run/zygote-plant",
                          "/var/zygote-plant", "/var/tmp/zygote-plant", "/dev/zygote-plant", "/usr/zygote-plant",
                          "/opt/zygote-plant", "/srv/zygote-plant", "/mnt/zygote-plant") if os.path.exists(p)],
    "planted_global": "PLANTED" in get_ipython().user_ns,
    "key": _find_key("zygote-plant") > 0,
    # what it could write, were it another uid: every writable mount but its own fresh ones
    "writable": sorted(l.split()[4] for l in open("/proc/self/mountinfo") if "rw" in l.split()[5].split(",")
                       and not l.split()[4].startswith(("/proc", "/dev/pts", "/tmp", "/home/student", "/dev/shm", {spool!r}))),
}))
'''


def test_nothing_a_kernel_writes_outside_its_own_folders_or_keyring_reaches_the_next(spool, tmp_path):
    """Issue 44: the zygote's root (/, /etc, /run, /dev, /var) was one writable tmpfs shared by
    every kernel it forked, and its user keyring one per uid: a plant in /etc/ipython ran in the
    next student's kernel."""
    async def run():
        km, kc, _ = await _kernel(spool, tmp_path, "s1")
        try:
            planted = await _ask(kc, PLANT_EVERYWHERE)
        finally:
            await _stop(km, kc)
        km, kc, _ = await _kernel(spool, tmp_path, "s2")
        try:
            return planted, await _ask(kc, FIND_PLANTS.replace("{spool!r}", repr(str(spool))))
        finally:
            await _stop(km, kc)

    planted, seen = asyncio.run(run())
    # the control: the plant's own kernel holds its key (a kernel may keep a keyring of its own)
    assert planted["key"] and planted["found"], planted
    # (as root the kernel's uid may write none of the root's folders; as another user it owned them)
    assert seen == {"files": [], "planted_global": False, "key": False, "writable": []}, (planted, seen)
