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
  only: autograder.intake.safefiles), /tmp another one; the run directory on the host is the grader's
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

By default the kernel is not started from nothing but forked, into a sandbox of its own made
the same way (new namespaces, tmpfs home and /tmp, the uid drop, the limits), from its worker's
preloaded interpreter: autograder.sandbox.zygote says how, and why that is as clean.

This module holds the bubblewrap command, the limits and the sandboxed home (SandboxSpec,
make_spec, probe); the kernel manager is autograder.sandbox.kernel_manager, nbgrader's Execute
preprocessor autograder.sandbox.execute, and what outputs may hold autograder.outputs.limits.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path

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
                home: tuple[str, int] | None = None, caps: list[str] | None = None, dirs=()) -> list[str]:
    """The bwrap command line: a tmpfs root with only the given paths in it, and a private
    writable /tmp of `tmp_mb` MB. `home` (the prepared home on the host, MB): a private writable
    SANDBOX_HOME of that size, and the prepared home read-only at STAGING (the shim copies it).
    `caps`: bwrap's capability arguments, instead of the kernel's (the zygote's); `dirs`: empty
    folders to make (mount points)."""
    args = [bwrap_path() or "bwrap", "--die-with-parent", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--unshare-cgroup-try", "--hostname", "sandbox"]
    if caps is not None:
        args += caps
    elif os.geteuid() == 0 and drop_to is not None:
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
    for d in dirs:
        parents(d)
        made.add(d)
        args += ["--perms", "0755", "--dir", d]
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
if cfg.get("sandboxed"):
    own_keyrings()                           # kernel_start.py's: no keyring shared with another kernel
if cfg.get("parent"):
    # killed with the process that started it (a change of uid clears this, so it comes after);
    # inside bwrap, --die-with-parent does the same
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)   # PR_SET_PDEATHSIG
    if os.getppid() != cfg["parent"]:
        sys.exit("the grader is gone")
set_limits(cfg["rlimits"])                   # kernel_start.py's, above this text
if cfg.get("stage"):
    copy_home(cfg["stage"], cfg["home"])
if cfg.get("cwd"):
    os.chdir(cfg["cwd"])
os.execv(sys.executable, [sys.executable] + cfg["argv"] + sys.argv[2:])
"""


def _kernel_start_source() -> str:
    """The cold kernel's start-up: kernel_start.py's functions (shared with the warm kernels), then _SHIM."""
    from autograder.sandbox import kernel_start

    return Path(kernel_start.__file__).read_text()


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
    zygote: str = ""          # warm kernels (autograder.sandbox.zygote): this worker's kernel spool; "" cold
    packages: list = field(default_factory=list)

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

    def rlimits(self) -> dict:
        """The kernel's resource limits, now (RLIMIT_NPROC counts what its uid already runs)."""
        lim = self.limits
        count_uid = self.uid if self.uid is not None else os.getuid()
        return {"RLIMIT_AS": lim["memory_mb"] * 2**20,
                "RLIMIT_NPROC": _tasks_of_uid(count_uid) + lim["tasks"],
                "RLIMIT_FSIZE": lim["file_size_mb"] * 2**20,
                "RLIMIT_CORE": 0}

    def command(self, argv: list[str], extra: list[str] = (), python: str | None = None) -> list[str]:
        """The command line running `python ARGV EXTRA` in this sandbox, as the sandbox's uid,
        under its limits and killed with the process that starts it."""
        python = python or sys.executable
        lim = self.limits
        uid = self.uid
        cfg = {"uid": uid, "rlimits": self.rlimits(), "sandboxed": self.enabled, "argv": list(argv),
               "parent": None if self.enabled else os.getpid(), "cwd": self.cwd,
               "stage": STAGING if self.enabled else None, "home": SANDBOX_HOME,
               "keep_read": bool(uid is not None and not self.enabled and not reachable_by_others(self.ro + [python]))}
        shim = [python, "-I", "-c", _kernel_start_source() + _SHIM, json.dumps(cfg)] + list(extra)
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
    user's own matplotlib cache when it has one, else one built once per grading process in a
    temporary folder (the workers, forked after `grade` warms it, reuse their parent's) and
    removed when that process exits: each run used to leave an autograder-mpl-* folder behind
    (issue 47)."""
    import atexit
    import tempfile

    try:
        import matplotlib

        mine = matplotlib.get_cachedir()
        if mine and list(Path(mine).glob("fontlist-*.json")):
            return mine
    except Exception:  # pragma: no cover - matplotlib missing or broken
        pass
    d = tempfile.mkdtemp(prefix="autograder-mpl-")
    owner = os.getpid()
    # only the process that made it removes it: a forked worker inherits the handler too
    atexit.register(lambda: os.getpid() == owner and shutil.rmtree(d, ignore_errors=True))
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
    from autograder.intake.safefiles import copy_tree

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
              limits: Limits, sandbox: bool, packages=DEFAULT_PACKAGES, top: Path | None = None,
              zygote: Path | None = None) -> SandboxSpec:
    """Set up the private home and run directory of one submission under `base`. As root, the
    kernel runs unprivileged, sandboxed or not (RLIMIT_NPROC does not bind root): sandboxed as a
    uid of this worker's own (slot_uid), unsandboxed as `nobody`. `zygote`: a warm kernel
    (autograder.sandbox.zygote), `base` being in that spool."""
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
        zygote=str(zygote) if zygote and sandbox else "",
        packages=list(packages),
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
    from autograder.grading.rundir import RunDir

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
