# xla-gym: `make demo` sets everything up and runs the demo episode;
# `make test` runs the whole test suite (setting up first if needed).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test lint clean

setup: $(STAMP)

# compiler-gym 0.2.5's declared pins cannot be met on Python 3.11 (see
# docs/install.md): its real runtime dependencies are pinned in
# requirements.txt and it is installed unmodified with --no-deps. gym 0.21's
# sdist needs old setuptools/wheel to build (build-constraints.txt), while
# torch needs a new setuptools at run time: gym is built first, alone.
# requirements*.txt are the lock of the full setup; installing the project with
# every extra afterwards checks that pyproject.toml's dependencies are met by it.
$(STAMP): pyproject.toml requirements.txt requirements-dev.txt build-constraints.txt
	$(PYTHON) -m venv $(VENV)
	PIP_CONSTRAINT=$(CURDIR)/build-constraints.txt $(PY) -m pip install --quiet "gym==0.21.0"
	$(PY) -m pip install --quiet -r requirements.txt -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps compiler-gym==0.2.5
	$(PY) -m pip install --quiet -e ".[all,dev]"
	touch $(STAMP)

demo: setup
	$(PY) -m xla_service.demo

test: setup
	$(PY) -m pytest -q tests

lint: setup
	$(PY) -m ruff check xla_service tests datasets leaderboard benchmarks
	$(PY) -m mypy xla_service leaderboard datasets benchmarks

clean:
	rm -rf $(VENV)
