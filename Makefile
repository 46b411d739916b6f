# `make demo` and `make test` set up what they need on a fresh machine. `make demo`: the Debian
# packages of the runtime group (R, bubblewrap; skipped with a message where apt or root is missing),
# then .venv with nini and rpy2, no sidebar build (`make frontend` builds it). `make test`: every
# Debian group (Chromium, PostgreSQL too), nini with its dev tools, the sidebar and the hub's proxy.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# what each install left: the demo's (nini alone) and the tests' (nini[dev]); the dev install
# leaves both, nini alone never the dev one, so `make test` after `make demo` installs the dev tools
STAMP_DEMO := $(VENV)/.nini-installed-demo
STAMP_DEV := $(VENV)/.nini-installed-dev

FRONTEND := jupyter_ext/frontend
LABEXT := jupyter_ext/labextension/package.json
FRONTEND_SOURCES := $(shell find $(FRONTEND)/src $(FRONTEND)/style -type f 2>/dev/null) $(FRONTEND)/package.json $(FRONTEND)/yarn.lock
JLPM := PATH="$(abspath $(VENV))/bin:$$PATH" jlpm
# JupyterLab is pointed at the build in the source tree (a link in the venv's share/).
DEVELOP := PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/jupyter labextension develop --overwrite jupyter_ext >/dev/null

.PHONY: demo test lint bench serve setup setup-demo system system-runtime frontend frontend-deps hub-proxy clean

demo: setup-demo
	$(PY) examples/demo.py

# One worker per core (pytest-xdist), a test file's tests on one worker so that its module-scoped
# servers and kernels start once; the longest files go first (tests/conftest.py orders them, and
# --no-loadscope-reorder keeps that order instead of xdist's most-tests-first); the 25 slowest
# steps are printed at the end, where the suite's time goes (it should stay under 15 minutes here).
test: setup
	$(PY) -m pytest -n logical --dist loadfile --no-loadscope-reorder --durations=25 $(PYTEST_ARGS)

# ruff (lint, then format as a check: `ruff format` rewrites), mypy (its config in pyproject decides what
# and how strictly), and eslint + prettier on the sidebar's sources (skipped, saying so, without node)
lint: $(STAMP_DEV) frontend-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) -m mypy
	@if command -v node >/dev/null 2>&1; then cd $(FRONTEND) && $(JLPM) lint:check; \
	else echo "lint: node is not installed, so eslint and prettier do not run"; fi

bench: setup
	$(PY) benchmarks/run_all.py

# jupyter server with nini on 127.0.0.1 and a fresh token; prints the URL and a curl example
serve: setup
	$(PY) -m jupyter_ext.serve

# rpy2 as the r extra pins it, installed alone (not `pip install -e .[r]`, which would install nini again)
RPY2 = @if command -v R >/dev/null 2>&1 && ! $(PY) -c 'import rpy2' >/dev/null 2>&1; then \
		$(PY) -m pip install --quiet 'rpy2==3.5.17' || echo "setup: rpy2 did not install; R features stay off"; \
	fi

setup: system $(STAMP_DEV) frontend hub-proxy
	$(RPY2)

# What the demo and README's commands use: R, the sandbox, nini (the CLI, kernels, reports), rpy2.
setup-demo: system-runtime $(STAMP_DEMO)
	$(RPY2)

system:
	@bash scripts/setup-system.sh

system-runtime:
	@bash scripts/setup-system.sh runtime

# pip install -e '.$(1)' into the venv (made when missing), with the environment $(2) for pip.
# JupyterLab is then pointed at the sidebar's build in the source tree, if there is one, so
# `make frontend` after an edit is enough.
define install-nini
test -x $(PY) || $(PYTHON) -m venv $(VENV)
$(PY) -m pip install --quiet --upgrade pip
@# pip installs the labextension into the venv's share/: through the link that `develop` made there
@# it would write into jupyter_ext/labextension, and the next install would find two install.json
@# (a wheel's comes from frontend/); one left there by an older setup goes too
@if [ -L $(VENV)/share/jupyter/labextensions/nini ]; then rm $(VENV)/share/jupyter/labextensions/nini; fi
rm -f jupyter_ext/labextension/install.json
$(2) $(PY) -m pip install --quiet -e '.$(1)'
@if [ -f $(LABEXT) ]; then $(DEVELOP); fi
endef

# The dev install also builds the JupyterLab frontend (hatch-jupyter-builder runs jlpm, where node is).
$(STAMP_DEV): pyproject.toml
	$(call install-nini,[dev],)
	touch $(STAMP_DEV) $(STAMP_DEMO)

# The demo's install builds no frontend (the demo and README's commands are the CLI's).
$(STAMP_DEMO): pyproject.toml
	$(call install-nini,,HATCH_JUPYTER_BUILDER_SKIP_NPM=1)
	touch $(STAMP_DEMO)

# Rebuild the sidebar when its sources change (skipped, saying so, without node).
frontend: $(STAMP_DEMO)
	@if command -v node >/dev/null 2>&1; then $(MAKE) --no-print-directory $(LABEXT); \
	else echo "setup: node is not installed, so the JupyterLab sidebar is not built (its tests skip)"; fi

# The sidebar's npm packages alone (eslint, prettier, typescript), for `make lint`: no build.
frontend-deps: $(STAMP_DEMO)
	@if command -v node >/dev/null 2>&1; then cd $(FRONTEND) && $(JLPM) install --silent; fi

$(LABEXT): $(FRONTEND_SOURCES)
	cd $(FRONTEND) && $(JLPM) install --silent && $(JLPM) build:prod
	$(DEVELOP)
	touch $(LABEXT)

# configurable-http-proxy, which JupyterHub starts (examples/jupyterhub), from npm into the venv;
# the JupyterHub test looks for it there and skips, saying so, without it.
HUB_PROXY := $(VENV)/hub-proxy/node_modules/.bin/configurable-http-proxy
hub-proxy: $(STAMP_DEV)
	@if [ -x $(HUB_PROXY) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-fund --no-audit --prefix $(VENV)/hub-proxy 'configurable-http-proxy@^4.6' \
		|| echo "setup: configurable-http-proxy did not install; the JupyterHub test skips"; \
	else echo "setup: npm is not installed, so configurable-http-proxy is not (the JupyterHub test skips)"; fi

clean:
	rm -rf $(VENV) .pytest_cache $(FRONTEND)/node_modules $(FRONTEND)/lib $(FRONTEND)/test-build jupyter_ext/labextension
