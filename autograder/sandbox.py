"""Run one student's notebook in a sandboxed Jupyter kernel.

The kernel process — the only process that runs students' code — is started as

    bwrap <a private file-system view> python -c <limits shim> -m ipykernel_launcher -f <conn>

* File system: only the system directories (/usr, /etc pieces), the Python installation, the
  packages the notebooks import (course_lib) read-only, a private writable home holding a copy
  of *this* student's submitted files, and a private run directory for the kernel's sockets.
  solutions/, the gradebook, the autograded notebooks (which hold the hidden tests), other
  students' submissions and the instructor's home are simply not there.
* No network (--unshare-net): the kernel talks to the grader over unix sockets (ZeroMQ "ipc"
  transport) in the run directory, which is why TCP is not needed.
* Fresh pid/ipc/uts namespaces, a minimal environment (no instructor variables), and when the
  grader runs as root the kernel drops to an unprivileged uid of its worker's own (slot_uid:
  no other submission's processes count against its process limit) inside the sandbox. The
  first program (the shim) runs as `python -I` outside the student's folder, so nothing handed
  in (a json.py) is imported while it still has privileges.
* The home is a private tmpfs of --disk MB holding a copy of the student's files (regular files
  only: autograder.safefiles), /tmp another one; the run directory on the host is the grader's
  again once the kernel's sockets exist: a kernel cannot fill the host's disk.
* Limits: address space (RLIMIT_AS), tasks (RLIMIT_NPROC: threads + processes), file size,
  no core dumps; a per-cell timeout (nbclient interrupts the cell) and a per-notebook wall
  clock after which the kernel is killed.

Where bubblewrap is missing or cannot start, grading refuses (with install instructions) unless
the instructor passes --no-sandbox: then the kernel runs unsandboxed with the same limits, the
same scrubbed environment and private working copy, as `nobody` when the grader is root (so the
process limit binds), and a loud warning goes to the console.

The packages the kernel imports (course_lib) are bound where the *kernel's* interpreter finds
them (asked once in a subprocess with the kernel's environment, from an empty folder), not where
the grader happens to import them from: an editable install of another checkout, a shared venv.

Warnings never reach a test cell's stderr (nbgrader scores a test cell with stderr output as
failed): PYTHONWARNINGS=ignore, a start-up file that resets the warning filters to "ignore"
before every cell (students may turn warnings on in their own cells), library loggers only
above WARNING, and as a last safety net warning lines are removed from test cells' stderr
before the grade is computed.
"""
from __future__ import annotations

import ast
import json
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

from jupyter_client.manager import AsyncKernelManager
from nbformat.notebooknode import NotebookNode
from traitlets import Bool, Integer, Unicode, default

from nbgrader.preprocessors import Execute

from course_lib.question_ids import cell_id, is_graded

from .verifier_program import strip_warnings

log = logging.getLogger("autograder")

SANDBOX_HOME = "/home/student"
STAGING = "/run/autograder-home"   # inside the sandbox: the prepared home, read-only, copied into SANDBOX_HOME
NOBODY = 65534
#: sandboxed kernels of a root grader run as SLOT_UID_BASE + the worker's pid: a uid of their own, so
#: no other submission's processes count against their process limit (RLIMIT_NPROC is per uid)
SLOT_UID_BASE = 3_000_000_000
#: packages the notebooks import, bound read-only into the sandbox (besides the Python install)
DEFAULT_PACKAGES = ("course_lib",)


@dataclass
class Limits:
    """Resource limits for one submission's kernel."""

    cell_timeout: int = 120          # seconds per cell, then the cell is interrupted
    notebook_timeout: int = 900      # seconds for the whole notebook, then the kernel is killed
    tmp_mb: int = 256                # the private /tmp inside the sandbox (memory-backed)
    home_mb: int = 256               # the private home inside the sandbox (memory-backed): the disk quota
    memory_mb: int = 4096            # address space of the kernel (RLIMIT_AS)
    tasks: int = 256                 # threads + processes the kernel may add (RLIMIT_NPROC)
    file_size_mb: int = 256          # largest file it may write (RLIMIT_FSIZE)
    startup_timeout: int = 60        # seconds for the kernel to start


# ---------------------------------------------------------------------------------------------
# bubblewrap
# ---------------------------------------------------------------------------------------------
def bwrap_path() -> str | None:
    return shutil.which("bwrap")


def _python_roots() -> list[str]:
    """Directories the kernel's Python needs: the venv, the base install, the real executable."""
    roots = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix),
             os.path.realpath(sys.exec_prefix), os.path.realpath(sys.base_exec_prefix)}
    exe = os.path.realpath(sys.executable)
    if not any(exe.startswith(r + os.sep) for r in roots):
        roots.add(os.path.dirname(exe))
    # the venv itself is kept at its own path (its bin/python is a symlink into the base install)
    roots.add(sys.prefix)
    return sorted(roots)


_FIND_PACKAGES = r"""
import importlib.util, json, sys
out = {}
for name in sys.argv[1:]:
    try:
        spec = importlib.util.find_spec(name)
    except Exception as e:
        out[name] = {"error": f"{type(e).__name__}: {e}"}
        continue
    if spec is None:
        out[name] = {"error": f"No module named {name!r}"}
        continue
    locs = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
    out[name] = {"locations": locs}
out[" sys.path"] = {"locations": [p for p in sys.path if p]}
print(json.dumps(out))
"""


