"""The Jupyter kernel manager that starts an ipykernel inside the sandbox (autograder.sandbox.bwrap:
SandboxSpec.wrap) and talks to it over unix sockets in its run directory."""
from __future__ import annotations

import os
import signal
import subprocess

from jupyter_client.manager import AsyncKernelManager
from traitlets import Unicode, default

from autograder.sandbox.bwrap import SandboxSpec


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
