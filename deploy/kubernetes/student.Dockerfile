# syntax=docker/dockerfile:1.7
# The students' image for Zero to JupyterHub 4.4.0 (values.yaml: singleuser.image), built from the
# public student repository: its course_lib holds no answer key (verify cells ask the course
# service). From the course checkout it adds the exchange client (course_hub: nbgrader's exchange
# over the course service) and the hub's Jupyter settings (jupyter_settings.py). Build from the
# course checkout's root (BuildKit: docker 23+ or docker buildx):
#
#   python -m autograder publish /tmp/roofline-students
#   docker build -f deploy/kubernetes/student.Dockerfile --build-context kit=. \
#       -t registry.example.edu/roofline-student:2026.1.0 /tmp/roofline-students
#
# Every package is pinned (tests/test_kubernetes.py checks it): JupyterHub 5.5.* as the chart's hub
# (5.5.0), nbgrader 0.9.6 (Python >= 3.11). Change a pin only with the tag.
FROM python:3.11.13-slim-bookworm

ARG COURSE_ID=roofline
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1

# the chart's users: uid 1000 (singleuser.uid) in group 100 (singleuser.fsGid)
RUN useradd --create-home --uid 1000 --gid 100 --shell /bin/bash jovyan

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
        "wheel==0.48.0"

# the student repository's course_lib (no dependencies: all pinned above), then the exchange client
COPY . /tmp/student
RUN pip install --no-deps --no-build-isolation /tmp/student && rm -rf /tmp/student
COPY --from=kit course_hub /tmp/course_hub
COPY --from=kit deploy /tmp/kit
RUN set -eu; site="$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"; \
    cp -r /tmp/course_hub "$site/course_hub"; \
    python /tmp/kit/kubernetes/jupyter_settings.py --kit /tmp/kit --prefix "$(python -c 'import sys; print(sys.prefix)')" \
        --course-id "${COURSE_ID}"; \
    python -c "import course_lib, course_hub.nbexchange, nbgrader, jupyterhub; assert jupyterhub.__version__.startswith('5.5.')"; \
    rm -rf /tmp/course_hub /tmp/kit

USER 1000
WORKDIR /home/jovyan
CMD ["jupyterhub-singleuser"]
