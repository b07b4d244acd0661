"""Requests from this broker to the others' inter-broker listeners, for the transaction paths.

`BrokerLinks.call(node_id, api_key, version, body)` sends one request to broker
``node_id`` and returns its decoded response. One connection per broker,
opened on first use (TLS and a SASL login as the listener requires:
``link_security``), one request at a time on it (a per-broker lock); any
failure closes the connection, raises, and the next call opens a new one.
The address is the broker's endpoint for ``listener`` as registered in the
cluster (its first endpoint when it has no such listener).

Users: the coordinator's WriteTxnMarkers (`broker.txn.markers`) and the
AddPartitionsToTxn v5 a partition leader or a group coordinator sends to a
transaction coordinator (`broker.txn.implicit_add`); each has its own links,
so markers waiting for replication never hold up an add.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.replica.link import LeaderLink, LinkSecurity
from protocol.headers import encode_request_header, skip_response_header
from protocol.messages import decode_response, encode_request

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView

CONNECT_TIMEOUT_S = 10.0


class BrokerLinks:
    def __init__(self, cluster: ClusterView, listener: str | None, client_id: str) -> None:
        self._cluster = cluster
        self._listener = listener
        self._client_id = client_id
        self.link_security: LinkSecurity | None = None  # set by the broker for a secured listener
        self._links: dict[int, LeaderLink] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        self._correlation = 0

    async def call(
        self, node_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> Any:
        """Broker ``node_id``'s decoded answer; raises OSError, TimeoutError or KafkaError (the
        connection is then closed)."""
        async with self._locks.setdefault(node_id, asyncio.Lock()):
            try:
                return await asyncio.wait_for(self._request(node_id, api_key, version, body), timeout_s)
            except BaseException:
                self.drop(node_id)
                raise

    async def _request(self, node_id: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
        link = self._links.get(node_id)
        if link is None:
            node = self._cluster.broker(node_id)
            address = node.address(self._listener) if node is not None and self._listener else None
            if address is None and node is not None:
                address = (node.host, node.port)
            if address is None:
                raise ConnectionError(f"broker {node_id} is not registered")
            link = self._links[node_id] = await asyncio.wait_for(
                LeaderLink.connect(*address, self.link_security, self._client_id), CONNECT_TIMEOUT_S
            )
        self._correlation += 1
        header = encode_request_header(api_key, version, self._correlation, self._client_id)
        frame = await link.request(header + encode_request(api_key, version, body))
        body_at = skip_response_header(frame, api_key, version)
        return decode_response(api_key, version, frame[body_at:])

    def drop(self, node_id: int) -> None:
        link = self._links.pop(node_id, None)
        if link is not None:
            link.close()

    def close(self) -> None:
        for node_id in list(self._links):
            self.drop(node_id)
