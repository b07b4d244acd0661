"""Command line: `minikafka broker [...]` and `python -m broker [...]`.

Exit codes: 0 after a clean shutdown, 2 for a configuration error (one line on
stderr naming the key), 1 when the broker cannot start (port in use, data dir
locked by another broker).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys

from broker.config import BrokerConfig, ConfigError


def broker_parser(prog: str = "minikafka broker") -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=prog, description="Run a minikafka broker (node id 0).")
    p.add_argument("--data-dir", help="data directory (log.dirs), default ./data")
    p.add_argument("--host", help="listen address, default 127.0.0.1")
    p.add_argument("--port", type=int, help="listen port, default 9092")
    p.add_argument("--advertised-host", help="host name given to clients, default: --host")
    p.add_argument("--config", help="Kafka-style server.properties file")
    p.add_argument("--print-config", action="store_true", help="print the effective configuration and exit")
    p.add_argument(
        "--rebuild-registry",
        action="store_true",
        help="rebuild a damaged topic registry from the partition directories, then exit",
    )
    p.add_argument("--log-level", default=os.environ.get("MINIKAFKA_LOG_LEVEL", "INFO"))
    return p


class JsonLines(logging.Formatter):
    """One JSON object per line: ts, level, logger, msg (and exc with a traceback)."""

    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}",
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            doc["exc"] = self.formatException(record.exc_info)
        return json.dumps(doc)


def setup_logging(level: str, fmt: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonLines() if fmt == "json" else logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    )
    logging.basicConfig(level=level.upper(), handlers=[handler])


def run_broker(argv: list[str], prog: str = "minikafka broker") -> int:
    args = broker_parser(prog).parse_args(argv)
    try:
        config = BrokerConfig.load(
            args.config,
            env=os.environ,
            overrides={
                "log.dirs": args.data_dir,
                "host": args.host,
                "port": args.port,
                "advertised.host": args.advertised_host,
            },
        )
    except ConfigError as exc:
        print(f"minikafka: configuration error: {exc}", file=sys.stderr)
        return 2
    if args.print_config:
        print(config.describe())
        return 0
    if args.rebuild_registry:
        from broker.rebuild_registry import rebuild_registry

        return rebuild_registry(config)
    setup_logging(args.log_level, config["log.format"])
    if config.ignored:
        logging.getLogger("minikafka.config").warning(
            "ignoring %d Kafka configuration keys minikafka does not use: %s",
            len(config.ignored),
            ", ".join(sorted(config.ignored)),
        )

    import uvloop

    from broker.server import run

    try:
        uvloop.run(run(config))
    except ConfigError as exc:  # found while the broker is built (listeners' security, stores...)
        print(f"minikafka: configuration error: {exc}", file=sys.stderr)
        return 2
    except (OSError, RuntimeError) as exc:  # port in use, data dir locked, damaged or unreadable
        print(f"minikafka: cannot start broker: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    return 0


USAGE = """usage: minikafka COMMAND [...]

commands:
  broker        run a broker (minikafka broker --help)
  dump-log      print .log/.index/.timeindex files like kafka-dump-log (minikafka dump-log --help)
  topics        create|list|describe|alter|delete topics
  produce       send lines from stdin or a file to a topic
  consume       print the records of a topic
  groups        list|describe|lag|delete consumer groups, reset-offsets
  transactions  list|describe transactional ids and their open transactions
  users         list|add|delete the SCRAM credentials of users
  acls          add|list|remove ACLs (with kafka-acls' options)
  quotas        list|set|delete client quotas of users and client-ids (like kafka-configs)
  configs       --describe|--alter topic, broker and broker-logger configs (like kafka-configs)
  partitions    elect-leaders (preferred or unclean), like kafka-leader-election
  perf          produce|consume throughput tests
  console       serve the web console on http://127.0.0.1:8080 (minikafka console --help)
(client commands take --bootstrap-server HOST:PORT, default localhost:9092; see minikafka COMMAND --help)"""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if argv else 2
    if argv[0] == "broker":
        return run_broker(argv[1:])
    if argv[0] == "dump-log":
        from storage.dump import main as dump_log

        return dump_log(argv[1:])
    if argv[0] == "console":
        from console.cli import main as console_main  # lazy: the broker never imports the console

        return console_main(argv[1:])
    if argv[0] in (
        "topics",
        "produce",
        "consume",
        "groups",
        "transactions",
        "perf",
        "users",
        "acls",
        "quotas",
        "configs",
        "partitions",
    ):
        from client.cli import main as client_main  # lazy: the broker never imports the client

        return client_main(argv)
    print(f"minikafka: unknown command {argv[0]!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
