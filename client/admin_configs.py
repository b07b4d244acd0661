"""The config calls of the admin client: `describe_configs` and `alter_configs`.

A resource is ``(resource type, name)``: `TOPIC` (2) and a topic name,
`BROKER` (4) and a broker id as a string (``""``: the cluster-wide default of
dynamic broker configs), or `BROKER_LOGGER` (8) and a broker id (its log
levels). As Kafka's AdminClient routes them, a broker's or broker logger's
configs go to that broker, topics' and the cluster default's to any broker.

- `describe_configs`: DescribeConfigs, every topic in one request; per
  resource ``{name: ConfigEntry}`` (with ``synonyms`` when asked for) or the
  resource's `KafkaError`.
- `alter_configs`: IncrementalAlterConfigs (set and delete, leaving other
  configs as they are); against a broker without it, AlterConfigs over the
  current non-default values (not for broker loggers). An error raises.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from client.admin_mixin import AdminMixin
from client.errors import KafkaError, UnsupportedVersionError, error_for

DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
CONFIG_SOURCES = {
    0: "UNKNOWN",
    1: "DYNAMIC_TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
    6: "DYNAMIC_BROKER_LOGGER_CONFIG",
}


@dataclass(frozen=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: str = "UNKNOWN"


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None
    source: str = "UNKNOWN"
    read_only: bool = False
    sensitive: bool = False
    synonyms: tuple[ConfigSynonym, ...] = ()  # where the value could come from, the one in use first

    @property
    def is_default(self) -> bool:
        return self.source in ("DEFAULT_CONFIG", "STATIC_BROKER_CONFIG", "UNKNOWN")


class ConfigAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (see `AdminMixin` for what the client provides)."""

    # -- configs ---------------------------------------------------------------------------------

    async def describe_configs(
        self,
        resources: Iterable[tuple[int, str]],
        keys: Iterable[str] | None = None,
        *,
        include_synonyms: bool = False,
    ) -> dict[tuple[int, str], dict[str, ConfigEntry] | KafkaError]:
        """Config entries per (resource type, name): TOPIC=2, BROKER=4 or BROKER_LOGGER=8.

        Every topic goes in one DescribeConfigs request to any broker; a broker's
        configs are asked of that broker (the cluster default, name "", of any).
        """
        wanted = list(dict.fromkeys(resources))
        key_list = list(keys) if keys is not None else None
        batches: dict[int | None, list[tuple[int, str]]] = collections.defaultdict(list)
        for rtype, name in wanted:
            batches[_node_of(rtype, name)].append((rtype, name))
        out: dict[tuple[int, str], dict[str, ConfigEntry] | KafkaError] = {}
        for node, batch in batches.items():
            body = {
                "resources": [
                    {"resource_type": rtype, "resource_name": name, "configuration_keys": key_list}
                    for rtype, name in batch
                ],
                "include_synonyms": include_synonyms,
            }

            async def call(node: int | None = node, body: dict[str, Any] = body) -> Any:
                if node is not None:
                    return await self.cluster.send(node, DESCRIBE_CONFIGS, body)
                return await self.cluster.send_any(DESCRIBE_CONFIGS, body)

            resp = await self._retrying(call)
            for r in resp.results:
                if r.error_code:
                    out[(r.resource_type, r.resource_name)] = error_for(
                        r.error_code, r.error_message, _context(r.resource_type, r.resource_name)
                    )
                    continue
                out[(r.resource_type, r.resource_name)] = {
                    c.name: ConfigEntry(
                        c.name,
                        c.value,
                        CONFIG_SOURCES.get(c.config_source, "UNKNOWN"),
                        c.read_only,
                        c.is_sensitive,
                        tuple(
                            ConfigSynonym(syn.name, syn.value, CONFIG_SOURCES.get(syn.source, "UNKNOWN"))
                            for syn in (c.synonyms or ())
                        ),
                    )
                    for c in r.configs
                }
        return out

    async def alter_configs(
        self,
        resource: tuple[int, str],
        set_configs: Mapping[str, str] | None = None,
        delete_configs: Iterable[str] = (),
        *,
        validate_only: bool = False,
    ) -> None:
        """Set and/or delete (back to default) configs of one resource, leaving the others as they are.

        Uses IncrementalAlterConfigs; against a broker without it, falls back
        to AlterConfigs over the current non-default values.
        """
        rtype, name = resource
        set_configs = dict(set_configs or {})
        deletes = list(delete_configs)
        node = _node_of(rtype, name)

        async def send(api_key: int, body: dict[str, Any]) -> Any:
            if node is not None:
                return await self.cluster.send(node, api_key, body)
            return await self.cluster.send_any(api_key, body)

        async def call() -> Any:
            conn = await (self.cluster.node(node) if node is not None else self.cluster.any_connection())
            if INCREMENTAL_ALTER_CONFIGS in conn.versions:
                configs = [
                    {"name": k, "config_operation": 0, "value": str(v)} for k, v in set_configs.items()
                ]
                configs += [{"name": k, "config_operation": 1, "value": None} for k in deletes]
                body = {
                    "resources": [{"resource_type": rtype, "resource_name": name, "configs": configs}],
                    "validate_only": validate_only,
                }
                return await send(INCREMENTAL_ALTER_CONFIGS, body)
            if ALTER_CONFIGS not in conn.versions or rtype == BROKER_LOGGER:
                raise UnsupportedVersionError(
                    "the broker supports neither IncrementalAlterConfigs nor AlterConfigs"
                )
            current = (await self.describe_configs([resource]))[resource]
            if isinstance(current, KafkaError):
                raise current
            merged = {k: e.value for k, e in current.items() if not e.is_default and not e.read_only}
            merged.update(set_configs)
            for k in deletes:
                merged.pop(k, None)
            body = {
                "resources": [
                    {
                        "resource_type": rtype,
                        "resource_name": name,
                        "configs": [{"name": k, "value": v} for k, v in merged.items()],
                    }
                ],
                "validate_only": validate_only,
            }
            return await send(ALTER_CONFIGS, body)

        resp = await self._retrying(call)
        for r in resp.responses:
            if r.error_code:
                raise error_for(r.error_code, r.error_message, _context(r.resource_type, r.resource_name))


def _node_of(rtype: int, name: str) -> int | None:
    """The broker a resource's requests go to (None: any), as Kafka's AdminClient routes them; a
    broker id that is not a number is sent to any broker, which answers INVALID_REQUEST."""
    if rtype in (BROKER, BROKER_LOGGER) and name.strip().lstrip("+-").isdigit():
        return int(name)
    return None


def _context(rtype: int, name: str) -> str:
    """How an error names the resource: a topic by its name, ``broker 1``, ``the broker default``..."""
    if rtype == BROKER:
        return "the cluster default of broker configs" if name == "" else f"broker {name}"
    if rtype == BROKER_LOGGER:
        return f"broker-logger {name}"
    return name
