"""The Zero to JupyterHub chart's hub configuration (4.4.0), vendored as data for
tests/test_kubernetes.py: never imported as test modules (they need a hub's config loader)."""
collect_ignore = ["jupyterhub_config.py", "z2jh.py"]
