"""The warm-kernel program (autograder.sandbox.zygote.Zygote runs it; the design is in zygote.py).

It runs as `python /run/autograder-zygote.py <config>` (this file, bound read-only there) in a
bubblewrap sandbox of its own, started once per grading worker, where only the Python install,
course_lib and the worker's kernel spool are visible (not the autograder package): so it imports only the standard library and what it
preloads, and does nothing when imported. It never runs a student's code itself. It imports what
every kernel imports (ipykernel, IPython, numpy, matplotlib.pyplot, course_lib), then answers
one JSON request a line on stdin:

    {"op": "kernel", ...}   fork a kernel for one submission; {"pid": P} or {"error": why}
    {"op": "poll", "pid": P}  {"status": exit code or null while it runs}
    {"op": "kill", "pid": P}  kill it (and so its whole pid namespace); {"ok": true}

Each kernel is two processes. The first (still privileged, in the zygote's pid namespace) takes
new mount, pid, network, IPC and UTS namespaces, mounts a fresh tmpfs on the home, /tmp and
/dev/shm, hides the spool but for this submission's run directory, binds the prepared home
read-only at the staging folder, makes every other mount read-only (the root, /etc, /run, /var,
/dev), and forks the second, which is pid 1 of the new pid namespace:
it mounts a /proc of that namespace, drops to the submission's uid (or, in a user namespace, all
capabilities), takes a user namespace of its own (a fresh user keyring) and a new session
keyring, sets no-new-privileges and the limits, copies the prepared home, takes the
student's environment and folder, closes every other file and starts ipykernel from the
preloaded modules. When it exits, everything it started dies with its pid namespace.
"""
import ctypes
import json
import os
import signal
import sys
import threading

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWUSER = 0x20000000, 0x40000000, 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 24, 38, 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
O_PATH = getattr(os, "O_PATH", 0o10000000)

libc = ctypes.CDLL(None, use_errno=True)


def check(result, what):
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: None if s is None else str(s).encode()   # noqa: E731
    check(libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


MOUNT_FLAGS = {"ro": MS_RDONLY, "nosuid": MS_NOSUID, "nodev": MS_NODEV, "noexec": MS_NOEXEC, "noatime": 1024,
               "nodiratime": 2048, "relatime": 1 << 21, "strictatime": 1 << 24}


def mounts_under(top, but):
    """[(mount point, its flags)] of the mounts strictly below `top` (in the order they were
    made), leaving out `but` and what lies below it."""
    out = []
    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")     # \040 for a space, as mountinfo writes it
        if point.startswith(top.rstrip("/") + "/") and not (point == but or point.startswith(but.rstrip("/") + "/")):
            flags = 0
            for option in fields[5].split(","):
                flags |= MOUNT_FLAGS.get(option, 0)
            out.append((point, flags))
    return out


def fresh_tmpfs(target, options, keep_out):
    """A new tmpfs on `target`, with the read-only folders bound below it before (a Python or
    course_lib that lives in /tmp) bound again at their places, with their flags."""
    below = [(point, flags, os.open(point, O_PATH | os.O_CLOEXEC)) for point, flags in mounts_under(target, keep_out)]
    mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, options)
    for point, flags, fd in below:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(point, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(point), exist_ok=True)
            open(point, "a").close()
        mount(f"/proc/self/fd/{fd}", point, None, MS_BIND)
        mount(None, point, None, MS_BIND | MS_REMOUNT | flags)
        os.close(fd)