@lru_cache(maxsize=8)
def kernel_packages(packages=DEFAULT_PACKAGES) -> dict:
    """{package: {"locations": [...]} or {"error": why}} as the kernel's interpreter resolves them:
    sys.executable with the kernel's environment, started in an empty folder (so a course_lib/
    folder in the grader's working directory does not count: the kernel never sees it)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="autograder-find-") as tmp:
        env = kernel_env(tmp)
        try:
            p = subprocess.run([sys.executable, "-c", _FIND_PACKAGES, *packages], cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=60)
            found = json.loads(p.stdout.strip().splitlines()[-1])
        except Exception as e:
            return {name: {"error": f"could not ask {sys.executable} where {name} is: {e}"} for name in packages}
    return found


def _site_dirs(packages) -> list[str]:
    """The kernel's site-packages folders that lie outside the Python install (a shared course
    environment added by a .pth file, say): its dependencies live there. Only folders named
    site-packages or dist-packages: a checkout on sys.path would bring solutions/ along."""
    paths = kernel_packages(tuple(packages)).get(" sys.path", {}).get("locations", [])
    return [os.path.realpath(p) for p in paths
            if os.path.basename(os.path.normpath(p)) in ("site-packages", "dist-packages") and os.path.isdir(p)]


def grader_package(name: str) -> str | None:
    """Where this grader process imports `name` from (for messages), or None."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        return None
    if spec is None:
        return None
    locs = list(spec.submodule_search_locations or []) or ([spec.origin] if spec.origin else [])
    return os.path.realpath(locs[0]) if locs else None


def package_dirs(packages=DEFAULT_PACKAGES, site: bool = True) -> list[str]:
    """Directories of the packages the kernel imports that live outside the Python install
    (editable installs such as course_lib; with `site`, its site-packages folders there too), to
    be bound read-only at their own path."""
    out = []
    prefixes = _python_roots()
    for loc in _site_dirs(packages) if site else []:
        if not any(loc == p or loc.startswith(p + os.sep) for p in prefixes):
            out.append(loc)
    for name, where in kernel_packages(tuple(packages)).items():
        if name == " sys.path":
            continue
        for loc in where.get("locations", []):
            loc = os.path.realpath(loc)
            if os.path.isfile(loc):
                loc = os.path.dirname(loc)
            if not any(loc == p or loc.startswith(p + os.sep) for p in prefixes):
                out.append(loc)
    return sorted(set(out))


def missing_packages(packages=DEFAULT_PACKAGES) -> dict[str, str]:
    """{package: why} for the packages the kernel's interpreter cannot find at all."""
    return {name: where["error"] for name, where in kernel_packages(tuple(packages)).items()
            if "error" in where and name != " sys.path"}


_SYSTEM_RO = ["/usr", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
              "/etc/fonts", "/etc/localtime", "/etc/ssl", "/etc/mime.types"]
_SYMLINKS = {"/bin": "usr/bin", "/sbin": "usr/sbin", "/lib": "usr/lib", "/lib64": "usr/lib64",
             "/lib32": "usr/lib32", "/libx32": "usr/libx32"}


def _bwrap_args(ro: list[str], rw: dict[str, str], chdir: str, drop_to: int | None, tmp_mb: int = 256,
                home: tuple[str, int] | None = None) -> list[str]:
    """The bwrap command line: a tmpfs root with only the given paths in it, and a private
    writable /tmp of `tmp_mb` MB. `home` (the prepared home on the host, MB): a private writable
    SANDBOX_HOME of that size, and the prepared home read-only at STAGING (the shim copies it)."""
    args = [bwrap_path() or "bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if os.geteuid() == 0 and drop_to is not None:
        # bwrap runs privileged: let the shim switch to an unprivileged uid, then it has no caps
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        args += ["--unshare-user", "--cap-drop", "ALL"]
    # /proc, /dev and an empty /tmp first: binds made later may live under /tmp (a checkout or
    # venv in a temporary folder) and must not be hidden by the tmpfs
    args += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", str(tmp_mb * 2**20), "--tmpfs", "/tmp"]
    made: set[str] = {"/tmp"}

    def parents(path: str):
        # intermediate directories readable by the unprivileged uid
        p = Path(path)
        for anc in reversed(p.parents):
            s = str(anc)
            if s in ("/",) or s in made:
                continue
            made.add(s)
            args.extend(["--perms", "0755", "--dir", s])

    for src, link in _SYMLINKS.items():
        if os.path.islink(src):
            args += ["--symlink", os.readlink(src), src]
        elif os.path.isdir(src):
            args += ["--ro-bind", src, src]
    for path in _SYSTEM_RO:
        if os.path.exists(path):
            parents(path)
            args += ["--ro-bind", path, path]
    for path in ro:
        parents(path)
        args += ["--ro-bind", path, path]
    if home is not None:
        parents(SANDBOX_HOME)
        made.add(SANDBOX_HOME)
        args += ["--perms", "0777", "--size", str(home[1] * 2**20), "--tmpfs", SANDBOX_HOME]
        parents(STAGING)
        args += ["--ro-bind", home[0], STAGING]
    for dest, src in rw.items():
        parents(dest)
        args += ["--bind", src, dest]
    args += ["--chdir", chdir]
    return args


# The first thing that runs inside the sandbox (or, unsandboxed, in the child process): drop
# privileges, die with the grader, set limits, copy the prepared home into the private one, go
# into the student's folder, exec the real program (the kernel, the verifier). It runs as
# `python -I` from a folder that is not the student's: nothing of the submission (a json.py beside
# the notebook) is imported before the privileges are gone.
_SHIM = r"""
import ctypes, json, os, resource, signal, sys
cfg = json.loads(sys.argv[1])
if cfg.get("sandboxed"):
    os.environ.pop("JPY_PARENT_PID", None)   # the grader's pid means nothing in the pid namespace
if cfg.get("uid") is not None and os.getuid() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    if cfg.get("keep_read"):
        libc.prctl(8, 1)   # PR_SET_KEEPCAPS: keep the permitted set across setuid
    os.setgroups([]); os.setgid(cfg["uid"]); os.setuid(cfg["uid"])
    if cfg.get("keep_read"):
        # unsandboxed, with the interpreter where only root can reach it (/root/...): keep
        # CAP_DAC_READ_SEARCH (read and search anything) and nothing else, as an ambient
        # capability so the exec'd program has it; writing stays nobody's
        class Header(ctypes.Structure):
            _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
        class Data(ctypes.Structure):
            _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]
        data = (Data * 2)()
        data[0].effective = data[0].permitted = data[0].inheritable = 1 << 2   # CAP_DAC_READ_SEARCH
        if libc.capset(ctypes.byref(Header(0x20080522, 0)), data) != 0 or libc.prctl(47, 2, 2, 0, 0) != 0:
            sys.exit(f"could not keep read access after dropping to uid {cfg['uid']} (errno {ctypes.get_errno()})")
if cfg.get("parent"):
    # killed with the process that started it (a change of uid clears this, so it comes after);
    # inside bwrap, --die-with-parent does the same
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    if os.getppid() != cfg["parent"]:
        sys.exit("the grader is gone")
for name, value in cfg["rlimits"].items():
    r = getattr(resource, name)
    soft, hard = resource.getrlimit(r)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(r, (value, value))
if cfg.get("stage"):
    import shutil
    for top, dirs, files in os.walk(cfg["stage"]):
        dest = os.path.normpath(os.path.join(cfg["home"], os.path.relpath(top, cfg["stage"])))
        os.makedirs(dest, exist_ok=True)
        for name in files:
            shutil.copyfile(os.path.join(top, name), os.path.join(dest, name))
if cfg.get("cwd"):
    os.chdir(cfg["cwd"])
os.execv(sys.executable, [sys.executable] + cfg["argv"] + sys.argv[2:])
"""


def die_with_parent(parent: int | None = None) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux); a worker of a killed
    `grade` must not live on holding submissions and hidden tests. `parent`: the pid the parent
    had (if it is already gone, exit now)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:   # pragma: no cover - the parent died in between
        os._exit(1)


