"""Warm kernels: one preloaded interpreter per grading worker, forked into a fresh sandbox for
each submission (the program is autograder/sandbox/zygote_program.py).

Why: a cold kernel spends about a second of CPU before the first cell does anything (bwrap,
the interpreter, ipykernel's imports, then `import numpy, matplotlib.pyplot, course_lib` in the
notebook's first cell), on every submission. The zygote pays it once per worker.

How a forked kernel is made clean, and why that is as strong as a new bwrap sandbox:

* The zygote never runs a student's code, and nothing of a submission flows back into it: it
  reads only the grader's requests (JSON lines on a pipe) and answers with pids and exit codes.
  Each kernel starts from a fork of the same pristine memory, never from a kernel that graded
  someone (so "warm" is the interpreter, not a reused kernel).
* The zygote itself is sandboxed as a cold kernel is (bubblewrap: a tmpfs root holding only
  the system folders, the Python install and course_lib read-only, no network, its own pid
  namespace), plus the worker's kernel spool. For the first process of each kernel it keeps
  CAP_SYS_ADMIN (mounts, namespaces), CAP_SETUID/SETGID (the uid drop), CAP_SETPCAP (emptying
  the bounding set) and CAP_KILL (killing a kernel of another uid); the kernel drops them all.
* Per submission, the first process takes new mount, pid, network, IPC and UTS namespaces; a
  new tmpfs home (holding a copy of the student's files only), /tmp and /dev/shm; the spool
  hidden but for its own run directory. The kernel is pid 1 of its pid namespace with a /proc
  of its own: when it exits or is killed, every process it started dies (the kernel's
  guarantee for a pid namespace), so nothing lives on into the next submission, and no
  process outside (the zygote, the grader) is visible to it.
* Then, before any of the student's code: the submission's uid (a root grader: the worker's
  own uid, as cold), every capability dropped, no-new-privileges, the same limits as cold
  (address space, tasks, file size, no core), the student's environment (variant key) set
  after the preload, so what was imported cannot have read it: course_lib reads the key when
  asked (course_lib.questions.variants.identity), never at import.
* What a package does at import only inside a kernel (course_lib: figures with their text
  alternative, one-line errors) is done in each kernel once its shell exists (SHELL_HOOKS);
  matplotlib-inline and ipywidgets, which register with the shell at import, are not preloaded.
* What a fork shares with its siblings is what the zygote imported, read-only in effect
  (copy-on-write): a kernel that monkeypatches course_lib changes its own copy. numpy's global
  random state is reseeded in each kernel (random reseeds itself after a fork).

What differs from a cold kernel, on purpose: modules the student's folder would have shadowed
(a numpy.py beside the notebook) are already imported; a `matplotlibrc` in the student's folder
is not read. The project's isolation test grades two hostile submissions in a row in one
worker with warm kernels (and with cold ones); autograder/README.md says what it checks.

`grade --cold-kernels` (or where the zygote cannot start: a kernel without unprivileged user
namespaces, no bubblewrap, --no-sandbox) starts each kernel in a new bwrap sandbox instead.
"""
from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from autograder.sandbox import kernel_start, zygote_program
from autograder.sandbox.line_process import LineProcess
from autograder.sandbox.bwrap import SANDBOX_HOME, STAGING, SandboxSpec, _bwrap_args, matplotlib_cache

log = logging.getLogger("autograder")

MPL_STAGE = "/run/autograder-mpl"
PROGRAM = "/run/autograder-zygote.py"      # zygote_program.py, inside the zygote's sandbox
KERNEL_START = "/run/autograder-kernel-start.py"   # kernel_start.py, beside it
#: what every lesson's kernel imports first (ipykernel's own, the lessons' setup cell)
PRELOAD = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.debugger", "IPython", "numpy", "matplotlib",
           "matplotlib.pyplot", "pint")


#: what a preloaded package does at import only inside an IPython kernel (the zygote has none):
#: called in each kernel once its shell exists ("module:function")
SHELL_HOOKS = ("course_lib:attach_to_ipython",)


