# Aeromap: `make run` starts the whole system, `make test` runs every test.
# Both install what is missing first (npm packages, the engine's virtual environment) and are quick when nothing is.
SHELL := /bin/bash
VENV := engine/.venv
PY := $(VENV)/bin/python
NODE_STAMP := node_modules/.aeromap-installed
ENGINE_STAMP := $(VENV)/.aeromap-installed
BUILD_STAMP := dist/.built
WEB_STAMP := dist/web/index.html
CHROMIUM := /usr/bin/chromium
REPORTS := dist/test-results

.PHONY: install build run test test-ts test-engine test-long test-pyodm typecheck

install: $(NODE_STAMP) $(ENGINE_STAMP)

# bin/aeromap runs this JavaScript, compiled from src/, whenever it is newer than every source file; the service
# serves the web application that Vite builds into dist/web.
build: $(BUILD_STAMP) $(WEB_STAMP)

$(BUILD_STAMP): $(NODE_STAMP) tsconfig.json tsconfig.build.json $(shell find src -name '*.ts')
	find dist -mindepth 1 -maxdepth 1 ! -name web ! -name screenshots -exec rm -rf {} + 2>/dev/null || true
	npx tsc -p tsconfig.build.json
	touch $@

$(WEB_STAMP): $(NODE_STAMP) $(shell find web -type f)
	npx vite build --config web/vite.config.ts --logLevel warn

# The web application's end-to-end tests drive Debian's Chromium.
$(CHROMIUM):
	if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	else echo "The browser tests need Chromium: run 'sudo apt-get install chromium'" >&2; exit 1; fi

$(NODE_STAMP): package.json package-lock.json
	npm install --no-audit --no-fund --loglevel=error
	touch $@

$(ENGINE_STAMP): engine/pyproject.toml engine/requirements.txt engine/requirements-dev.txt engine/requirements-thermal.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r engine/requirements.txt -r engine/requirements-dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --ignore-requires-python -r engine/requirements-thermal.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -e engine
	touch $@

run: install build
	bin/aeromap serve

typecheck: $(NODE_STAMP)
	npx tsc --noEmit
	npx tsc --noEmit -p web

test-ts: install $(CHROMIUM)
	npx vitest run --reporter=default --reporter=json --outputFile.json=$(REPORTS)/vitest.json

# One worker more than a 2-core machine has: a test's single-threaded phases would otherwise leave a core idle.
test-engine: $(ENGINE_STAMP)
	$(PY) -m pytest -n 3 --dist loadfile -m "not long" --durations=20 --junitxml=$(REPORTS)/engine.xml engine/tests

# The tests left out of `make test` to keep it within CI's time (see README).
test-long: install
	$(PY) -m pytest -n 3 --dist loadfile -m long engine/tests
	$(PY) -m pytest -m long test/pyodm
	AEROMAP_LONG_TESTS=1 npx vitest run test/process.test.ts test/service/presets-engine.test.ts \
	  test/web/gcp-editor.e2e.test.ts test/service/earthworks.test.ts \
	  -t "Ctrl-C|Field maps|on a node|restarts, and shows the checkpoints|GPS predictions|what was dug"
	AEROMAP_LONG_TESTS=1 npx vitest run test/service/tasks-real-engine.test.ts test/web/earthworks.e2e.test.ts \
	  test/web/app.e2e.test.ts test/web/plant-health.e2e.test.ts test/web/public.e2e.test.ts \
	  test/service/permission-matrix.test.ts test/service/duplicate.test.ts \
	  test/service/backup.test.ts test/service/public-tasks.test.ts test/service/tasks-durability.test.ts \
	  test/service/tasks.test.ts test/service/tasks-races.test.ts test/service/exports.test.ts \
	  test/service/embedded-node.test.ts

# Protocol tests that drive the processing node with PyODM, NodeODM's own Python client.
test-pyodm: install
	$(PY) -m pytest -m "not long" --junitxml=$(REPORTS)/pyodm.xml test/pyodm

# The two installs, then the engine's, the service's and the protocol suites, run side by side: each alone leaves
# a core idle for much of its time. Their output is printed whole as each finishes, and the failed tests of all
# three, a line each, after them.
test:
	$(MAKE) --no-print-directory -j2 --output-sync=target install
	$(MAKE) --no-print-directory build typecheck
	rm -rf $(REPORTS)
	$(MAKE) --no-print-directory -j3 --output-sync=target -k test-engine test-ts test-pyodm \
	  || { python3 test/failures.py; exit 1; }