def _tasks_of_uid(uid: int) -> int:
    """Threads currently owned by `uid` (RLIMIT_NPROC counts them all)."""
    n = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                n += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            pass
    return n


@dataclass
class SandboxSpec:
    """Everything the kernel manager needs to start one sandboxed kernel (JSON-serialisable)."""

    enabled: bool
    home: str                 # host directory mounted as the student's home (writable)
    cwd: str                  # working directory inside the sandbox (or on the host if disabled)
    rundir: str               # host directory for the connection file and sockets (same path inside)
    ro: list = field(default_factory=list)
    env: dict = field(default_factory=dict)
    limits: dict = field(default_factory=dict)
    uid: int | None = None
    log_file: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> "SandboxSpec":
        return cls(**json.loads(text))

    def wrap(self, cmd: list[str]) -> list[str]:
        """Turn `python -m ipykernel_launcher -f CONN ...` into the sandboxed command."""
        try:
            i = cmd.index("ipykernel_launcher")
        except ValueError:
            raise RuntimeError(f"the sandbox runs Python (ipykernel) kernels only, not {cmd!r}")
        return self.command(["-m", "ipykernel_launcher"], cmd[i + 1:], python=cmd[0])

    def command(self, argv: list[str], extra: list[str] = (), python: str | None = None) -> list[str]:
        """The command line running `python ARGV EXTRA` in this sandbox, as the sandbox's uid,
        under its limits and killed with the process that starts it."""
        python = python or sys.executable
        lim = self.limits
        uid = self.uid
        count_uid = uid if uid is not None else os.getuid()
        rlimits = {"RLIMIT_AS": lim["memory_mb"] * 2**20,
                   "RLIMIT_NPROC": _tasks_of_uid(count_uid) + lim["tasks"],
                   "RLIMIT_FSIZE": lim["file_size_mb"] * 2**20,
                   "RLIMIT_CORE": 0}
        cfg = {"uid": uid, "rlimits": rlimits, "sandboxed": self.enabled, "argv": list(argv),
               "parent": None if self.enabled else os.getpid(), "cwd": self.cwd,
               "stage": STAGING if self.enabled else None, "home": SANDBOX_HOME,
               "keep_read": bool(uid is not None and not self.enabled and not reachable_by_others(self.ro + [python]))}
        shim = [python, "-I", "-c", _SHIM, json.dumps(cfg)] + list(extra)
        if not self.enabled:
            return shim
        rw = {self.rundir: self.rundir}
        return (_bwrap_args(self.ro, rw, "/", uid, lim.get("tmp_mb", 256), home=(self.home, lim.get("home_mb", 256)))
                + ["--"] + shim)


def kernel_env(home: str, extra: dict | None = None) -> dict:
    """The kernel's whole environment: nothing inherited from the instructor's shell."""
    bindir = os.path.dirname(sys.executable)
    env = {
        "PATH": os.pathsep.join([bindir, "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": home,
        "USER": "student",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONWARNINGS": "ignore",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",
        "MPLCONFIGDIR": os.path.join(home, ".config", "matplotlib"),
        "IPYTHONDIR": os.path.join(home, ".ipython"),
        "JUPYTER_CONFIG_DIR": os.path.join(home, ".jupyter"),
        "JUPYTER_DATA_DIR": os.path.join(home, ".local", "share", "jupyter"),
        "JUPYTER_RUNTIME_DIR": os.path.join(home, ".local", "share", "jupyter", "runtime"),
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "NUMEXPR_NUM_THREADS": "1",
        "NBGRADER_EXECUTION": "autograde",
    }
    env.update(extra or {})
    return env


# IPython start-up file: quiet warnings before *every* cell (a student's cell may turn them on)
STARTUP = '''\
def _autograder_quiet():
    import logging
    import warnings

    def quiet(*args, **kwargs):
        warnings.resetwarnings()
        warnings.simplefilter("ignore")

    quiet()
    logging.lastResort.setLevel(logging.CRITICAL)
    for name in ("matplotlib", "pint", "PIL", "asyncio"):
        logging.getLogger(name).setLevel(logging.ERROR)
    get_ipython().events.register("pre_run_cell", quiet)


_autograder_quiet()
del _autograder_quiet
'''


@lru_cache(maxsize=1)
def matplotlib_cache() -> str | None:
    """A folder holding matplotlib's font list, copied into every sandbox (without it each kernel
    would rebuild it and print 'Matplotlib is building the font cache' to stderr). The grading
    user's own matplotlib cache when it has one, else one built once in a temporary folder."""
    import tempfile

    try:
        import matplotlib

        mine = matplotlib.get_cachedir()
        if mine and list(Path(mine).glob("fontlist-*.json")):
            return mine
    except Exception:  # pragma: no cover - matplotlib missing or broken
        pass
    d = tempfile.mkdtemp(prefix="autograder-mpl-")
    try:
        subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env={**os.environ, "MPLCONFIGDIR": d},
                       check=True, capture_output=True, timeout=120)
    except Exception as e:  # pragma: no cover - matplotlib missing or broken
        log.warning("could not warm the matplotlib font cache: %s", e)
        return None
    return d


def prepare_home(home: Path, assignment: str, files_from: Path | None, extra_from: Path | None,
                 uid: int | None) -> str:
    """Create the student's private home: <home>/<assignment>/ holding a copy of their files."""
    work = home / assignment
    work.mkdir(parents=True, exist_ok=True)
    from .safefiles import copy_tree

    for src in (extra_from, files_from):   # the student's own files win over the course's extras
        if src and src.is_dir():           # regular files only: no link is followed (safefiles)
            copy_tree(src, work, skip={".ipynb_checkpoints", "timestamp.txt"})
    startup = home / ".ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-autograder.py").write_text(STARTUP)
    mpl = home / ".config" / "matplotlib"
    mpl.mkdir(parents=True, exist_ok=True)
    cache = matplotlib_cache()
    if cache:
        for f in Path(cache).glob("fontlist-*.json"):
            shutil.copy(f, mpl / f.name)
    (home / "etc").mkdir(exist_ok=True)
    if uid is not None:
        for dirpath, dirnames, filenames in os.walk(home):
            os.chown(dirpath, uid, uid)
            for f in filenames:
                os.chown(os.path.join(dirpath, f), uid, uid, follow_symlinks=False)
    return str(work)


