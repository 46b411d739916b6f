# `make demo` and `make test` set up everything on a fresh machine: Debian packages (R, bubblewrap;
# skipped with a message where apt or root is missing), then .venv with nini and its dev tools.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.nini-installed

FRONTEND := jupyter_ext/frontend
LABEXT := jupyter_ext/labextension/package.json
FRONTEND_SOURCES := $(shell find $(FRONTEND)/src $(FRONTEND)/style -type f 2>/dev/null) $(FRONTEND)/package.json $(FRONTEND)/yarn.lock
JLPM := PATH="$(abspath $(VENV))/bin:$$PATH" jlpm
# JupyterLab is pointed at the build in the source tree (a link in the venv's share/).
DEVELOP := PATH="$(abspath $(VENV))/bin:$$PATH" $(VENV)/bin/jupyter labextension develop --overwrite jupyter_ext >/dev/null

.PHONY: demo test bench serve setup system frontend hub-proxy clean

demo: setup
	$(PY) examples/demo.py

# One worker per core (pytest-xdist), a test file's tests on one worker so that its module-scoped
# servers and kernels start once: on 2 cores the suite takes 9.5 minutes instead of 17.
test: setup
	$(PY) -m pytest -n logical --dist loadfile $(PYTEST_ARGS)

bench: setup
	$(PY) benchmarks/run_all.py

# jupyter server with nini on 127.0.0.1 and a fresh token; prints the URL and a curl example
serve: setup
	$(PY) -m jupyter_ext.serve

# rpy2 as the r extra pins it, installed alone (not `pip install -e .[r]`, which would install nini again)
setup: system $(STAMP) frontend hub-proxy
	@if command -v R >/dev/null 2>&1 && ! $(PY) -c 'import rpy2' >/dev/null 2>&1; then \
		$(PY) -m pip install --quiet 'rpy2==3.5.17' || echo "setup: rpy2 did not install; R features stay off"; \
	fi

system:
	@bash scripts/setup-system.sh

# The editable install also builds the JupyterLab frontend (hatch-jupyter-builder runs jlpm); then
# JupyterLab is pointed at the build in the source tree, so `make frontend` after an edit is enough.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@# pip installs the labextension into the venv's share/: through the link that `develop` made there
	@# it would write into jupyter_ext/labextension, and the next install would find two install.json
	@# (a wheel's comes from frontend/); one left there by an older setup goes too
	@if [ -L $(VENV)/share/jupyter/labextensions/nini ]; then rm $(VENV)/share/jupyter/labextensions/nini; fi
	rm -f jupyter_ext/labextension/install.json
	$(PY) -m pip install --quiet -e '.[dev]'
	@if [ -f $(LABEXT) ]; then $(DEVELOP); fi
	touch $(STAMP)

# Rebuild the sidebar when its sources change (skipped, saying so, without node).
frontend: $(STAMP)
	@if command -v node >/dev/null 2>&1; then $(MAKE) --no-print-directory $(LABEXT); \
	else echo "setup: node is not installed, so the JupyterLab sidebar is not built (its tests skip)"; fi

$(LABEXT): $(FRONTEND_SOURCES)
	cd $(FRONTEND) && $(JLPM) install --silent && $(JLPM) build:prod
	$(DEVELOP)
	touch $(LABEXT)

# configurable-http-proxy, which JupyterHub starts (examples/jupyterhub), from npm into the venv;
# the JupyterHub test looks for it there and skips, saying so, without it.
HUB_PROXY := $(VENV)/hub-proxy/node_modules/.bin/configurable-http-proxy
hub-proxy: $(STAMP)
	@if [ -x $(HUB_PROXY) ]; then :; \
	elif command -v npm >/dev/null 2>&1; then \
		npm install --silent --no-fund --no-audit --prefix $(VENV)/hub-proxy 'configurable-http-proxy@^4.6' \
		|| echo "setup: configurable-http-proxy did not install; the JupyterHub test skips"; \
	else echo "setup: npm is not installed, so configurable-http-proxy is not (the JupyterHub test skips)"; fi

clean:
	rm -rf $(VENV) .pytest_cache $(FRONTEND)/node_modules $(FRONTEND)/lib $(FRONTEND)/test-build jupyter_ext/labextension
