"""Nothing of one submission reaches the next one its worker grades (issue 36).

Two hostile submissions of the tiny course's t3 are graded back to back by ONE worker (-j 1), so
the second runs under the same worker process and the same sandbox uid as the first, with warm
kernels (both forked from the worker's one preloaded interpreter: autograder.sandbox.zygote) and
with cold ones (--cold-kernels). The first
("a_polluter") writes files into its home, /tmp, its working folder (and /dev/shm, where it can), an IPython
start-up file, a kernel config in /etc/ipython and files in /run and /var/tmp (where it can: the
zygote's root is shared by its kernels), a key in its user keyring, sets environment variables, monkeypatches course_lib (every check passes in its
kernel) and sys.modules, and leaves a thread and a process running. The second ("b_victim")
answers Q1 wrong and Q2 right and looks for every one of those traces.

The probe is proven able to see each trace: the polluter runs the same probe after planting them
and must find every one (the control); the victim must find none, score on its merits (Q1's hidden
test fails, Q2's passes) and show no disagreement between its kernel and the clean verdict (a
leaked monkeypatch would make its kernel pass Q1). No process of the polluter outlives grading.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from autograder.course import Course
from autograder.grading.grade import cell_scores
from tiny_course import FAST, needs_sandbox, run_cli, student_nb, write_class

TOKEN = "ISOLATION-LEAK-7f3a91"

PLANT = f'''
import ctypes, os, platform, subprocess, sys, threading, time
TOKEN = {TOKEN!r}
for _d in ("/etc/ipython", "/run", "/var/tmp"):      # the shared root: a kernel config in /etc/ipython runs in every kernel
    try:
        os.makedirs(_d, exist_ok=True)
        open(os.path.join(_d, "ipython_kernel_config.py" if _d == "/etc/ipython" else "leak-" + TOKEN), "w").write(
            "c = get_config()\\nc.InteractiveShellApp.exec_lines = ['LEAKED_STARTUP = 1']\\n")
    except OSError:
        pass
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_key = _libc.syscall({{"x86_64": 248, "aarch64": 217}}[platform.machine()], b"user", ("leak-" + TOKEN).encode(), b"1",
                     ctypes.c_size_t(1), -4)                               # add_key(..., @u)
_libc.syscall({{"x86_64": 250, "aarch64": 219}}[platform.machine()], 15, ctypes.c_long(_key), 120)   # expires in 2 min
for _d in (os.path.expanduser("~"), "/tmp", os.getcwd(), "/dev/shm"):
    try:
        open(os.path.join(_d, "leak-" + TOKEN), "w").write(TOKEN)
    except OSError:
        pass
os.makedirs(os.path.expanduser("~/.ipython/profile_default/startup"), exist_ok=True)
open(os.path.expanduser("~/.ipython/profile_default/startup/99-leak.py"), "w").write("LEAKED_STARTUP = 1")
os.environ["LEAK_" + TOKEN] = TOKEN
os.environ["PYTHONSTARTUP"] = os.path.expanduser("~/leak-" + TOKEN)
import course_lib, course_lib.exercises.checks as _chk
_chk.check_number = _chk.check_regime = _chk.check_form_number = lambda *a, **k: None   # every check passes here
course_lib.LEAK = TOKEN
sys.modules["leak_" + TOKEN.replace("-", "_")] = course_lib
def _loop():
    while True:
        try:
            open("/tmp/thread-" + TOKEN, "w").write(str(time.time()))
        except OSError:
            pass
        time.sleep(0.05)
threading.Thread(target=_loop, daemon=True, name="leak-" + TOKEN).start()
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)  # " + TOKEN], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''

PROBE = f'''
import ctypes as _ctypes, json as _json, os as _os, platform as _platform, sys as _sys, threading as _threading
_T = {TOKEN!r}
def _files():
    found = []
    for d in (_os.path.expanduser("~"), "/tmp", _os.getcwd(), "/dev/shm", "/run", "/var/tmp",
              _os.path.expanduser("~/.ipython/profile_default/startup")):
        try:
            found += [_os.path.join(d, n) for n in _os.listdir(d) if _T in n or n == "99-leak.py"]
        except OSError:
            pass
    if _os.path.exists("/etc/ipython/ipython_kernel_config.py"):
        found.append("/etc/ipython/ipython_kernel_config.py")
    return sorted(set(found))
def _key():
    _libc = _ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = _ctypes.c_long
    return _libc.syscall({{"x86_64": 250, "aarch64": 219}}[_platform.machine()], 10, -4, b"user",
                         ("leak-" + _T).encode(), 0) > 0                  # KEYCTL_SEARCH @u
def _procs():
    out = []
    for p in _os.listdir("/proc"):
        try:
            if p.isdigit() and _T.encode() in open(f"/proc/{{p}}/cmdline", "rb").read():
                out.append(p)
        except OSError:
            pass
    return out
import course_lib as _cl, course_lib.exercises.checks as _ck
_report = {{
    "uid": _os.getuid(),
    "files": _files(),
    "env": sorted(k for k, v in _os.environ.items() if _T in k or _T in v),
    "patched_checks": sorted(n for n in ("check_number", "check_regime", "check_form_number")
                             if getattr(_ck, n).__name__ == "<lambda>"),
    "course_lib_attr": hasattr(_cl, "LEAK"),
    "modules": sorted(m for m in _sys.modules if _T.replace("-", "_") in m),
    "threads": sorted(t.name for t in _threading.enumerate() if _T in t.name),
    "processes": _procs(),
    "startup_global": "LEAKED_STARTUP" in get_ipython().user_ns,
    "key": _key(),
    "pid": _os.getpid(),
}}
print("ISOLATION-PROBE " + _json.dumps(_report))
'''

RIGHT_Q1 = "from course_lib import Q_\nq1_time = Q_(7.36, 'ms')\nq1_regime = 'memory-bound'"
WRONG_Q1 = "from course_lib import Q_\nq1_time = Q_(1, 'ms')\nq1_regime = 'compute-bound'"
RIGHT_Q2 = "q2_bytes = Q_(16, 'GB')"


def _processes_mentioning(text: str) -> list[str]:
    out = []
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and int(pid) != os.getpid() and text.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            continue
    return out


def _probe(root, student) -> dict:
    nb = json.loads((root / "autograded" / student / "t3" / "units.ipynb").read_text())
    for c in nb["cells"]:
        for o in c.get("outputs", []):
            text = o.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            for line in text.splitlines():
                if line.startswith("ISOLATION-PROBE "):
                    return json.loads(line[len("ISOLATION-PROBE "):])
    raise AssertionError(f"{student}: no probe output in its autograded notebook")


@pytest.fixture(scope="module", params=["warm", "cold"])
def graded(tiny, tmp_path_factory, request):
    base = tmp_path_factory.mktemp(f"isolation-{request.param}")
    c = Course(root=base / "course", source=tiny.source, release=tiny.release)
    nb = lambda **kw: student_nb(tiny, "t3", "units", **kw)  # noqa: E731
    students = {
        # sorted first: the one worker grades it first
        "a_polluter": nb(answers={"_q1_answer": WRONG_Q1 + "\n" + PLANT, "_q2_answer": RIGHT_Q2}, explore=PROBE),
        "b_victim": nb(answers={"_q1_answer": WRONG_Q1, "_q2_answer": RIGHT_Q2}, explore=PROBE),
    }
    src = write_class(base / "in", tiny, "t3", {s: {"units.ipynb": d} for s, d in students.items()})
    common = ["--root", c.root, "--source", c.source, "--release-dir", c.release]
    cold = ["--cold-kernels"] if request.param == "cold" else []
    g = run_cli("grade", "t3", "--submissions", src, "-j", "1", *common, *FAST, *cold, check=False)
    return c, g, request.param


@needs_sandbox
def test_the_polluter_plants_every_trace_and_its_own_probe_sees_them(graded):
    c, g, kind = graded
    assert g.returncode == 0, g.stdout + g.stderr[-3000:]
    p = _probe(c.root, "a_polluter")
    names = " ".join(p["files"])
    # (a cold sandbox's /dev has no writable /dev/shm: probed, never planted; a warm kernel has one
    # of its own)
    shm = ("/dev/shm/leak-",) if kind == "warm" else ()
    for where in ("/home/student/leak-", "/tmp/leak-", "/tmp/thread-", "/t3/leak-", "99-leak.py", *shm):
        assert where in names, (where, p["files"])
    # a warm kernel is pid 1 of its own pid namespace (forked by the zygote); a cold one is bwrap's child
    assert p["pid"] == (1 if kind == "warm" else 2)
    assert len(p["env"]) == 2 and p["patched_checks"] == ["check_form_number", "check_number", "check_regime"]
    assert p["course_lib_attr"] and p["modules"] and p["threads"] and p["processes"] and p["key"]
    # its monkeypatch passed its wrong Q1 in its own kernel: caught, and the clean verdict scored
    assert "VERDICTS DIFFER: a_polluter" in g.stdout
    assert cell_scores(c.db_url, "t3")["a_polluter"]["units/t3units_q1_correct"] == 0.0


@needs_sandbox
def test_the_next_submission_of_the_same_worker_sees_none_of_it(graded):
    c, g, kind = graded
    polluter, victim = _probe(c.root, "a_polluter"), _probe(c.root, "b_victim")
    assert victim["uid"] == polluter["uid"]          # the same worker, the same sandbox uid: the hard case
    assert victim == {"uid": polluter["uid"], "files": [], "env": [], "patched_checks": [], "course_lib_attr": False,
                      "modules": [], "threads": [], "processes": [], "startup_global": False, "key": False,
                      "pid": polluter["pid"]}


@needs_sandbox
def test_the_next_submission_scores_on_its_merits(graded):
    c, g, _ = graded
    scores = cell_scores(c.db_url, "t3")["b_victim"]
    assert scores["units/t3units_q1_correct"] == 0.0 and scores["units/t3units_q2_correct"] == 2.0
    assert scores["units/t3units_q1_form"] == 1.0
    # its own kernel agreed with the clean verdict: no checks passed by the polluter's monkeypatch
    assert "VERDICTS DIFFER: b_victim" not in g.stdout


@needs_sandbox
def test_no_process_of_a_submission_outlives_grading(graded):
    assert _processes_mentioning(TOKEN) == []
