# `make demo` and `make test` set up everything on a fresh machine: Debian packages (R, bubblewrap;
# skipped with a message where apt or root is missing), then .venv with nini and its dev tools.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nini-installed

.PHONY: demo test bench serve setup system clean

demo: setup
	$(PY) examples/demo.py

test: setup
	$(PY) -m pytest $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/run_all.py

# jupyter server with nini on 127.0.0.1 and a fresh token; prints the URL and a curl example
serve: setup
	$(PY) -m jupyter_ext.serve

setup: system $(STAMP)
	@if command -v R >/dev/null 2>&1 && ! $(PY) -c 'import rpy2' >/dev/null 2>&1; then \
		$(PY) -m pip install --quiet -e '.[dev,r]' || echo "setup: rpy2 did not install; R features stay off"; \
	fi

system:
	@bash scripts/setup-system.sh

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

clean:
	rm -rf $(VENV) .pytest_cache
