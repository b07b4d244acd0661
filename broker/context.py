"""What a handler gets besides its decoded request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from broker.security.acls import AclOperation, ResourceType
from protocol.headers import RequestHeader

if TYPE_CHECKING:
    from broker.broker import Broker
    from broker.security.session import Session

CLUSTER_NAME = "kafka-cluster"


@dataclass(slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    peer: str
    listener: str  # the listener the request came in on: Metadata answers its addresses
    session: Session  # the connection's principal and authentication state

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> str:
        return self.session.principal

    def authorized(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this request's principal may perform ``operation`` on the named resource
        (always true when the broker runs without an authorizer)."""
        return self.broker.security.authorize(self.session, operation, resource_type, name)

    def cluster_authorized(self, operation: AclOperation) -> bool:
        return self.broker.security.authorize(self.session, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorized_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Whether some resource of ``resource_type`` allows ``operation`` (Kafka's
        authorizeByResourceType: e.g. WRITE on any topic lets a producer be idempotent)."""
        return self.broker.security.authorize_any(self.session, operation, resource_type)
