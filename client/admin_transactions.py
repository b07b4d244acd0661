"""The transaction calls of the admin client: `list_transactions` and `describe_transactions`.

As Kafka's Admin does: ListTransactions goes to every broker (each lists the
transactional ids it coordinates) and the answers are merged;
DescribeTransactions goes to each id's transaction coordinator, found with
FindCoordinator key_type 1. Coordinator moves and loads are retried within
the admin client's default.api.timeout.ms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from client.admin_mixin import AdminMixin
from client.errors import COORDINATOR_CODES, KafkaError, error_for
from client.types import TopicPartition
from protocol.errors import ErrorCode

if TYPE_CHECKING:
    pass

DESCRIBE_TRANSACTIONS = 65
LIST_TRANSACTIONS = 66
TRANSACTION_KEY_TYPE = 1


@dataclass(frozen=True)
class TransactionListing:
    """One transactional id as ListTransactions names it, with the broker that coordinates it."""

    transactional_id: str
    producer_id: int
    state: str  # Kafka's names: Empty, Ongoing, PrepareCommit, PrepareAbort, CompleteCommit, ...
    coordinator: int


@dataclass(frozen=True)
class TransactionDescription:
    """A transactional id as its coordinator describes it.

    ``start_time_ms``: when the id's last transaction started, open or not (None before
    its first one); ``partitions`` are those of the open transaction.
    """

    transactional_id: str
    state: str
    coordinator: int
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    start_time_ms: int | None
    partitions: tuple[TopicPartition, ...] = ()


class TransactionAdmin(AdminMixin):
    """Mixin of `client.admin.AIOAdminClient` (it provides ``cluster`` and ``_retrying``)."""

    async def list_transactions(
        self,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        min_duration_ms: int = -1,
    ) -> list[TransactionListing]:
        """Every transactional id of the cluster, sorted, optionally filtered.

        ``states``: Kafka's state names (a name the brokers do not know raises
        `KafkaError` naming it); ``producer_ids``; ``min_duration_ms``: only
        ids whose last transaction started more than that long ago, in any state
        (Kafka's filter: an id that never had one passes; needs ListTransactions v1).
        """
        body: dict[str, Any] = {
            "state_filters": list(states),
            "producer_id_filters": list(producer_ids),
        }
        if min_duration_ms >= 0:
            body["duration_filter"] = min_duration_ms
        await self._retrying(lambda: self.cluster.refresh([]))
        out: dict[str, TransactionListing] = {}
        for node in sorted(self.cluster.brokers):

            async def call(node: int = node) -> Any:
                conn = await self.cluster.node(node)
                if min_duration_ms >= 0 and conn.version(LIST_TRANSACTIONS) < 1:
                    raise KafkaError(
                        f"broker {node} cannot filter transactions by duration (ListTransactions v1)"
                    )
                resp = await conn.send(LIST_TRANSACTIONS, body, timeout=self.cluster.request_timeout)
                if resp.error_code in COORDINATOR_CODES:
                    raise error_for(resp.error_code, context=f"ListTransactions on broker {node}")
                return resp

            resp = await self._retrying(call)
            if resp.error_code:
                raise error_for(resp.error_code, context=f"ListTransactions on broker {node}")
            if resp.unknown_state_filters:
                raise KafkaError(f"unknown transaction state(s): {', '.join(resp.unknown_state_filters)}")
            for t in resp.transaction_states:
                out[t.transactional_id] = TransactionListing(
                    t.transactional_id, t.producer_id, t.transaction_state, node
                )
        return [out[k] for k in sorted(out)]

    async def describe_transactions(
        self, transactional_ids: Iterable[str]
    ) -> dict[str, TransactionDescription | KafkaError]:
        """Each id's state from its coordinator; an id that does not exist maps to its error."""
        out: dict[str, TransactionDescription | KafkaError] = {}
        for txn_id in dict.fromkeys(transactional_ids):

            async def call(txn_id: str = txn_id) -> tuple[int, Any]:
                node = await self.cluster.find_coordinator(txn_id, TRANSACTION_KEY_TYPE)
                conn = await self.cluster.connection(("coordinator", node))
                resp = await conn.send(
                    DESCRIBE_TRANSACTIONS,
                    {"transactional_ids": [txn_id]},
                    timeout=self.cluster.request_timeout,
                )
                for s in resp.transaction_states:
                    if s.error_code in COORDINATOR_CODES:
                        raise error_for(s.error_code, context=f"transactional id {txn_id!r}")
                return node, resp

            node, resp = await self._retrying(call)
            for s in resp.transaction_states:
                if s.error_code == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    out[s.transactional_id] = error_for(
                        s.error_code,
                        "no producer has used it",
                        context=f"transactional id {s.transactional_id!r}",
                    )
                elif s.error_code:
                    out[s.transactional_id] = error_for(
                        s.error_code, context=f"transactional id {s.transactional_id!r}"
                    )
                else:
                    out[s.transactional_id] = TransactionDescription(
                        s.transactional_id,
                        s.transaction_state,
                        node,
                        s.producer_id,
                        s.producer_epoch,
                        s.transaction_timeout_ms,
                        s.transaction_start_time_ms if s.transaction_start_time_ms >= 0 else None,
                        tuple(sorted(TopicPartition(t.topic, p) for t in s.topics for p in t.partitions)),
                    )
        return out
