"""nbgrader for every user of the hub: where the exchange is, which course.

setup.sh installs this as <environment>/etc/jupyter/nbgrader_config.py (with the paths filled
in), so every single-user server and every `nbgrader` command run from the shared environment
reads it. Instructors read their ~/.jupyter/nbgrader_config.py as well, which loads the course.
"""
c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "@COURSE_ID@"
c.Exchange.root = "@EXCHANGE@"
# Students fetch into ~/@COURSE_ID@/<assignment>/: the folder the hub opens for them.
c.Exchange.path_includes_course = True
# The Assignment List's "(view feedback)" goes to the feedback page, not only its folder
# (course_hub.feedback_link: nbgrader's exchange list, the link's path changed); the course's
# JupyterLab extension (course_lib/labextension/) opens the page it goes to.
c.ExchangeFactory.list = "course_hub.feedback_link.FeedbackPageList"
