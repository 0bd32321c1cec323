"""The course service: one JupyterHub-managed service that is the course's record (the
prediction ledger), its nbgrader exchange and its answer key, running as its own user with
storage no student process can open (see app.py for its routes and command)."""
