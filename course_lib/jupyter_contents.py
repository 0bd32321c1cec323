"""Notebooks that open unmodified: a Jupyter contents manager that serves each notebook with
the kernel's own ``language_info``.

JupyterLab writes the running kernel's ``language_info`` (its exact Python version included)
into a notebook it opens, and marks the notebook modified when that differs from the file: a
course notebook, released on one machine and opened on another, would always open "modified".
Serving it with this interpreter's ``language_info`` (the course's kernel is the same Python
as its server: `make lab`, Binder and the hub kit all run ipykernel from the server's
environment) leaves nothing to change. Nothing is written: the file changes only when the
student saves. Enabled by deploy/student-jupyter (Binder, the public student repository),
`make lab` and the hub kit:
``ServerApp.contents_manager_class = "course_lib.jupyter_contents.NotebookContentsManager"``.
"""
from __future__ import annotations

import platform

from jupyter_server.services.contents.largefilemanager import AsyncLargeFileManager

#: what ipykernel reports for this interpreter (its kernel_info reply's language_info)
LANGUAGE_INFO = {
    "name": "python",
    "version": platform.python_version(),
    "mimetype": "text/x-python",
    "codemirror_mode": {"name": "ipython", "version": 3},
    "pygments_lexer": "ipython3",
    "nbconvert_exporter": "python",
    "file_extension": ".py",
}


class NotebookContentsManager(AsyncLargeFileManager):
    """The default contents manager, serving python notebooks with this kernel's language_info."""

    async def get(self, path, content=True, type=None, format=None, require_hash=False):
        model = await super().get(path, content=content, type=type, format=format, require_hash=require_hash)
        nb = model.get("content") if model.get("type") == "notebook" else None
        if nb is not None:
            metadata = nb.get("metadata", {})
            if (metadata.get("kernelspec") or {}).get("language", "python") == "python":
                metadata["language_info"] = dict(LANGUAGE_INFO)
        return model
