# Set-up and the two main commands. Both create or reuse the virtualenv .venv.
#   make train   the default training run on the embedded sample corpus (ends with a metric report)
#   make test    the test suite (what CI runs)
#   make lint    ruff, vulture (dead code) and mypy (types of hiersum/): what CI runs before the tests
#   make test-fast   the suite less its tests marked slow (end-to-end, multi-process), for the edit-run loop
#   make docs    the documentation site (mkdocs.yml, pages in docs/) built into site/; make docs-serve serves it
#   make gpu-check   on a CUDA machine: tests, benchmarks and runs on the GPU, one JSON summary (docs/benchmarks.md)
#   make ci-deps     what CI installs before make test (.ci/run): Debian's chromium and the ci extra
#   make test-python PY=3.12   the fast tests on another Python, in its own venv .venv-3.12 (CI: 3.10, 3.12, 3.13)
#   make venv-python PY=3.12   that venv alone
#   make lock        rewrite the locks requirements/lock-py3.X.txt after a change of pyproject.toml's dependencies
# Extra arguments: make train ARGS="model=tiny debug=fast_dev_run"; make test PYTEST_ARGS="-m 'not slow'"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

# The locks: the exact version of every package pyproject.toml asks for, all extras, for Linux x86_64, one file per
# Python (uv pip compile: make lock). Every install below passes its Python's lock to pip as constraints, so a venv
# holds the locked version of each package it needs. torch 2.13.0 (requirements/lock.in): with Python 3.11, pip
# takes this machine image's CPU wheel from its disk; other Pythons get PyPI's, a CUDA build.
PY_VERSION := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
LOCK := requirements/lock-py$(PY_VERSION).txt
LOCK_PYTHONS := 3.10 3.11 3.12 3.13
LOCK_ARGS ?=
UV_COMPILE := pip compile --quiet pyproject.toml requirements/lock.in --all-extras \
	--python-platform x86_64-manylinux_2_28 --custom-compile-command 'make lock'

.PHONY: train test test-fast test-python venv-python lint sample docs docs-serve clean gpu-check gpu-wheels gpu-venv ci-deps lock lock-check

# What installs into the venv: pip, which finds the CPU torch wheel on this machine image's disk (Python 3.11).
# make test-python passes .venv's uv instead (uv pip install), for the CUDA builds of torch that the other Pythons
# get from PyPI: uv unpacks them once into its cache and links them into each venv.
INSTALL ?= $(BIN)/pip install --quiet

$(STAMP): pyproject.toml $(LOCK)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(INSTALL) -c $(LOCK) -e '.[dev,official,slurm,serve]'
	touch $(STAMP)

requirements/lock-py%.txt:
	@echo "no lock for Python $* ($@): add $* to LOCK_PYTHONS in the Makefile, then make lock" >&2; exit 1

train: $(STAMP)
	$(BIN)/hiersum train $(ARGS)

# pytest-xdist: one worker per core (TEST_WORKERS=0 runs in this process)
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

# the fast part (-m "not slow"), for the edit-run loop
test-fast: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow" $(PYTEST_ARGS)

# Another Python: the newest pyenv interpreter of version PY ($(PYENV_ROOT)/versions/PY.*), else pythonPY on PATH
# (either must report version PY: a pyenv shim without that version does not); none is an error, never a skip.
# Its own venv .venv-PY, made from its lock by .venv's uv (what CI installs: make ci-deps), then the fast tests.
# uv writes the bytecode at install as pip does (this machine sets PYTHONDONTWRITEBYTECODE=1: none is written later).
PY ?=
PYENV_ROOT ?= $(HOME)/.pyenv
find_python = $(shell for p in $$(ls -d $(PYENV_ROOT)/versions/$(1).*/bin/python$(1) 2>/dev/null | sort -rV) python$(1); do \
	"$$p" -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma),$(1))))' >/dev/null 2>&1 && \
	command -v "$$p" && break; done)
comma := ,
OTHER_PYTHON = $(call find_python,$(PY))
OTHER_VENV = VENV=.venv-$(PY) PYTHON=$(OTHER_PYTHON) \
	INSTALL="$(abspath $(BIN))/uv pip install --quiet --compile-bytecode --python .venv-$(PY)/bin/python"
# its venv alone (make venv-python PY=3.12): .ci/run makes the other Pythons' beside make test, so that downloading and
# unpacking their packages overlaps the suite (their bytecode compiling, at nice 19, takes what CPU the suite leaves)
venv-python: $(STAMP)
	@test -n "$(PY)" || { echo "make $@: name the Python, e.g. make $@ PY=3.12" >&2; exit 2; }
	@test -n "$(OTHER_PYTHON)" || { echo "make $@: no Python $(PY) on this machine (looked for \
	$(PYENV_ROOT)/versions/$(PY).*/bin/python$(PY) and python$(PY) on PATH)" >&2; exit 1; }
	$(MAKE) --no-print-directory ci-deps $(OTHER_VENV)

test-python: venv-python
	$(MAKE) --no-print-directory test $(OTHER_VENV) PYTEST_ARGS="-m 'not slow' $(PYTEST_ARGS)"

