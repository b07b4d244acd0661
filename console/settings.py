"""The console's settings: flags, a properties file, or ``MINIKAFKA_CONSOLE_*`` variables.

Keys of the ``--config`` file (Java properties, ``key=value``, ``#``/``!`` comments):

- ``console.host`` (127.0.0.1), ``console.port`` (8080): where the page is served;
- ``console.retention`` (days of lag history kept, 7), ``console.history.path`` (the SQLite
  file, ``console-history.sqlite3`` in the working directory), ``console.sample.interval.ms``
  (how often consumer-group offsets are sampled, 10000);
- any other key is a client setting handed to the bundled client: ``bootstrap.servers``,
  ``security.protocol``, ``sasl.*``, ``ssl.*``, ``client.id``...

Flags win over the file; ``--command-config`` is a second file of client settings only, the
same as every ``minikafka`` command takes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path


class SettingsError(ValueError):
    """A setting that cannot be used; its message is one readable line."""


@dataclass(frozen=True)
class ConsoleSettings:
    bootstrap_servers: str = "localhost:9092"
    host: str = "127.0.0.1"
    port: int = 8080
    history_path: str = "console-history.sqlite3"
    retention_days: float = 7.0
    sample_interval_s: float = 10.0
    client: dict[str, str] = field(default_factory=dict)  # extra client settings (security...)

    def client_config(self) -> dict[str, object]:
        """Settings for the console's producer and consumers: the user's client settings without
        the admin-only ``default.api.timeout.ms`` (the producer refuses it)."""
        out: dict[str, object] = {"client.id": "minikafka-console"}
        out.update({k: v for k, v in self.client.items() if k != "default.api.timeout.ms"})
        out["bootstrap.servers"] = self.bootstrap_servers
        return out

    def admin_config(self) -> dict[str, object]:
        """Settings for the console's admin client: short API timeouts (8 s unless the user sets
        ``default.api.timeout.ms``), so a dead cluster shows as a banner quickly."""
        return {
            "default.api.timeout.ms": self.client.get("default.api.timeout.ms", 8000),
            **self.client_config(),
        }


def read_properties(path: str | Path) -> dict[str, str]:
    """``key=value`` (or ``key: value``) lines of a Java properties file; blank and comment lines skipped."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsError(f"cannot read {path}: {exc.strerror}") from None
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep <= 0:
            raise SettingsError(f"{path}:{number}: expected key=value, got {line!r}")
        out[line[:sep].strip()] = line[sep + 1 :].strip()
    return out


def _number(key: str, value: str, low: float) -> float:
    try:
        n = float(value)
    except ValueError:
        raise SettingsError(f"{key} must be a number, not {value!r}") from None
    if n < low:
        raise SettingsError(f"{key} must be at least {low:g}, not {value}")
    return n


def settings_from(values: dict[str, str]) -> ConsoleSettings:
    """Build settings from console.* keys plus client keys (bootstrap.servers and the rest)."""
    values = dict(values)
    kw: dict[str, object] = {}
    if "console.host" in values:
        kw["host"] = values.pop("console.host")
    if "console.port" in values:
        port = _number("console.port", values.pop("console.port"), 0)
        if port != int(port) or port > 65535:
            raise SettingsError(f"console.port must be a port number, not {port:g}")
        kw["port"] = int(port)
    if "console.retention" in values:
        kw["retention_days"] = _number("console.retention", values.pop("console.retention"), 0.01)
    if "console.history.path" in values:
        kw["history_path"] = values.pop("console.history.path")
    if "console.sample.interval.ms" in values:
        ms = _number("console.sample.interval.ms", values.pop("console.sample.interval.ms"), 100)
        kw["sample_interval_s"] = ms / 1000
    if "bootstrap.servers" in values:
        kw["bootstrap_servers"] = values.pop("bootstrap.servers")
    unknown = [k for k in values if k.startswith("console.")]
    if unknown:
        raise SettingsError(f"unknown console setting {unknown[0]!r}")
    return ConsoleSettings(client=values, **kw)  # type: ignore[arg-type]
