"""Requests from this broker to the others' inter-broker listeners, for the transaction paths.

`BrokerLinks.call(node_id, api_key, version, body, timeout_s)` sends one
request to broker ``node_id`` and returns its decoded response. Up to
``max_links`` connections per broker, each carrying one request at a time,
opened when none is free (TLS and a SASL login as the listener requires:
``link_security``) and kept for the next calls; a call waiting for a free one
counts against its timeout. Any failure closes the connection it used and
raises. The address is the broker's endpoint for ``listener`` as registered
in the cluster (its first endpoint when it has no such listener).

Users: the coordinator's WriteTxnMarkers (`broker.txn.markers`) and the
AddPartitionsToTxn v5 a partition leader or a group coordinator sends to a
transaction coordinator (`broker.txn.add_partitions_manager`); each has its own links,
so markers waiting for replication never hold up an add.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from broker.replica.link import LeaderLink, LinkSecurity
from protocol.errors import KafkaError, ProtocolError
from protocol.headers import encode_request_header, skip_response_header
from protocol.messages import decode_response, encode_request

if TYPE_CHECKING:
    from broker.cluster.view import ClusterView

CONNECT_TIMEOUT_S = 10.0


# What a failed call raises (the connection it used is closed).
LINK_ERRORS = (OSError, TimeoutError, ProtocolError, KafkaError)


class BrokerLinks:
    def __init__(
        self, cluster: ClusterView, listener: str | None, client_id: str, max_links: int = 1
    ) -> None:
        self._cluster = cluster
        self._listener = listener
        self._client_id = client_id
        self._max_links = max_links
        self.link_security: LinkSecurity | None = None  # set by the broker for a secured listener
        self._idle: dict[int, list[LeaderLink]] = {}
        self._slots: dict[int, asyncio.Semaphore] = {}
        self._correlation = 0

    async def call(
        self, node_id: int, api_key: int, version: int, body: dict[str, Any], timeout_s: float
    ) -> Any:
        """Broker ``node_id``'s decoded answer; raises one of `LINK_ERRORS` (a connection that
        failed or closed, the timeout, an answer that does not decode)."""
        async with asyncio.timeout(timeout_s):
            return await self._call(node_id, api_key, version, body)

    async def _call(self, node_id: int, api_key: int, version: int, body: dict[str, Any]) -> Any:
        async with self._slots.setdefault(node_id, asyncio.Semaphore(self._max_links)):
            idle = self._idle.setdefault(node_id, [])
            link = idle.pop() if idle else await self._connect(node_id)
            try:
                self._correlation += 1
                header = encode_request_header(api_key, version, self._correlation, self._client_id)
                frame = await link.request(header + encode_request(api_key, version, body))
                body_at = skip_response_header(frame, api_key, version)
                answer = decode_response(api_key, version, frame[body_at:])
            except BaseException:
                link.close()
                raise
            idle.append(link)
            return answer

    async def _connect(self, node_id: int) -> LeaderLink:
        node = self._cluster.broker(node_id)
        address = node.address(self._listener) if node is not None and self._listener else None
        if address is None and node is not None:
            address = (node.host, node.port)
        if address is None:
            raise ConnectionError(f"broker {node_id} is not registered")
        async with asyncio.timeout(CONNECT_TIMEOUT_S):
            return await LeaderLink.connect(*address, self.link_security, self._client_id)

    def close(self) -> None:
        """Close the idle connections (one in use is closed by its call's failure or stays
        with the process)."""
        for links in self._idle.values():
            for link in links:
                link.close()
        self._idle.clear()