def seal(keep):
    """Every writable mount of this (the kernel's) mount namespace read-only, but `keep` (the
    kernel's own fresh home, /tmp, /dev/shm, spool and run directory) and /proc (the kernel mounts
    its own) and /dev/pts (ptys live as long as a process holds them): the zygote's root, /etc,
    /run, /var and /dev are one tmpfs shared by every kernel it forks, so a file one kernel wrote
    there (an /etc/ipython kernel config) would run in the next. A bind remount changes this
    namespace's mount only; a mount hidden under a kept one (the zygote's /tmp) is unreachable."""
    def under(point, top):
        return point == top or point.startswith(top.rstrip("/") + "/")

    for line in open("/proc/self/mountinfo"):
        fields = line.split()
        point = fields[4].encode().decode("unicode_escape")
        options = fields[5].split(",")
        if "ro" in options or any(under(point, k) for k in (*keep, "/proc", "/dev/pts")):
            continue
        flags = 0
        for option in options:
            flags |= MOUNT_FLAGS.get(option, 0)
        mount(None, point, None, MS_BIND | MS_REMOUNT | MS_RDONLY | flags)


def drop_bounding_set():
    """No capability can be regained by exec (needs CAP_SETPCAP: before the change of uid)."""
    for cap in range(64):
        if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == 22:       # EINVAL: past the last capability
                break
            check(-1, f"dropping capability {cap} from the bounding set")


def drop_capabilities():
    """No capability left in any set (effective, permitted, inheritable, ambient)."""
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]

    check(libc.capset(ctypes.byref(Header(0x20080522, 0)), (Data * 2)()), "capset")


def preload(names):
    """Import what every kernel imports; {name: why} for what could not be (the kernel then
    imports it itself, as a cold one would)."""
    failed = {}
    for name in names:
        try:
            __import__(name)
        except Exception as e:     # noqa: BLE001 - reported to the grader
            failed[name] = f"{type(e).__name__}: {e}"
    return failed


def kernel_child(req, cfg):
    """The second process: pid 1 of the submission's pid namespace; never returns."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    drop_bounding_set()
    uid = req.get("uid")
    if uid is not None and os.getuid() == 0:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    if START.own_keyrings():
        drop_bounding_set()      # again: a new user namespace starts with every capability in it
    drop_capabilities()
    check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if req.get("probe"):
        caps = [ln.split()[1] for ln in open("/proc/self/status") if ln.startswith(("CapEff", "CapPrm"))]
        python = os.path.isfile(sys.executable) and os.path.isdir(os.path.join(sys.prefix, "lib"))
        os._exit(0 if os.getpid() == 1 and set(caps) == {"0000000000000000"} and python else 71)
    START.set_limits(req["rlimits"])
    START.copy_home(cfg["staging"], cfg["home"])
    os.environ.clear()
    os.environ.update(req["env"])
    os.chdir(req["cwd"])
    os.closerange(3, 1 << 16)
    if "numpy" in sys.modules:          # random reseeds itself after a fork; numpy's global state does not
        sys.modules["numpy"].random.seed()
    sys.argv = ["ipykernel_launcher", "-f", req["connection_file"]]
    from ipykernel import kernelapp

    app = kernelapp.IPKernelApp.instance()
    app.initialize(["-f", req["connection_file"]])
    # what a preloaded package does at import inside a kernel, it does now that there is one
    for hook in cfg.get("shell_hooks", []):
        module, name = hook.split(":")
        if module in sys.modules:
            getattr(sys.modules[module], name)()
    app.start()
    os._exit(0)


def kernel_first(req, cfg):
    """The first process: the namespaces and mounts, then the kernel's process; waits for it and
    exits with its status. Never returns."""
    try:
        log = os.open(req["log_file"], os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        null = os.open("/dev/null", os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.setsid()
        check(libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        mount(None, "/", None, MS_REC | MS_PRIVATE)
        uid = req.get("uid")
        owner = "" if uid is None or os.getuid() != 0 else f",uid={uid},gid={uid}"
        lim = req["limits"]
        run = os.open(req["rundir"], O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        stage = os.open(req["stage"], O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        os.umask(0o022)
        mount("tmpfs", cfg["home"], "tmpfs", MS_NOSUID | MS_NODEV, f"size={lim['home_mb'] * 2**20},mode=0755{owner}")
        fresh_tmpfs("/tmp", f"size={lim['tmp_mb'] * 2**20},mode=1777", cfg["spool"])
        if os.path.isdir("/dev/shm"):
            mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={lim['tmp_mb'] * 2**20},mode=1777")
        # the spool (every submission's folder of this worker) is hidden (a spool in /tmp is
        # already): only this one's run directory comes back, at its own path (the kernel's
        # sockets are there); folders made for it are root's
        if os.path.isdir(cfg["spool"]):
            mount("tmpfs", cfg["spool"], "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")
        os.makedirs(req["rundir"], exist_ok=True)
        mount(f"/proc/self/fd/{run}", req["rundir"], None, MS_BIND)
        mount(f"/proc/self/fd/{stage}", cfg["staging"], None, MS_BIND)
        mount(None, cfg["staging"], None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(run), os.close(stage)
        seal([cfg["home"], "/tmp", "/dev/shm", cfg["spool"], req["rundir"]])
        # SIGTERM (the zygote's "kill") is passed on as SIGKILL: the kernel is the init of its pid
        # namespace, which only a process outside it can kill (a parent-death signal is ignored)
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        pid = os.fork()
        if pid == 0:
            kernel_child(req, cfg)

        def stop(*_):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

        signal.signal(signal.SIGTERM, stop)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
        code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        os._exit(128 - code if code < 0 else code)      # killed by signal N: 128 + N, as a shell says
    except BaseException as e:     # noqa: BLE001 - the kernel log says why
        try:
            import traceback

            os.write(2, f"the warm kernel could not start: {type(e).__name__}: {e}\n".encode())
            os.write(2, traceback.format_exc().encode())
        finally:
            os._exit(70)


def load_start(path):
    """kernel_start.py, bound at `path`: what a cold kernel does before a student's code, the same here."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("autograder_kernel_start", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