# ---------------------------------------------------------------------------------------------
# Does bubblewrap work here?
# ---------------------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def probe() -> tuple[bool, str]:
    """(works, reason). Starts the real sandbox once with Python inside it, which must not reach
    a listener this process opens on the host's loopback (127.0.0.1)."""
    if os.environ.get("AUTOGRADER_NO_SANDBOX"):
        return False, "AUTOGRADER_NO_SANDBOX is set (it makes this machine count as one without bubblewrap)"
    if not sys.platform.startswith("linux"):
        return False, f"bubblewrap needs Linux, this is {sys.platform}"
    if not bwrap_path():
        return False, "bubblewrap (bwrap) is not installed"
    import socket
    import tempfile

    uid = NOBODY if os.geteuid() == 0 else None
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.setblocking(False)
    port = listener.getsockname()[1]
    try:
        with tempfile.TemporaryDirectory(prefix="autograder-probe-") as tmp:
            home, run = Path(tmp, "home"), Path(tmp, "run")
            home.mkdir(), run.mkdir()
            os.chmod(tmp, 0o711)
            if uid is not None:
                os.chown(home, uid, uid), os.chown(run, uid, uid)
            args = _bwrap_args(_python_roots() + package_dirs(), {SANDBOX_HOME: str(home), str(run): str(run)},
                               SANDBOX_HOME, uid)
            code = ("import os, socket, tempfile\n"
                    "if os.getuid() == 0 and %r is not None:\n"
                    "    os.setgroups([]); os.setgid(%r); os.setuid(%r)\n"
                    "open(os.path.join(%r, 'ok'), 'w').write(str(os.getuid()))\n"
                    "tempfile.TemporaryFile(dir='/tmp').close()\n"
                    "try:\n"
                    "    socket.create_connection(('127.0.0.1', %d), timeout=1); print('NET')\n"
                    "except OSError:\n"
                    "    print('NONET')\n") % (uid, uid, uid, str(run), port)
            try:
                p = subprocess.run(args + ["--clearenv", "--setenv", "PATH", "/usr/bin:/bin", "--", sys.executable,
                                           "-c", code], capture_output=True, text=True, timeout=60)
            except Exception as e:
                return False, f"bubblewrap failed to start: {e}"
            try:
                listener.accept()[0].close()
                reached = True
            except OSError:
                reached = False
            if reached or "NET" in p.stdout.split():
                return False, "bubblewrap started, but the sandbox reached the host's loopback network"
            if p.returncode != 0 or "NONET" not in p.stdout or not (run / "ok").exists():
                return False, f"bubblewrap failed to start (exit {p.returncode}): {p.stderr.strip()[-400:]}"
    finally:
        listener.close()
    return True, "bubblewrap " + ("(each kernel as an unprivileged uid of its own)" if uid is not None else "(user namespace)")


INSTALL_HELP = (
    "Grading runs students' code in a bubblewrap sandbox, and there is no working one here: {reason}.\n"
    "Install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora/RHEL: dnf install bubblewrap) and\n"
    "check that `bwrap --ro-bind / / --unshare-all true` works for this user (unprivileged user\n"
    "namespaces must be allowed; in a container, run the grader as root or allow them).\n"
    "To grade without a sandbox anyway, pass --no-sandbox: students' code then runs with your rights\n"
    "(as nobody when you are root) and can read the solutions and other students' work."
)

UNSANDBOXED_WARNING = (
    "\n" + "!" * 78 + "\n"
    "!! WARNING: students' code runs UNSANDBOXED ({reason}).\n"
    "!! Submissions can read the solutions and each other's work, and use the network.\n"
    "!! Time, memory and process limits still apply. Install bubblewrap to fix this.\n"
    + "!" * 78
)


def make_spec(base: Path, assignment: str, files_from: Path | None, extra_from: Path | None,
              limits: Limits, sandbox: bool, packages=DEFAULT_PACKAGES, top: Path | None = None) -> SandboxSpec:
    """Set up the private home and run directory of one submission under `base`. As root, the
    kernel runs unprivileged, sandboxed or not (RLIMIT_NPROC does not bind root): sandboxed as a
    uid of this worker's own (slot_uid), unsandboxed as `nobody`."""
    uid = (slot_uid() if sandbox else NOBODY) if os.geteuid() == 0 else None
    home, run = base / "home", socket_dir(base / "run")
    for d in (home, run):
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
    host_cwd = prepare_home(home, assignment, files_from, extra_from, uid)
    if uid is not None:
        os.chown(run, uid, uid)
        if not sandbox:
            # a kernel that keeps CAP_DAC_READ_SEARCH (Python under /root) passes anywhere
            traversable(base, top or base, strict=reachable_by_others(_python_roots() + [sys.executable]))
    inner_home = SANDBOX_HOME if sandbox else str(home)
    return SandboxSpec(
        enabled=sandbox,
        home=str(home),
        cwd=f"{SANDBOX_HOME}/{assignment}" if sandbox else host_cwd,
        rundir=str(run),
        ro=_python_roots() + package_dirs(tuple(packages)),
        env=kernel_env(inner_home),
        limits=asdict(limits),
        uid=uid,
        log_file=str(base / "kernel.log"),
    )


