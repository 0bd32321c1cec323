"""nbgrader for every user of the hub: where the exchange is, which course.

setup.sh installs this as <environment>/etc/jupyter/nbgrader_config.py (with the paths filled
in), so every single-user server and every `nbgrader` command run from the shared environment
reads it. Instructors read their ~/.jupyter/nbgrader_config.py as well, which loads the course.
"""
c = get_config()  # noqa: F821 (provided by nbgrader)

c.CourseDirectory.course_id = "@COURSE_ID@"
# Students fetch into ~/@COURSE_ID@/<assignment>/: the folder the hub opens for them.
c.Exchange.path_includes_course = True
if "@SERVICE_EXCHANGE@" == "yes":
    # The course service is the exchange (course_hub.nbexchange): releases, submissions and
    # feedback live where only the service writes, each submission timed by its clock and filed
    # under the user its hub token names. Its URL and the user's token come from the server's
    # environment (COURSE_SERVICE_URL, JUPYTERHUB_API_TOKEN). Its list keeps the feedback link.
    from course_hub.nbexchange import configure

    configure(c)
else:
    # nbgrader's own exchange, a folder (setup.sh --exchange-folder)
    c.Exchange.root = "@EXCHANGE@"
    # The Assignment List's "(view feedback)" goes to the feedback page, not only its folder
    # (course_hub.feedback_link: nbgrader's exchange list, the link's path changed); the course's
    # JupyterLab extension (course_lib/labextension/) opens the page it goes to.
    c.ExchangeFactory.list = "course_hub.feedback_link.FeedbackPageList"
