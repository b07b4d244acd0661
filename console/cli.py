"""``minikafka console``: serve the web console for a Kafka cluster.

Reads ``--config`` (console.* keys and client settings, see `console.settings`), then the
``MINIKAFKA_CONSOLE_<KEY>`` environment variables (``MINIKAFKA_CONSOLE_PORT=8081``), then the
flags. Errors are one readable line and exit status 2.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from console.settings import ConsoleSettings, SettingsError, read_properties, settings_from

ENV_PREFIX = "MINIKAFKA_CONSOLE_"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="minikafka console",
        description="Serve a web console (topics, messages, consumer groups, lag history) for a Kafka cluster.",
    )
    p.add_argument("--bootstrap-server", help="host:port[,host:port...] (default localhost:9092)")
    p.add_argument("--host", help="address to serve on (default 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to serve on (default 8080; console.port)")
    p.add_argument("--config", help="properties file: console.* keys and client settings")
    p.add_argument(
        "--command-config", help="properties file of client settings (security.protocol, sasl.*, ssl.*)"
    )
    p.add_argument("--history", help="SQLite file of lag history (console.history.path)")
    p.add_argument(
        "--retention-days", type=float, help="days of lag history kept (console.retention, default 7)"
    )
    p.add_argument("--sample-interval", type=float, help="seconds between lag samples (default 10)")
    return p


def load(args: argparse.Namespace, environ: dict[str, str] | None = None) -> ConsoleSettings:
    values: dict[str, str] = {}
    if args.config:
        values.update(read_properties(args.config))
    if args.command_config:
        values.update(read_properties(args.command_config))
    env = os.environ if environ is None else environ
    for name, value in env.items():
        if name.startswith(ENV_PREFIX):
            values["console." + name[len(ENV_PREFIX) :].lower().replace("_", ".")] = value
    flags = {
        "bootstrap.servers": args.bootstrap_server,
        "console.host": args.host,
        "console.port": None if args.port is None else str(args.port),
        "console.history.path": args.history,
        "console.retention": None if args.retention_days is None else str(args.retention_days),
        "console.sample.interval.ms": None
        if args.sample_interval is None
        else str(args.sample_interval * 1000),
    }
    values.update({k: v for k, v in flags.items() if v is not None})
    return settings_from(values)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load(args)
    except SettingsError as exc:
        print(f"minikafka console: {exc}", file=sys.stderr)
        return 2
    try:
        from console.server import serve
    except ImportError as exc:  # the optional dependencies are missing
        print(
            f"minikafka console: {exc.name} is not installed; install the console extra: pip install '.[console]'",
            file=sys.stderr,
        )
        return 2
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        serve(settings)
    except OSError as exc:
        print(
            f"minikafka console: cannot serve on {settings.host}:{settings.port}: {exc.strerror}",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        pass
    return 0
