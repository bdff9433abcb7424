# Set-up and the two main commands. Both create or reuse the virtualenv .venv.
#   make train   the default training run on the embedded sample corpus (ends with a metric report)
#   make test    the test suite (what CI runs)
#   make docs    the documentation site (mkdocs.yml, pages in docs/) built into site/; make docs-serve serves it
# Extra arguments: make train ARGS="model=tiny debug=fast_dev_run"; make test PYTEST_ARGS="-m 'not slow'"

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# CPU wheel unless an NVIDIA GPU is present (an unpinned torch pulls a multi-GB CUDA build)
TORCH_SPEC := $(shell command -v nvidia-smi >/dev/null 2>&1 && echo 'torch>=2.2' || echo 'torch==2.13.0')

.PHONY: train test lint sample docs docs-serve clean

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

clean:
	rm -rf $(VENV) .pytest_cache site
