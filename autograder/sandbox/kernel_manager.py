"""The Jupyter kernel manager that starts an ipykernel inside the sandbox (autograder.sandbox.bwrap:
SandboxSpec.wrap; or, warm, forked by the worker's zygote: autograder.sandbox.zygote) and talks
to it over unix sockets in its run directory."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from queue import Empty

from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.manager import AsyncKernelManager
from traitlets import Unicode, default

from autograder.sandbox.bwrap import SandboxSpec, matplotlib_cache
from autograder.sandbox.zygote import WarmKernel, zygote_for


class SandboxKernelClient(AsyncKernelClient):
    """jupyter_client's client, ready as soon as the kernel answers: it does not then wait for
    IOPub to fall silent for 0.2 s (each submission paid it), it takes what IOPub holds. What
    comes later belongs to no request of nbclient's, which reads only its own requests' output."""

    async def _async_wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (float("inf") if timeout is None else timeout)
        while True:
            self.kernel_info()
            try:
                msg = await self.shell_channel.get_msg(timeout=1)
            except Empty:
                pass
            else:
                if msg["msg_type"] == "kernel_info_reply":
                    try:       # IOPub is connected: the reply's status messages come through it
                        await self.iopub_channel.get_msg(timeout=0.2)
                    except Empty:
                        pass
                    else:
                        self._handle_kernel_info_reply(msg)
                        break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:.0f} seconds")
        while True:
            try:
                await self.iopub_channel.get_msg(timeout=0)
            except Empty:
                break

    wait_for_ready = _async_wait_for_ready      # jupyter_client binds the name to its own function


class SandboxKernelManager(AsyncKernelManager):
    """An ipykernel started through SandboxSpec.wrap, talking over unix sockets."""

    sandbox_spec = Unicode("", config=True, help="SandboxSpec as JSON")

    @default("client_factory")
    def _default_client_factory(self):
        return SandboxKernelClient

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
        """SIGKILL the kernel's whole process group (bwrap and everything inside it; a warm
        kernel's pid namespace)."""
        proc = getattr(self.provisioner, "process", None) if self.provisioner else None
        if proc is None:
            return
        if isinstance(proc, WarmKernel):     # its pid is the zygote's, not one of this machine's
            proc.kill()
            return
        try:
            os.killpg(getattr(self.provisioner, "pgid", None) or proc.pid, signal.SIGKILL)
        except OSError:
            try:
                proc.kill()
            except OSError:
                pass

    async def _async_launch_kernel(self, kernel_cmd, **kw):
        spec = self.spec
        zygote = zygote_for(spec, matplotlib_cache()) if spec.zygote else None
        if zygote is None:
            if spec.zygote and spec.log_file:     # no warm kernels here: a cold one, logged as cold ones are
                kw["stdout"], kw["stderr"] = open(spec.log_file, "ab"), subprocess.STDOUT
            return await super()._async_launch_kernel(kernel_cmd, **kw)
        proc = zygote.spawn(spec, self.connection_file, spec.rlimits())
        prov = self.provisioner
        prov.process, prov.pid, prov.pgid, prov.cwd = proc, proc.pid, None, spec.rundir
        self._reconcile_connection_info(prov.connection_info)

    async def _async_pre_start_kernel(self, **kw):
        spec = self.spec
        kw["env"] = dict(spec.env)
        kw["cwd"] = spec.rundir   # not the student's folder: the shim goes there once unprivileged
        if spec.log_file and not spec.zygote:      # a warm kernel's log is opened by the zygote
            out = open(spec.log_file, "ab")
            kw["stdout"] = out
            kw["stderr"] = subprocess.STDOUT
        kw["stdin"] = subprocess.DEVNULL
        return await super()._async_pre_start_kernel(**kw)
