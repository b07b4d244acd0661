"""`AdminMixin`: the base of the admin client's call mixins (`client.admin_topics`,
`client.admin_configs`, `client.admin_groups`, `client.admin_cluster`, `client.admin_acls`,
`client.admin_quotas`, `client.admin_transactions`, `client.admin_users`).

It declares, for type checkers only, what `client.admin.AIOAdminClient`
provides to its mixins: the started ``cluster``, ``_retrying(fn, timeout)``
(runs ``fn()`` until it stops raising retriable errors or the timeout,
default ``default.api.timeout.ms``, passes), ``_controller()`` (the
controller's node id, after a metadata refresh when unknown), and the API
timeout and retry backoff in seconds (``_timeout``, ``_backoff``). At run time
the class is empty.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from client.cluster import Cluster


class AdminMixin:
    """Base of the mixins of `client.admin.AIOAdminClient`, which provides what it declares."""

    if TYPE_CHECKING:
        _timeout: float
        _backoff: float

        @property
        def cluster(self) -> Cluster: ...

        async def _retrying(self, fn: Callable[[], Awaitable[Any]], timeout: float | None = None) -> Any: ...

        async def _controller(self) -> int: ...
