"""What every grading kernel does in its sandbox before a student's code runs, cold or warm, kept
once: its resource limits, its own keyrings, and its home copied from the staged one.

Standard library only, and nothing at import: the cold kernel's start-up (bwrap.SandboxSpec.command)
runs this file's text with `python -I -c`, and the warm kernels' zygote (zygote_program.py) loads
it from where it is bound in its sandbox (zygote.KERNEL_START); neither sees the autograder package.
"""
import ctypes
import os
import platform
import resource
import shutil

CLONE_NEWUSER, PR_SET_DUMPABLE, PR_CAPBSET_DROP, KEYCTL_JOIN_SESSION_KEYRING = 0x10000000, 4, 24, 1
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219}      # no keyutils library in the sandbox: the syscall by number


def own_keyrings() -> bool:
    """A user namespace of the kernel's own, mapping only its uid and gid to themselves, and a new
    session keyring. The user keyring (@u) belongs to a uid in a user namespace, so without this
    every kernel of a worker (one sandbox uid) reads what an earlier one added there with
    add_key(..., @u); the session keyring (@s) is inherited from the grader or the zygote. Called
    after the change of uid and before the capabilities are dropped (a new user namespace grants
    all of them, in it only). False where this machine refuses user namespaces to unprivileged
    processes (Ubuntu's AppArmor restriction, a limit of 0): then only the session keyring is new,
    and the kernel's log says so; grading goes on."""
    libc = ctypes.CDLL(None, use_errno=True)

    def check(result, what):
        if result < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"{what}: {os.strerror(err)}")

    uid, gid = os.getuid(), os.getgid()
    own = libc.unshare(CLONE_NEWUSER) == 0
    if own:
        # a change of uid made this process undumpable, its /proc/self files root's: it writes its
        # own maps (an exec'd kernel is dumpable anyway; cores stay off by the limits)
        check(libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0), "dumpable")
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w") as f:
                f.write(text)
    else:
        os.write(2, f"note: no user namespace for this kernel ({os.strerror(ctypes.get_errno())}): its user "
                    "keyring is its uid's\n".encode())
    libc.syscall.restype = ctypes.c_long
    check(libc.syscall(SYS_KEYCTL[platform.machine()], KEYCTL_JOIN_SESSION_KEYRING, None), "a new session keyring")
    if own:
        # the bounding set emptied: no capability of this namespace survives an exec, even as its uid 0
        for cap in range(64):
            if libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                if ctypes.get_errno() == 22:       # EINVAL: past the last capability
                    break
                check(-1, f"dropping capability {cap} from the bounding set")
    return own


def set_limits(rlimits: dict) -> None:
    """Each limit {'RLIMIT_AS': bytes, ...} as both soft and hard limit, never above a hard limit
    already set."""
    for name, value in rlimits.items():
        r = getattr(resource, name)
        soft, hard = resource.getrlimit(r)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(r, (value, value))


def copy_home(stage: str, home: str) -> None:
    """The files under `stage` (the prepared home, read-only) copied into `home` (the kernel's own,
    writable): the student's files, the kernel's settings."""
    for top, dirs, files in os.walk(stage):
        dest = os.path.normpath(os.path.join(home, os.path.relpath(top, stage)))
        os.makedirs(dest, exist_ok=True)
        for name in files:
            shutil.copyfile(os.path.join(top, name), os.path.join(dest, name))
