# Switchboard: `make run` serves the dashboard on a local DynamoDB; `make test` runs every test.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: run demo serve test lint setup python-deps lock wheel node-deps java browser test-unit test-integration test-browser fuzz-api bench load vendor clean screenshots

# Callbacks may reach receivers on this machine (CALLBACK_ALLOWED_NETWORKS), for the demo.
run: setup .env
	CALLBACK_ALLOWED_NETWORKS=$${CALLBACK_ALLOWED_NETWORKS-127.0.0.0/8} $(PY) manage.py run_local

# `make run` with traffic, so the overview moves on its own: a weekday played ten times
# faster than real time through the API (simulate_day), shipments and tasks (demo_load).
demo: setup .env
	CALLBACK_ALLOWED_NETWORKS=$${CALLBACK_ALLOWED_NETWORKS-127.0.0.0/8} $(PY) manage.py run_local --demo-load

# The production shape on this machine: DEBUG off, collectstatic, gunicorn (WEB_CONCURRENCY
# workers, 2 by default) on PORT (8000), the matcher and the background workers, a local DynamoDB.
serve: setup .env
	$(PY) manage.py serve

# Local development values (DEBUG=true, a random SECRET_KEY), written once when there is no
# .env: without them the settings refuse to start (production values: .env.example).
.env:
	$(PY) -m callcenter.local_env $@

# The suite in one process per core (at most 4: each starts its own DynamoDB Local; one
# more per core was measured no faster beside `make lint`: 560 and 586 s against 511 to
# 558), and beside it the static checks (`make lint`: mypy alone takes a while without its
# cache), whose output follows pytest's. The target fails if either does.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n < 4 ? n : 4 )))

test: setup browser
	@scripts/ensure-postgres-redis.sh
	@log=$$(mktemp); \
	  $(MAKE) --no-print-directory lint >$$log 2>&1 & lint=$$!; \
	  $(PY) -m pytest --numprocesses $(TEST_WORKERS); tests=$$?; \
	  wait $$lint; checks=$$?; \
	  echo "--- make lint (exit status $$checks)"; cat $$log; rm -f $$log; \
	  [ $$tests -eq 0 ] && [ $$checks -eq 0 ]

# Static checks (configured in pyproject.toml): ruff's lint rules and formatting, mypy on
# every module of queues_app and callcenter, import-linter's contracts. Every check runs;
# the target fails if any of them does.
lint: python-deps
	@status=0; \
	  $(VENV)/bin/ruff check . || status=1; \
	  $(VENV)/bin/ruff format --check --output-format concise . || status=1; \
	  $(VENV)/bin/mypy || status=1; \
	  $(VENV)/bin/lint-imports || status=1; \
	  exit $$status

setup: python-deps node-deps java

python-deps: $(STAMP)

# The packages exactly as requirements/dev.txt pins them (hashes checked): the runtime ones,
# every extra (dev: tests, lint; demo: Faker, for the demo data of make run, make demo and
# their tests; postgres, redis, sentry) and setuptools; then the project itself, editable,
# built with that setuptools. `pip check` fails when pyproject.toml asks for what the lock
# does not hold.
$(STAMP): pyproject.toml requirements/dev.txt
	@PYTHON_BIN=$$(scripts/find-python.sh) && echo "Using $$PYTHON_BIN" && \
	  { [ -x $(PY) ] || $$PYTHON_BIN -m venv $(VENV); }
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements/dev.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@$(PY) -m pip check >/dev/null || { $(PY) -m pip check; \
	  echo "requirements/ does not hold what pyproject.toml asks for: make lock"; exit 1; }
	@touch $(STAMP)

# The lock files in requirements/, hashed, for Python 3.12 and newer on any platform, from
# pyproject.toml: dev.txt (what make setup installs: every extra) first, then what a
# deployment installs at the same versions: base.txt (the runtime packages), deploy.txt
# (and the extras postgres, redis and sentry), build.txt (what building the wheel needs).
# Pins still allowed are kept; `make lock LOCK_FLAGS=--upgrade` takes the newest releases.
UV_COMPILE = $(VENV)/bin/uv pip compile --quiet --custom-compile-command "make lock" --generate-hashes --universal --python-version 3.12 $(LOCK_FLAGS)
lock: $(VENV)/bin/uv
	$(UV_COMPILE) pyproject.toml requirements/build.in --all-extras -o requirements/dev.txt
	$(UV_COMPILE) pyproject.toml -c requirements/dev.txt -o requirements/base.txt
	$(UV_COMPILE) pyproject.toml --extra postgres --extra redis --extra sentry -c requirements/dev.txt -o requirements/deploy.txt
	$(UV_COMPILE) requirements/build.in -c requirements/dev.txt -o requirements/build.txt

# uv comes with dev.txt; it is there even when the lock no longer fits pyproject.toml.
$(VENV)/bin/uv:
	$(MAKE) python-deps || [ -x $@ ]

# What a deployment installs (docs/deploy.md): dist/switchboard-VERSION-py3-none-any.whl,
# built with the locked setuptools.
wheel: python-deps
	rm -rf build
	$(PY) -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation --wheel-dir dist .

node-deps: node_modules/.package-lock.json

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error

java:
	@scripts/ensure-java.sh

browser:
	@scripts/ensure-chromium.sh

# Debian's PostgreSQL and Redis, for tests/integration/test_several_hosts.py (each run
# starts its own on free ports and throws them away); `make test` installs them too.
.PHONY: postgres-redis
postgres-redis:
	@scripts/ensure-postgres-redis.sh

test-unit: setup
	$(PY) -m pytest -m "not integration and not browser"

test-integration: setup
	$(PY) -m pytest -m integration

test-browser: setup browser
	$(PY) -m pytest -m browser

# The JSON API fuzzed from its OpenAPI document (schemathesis) on moto and on DynamoDB
# Local: 200 generated cases per operation (the suite runs 20). The counts, statuses and
# 5xx are printed and written to var/api-fuzz-moto.json and var/api-fuzz-dynamodb-local.json.
fuzz-api: setup
	API_FUZZ_CASES=200 $(PY) -m pytest -m fuzz -q

# Benchmarks against an in-memory DynamoDB Local they start themselves; figures in docs/benchmarks.md.
bench: setup .env
	$(PY) -m bench.matching
	$(PY) -m bench.receive
	$(PY) -m bench.lifo
	$(PY) -m bench.backlog
	$(PY) -m bench.waiting
	$(PY) -m bench.call_cost
	$(PY) -m bench.failover
	$(PY) -m bench.day

# The production shape (gunicorn x4, the matcher, escalation, two shipment workers) under a stepped-up
# call rate, supervisors and shipments; figures in docs/benchmarks.md ("Load").
load: setup .env
	$(PY) -m bench.load

# Copy the pinned htmx from the npm package into static/ (the copy is committed).
vendor: node-deps
	cp node_modules/htmx.org/dist/htmx.min.js static/vendor/htmx-$$(node -p "require('htmx.org/package.json').version").min.js

clean:
	rm -rf $(VENV) node_modules var/staticfiles .pytest_cache build dist

# Page screenshots for the README, taken by a browser test on demo data.
screenshots: setup browser
	SAVE_SCREENSHOTS=1 $(PY) -m pytest tests/browser/test_dashboard.py -k screenshots -q
