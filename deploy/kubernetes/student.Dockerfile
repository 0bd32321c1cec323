# syntax=docker/dockerfile:1.7
# The students' image for Zero to JupyterHub 4.4.0 (values.yaml: singleuser.image). Its course_lib
# is made as the one-machine kit makes its students' copy (autograder.authoring.student_build,
# without --practice): no solver, no take-aways, no practice truths (verify cells ask the course
# service). From the course checkout it adds the exchange client (course_hub: nbgrader's exchange
# over the course service) and the hub's Jupyter settings (jupyter_settings.py). Build from the
# course checkout's root (BuildKit: docker 23+ or docker buildx; ../../.dockerignore keeps
# everything but the files named below out of the build context):
#
#   TAG=$(python deploy/kubernetes/image_tag.py)
#   docker build -f deploy/kubernetes/student.Dockerfile -t registry.example.edu/roofline-student:$TAG .
#
# Multi-stage: the instructor's course_lib (the answer key) and the build tools exist only in the
# `student-lib` stage; the image is `base` plus that stage's wheel of the stripped copy and its
# Jupyter settings, so no layer of the image ever held the key (a deleted file stays in its layer).
#
# Every package is pinned (tests/test_kubernetes.py checks it): JupyterHub 5.5.* as the chart's hub
# (5.5.0), nbgrader 0.9.6 (Python >= 3.11). Change a pin only with the tag.
FROM python:3.11.13-slim-bookworm AS base

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

FROM base AS student-lib
ARG COURSE_ID=roofline
COPY pyproject.toml README.md /src/
COPY course_lib /src/course_lib
COPY autograder /src/autograder
COPY course_hub /src/course_hub
COPY deploy/kubernetes/jupyter_settings.py /kit/kubernetes/jupyter_settings.py
COPY deploy/jupyterhub/nbgrader_config.student.py deploy/jupyterhub/nbgrader_config.instructor.py /kit/jupyterhub/
COPY deploy/student-jupyter /kit/student-jupyter
RUN set -eu; cd /src; \
    python -m autograder.authoring.student_build /out; \
    cp pyproject.toml README.md /out/; cp -r course_hub /out/course_hub; \
    pip wheel --no-deps --no-build-isolation --wheel-dir /wheel /out; \
    python /kit/kubernetes/jupyter_settings.py --kit /kit --prefix /usr/local --course-id "${COURSE_ID}"

FROM base
COPY --from=student-lib /wheel /tmp/wheel
COPY --from=student-lib /usr/local/etc/jupyter /usr/local/etc/jupyter
RUN set -eu; pip install --no-deps /tmp/wheel/*.whl; rm -rf /tmp/wheel; \
    python -c "import course_lib, course_hub.nbexchange, nbgrader, jupyterhub; assert jupyterhub.__version__.startswith('5.5.')"

USER 1000
WORKDIR /home/jovyan
CMD ["jupyterhub-singleuser"]
