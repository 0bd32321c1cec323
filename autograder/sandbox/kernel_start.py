"""What every grading kernel does in its sandbox before a student's code runs, cold or warm, kept
once: its resource limits, and its home copied from the staged one.

Standard library only, and nothing at import: the cold kernel's start-up (bwrap.SandboxSpec.command)
runs this file's text with `python -I -c`, and the warm kernels' zygote (zygote_program.py) loads
it from where it is bound in its sandbox (zygote.KERNEL_START); neither sees the autograder package.
"""
import os
import resource
import shutil


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
