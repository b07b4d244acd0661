"""ListTransactions: v0-2.

Behavior:
- The transactional ids this broker coordinates, with producer id and state,
  filtered by state names (an unknown name is listed in
  unknown_state_filters and matches nothing), by producer ids, and (v1) by
  duration_filter: only ids whose last transaction started more than that
  many ms ago, whatever their state, as Kafka filters them (an id that never
  had a transaction passes; -1: no filter), and (v2, KIP-1152) by
  transactional_id_pattern: a regular expression the whole id must match
  (null or empty: no filter); one that does not compile answers
  INVALID_REGULAR_EXPRESSION. Empty filters match everything.
Version notes: flexible from v0; v1 adds duration_filter; v2
  transactional_id_pattern.
- Authorization (with an authorizer configured), as KafkaApis: only the
  transactional ids the principal may DESCRIBE are listed.
Leaves out: throttling; Kafka compiles the pattern with RE2/J, here with
  Python's `re` (the common syntax is the same).
"""

from __future__ import annotations

import re
from typing import Any

from broker import registry
from broker.context import RequestContext
from broker.security.acls import AclOperation, ResourceType
from broker.txn.state import TxnState
from protocol.errors import ErrorCode

API_KEY = 66


def handle(ctx: RequestContext, req: Any) -> dict[str, Any]:
    wanted = set(req.state_filters)
    unknown = sorted(s for s in wanted if TxnState.from_name(s) is None)
    duration = req.duration_filter if ctx.version >= 1 else -1
    pattern = None
    if ctx.version >= 2 and req.transactional_id_pattern:
        try:
            pattern = re.compile(req.transactional_id_pattern)
        except (re.error, RecursionError, OverflowError):
            return {
                "throttle_time_ms": 0,
                "error_code": ErrorCode.INVALID_REGULAR_EXPRESSION,
                "unknown_state_filters": [],
                "transaction_states": [],
            }
    txns = ctx.broker.transactions.list(wanted, set(req.producer_id_filters), duration, pattern)
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "unknown_state_filters": unknown,
        "transaction_states": [
            {
                "transactional_id": t.transactional_id,
                "producer_id": t.producer_id,
                "transaction_state": t.state.kafka_name,
            }
            for t in sorted(txns, key=lambda t: t.transactional_id)
            if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, t.transactional_id)
        ],
    }


registry.register(API_KEY, 0, 2, handle)
