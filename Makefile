# minikafka: `make run` starts a broker on 127.0.0.1:9092 with data in ./data; `make test` runs the suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
DATA_DIR ?= ./data
PORT ?= 9092

.PHONY: run test test-all lint format bench fuzz compose-up compose-down clean

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	$(BIN)/python -m broker --data-dir $(DATA_DIR) --host 127.0.0.1 --port $(PORT)

test: $(TEST_STAMP)
	$(BIN)/python -m pytest -q

test-all: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m ''

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

bench: $(TEST_STAMP)
	$(BIN)/python -m bench

# Coverage-guided fuzzing of the decoders (atheris), FUZZ_SECONDS per target (default 60).
fuzz: $(TEST_STAMP)
	$(BIN)/pip install -q atheris
	bash tests/fuzz/run.sh

# Needs a Docker engine (none on the CI machines: tests/integration/test_compose.py checks the file instead).
compose-up:
	docker compose up -d --build

compose-down:
	docker compose down

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
