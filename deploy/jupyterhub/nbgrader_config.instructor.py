# managed by deploy/jupyterhub/setup.sh (it rewrites this file while this line is here)
"""The instructor's ~/.jupyter/nbgrader_config.py: load the course's own configuration, so that
the Formgrader and `nbgrader` commands run anywhere find the course (its gradebook, solutions/,
notebooks/). The exchange and course id come from the environment's nbgrader_config.py."""
c = get_config()  # noqa: F821 (provided by nbgrader)
load_subconfig("@COURSE_DIR@/nbgrader_config.py")  # noqa: F821