def slot_uid() -> int:
    """The uid of this process's sandboxed kernels and verifier: SLOT_UID_BASE + its pid (no
    two live processes share a pid, so no two concurrently graded submissions share a uid)."""
    import pwd

    uid = SLOT_UID_BASE + os.getpid()
    try:
        pwd.getpwuid(uid)
    except KeyError:
        return uid
    raise RuntimeError(f"uid {uid} (for a sandboxed kernel) belongs to a user: change SLOT_UID_BASE")


@lru_cache(maxsize=64)
def _reachable(path: str) -> bool:
    p = Path(os.path.realpath(path))
    try:
        if not all(a.stat().st_mode & 0o001 for a in p.parents):
            return False
        st = p.stat()
    except OSError:
        return False
    return bool(st.st_mode & (0o001 if p.is_dir() or os.access(p, os.X_OK) else 0o004))


def reachable_by_others(paths) -> bool:
    """Whether a uid that is neither the owner nor in the group can reach all of `paths` (the
    interpreter, the Python install, course_lib): not so for a Python under /root."""
    return all(_reachable(str(p)) for p in paths)


MAX_SOCKET_PATH = 100      # a unix socket's path is at most 107 bytes; the kernel adds "/kernel-ipc-NNNNN"
_SOCKET_DIRS: list = []


def socket_dir(wanted: Path) -> Path:
    """`wanted`, or where that path is too long for the kernel's unix sockets (a deep TMPDIR), a
    short locked folder in /tmp, removed by close_socket_dirs (or, after a crash, by the next
    run's clean-up)."""
    if len(str(wanted)) + 18 <= MAX_SOCKET_PATH:
        return wanted
    from .rundir import RunDir

    short = RunDir("k", base="/tmp")
    os.chmod(short.path, 0o711)      # an unsandboxed kernel (nobody) passes through to its sockets
    _SOCKET_DIRS.append(short)
    return short.path / "r"


def close_socket_dirs() -> None:
    while _SOCKET_DIRS:
        _SOCKET_DIRS.pop().close()


def traversable(path: Path, top: Path, strict: bool = True) -> None:
    """Let an unprivileged uid pass through (not list) the folders from `path` up to `top`, which
    this run made (mkdtemp makes them 0700): an unsandboxed kernel reaches its home that way.
    Folders above `top` are not changed; one that others cannot pass through is an error."""
    path, top = Path(path).resolve(), Path(top).resolve()
    for p in [path, *path.parents]:
        st = p.stat()
        if p == top or top in p.parents:
            os.chmod(p, (st.st_mode & 0o7777) | 0o111)
        elif strict and not st.st_mode & 0o001:
            raise RuntimeError(f"an unsandboxed kernel runs as nobody and cannot pass through {p} "
                               f"(mode {st.st_mode & 0o7777:o}): set TMPDIR to a folder others can pass through")


# ---------------------------------------------------------------------------------------------
# Kernel manager and Execute preprocessor
# ---------------------------------------------------------------------------------------------
class SandboxKernelManager(AsyncKernelManager):
    """An ipykernel started through SandboxSpec.wrap, talking over unix sockets."""

    sandbox_spec = Unicode("", config=True, help="SandboxSpec as JSON")

    @default("transport")
    def _default_transport(self):
        return "ipc"

    @default("connection_file")
    def _default_connection_file(self):
        return os.path.join(self.spec.rundir, "kernel.json")

    @property
    def spec(self) -> SandboxSpec:
        if not hasattr(self, "_spec_cache"):
            self._spec_cache = SandboxSpec.from_json(self.sandbox_spec)
        return self._spec_cache

    @property
    def kernel_spec(self):
        spec = super().kernel_spec
        if spec is not None:
            # a signal would hit bwrap, not the kernel inside it: ask the kernel to interrupt itself
            spec.interrupt_mode = "message"
        return spec

    def write_connection_file(self, **kwargs):
        super().write_connection_file(**kwargs)
        if self.spec.enabled and self.spec.uid is not None:
            os.chown(self.connection_file, self.spec.uid, self.spec.uid)

    def format_kernel_cmd(self, extra_arguments=None):
        return self.spec.wrap(super().format_kernel_cmd(extra_arguments))

    def kill_now(self) -> None:
        """SIGKILL the kernel's whole process group (bwrap and everything inside it)."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return
        try:
            os.killpg(getattr(self.provisioner, "pgid", None) or proc.pid, signal.SIGKILL)
        except OSError:
            try:
                proc.kill()
            except OSError:
                pass

    async def _async_pre_start_kernel(self, **kw):
        spec = self.spec
        kw["env"] = dict(spec.env)
        kw["cwd"] = spec.rundir   # not the student's folder: the shim goes there once unprivileged
        if spec.log_file:
            out = open(spec.log_file, "ab")
            kw["stdout"] = out
            kw["stderr"] = subprocess.STDOUT
        kw["stdin"] = subprocess.DEVNULL
        return await super()._async_pre_start_kernel(**kw)


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def capture_expression(names: list[str]) -> str:
    """An expression that, evaluated in the kernel's namespace, returns (the JSON record of
    `names` (course_lib.answers.record), a fingerprint of the recorder's code): a kernel that
    replaced the recorder shows another fingerprint than the solution's kernel did."""
    return ("(lambda m: (m.record({names!r}, globals()), __import__('hashlib').sha256(repr([(f.__module__, "
            "f.__code__.co_code, [c for c in f.__code__.co_consts if not hasattr(c, 'co_code')], "
            "f.__code__.co_names) for f in (m.record, m.encode, "
            "m._encode_numpy, m._float)]).encode()).hexdigest()))(__import__('course_lib.answers', "
            "fromlist=['record']))").format(names=list(names))


