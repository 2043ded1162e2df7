# deltasink developer entry points. `make demo` and `make test` set everything up themselves.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.install.stamp

.PHONY: install demo test lint typecheck unit chaos bench bench-memory clean

install: $(STAMP)

# Idempotent: rebuilds only when pyproject.toml changes. Fetches the JVM artifacts once
# (Delta, the Spark Kafka connector, the Kafka broker) into ~/.m2, then warms Spark's Ivy cache.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[local,dev]"
	$(BIN)/deltasink setup
	touch $(STAMP)

demo: install
	$(BIN)/deltasink demo

lint: install
	$(BIN)/ruff check pipelines schemas quality tests bench

typecheck: install
	$(BIN)/mypy

test: lint typecheck
	bash .ci/ensure-chromium.sh
	$(BIN)/pytest -m "not chaos and not cluster" -q --durations=15

chaos: install
	$(BIN)/pytest -m chaos -q -s

bench: install
	$(PY) -m bench.run
	$(PY) -m bench.startup
	$(PY) -m bench.scheduled
	$(PY) -m bench.parse
	$(PY) -m bench.connect
	$(PY) -m bench.hot_day

# A 5M-record backlog through deltasink in 500k batches; checks the driver's peak RSS < 3 GiB.
bench-memory: install
	$(PY) -m bench.memory

clean:
	rm -rf lake .mypy_cache .ruff_cache .pytest_cache