class ZygoteError(RuntimeError):
    """The warm-kernel process could not start or answer."""


def zygote_caps() -> list[str]:
    """bwrap's capability arguments for the zygote (the kernels drop them all)."""
    if os.geteuid() == 0:
        return ["--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID",
                "--cap-add", "CAP_SETPCAP", "--cap-add", "CAP_KILL"]
    return ["--unshare-user", "--cap-drop", "ALL", "--cap-add", "CAP_SYS_ADMIN", "--cap-add", "CAP_SETPCAP"]


class Zygote:
    """The warm-kernel process of one worker, for the kernels whose spec has this spool."""

    def __init__(self, spec: SandboxSpec, mpl_cache: str | None, log_file: Path):
        self.spool = spec.zygote
        self.lock = threading.Lock()
        preload = list(PRELOAD) + [p for p in spec.packages if p not in PRELOAD]
        cfg = {"preload": preload, "spool": self.spool, "staging": STAGING, "home": SANDBOX_HOME, "uid": spec.uid,
               "shell_hooks": list(SHELL_HOOKS), "kernel_start": KERNEL_START}
        args = _bwrap_args(spec.ro, {self.spool: self.spool}, "/", None, spec.limits.get("tmp_mb", 256),
                           caps=zygote_caps(), dirs=[STAGING, SANDBOX_HOME])
        # its program; and a home of its own, where matplotlib finds its font list at the path
        # the kernels' have it (matplotlib fixes its folders at import)
        extra = ["--ro-bind", zygote_program.__file__, PROGRAM, "--ro-bind", kernel_start.__file__, KERNEL_START,
                 "--perms", "0755", "--size", str(2**20 * 16), "--tmpfs", SANDBOX_HOME]
        if mpl_cache:
            extra += ["--ro-bind", mpl_cache, MPL_STAGE]
            cfg["mpl_cache"] = MPL_STAGE
        args[-2:-2] = extra          # before its final --chdir
        env = {**spec.env, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
        env.pop("ROOFLINE_VARIANT_KEY", None), env.pop("ROOFLINE_STUDENT", None)
        self.log = open(log_file, "ab")
        self.proc = LineProcess([*args, "--", sys.executable, PROGRAM, json.dumps(cfg)], env=env, cwd="/",
                                stderr=self.log, error=ZygoteError, what="the warm-kernel process")
        first = self.proc.read(spec.limits.get("startup_timeout", 60))
        if not first.get("ready"):
            self.close()
            raise ZygoteError(first.get("fatal") or f"unexpected answer {first!r}")
        self.failed = first.get("failed") or {}
        if self.failed:
            log.info("warm kernels: not preloaded: %s", self.failed)

    def ask(self, req: dict, timeout: float = 30) -> dict:
        with self.lock:
            if not self.proc.alive():
                raise ZygoteError(f"the warm-kernel process is gone ({self.proc.proc.returncode})")
            self.proc.send(req)
            return self.proc.read(timeout)

    def spawn(self, spec: SandboxSpec, connection_file: str, rlimits: dict) -> "WarmKernel":
        req = {"op": "kernel", "rundir": spec.rundir, "stage": spec.home, "cwd": spec.cwd, "env": dict(spec.env),
               "uid": spec.uid, "rlimits": rlimits, "limits": spec.limits, "connection_file": connection_file,
               "log_file": spec.log_file}
        got = self.ask(req)
        if "pid" not in got:
            raise ZygoteError(got.get("error") or f"unexpected answer {got!r}")
        return WarmKernel(self, got["pid"])

    def alive(self) -> bool:
        return self.proc.alive()

    def close(self) -> None:
        self.proc.close()
        self.log.close()


class WarmKernel:
    """A kernel forked by the zygote, with the part of subprocess.Popen's interface that
    jupyter_client's provisioner uses (pid is the zygote's child, in the zygote's namespace)."""

    stdin = stdout = stderr = None

    def __init__(self, zygote: Zygote, pid: int):
        self.zygote, self.pid, self.returncode = zygote, pid, None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                self.returncode = self.zygote.ask({"op": "poll", "pid": self.pid})["status"]
            except ZygoteError:
                self.returncode = -9      # the zygote died, and its kernels with it (--die-with-parent)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(f"warm kernel {self.pid}", timeout)
            time.sleep(0.02)
        return self.returncode

    def send_signal(self, signum: int) -> None:
        # the only signal that reaches a kernel from outside: SIGKILL, through the zygote
        # (interrupts are messages: SandboxKernelManager's interrupt_mode)
        self.kill()

    def kill(self) -> None:
        """Kill the kernel and wait (up to 2 s) until it is gone, so that the next poll says so."""
        if self.returncode is None:
            try:
                self.zygote.ask({"op": "kill", "pid": self.pid})
            except ZygoteError:
                pass
            deadline = time.monotonic() + 2
            while self.poll() is None and time.monotonic() < deadline:
                time.sleep(0.005)

    terminate = kill


_ZYGOTES: dict[str, Zygote] = {}          # spool -> this process's zygote for it
_UNAVAILABLE: dict[str, str] = {}         # spool -> why no zygote could start
_SPOOLS: dict[str, Path] = {}             # work folder -> its spool (warm_spool)
_SHORT: list = []                         # the RunDirs of spools made short in /tmp


def zygote_for(spec: SandboxSpec, mpl_cache: str | None) -> Zygote | None:
    """This process's zygote for `spec`'s spool, started when there is none or it died; None
    where it cannot start here (said once: its kernels are then cold)."""
    if spec.zygote in _UNAVAILABLE:
        return None
    z = _ZYGOTES.get(spec.zygote)
    if z is None or not z.alive():
        try:
            z = _ZYGOTES[spec.zygote] = Zygote(spec, mpl_cache, Path(spec.zygote) / "zygote.log")
        except (ZygoteError, OSError) as e:
            _UNAVAILABLE[spec.zygote] = str(e)
            _ZYGOTES.pop(spec.zygote, None)
            log.warning("warm kernels are not available here (%s): this worker starts every kernel cold", e)
            return None
    return z


def kernel_kind(spec: SandboxSpec) -> str:
    """How `spec`'s kernel starts: "warm", "cold" (asked for) or "cold: why warm could not"."""
    if not spec.zygote:
        return "cold"
    if zygote_for(spec, matplotlib_cache()) is None:
        return f"cold: {_UNAVAILABLE[spec.zygote]}"
    return "warm"


def close_zygotes() -> None:
    """Stop this process's zygotes (the grader's own, before it forks workers)."""
    while _ZYGOTES:
        _ZYGOTES.popitem()[1].close()
    _UNAVAILABLE.clear()
    _SPOOLS.clear()
    while _SHORT:
        _SHORT.pop().close()


def forget_zygotes() -> None:
    """In a forked worker: the parent's zygotes are not ours."""
    _ZYGOTES.clear()
    _UNAVAILABLE.clear()
    _SPOOLS.clear()
    _SHORT.clear()


def warm_spool(work: Path) -> Path:
    """The folder holding the kernel folders of this process's warm kernels: `work`/k, or where
    that is too deep for the kernels' unix sockets, a short one in /tmp (removed by
    close_zygotes, or after a crash by the next run's clean-up)."""
    from autograder.grading.rundir import RunDir
    from autograder.sandbox.bwrap import MAX_SOCKET_PATH

    key = str(work)
    if key not in _SPOOLS:
        spool = Path(work) / "k"
        if len(str(spool)) + len("/4294967295/run") + 18 > MAX_SOCKET_PATH:
            short = RunDir("z", base="/tmp")
            _SHORT.append(short)
            spool = short.path / "k"
        spool.mkdir(parents=True, exist_ok=True)
        os.chmod(spool, 0o711)
        _SPOOLS[key] = spool
    return _SPOOLS[key]