# so that no test skips for a reason CI can fix (only the CUDA tests skip on a CPU): Debian's chromium for the
# serve page's browser test (apt-get: root, or sudo), and the ci extra of pyproject.toml (Playwright for Python,
# which drives that browser, the all-MiniLM-L6-v2 package, MLflow's client and W&B for the trackers' test, and
# accelerate, which BART's Seq2SeqTrainer in scripts/bench_quality.py needs: the bench extra)
CHROMIUM := /usr/bin/chromium
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
CI_STAMP := $(VENV)/.ci-installed
$(CI_STAMP): $(STAMP)
	test -x $(CHROMIUM) || ($(SUDO) apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
		--no-install-recommends chromium)
	$(INSTALL) -c $(LOCK) -e '.[ci]'
	$(BIN)/python scripts/check_lock.py --installed
	touch $(CI_STAMP)

ci-deps: $(CI_STAMP)

# The locks after a change of pyproject.toml's dependencies (or of requirements/lock.in): a version already locked
# stays unless the new requirements exclude it; LOCK_ARGS=--upgrade moves every package to its newest release.
# uv comes with the dev extra; a venv without it gets it first.
lock:
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	test -x $(BIN)/uv || $(BIN)/pip install --quiet -c $(LOCK) uv
	for v in $(LOCK_PYTHONS); do $(BIN)/uv $(UV_COMPILE) --python-version $$v -o requirements/lock-py$$v.txt \
		$(LOCK_ARGS) || exit 1; done

# CI: every lock pins a version of each requirement of pyproject.toml within its range (scripts/check_lock.py,
# offline), and each is what make lock writes now (compiled again into a temporary folder from PyPI, the locked
# versions preferred, and compared)
lock-check: $(STAMP)
	$(BIN)/python scripts/check_lock.py
	@fresh=$$(mktemp -d) && for v in $(LOCK_PYTHONS); do cp requirements/lock-py$$v.txt $$fresh/ 2>/dev/null; \
		$(BIN)/uv $(UV_COMPILE) --python-version $$v -o $$fresh/lock-py$$v.txt && \
		diff -u requirements/lock-py$$v.txt $$fresh/lock-py$$v.txt || { rm -rf $$fresh; \
		echo "make lock-check: requirements/lock-py$$v.txt is not what make lock writes (the diff above): make lock" >&2; \
		exit 1; }; done; rm -rf $$fresh; echo "make lock-check: the locks of $(LOCK_PYTHONS) are what make lock writes"

# ruff, then vulture: dead code (its paths and the names it may not see used: [tool.vulture], vulture_whitelist.py),
# then mypy: the types of hiersum/ ([tool.mypy]; docs/development.md)
lint: $(STAMP)
	$(BIN)/ruff check hiersum tests scripts
	$(BIN)/vulture
	$(BIN)/mypy

sample: $(STAMP)
	$(BIN)/hiersum make-sample --output data/sample

# the docs extra (mkdocs, Material, mkdocstrings) on top of the project; --strict: a broken link, a missing page
# or an API reference that fails to render is an error
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(INSTALL) -c $(LOCK) -e '.[docs]'
	touch $(DOCS_STAMP)

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# the GPU check: parts of under 10 minutes each, one JSON summary; ARGS="--parts tests,bench_train_bf16 --data DIR"
gpu-check: $(STAMP)
	$(BIN)/python scripts/gpu_check.py $(ARGS)

# for a GPU machine without network whose python3 has torch (CUDA), Lightning and most of the rest: here, the
# wheels of what its image lacks, at this venv's versions, for its Python (GPU_PYTHON) into .whl/; there, make
# gpu-venv. Pure-Python wheels are downloaded for that Python, the two that PyPI has only as sources are built here.
GPU_PYTHON ?= 3.12
GPU_WHEELS := hydra.core|omegaconf|nltk|submitit|hydra.submitit.launcher|datasets|dill|multiprocess|litserve|fastapi|starlette|uvicorn|pydantic|pydantic.core|pyzmq|annotated.types|typing.inspection|opentelemetry.api|annotated.doc
GPU_SOURCES := antlr4.python3.runtime|rouge.score
GPU_PLATFORMS := $(foreach p,manylinux_2_28_x86_64 manylinux_2_26_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64,--platform $(p))
gpu-wheels: $(STAMP)
	$(BIN)/pip download --quiet --no-deps --only-binary=:all: --python-version $(GPU_PYTHON) --implementation cp \
		$(GPU_PLATFORMS) --dest .whl $$($(BIN)/pip freeze | grep -iE '^($(GPU_WHEELS))==')
	$(BIN)/pip wheel --quiet --no-deps --wheel-dir .whl $$($(BIN)/pip freeze | grep -iE '^($(GPU_SOURCES))==')

# there: a venv that also sees the packages of the python3 it is made from (its CUDA torch), with the wheels of
# .whl/ and hiersum, all offline. That python3 may itself be a venv (the lent GPU machines': /opt/torch/.venv),
# whose packages --system-site-packages would not reach, so a .pth file names its site-packages.
gpu-venv:
	$(PYTHON) -m venv $(VENV)
	$(PYTHON) -c 'import site; print(*site.getsitepackages(), sep="\n")' \
		> $$($(BIN)/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/gpu-base.pth
	$(BIN)/python -c 'import torch'
	$(BIN)/pip install --quiet --no-index --no-deps .whl/*.whl
	$(BIN)/pip install --quiet --no-index --no-deps --no-build-isolation -e .
	touch $(STAMP)

clean:
	rm -rf $(VENV) .venv-3.* .pytest_cache site
