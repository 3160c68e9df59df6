# graphwalk: `make demo` runs the whole Dagster asset graph offline; `make test` runs the test suite.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
export LITELLM_LOCAL_MODEL_COST_MAP := True
export HF_HUB_OFFLINE := 1
export DAGSTER_DISABLE_TELEMETRY := 1

.PHONY: setup postgres-server demo demo-postgres test bench lint lock ui ui-postgres

setup: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps -e .
	touch $@

demo: setup
	$(VENV)/bin/graphwalk demo

# The tests start their own PostgreSQL server (tests/servers/postgres_server.py) and a PgBouncer in front
# of it (tests/servers/pgbouncer_server.py) from Debian's `postgresql` and `pgbouncer` packages: installed
# here when no pg_ctl or pgbouncer is found (apt-get, as root, non-interactive).
postgres-server:
	@if ! { command -v pg_ctl >/dev/null || ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; } \
		|| ! { command -v pgbouncer >/dev/null || [ -x /usr/sbin/pgbouncer ]; }; then \
		if [ "$$(id -u)" = 0 ]; then as_root=""; elif command -v sudo >/dev/null; then as_root=sudo; \
		else echo "make test needs PostgreSQL's server and PgBouncer: apt-get install postgresql pgbouncer (as root), then rerun"; exit 1; fi; \
		$$as_root apt-get update -q && $$as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql pgbouncer; \
	fi

test: setup postgres-server
	$(PY) -m pytest -q

bench: setup
	$(PY) benchmarks/run_all.py

# ruff, then the import contracts of pyproject.toml (layers, no cycles, the core never imports Dagster).
lint: setup
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/lint-imports

# Recompile the URL-free lock from pyproject (with pip-tools, installed into the venv on first use).
lock: setup
	$(PY) -c "import piptools" 2>/dev/null || $(PY) -m pip install -q pip-tools
	$(PY) -m piptools compile --quiet --strip-extras --no-emit-index-url --no-emit-find-links \
		--no-emit-trusted-host --extra dev --output-file requirements.lock pyproject.toml
	sed -i '/^graphwalk @/d; /^-e /d' requirements.lock

# The Dagster UI on the demo's instance (runs and materializations of `make demo` show there).
ui: setup
	$(PY) -m graphwalk_dagster.instance_config .dagster
	DAGSTER_HOME=$(CURDIR)/.dagster $(VENV)/bin/dagster dev -w workspace.yaml

# The same on a PostgreSQL Dagster instance (dagster.postgres.yaml): set GRAPHWALK_DAGSTER_PG_URL
# (postgresql+psycopg2://...) and, for the graph too, GRAPHWALK_GRAPH_URL (see docs/deploy.md).
PG_HOME := $(CURDIR)/.dagster-postgres

$(PG_HOME)/dagster.yaml: dagster.postgres.yaml
	@test -n "$$GRAPHWALK_DAGSTER_PG_URL" || { echo "set GRAPHWALK_DAGSTER_PG_URL (docs/deploy.md)"; exit 1; }
	$(PY) -m graphwalk_dagster.instance_config $(PG_HOME) dagster.postgres.yaml

# `graphwalk_dagster.pools` writes the graph_store pool's limit once (dagster.postgres.yaml explains why).
demo-postgres: setup $(PG_HOME)/dagster.yaml
	DAGSTER_HOME=$(PG_HOME) $(VENV)/bin/python -m graphwalk_dagster.pools
	$(VENV)/bin/graphwalk demo --dagster-home $(PG_HOME)

ui-postgres: setup $(PG_HOME)/dagster.yaml
	DAGSTER_HOME=$(PG_HOME) $(VENV)/bin/python -m graphwalk_dagster.pools
	DAGSTER_HOME=$(PG_HOME) $(VENV)/bin/dagster dev -w workspace.yaml
