"""The hub's idle culler (jupyterhub-idle-culler), run so that the hub's SIGINT stops it.

The hub stops its services with SIGINT and waits 30 s before SIGTERM. A hub started where SIGINT
is ignored (a shell's background job) passes that on to the services it starts, and the culler
sets no handler of its own: it would hold the hub's shutdown for those 30 s. Here SIGINT and
SIGTERM end it at once (as course_hub.service does for itself); its options are the culler's
(`python -m course_hub.idle_culler --timeout=3600 --cull-every=300`), from the hub's
configuration (deploy/jupyterhub/jupyterhub_config.py).
"""
from __future__ import annotations

import signal
import sys


def _stop(signum, frame):
    sys.exit(0)


def main() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, _stop)
    from jupyterhub_idle_culler import main as cull

    cull()


if __name__ == "__main__":
    main()