RECORDER_REPLACED = ("the kernel replaced the answer recorder (course_lib.answers): its record is not the value of "
                     "the answer cell, so this answer is not taken")


MAX_OUTPUT_CHARS = 100_000     # per output (a text, an image's base64): more is cut with a note
CUT_NOTE = "\n[... output cut by the grader: {n:,} characters, the first {k:,} shown ...]\n"
MAX_NOTEBOOK_OUTPUT_CHARS = 2_000_000   # all outputs of a notebook together: later ones are dropped with a note
TOTAL_NOTE = ("[... outputs dropped by the grader: this notebook's outputs passed {limit:,} characters in all "
              "...]\n")


def _output_chars(out) -> int:
    """Characters an output (or a message's content) holds: text, data, traceback."""
    n = 0
    for key in ("text", "evalue"):
        v = out.get(key)
        n += len(v) if isinstance(v, str) else sum(len(x) for x in v) if isinstance(v, list) else 0
    for v in (out.get("data") or {}).values():
        n += len(v) if isinstance(v, str) else sum(len(x) for x in v) if isinstance(v, list) else len(json.dumps(v))
    n += sum(len(t) for t in out.get("traceback") or [])
    n += len(json.dumps(out.get("metadata") or {}))
    return n


def cap_total_outputs(cells, limit: int = MAX_NOTEBOOK_OUTPUT_CHARS) -> None:
    """Keep the outputs of `cells` up to `limit` characters in all; the rest are replaced by one
    note per cell: 2,500 outputs of 95,000 characters make no 238 MB page."""
    total = 0
    for cell in cells:
        if cell.get("cell_type") != "code":
            continue
        kept = []
        for out in cell.get("outputs", []):
            size = _output_chars(out)
            if total + size > limit:
                kept.append(NotebookNode(output_type="stream", name="stdout", text=TOTAL_NOTE.format(limit=limit)))
                total = limit + 1
                break
            total += size
            kept.append(out)
        cell.outputs = kept


_ACTIVE_HTML = re.compile(r"<\s*/?\s*(?:script|iframe|frame|object|embed|applet|link|meta|base|form|style|svg|math|"
                          r"template)\b|\bon[a-z]+\s*=|javascript\s*:|vbscript\s*:|data\s*:\s*text/html|srcdoc\s*=",
                          re.IGNORECASE)
_SCRIPT_MIMES = ("application/javascript", "text/javascript", "application/x-javascript",
                 "application/vnd.jupyter.widget-view+json")


def active_html(text: str) -> bool:
    """Whether HTML could run something or reach out when shown (scripts, event handlers,
    frames, forms, javascript: links...)."""
    return bool(_ACTIVE_HTML.search(text))


INERT_NOTE = "*[shown as text by the grader: this cell's HTML could run code in a browser]*"


def inert_markdown(source: str) -> str:
    """A markdown (or raw) cell whose HTML could run code, as its text: escaped (also `=` and
    `:`, so that the result is no longer active_html) inside <pre>."""
    import html

    text = html.escape(source).replace("=", "&#61;").replace(":", "&#58;")
    return f"{INERT_NOTE}\n\n<pre>{text}</pre>"


def sanitize_markdown(cells) -> None:
    """Markdown and raw cells of `cells` that could run code in a browser, made text (in place)."""
    for cell in cells:
        if cell.get("cell_type") in ("markdown", "raw") and active_html(cell.get("source", "")):
            cell["source"] = inert_markdown(cell["source"])


def sanitize_outputs(cell) -> None:
    """A student's outputs made inert for the instructor's and student's pages: JavaScript outputs
    are dropped, HTML (or SVG) that could run anything is replaced by its text (the output's
    text/plain, or a note)."""
    for out in cell.get("outputs", []):
        data = out.get("data")
        if not isinstance(data, dict):
            continue
        for mime in list(data):
            value = data[mime]
            text = "".join(value) if isinstance(value, list) else value
            if mime in _SCRIPT_MIMES or (mime in ("text/html", "image/svg+xml", "text/markdown", "text/latex")
                                         and isinstance(text, str) and active_html(text)):
                del data[mime]
                data.setdefault("text/plain", f"[{mime} output removed by the grader: it could run code in a browser]")


