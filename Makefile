# deltasink developer entry points. `make demo` and `make test` set everything up themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.install.stamp

.PHONY: install demo test extended lint typecheck chaos bench bench-memory soak docs docs-serve clean

install: $(STAMP)

# Idempotent: rebuilds only when pyproject.toml changes. Fetches the JVM artifacts every user
# needs once (Delta, the Spark Kafka and Avro connectors, the Kafka broker) into ~/.m2, then
# warms Spark's Ivy cache. Not S3A's (the AWS SDK bundle): `deltasink setup --s3` fetches them,
# and the tests that need them fetch them themselves (the s3_server fixture, tests/conftest.py).
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[local,dev,s3]"
	$(BIN)/deltasink setup
	touch $(STAMP)

demo: install
	$(BIN)/deltasink demo

lint: install
	$(BIN)/ruff check pipelines schemas quality tests bench docs

typecheck: install
	$(BIN)/mypy

test: lint typecheck
	bash .ci/ensure-chromium.sh
	bash .ci/ensure-postgres.sh
	$(BIN)/pytest -m "not chaos and not extended and not cluster" -q -n 2 --max-worker-restart=0 --durations=25

# The slower variants of make test's proofs (marker `extended`), on the same two workers.
extended: install
	bash .ci/ensure-postgres.sh
	$(BIN)/pytest -m "extended and not chaos and not cluster" -q -n 2 --max-worker-restart=0 --durations=25

# The docs site (mkdocs-material): --strict fails on a broken link or a missing page. Its
# reference pages are rendered from the code (docs/hooks.py); tests/docs (in `make test`) builds
# it too and checks every config block, command line and module path the docs name.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --strict

chaos: install
	bash .ci/ensure-postgres.sh
	$(BIN)/pytest -m chaos -q -s

bench: install
	$(PY) -m bench.run
	$(PY) -m bench.startup
	$(PY) -m bench.log_reads
	$(PY) -m bench.scheduled
	$(PY) -m bench.parse
	$(PY) -m bench.connect
	$(PY) -m bench.hot_day
	$(PY) -m bench.group
	$(PY) -m bench.ledger
	$(PY) -m bench.s3_requests
	$(PY) -m bench.latency
	$(PY) -m bench.cdc
	$(PY) -m bench.merge_shapes
	$(PY) -m bench.goals

# A continuous run (1 s interval) fed for 30 minutes, sampled for growth (issue 46).
soak: install
	$(PY) -m bench.soak

# A 5M-record backlog through deltasink in 500k batches; checks the driver's peak RSS < 3 GiB.
bench-memory: install
	$(PY) -m bench.memory

clean:
	rm -rf lake site .mypy_cache .ruff_cache .pytest_cache
