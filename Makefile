# The set-up commands of the README: `make lab` opens the course, `make test` runs the fast tests
# (seconds), `make test-all` all of them (grading, deployment, hub and browser tests; CI runs it).
# All create .venv from nothing when it is missing. The tiers are assigned in conftest.py.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: lab test test-all test-quick venv release bench clean student-repo

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[course,dev]"
	# The course's JupyterLab extension: an editable install leaves out pyproject's data-files (a
	# plain `pip install .` puts it there), so link it in from the checkout, as `jupyter labextension
	# develop` links an extension's sources: edits to it show at the next page load.
	mkdir -p $(VENV)/share/jupyter/labextensions
	rm -rf $(VENV)/share/jupyter/labextensions/roofline-course
	ln -s $(abspath course_lib/labextension) $(VENV)/share/jupyter/labextensions/roofline-course
	# The Formgrader's pages served with a policy that runs only the Formgrader's own scripts
	# (autograder/outputs/formgrader_csp.py), in every Jupyter server of this environment
	mkdir -p $(VENV)/etc/jupyter/jupyter_server_config.d
	echo '{"ServerApp": {"jpserver_extensions": {"autograder.outputs.formgrader_csp": true}}}' \
		> $(VENV)/etc/jupyter/jupyter_server_config.d/roofline-formgrader-csp.json
	touch $(STAMP)

venv: $(STAMP)

# pytest-xdist: -n auto is one worker per core; --dist loadfile keeps a file's module fixtures in
# one worker. pytest-randomly runs the fast tier in a new random order each time (the seed is
# printed at the top; PYTEST_ARGS=--randomly-seed=N repeats it). The slow tier keeps its files'
# order (-p no:randomly): its end-to-end modules grade once and then read what grading left.
# The hub and browser tests (marker `serial`) run alone after the parallel pass.
PYTEST_ARGS ?=
test: $(STAMP)
	$(BIN)/python -m pytest -m "not slow" -n auto --dist loadfile $(PYTEST_ARGS)

test-all: $(STAMP)
	$(BIN)/python -m pytest -m "not serial" -n auto --dist loadfile -p no:randomly $(PYTEST_ARGS)
	$(BIN)/python -m pytest -m serial -p no:randomly $(PYTEST_ARGS)

# A focused loop: one area's fast tests, in the files' order (tests/areas.py; README "The test loop")
AREA ?= library
test-quick: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow" -p no:randomly $(PYTEST_ARGS) $$($(BIN)/python tests/areas.py $(AREA))

# Jupyter refuses to run as root unless told; containers often are root.
ROOTFLAG := $(if $(filter 0,$(shell id -u)),--allow-root,)

# The venv's bin/ first on PATH: nbgrader's Formgrader runs `alembic` as a command to open its
# gradebook, and fails with a 500 when it is not found.
# PORT and IP pick the server's port and address (make lab PORT=8890 IP=0.0.0.0); unset, JupyterLab's own
# defaults (8888, or the next free one; localhost)
lab: $(STAMP)
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter lab $(ROOTFLAG) $(if $(PORT),--ServerApp.port=$(PORT)) \
		$(if $(IP),--ServerApp.ip=$(IP)) \
		--ServerApp.contents_manager_class=course_lib.jupyter_contents.NotebookContentsManager notebooks/

# Regenerate the student notebooks in notebooks/ from the nbgrader sources in solutions/.
release: $(STAMP)
	$(BIN)/python -m autograder.authoring.release

# The public student repository (notebooks, course_lib, Binder files; no solutions, no hidden
# tests): make student-repo DEST=../roofline-students
DEST ?=
student-repo: $(STAMP)
	@test -n "$(DEST)" || { echo "usage: make student-repo DEST=folder" >&2; exit 2; }
	$(BIN)/python -m autograder publish "$(DEST)"

bench: $(STAMP)
	$(BIN)/python benchmarks/course_lib_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis

# ---- grading (python -m autograder; see autograder/) ----------------------------------------
# make grade A=02_memory_wall [SUBMISSIONS=path/or.zip]   autograde, in parallel and sandboxed
# make feedback A=...   make report A=...   make export   make bench-grade [A=...]   make bench-class [A=...]
A ?=
SUBMISSIONS ?=

.PHONY: grade feedback report export bench-grade bench-class

grade: $(STAMP)
	$(BIN)/python -m autograder grade $(A) $(if $(SUBMISSIONS),--submissions $(SUBMISSIONS)) --out reports/$(A)/grades.csv

feedback: $(STAMP)
	$(BIN)/python -m autograder feedback $(A)

report: $(STAMP)
	$(BIN)/python -m autograder report $(A)

export: $(STAMP)
	$(BIN)/python -m autograder export

bench-grade: $(STAMP)
	$(BIN)/python benchmarks/grade_bench.py $(A)

bench-class: $(STAMP)
	$(BIN)/python benchmarks/class_bench.py $(A)
