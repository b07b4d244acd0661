"""Subscription and assignment of the consumer: the `ConsumerSubscription` mixin.

`subscribe` (a topic list, or a pattern: a `re.Pattern` or a string starting
with ``^``) makes the consumer a member of group.id: a `client.group`
member, or with group.protocol=consumer a `client.group_consumer` one, made
by `client.group_consumer.new_group_member`. The member calls back into
the consumer for the subscribed topics (`_subscribed_topics`), to change the
assignment (`_set_assignment`) and to run the `ConsumerRebalanceListener`
(`_call_listener`). A pattern is matched against every topic in metadata
(internal topics left out with exclude.internal.topics), again on each
metadata update (`_on_metadata`), which rejoins when the match changes.
`assign` takes partitions by hand (a `client.group.GroupMember` only for
commits when there is a group.id); the two cannot be mixed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from client._loop import call_in_caller
from client.consumer_state import ConsumerBase, _as_tp, _PartitionState
from client.errors import IllegalStateError
from client.group import GroupMember
from client.group_consumer import new_group_member
from client.types import TopicPartition

log = logging.getLogger("client.consumer")


class ConsumerRebalanceListener:
    """Override to act on rebalances; the methods get sets of `TopicPartition`.

    ``on_partitions_revoked`` runs before partitions are taken away (commit
    here), ``on_partitions_assigned`` after new ones arrive (seek here), and
    ``on_partitions_lost`` when they were already reassigned (defaults to
    revoked). They run inside poll, in the thread that called it; with
    `AIOConsumer` they may be coroutines.
    """

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> Any:
        return None

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> Any:
        return None

    def on_partitions_lost(self, lost: set[TopicPartition]) -> Any:
        return self.on_partitions_revoked(lost)


class ConsumerSubscription(ConsumerBase):
    """Mixin of `client.consumer_aio.AIOConsumer`: subscribe/assign, rebalance glue, pattern matching."""

    if TYPE_CHECKING:
        _listener: ConsumerRebalanceListener | None

    # -- subscription --------------------------------------------------------------------------------

    def subscribe(
        self,
        topics: Iterable[str] | str | re.Pattern[str] = (),
        *,
        pattern: str | re.Pattern[str] | None = None,
        listener: ConsumerRebalanceListener | None = None,
    ) -> None:
        """Join group.id to consume ``topics`` (or every topic matching ``pattern``).

        A single string starting with ``^`` is taken as a pattern, as in
        librdkafka. Replaces any earlier subscription; not allowed after `assign`.
        """
        self._ensure_open()
        if self.config["group.id"] is None:
            raise IllegalStateError("subscribe() needs a group.id; use assign() without one")
        if self._manual and self._assigned:
            raise IllegalStateError("subscribe() and assign() cannot be mixed; unsubscribe() first")
        if isinstance(topics, re.Pattern) or (isinstance(topics, str) and topics.startswith("^")):
            pattern, topics = topics, ()
        elif isinstance(topics, str):
            topics = [topics]
        topic_list = list(topics)
        if pattern is not None and topic_list:
            raise IllegalStateError("subscribe() takes topics or a pattern, not both")
        if pattern is None and not topic_list:
            raise IllegalStateError("subscribe() needs topics or a pattern")
        self._manual = False
        self._listener = listener
        if pattern is not None:
            self._pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
            self.cluster.want_all_topics = True
            self._topics = self._match_pattern()
            self._refresh_metadata_bg()
        else:
            self._pattern = None
            self.cluster.want_all_topics = False
            self._topics = set(topic_list)
        self.cluster.track(self._topics)
        if self._group is None:
            self._group = new_group_member(self)
        self._group.request_rejoin()

    def _match_pattern(self) -> set[str]:
        assert self._pattern is not None
        exclude_internal = self.config["exclude.internal.topics"]
        return {
            name
            for name, info in self.cluster.topics.items()
            if self._pattern.fullmatch(name) and not (exclude_internal and info.internal)
        }

    def _subscribed_topics(self) -> set[str]:
        return set(self._topics)

    def subscription(self) -> set[str]:
        """The subscribed topics (for a pattern: the matching topics known so far)."""
        return set(self._topics)

    def assign(self, partitions: Iterable[TopicPartition | tuple[str, int]]) -> None:
        """Consume exactly ``partitions`` (no group membership); replaces any earlier assignment."""
        self._ensure_open()
        if self._topics and not self._manual:
            raise IllegalStateError("assign() and subscribe() cannot be mixed; unsubscribe() first")
        tps = {_as_tp(tp) for tp in partitions}
        self._manual = True
        self._topics = set()
        self.cluster.track(tp.topic for tp in tps)
        if self.config["group.id"] is not None and self._group is None:
            self._group = GroupMember(self)
        self._set_assignment(tps)

    async def unsubscribe(self) -> None:
        """Drop the subscription or assignment (revoking and leaving the group first)."""
        self._ensure_open()
        if self._group is not None and not self._manual:
            if self._auto_commit and self._group.owned:
                await self._commit_quietly(self._group.owned)
            await self._group.close()
            self._group = None
        self._topics = set()
        self._pattern = None
        self._manual = False
        self._set_assignment(set())

    def assignment(self) -> set[TopicPartition]:
        return set(self._assigned)

    def _set_assignment(self, partitions: set[TopicPartition]) -> None:
        reset = "committed" if self.config["group.id"] is not None else self._auto_reset
        for tp in list(self._assigned):
            if tp not in partitions:
                self._assigned.pop(tp).discard()
        for tp in sorted(partitions):
            if tp not in self._assigned:
                self._assigned[tp] = _PartitionState(reset)
        self.cluster.track(tp.topic for tp in partitions)
        self._wake_fetcher()

    async def _call_listener(self, method: str, partitions: set[TopicPartition]) -> None:
        listener = self._listener
        if listener is None:
            return
        fn = getattr(listener, method, None)
        if fn is None and method == "on_partitions_lost":
            fn = getattr(listener, "on_partitions_revoked", None)
        if fn is None:
            return
        try:
            await call_in_caller(fn, set(partitions))
        except Exception:
            log.exception("rebalance listener %s raised", method)

    # -- metadata ------------------------------------------------------------------------------------

    def _on_metadata(self) -> None:
        if self._pattern is not None and not self._manual:
            matched = self._match_pattern()
            if matched != self._topics:
                self._topics = matched
                self.cluster.track(matched)
                if self._group is not None:
                    self._group.request_rejoin()
        if self._group is not None and not self._manual:
            self._group.metadata_changed()