def cap_outputs(cell, limit: int = MAX_OUTPUT_CHARS) -> None:
    """Cut every output of `cell` longer than `limit` characters, saying so: a 10 MB line must
    not be stored in the gradebook's notebooks and fed back whole."""
    note = CUT_NOTE
    for out in cell.get("outputs", []):
        kind = out.get("output_type")
        if kind == "stream":
            text = out.get("text", "")
            text = "".join(text) if isinstance(text, list) else text
            if len(text) > limit and not text[limit:].startswith("\n[... output cut by the grader: "):
                out["text"] = text[:limit] + note.format(n=len(text), k=limit)
        elif kind == "error":
            tb = out.get("traceback", [])
            if sum(len(t) for t in tb) + len(out.get("evalue", "")) > limit:
                out["evalue"] = out.get("evalue", "")[:limit // 2]
                kept, size = [], 0
                for t in tb:
                    if size + len(t) > limit // 2:
                        kept.append(note.format(n=sum(len(x) for x in tb), k=size))
                        break
                    kept.append(t)
                    size += len(t)
                out["traceback"] = kept
        elif kind in ("execute_result", "display_data"):
            data = out.get("data", {})
            for mime in list(data):
                value = data[mime]
                text = "".join(value) if isinstance(value, list) else value
                if isinstance(text, str) and len(text) > limit:
                    if mime.startswith("text/") and mime != "text/html":
                        data[mime] = text[:limit] + note.format(n=len(text), k=limit)
                    else:   # an image or HTML cut in half is garbage: drop it, keep the note
                        del data[mime]
                        data.setdefault("text/plain", f"[{mime} output of {len(text):,} characters removed by the "
                                                      f"grader: more than {limit:,}]")


def _grade_id(cell) -> str | None:
    return cell_id(cell) or None


class SandboxedExecute(Execute):
    """nbgrader's Execute with the sandboxed kernel, a notebook wall clock, per-cell time limits,
    warning-proof test cells, a record of the answers right after each answer cell ran (for the
    clean re-verification and the report), and the hidden tests run last.

    Hidden tests last: every other cell runs first, in order, so none of their outputs was
    produced by a kernel that had seen a hidden test (feedback shows them safely); the hidden
    test cells then run, in order, only to compare the kernel's verdict with the clean one."""

    sandbox_spec = Unicode("", config=True)
    notebook_timeout = Integer(900, config=True)
    capture = Unicode("{}", config=True, help="JSON {answer grade_id: [variable, ...]}: values to record "
                      "right after each of those cells ran")
    recorder = Unicode("", config=True, help="the recorder's fingerprint in the solution's kernel (preflight); "
                       "another one means the kernel replaced it")
    deferred = Unicode("[]", config=True, help="JSON [grade_id, ...]: the hidden-test cells, run after all others")
    cell_timeouts = Unicode("{}", config=True, help="JSON {grade_id: seconds}; other cells get `timeout`")
    grade_cell_warnings = Bool(True, config=True, help="remove warning text from test cells' stderr")
    max_output_chars = Integer(MAX_OUTPUT_CHARS, config=True)
    max_notebook_output_chars = Integer(MAX_NOTEBOOK_OUTPUT_CHARS, config=True)

    def __init__(self, *args, **kwargs):
        kwargs["kernel_manager_class"] = SandboxKernelManager
        super().__init__(*args, **kwargs)

    def create_kernel_manager(self):
        km = super().create_kernel_manager()
        km.sandbox_spec = self.sandbox_spec
        return km

    def preprocess(self, nb, resources=None, km=None):
        from nbclient import NotebookClient
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        NotebookClient.__init__(self, nb, km)
        self.reset_execution_trackers()
        self._check_assign_resources(resources)
        capture = json.loads(self.capture or "{}")
        deferred = json.loads(self.deferred or "[]")
        limits = json.loads(self.cell_timeouts or "{}")
        self.timeout_func = lambda cell: limits.get(_grade_id(cell), self.timeout)
        order = [i for i, c in enumerate(self.nb.cells) if _grade_id(c) not in deferred]
        last = [i for i, c in enumerate(self.nb.cells) if _grade_id(c) in deferred]
        answers, timings, killed, stopped = {}, {}, threading.Event(), None
        self._hidden_phase, self._output_total, self._cut_cells = False, 0, set()
        snapshot, meta_out = None, {}
        with self.setup_kernel():
            assert self.kc
            timer = threading.Timer(self.notebook_timeout, self._kill, args=(killed,))
            timer.daemon = True
            timer.start()
            try:
                info_msg = self.wait_for_reply(self.kc.kernel_info())
                self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
                self._lock_rundir()
                for index in order + last:
                    cell = self.nb.cells[index]
                    if index in last and snapshot is None:
                        # the first hidden test is about to enter the kernel: what every other cell
                        # shows is fixed now (a later display update, widget change or output
                        # appended to an earlier cell is dropped)
                        snapshot = self._snapshot(set(last))
                        self._hidden_phase = True
                    if stopped:
                        if cell.cell_type == "code":
                            cell.outputs = [_error_output("CellNotRun", f"not run: {stopped}")]
                            cell.execution_count = None
                        continue
                    gid = _grade_id(cell)
                    t0 = time.monotonic()
                    try:
                        self.preprocess_cell(cell, resources, index)
                        if gid in capture and cell.cell_type == "code":
                            answers[gid] = self._capture(capture[gid], meta_out)
                    except (CellTimeoutError, DeadKernelError) as e:
                        if killed.is_set():
                            stopped = f"the notebook ran past its time limit ({self.notebook_timeout} s)"
                        elif isinstance(e, CellTimeoutError):
                            stopped = (f"the cell ran past its time limit ({self.timeout_func(cell)} s) and did "
                                       "not stop when interrupted")
                        else:
                            stopped = "the kernel died (out of memory or crashed)"
                        log.warning("%s", stopped)
                        log.info("%s", e)
                        self.km.kill_now()
                        cell.outputs = list(cell.get("outputs", [])) + [_error_output("KernelStopped", stopped)]
                    finally:
                        if cell.cell_type == "code":
                            timings[gid or f"#{index}"] = round(time.monotonic() - t0, 4)
                            self._stream_notes(cell)
                            cap_outputs(cell, self.max_output_chars)
            finally:
                timer.cancel()
        self._lock_rundir(unlock=True)     # the next notebook's kernel makes its sockets there
        if snapshot is not None:
            self._restore(snapshot)
        # no widget state is kept: its views are JavaScript (removed from the outputs below), and
        # it is one more channel out of the kernel
        self.nb.metadata.pop("widgets", None)
        for cell in self.nb.cells:
            if cell.cell_type == "code":
                sanitize_outputs(cell)
        if self.grade_cell_warnings:
            self._strip_grade_cell_warnings()
        meta = self.nb.metadata.setdefault("autograder", {})
        meta["answers"] = answers
        meta["timings"] = timings
        meta["hidden_run_last"] = [_grade_id(self.nb.cells[i]) for i in last]
        meta["sandboxed"] = SandboxSpec.from_json(self.sandbox_spec).enabled
        meta.update(meta_out)
        if stopped:
            meta["stopped"] = stopped
        return self.nb, self.resources

    def _snapshot(self, hidden: set) -> dict:
        import copy

        return {"outputs": {i: copy.deepcopy(c.get("outputs", [])) for i, c in enumerate(self.nb.cells)
                            if c.cell_type == "code" and i not in hidden}}

    def _restore(self, snapshot: dict) -> None:
        for i, outputs in snapshot["outputs"].items():
            self.nb.cells[i].outputs = outputs

    def _update_display_id(self, display_id, msg):
        if not getattr(self, "_hidden_phase", False):   # after: an update of an earlier output is dropped
            super()._update_display_id(display_id, msg)

    def handle_comm_msg(self, outs, msg, cell_index):
        if not getattr(self, "_hidden_phase", False):   # after: widget state no longer changes
            super().handle_comm_msg(outs, msg, cell_index)

    def output(self, outs, msg, display_id, cell_index):
        """nbclient's output, cut to max_output_chars at once and kept within the notebook's total
        (MAX_NOTEBOOK_OUTPUT_CHARS): beyond it an output is dropped before it is kept, with one
        note in its cell."""
        if not hasattr(self, "_output_total"):
            self._output_total, self._cut_cells, self._hidden_phase = 0, set(), False
        if not hasattr(self, "_stream_seen"):
            self._stream_seen = {}
        content = msg.get("content") or {}
        hooked = self.output_hook_stack[msg["parent_header"].get("msg_id")]
        if msg.get("msg_type") == "stream" and not hooked:
            # streams are merged as they come (as nbclient would at the cell's end), keeping the
            # first max_output_chars and counting the rest for the cut note
            for prev in reversed(outs):
                if prev.get("output_type") == "stream" and prev.get("name") == content.get("name"):
                    text = content.get("text", "")
                    self._stream_seen[id(prev)] = self._stream_seen.get(id(prev), len(prev["text"])) + len(text)
                    add = text[:max(0, min(self.max_output_chars - len(prev["text"]),
                                           self.max_notebook_output_chars - self._output_total))]
                    prev["text"] += add
                    self._output_total += len(add)
                    return None
        if self._output_total >= self.max_notebook_output_chars:
            if cell_index not in self._cut_cells:
                self._cut_cells.add(cell_index)
                outs.append(NotebookNode(output_type="stream", name="stdout",
                                         text=TOTAL_NOTE.format(limit=self.max_notebook_output_chars)))
            return None
        out = super().output(outs, msg, None if self._hidden_phase else display_id, cell_index)
        if out is not None:
            if out.get("output_type") == "stream" and not hooked:
                self._stream_seen[id(out)] = len(out["text"])
                out["text"] = out["text"][:self.max_output_chars]
            else:
                cap_outputs({"outputs": [out]}, self.max_output_chars)    # cut at once (with its note)
            self._output_total += _output_chars(out)
        return out

    def _stream_notes(self, cell) -> None:
        """The cut note on each stream of `cell` that was cut while it came in."""
        seen = getattr(self, "_stream_seen", {})
        for out in cell.get("outputs", []):
            n = seen.pop(id(out), 0)
            if out.get("output_type") == "stream" and n > len(out.get("text", "")):
                out["text"] = out["text"] + CUT_NOTE.format(n=n, k=len(out["text"]))

    def _lock_rundir(self, unlock: bool = False) -> None:
        """Once the kernel has bound its sockets, its run directory (on the host's disk) is the
        grader's again: the kernel can no longer write files there (the per-submission disk quota
        is the private home and /tmp, both memory-backed and sized). `unlock`, once that kernel
        is gone: the kernel's uid's again, for the next notebook's kernel."""
        spec = SandboxSpec.from_json(self.sandbox_spec)
        if spec.enabled and spec.uid is not None and os.geteuid() == 0:
            owner = spec.uid if unlock else 0
            for p in (os.path.join(spec.rundir, "kernel.json"), spec.rundir):
                try:
                    os.chown(p, owner, owner)
                except OSError:
                    pass
            os.chmod(spec.rundir, 0o755 if unlock else 0o711)

    def _kill(self, killed):
        killed.set()
        log.warning("notebook time limit (%s s) reached: killing the kernel", self.notebook_timeout)
        try:
            self.km.kill_now()
        except Exception as e:  # pragma: no cover
            log.warning("could not kill the kernel: %s", e)

    def _capture(self, names, meta_out: dict) -> dict:
        """The record of `names` in the student's kernel now (course_lib.answers.record); a
        failure is recorded for each name. A silent request: no pre/post-run hooks fire. Where the
        recorder is not the solution kernel's (`recorder`), nothing is taken and it is flagged
        (meta_out["recorder_replaced"])."""
        try:
            msg_id = self.kc.execute("", silent=True, store_history=False,
                                     user_expressions={"values": capture_expression(names)})
            reply = self.wait_for_reply(msg_id)
            res = reply["content"]["user_expressions"]["values"]
            if res.get("status") != "ok":
                why = f"recording failed in the kernel: {res.get('ename')}: {str(res.get('evalue'))[:200]}"
                return {n: {"error": why} for n in names}
            text = res["data"]["text/plain"]
            if len(text) > 4 * 2**20:
                return {n: {"error": "the record is larger than 4 MB: not an answer"} for n in names}
            got = ast.literal_eval(text)
            if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, str) for x in got)):
                return {n: {"error": f"{RECORDER_REPLACED} (it returned {type(got).__name__})"} for n in names}
            record, fingerprint = got
            meta_out.setdefault("recorder", fingerprint)
            if self.recorder and fingerprint != self.recorder:
                meta_out["recorder_replaced"] = True
                return {n: {"error": RECORDER_REPLACED} for n in names}
            values = json.loads(record)
            if not isinstance(values, dict):
                return {n: {"error": f"{RECORDER_REPLACED} (not a record)"} for n in names}
            return {n: values[n] if isinstance(values.get(n), dict) else {"error": "not recorded"} for n in names}
        except Exception as e:
            log.warning("could not record the answer values: %s", e)
            return {n: {"error": f"recording failed: {type(e).__name__}: {e}"} for n in names}

    def _strip_grade_cell_warnings(self):
        for cell in self.nb.cells:
            if cell.cell_type != "code" or not is_graded(cell):
                continue
            kept = []
            for out in cell.get("outputs", []):
                if out.get("output_type") == "stream" and out.get("name") == "stderr":
                    rest = strip_warnings(out.get("text", ""))
                    if not rest.strip():
                        continue
                    out["text"] = rest
                kept.append(out)
            cell.outputs = kept