START = None     # kernel_start.py's module, loaded by main()


def main():
    global START
    cfg = json.loads(sys.argv[1])
    START = load_start(cfg["kernel_start"])
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]               # nothing is imported from the folder it was started in
    out = sys.stdout
    if cfg.get("mpl_cache"):     # matplotlib's font list, where the kernels have theirs
        import shutil

        os.makedirs(os.environ["MPLCONFIGDIR"], exist_ok=True)
        for name in os.listdir(cfg["mpl_cache"]):
            if name.startswith("fontlist-"):
                shutil.copyfile(os.path.join(cfg["mpl_cache"], name), os.path.join(os.environ["MPLCONFIGDIR"], name))
    failed = preload(cfg["preload"])
    if threading.active_count() != 1:
        out.write(json.dumps({"fatal": "a preloaded module started a thread: a fork would not be clean"}) + "\n")
        out.flush()
        return
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # a kernel's namespaces, mounts and privilege drop, tried once before the first submission
    out.flush()
    pid = os.fork()
    if pid == 0:
        kernel_first({"probe": True, "log_file": "/proc/self/fd/2", "rundir": cfg["spool"], "stage": cfg["spool"],
                      "uid": cfg.get("uid"), "rlimits": {}, "limits": {"home_mb": 1, "tmp_mb": 1}}, cfg)
    code = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
    if code != 0:
        out.write(json.dumps({"fatal": f"a warm kernel's sandbox could not be made here (exit {code}; see zygote.log)"}) + "\n")
        out.flush()
        return
    out.write(json.dumps({"ready": True, "failed": failed}) + "\n")
    out.flush()
    done = {}
    for line in sys.stdin:
        req = json.loads(line)
        op = req.get("op")
        if op == "kernel":
            out.flush()
            pid = os.fork()
            if pid == 0:
                kernel_first(req, cfg)
            reply = {"pid": pid}
        elif op == "poll":
            pid = req["pid"]
            if pid not in done:
                try:
                    got, status = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    got, status = pid, 0
                if got == pid:
                    done[pid] = os.waitstatus_to_exitcode(status)
            reply = {"status": done.get(pid)}
        elif op == "kill":
            if req["pid"] not in done:
                try:
                    os.kill(req["pid"], signal.SIGTERM)      # the first process kills the kernel
                except ProcessLookupError:
                    pass
            reply = {"ok": True}
        else:
            reply = {"error": f"unknown request {op!r}"}
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
