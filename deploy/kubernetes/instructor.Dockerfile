# syntax=docker/dockerfile:1.7
# The instructors' image for Zero to JupyterHub 4.4.0 (values.yaml: custom.roofline.instructorImage,
# given to members of the hub group `instructors`), also the course service's (course-service.yaml):
# the whole course package (course_lib with the answer key, autograder, course_hub), nbgrader's
# instructor tools, bubblewrap for grading in the pod, and the hub's Jupyter settings. Build from the
# course checkout's root (the instructors' private repository):
#
#   TAG=$(python deploy/kubernetes/image_tag.py)
#   docker build -f deploy/kubernetes/instructor.Dockerfile -t registry.example.edu/roofline-instructor:$TAG .
#
# Pins as student.Dockerfile's (tests/test_kubernetes.py checks they agree), plus the `lms` extra's
# (pylti1p3: `python -m autograder export --lms` posts grades to the LMS). Never push this image
# where students can pull it: it holds the answer key. Only the files named below are copied, and
# ../../.dockerignore keeps everything else (values files with the OAuth client secret, the
# variant secret) out of the build context.
FROM python:3.11.13-slim-bookworm

ARG COURSE_ID=roofline
ARG COURSE_FOLDER=roofline-course
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

RUN useradd --create-home --uid 1000 --gid 100 --shell /bin/bash jovyan
# bubblewrap (each submission's kernel in a sandbox: README.md, "Grading"), git for the course
# checkout; Debian 12's packages (the base image's release)
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends bubblewrap git \
    && rm -rf /var/lib/apt/lists/*

RUN pip install \
        "jupyterhub==5.5.*" \
        "jupyterlab==4.6.6" \
        "nbgrader==0.9.6" \
        "ipykernel==7.4.0" \
        "ipywidgets==8.1.9" \
        "anywidget==0.11.0" \
        "numpy==2.4.6" \
        "pint==0.25.3" \
        "matplotlib==3.11.2" \
        "threadpoolctl==3.8.0" \
        "latex2mathml==3.81.1" \
        "nh3==0.3.8" \
        "setuptools==84.2.1" \
        "wheel==0.48.0" \
        "pylti1p3==2.0.0" \
        "jupyterhub-ltiauthenticator==1.6.3"

COPY pyproject.toml README.md /tmp/course/
COPY course_lib /tmp/course/course_lib
COPY autograder /tmp/course/autograder
COPY course_hub /tmp/course/course_hub
COPY deploy/kubernetes/jupyter_settings.py /tmp/kit/kubernetes/jupyter_settings.py
COPY deploy/jupyterhub/nbgrader_config.student.py deploy/jupyterhub/nbgrader_config.instructor.py /tmp/kit/jupyterhub/
COPY deploy/student-jupyter /tmp/kit/student-jupyter
RUN set -eu; pip install --no-deps --no-build-isolation /tmp/course; \
    python /tmp/kit/kubernetes/jupyter_settings.py --kit /tmp/kit --prefix "$(python -c 'import sys; print(sys.prefix)')" \
        --course-id "${COURSE_ID}" --instructor-dir /etc/roofline/instructor \
        --course-dir "/home/jovyan/${COURSE_FOLDER}"; \
    python -c "import course_lib, autograder, autograder.lms.ags, course_hub.service, nbgrader, jupyterhub; assert jupyterhub.__version__.startswith('5.5.')"; \
    rm -rf /tmp/course /tmp/kit

USER 1000
WORKDIR /home/jovyan
CMD ["jupyterhub-singleuser"]
