"""Reading a time as people type it: milliseconds since the epoch, or ISO 8601.

Shared by the ``minikafka`` commands (a time without a zone is local, as on a terminal) and the
web console (a time without a zone is UTC, as every time on its pages is shown).
"""

from __future__ import annotations

import datetime as dt


def parse_time(text: str, *, local: bool) -> int:
    """ms since the epoch from digits (taken as ms, a leading minus allowed) or ISO 8601 (``Z`` or
    an offset names the zone; none: local time when ``local``, else UTC). `ValueError` otherwise."""
    text = text.strip()
    if text.lstrip("-").isdigit():
        return int(text)
    when = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))  # ValueError when unreadable
    if when.tzinfo is None:
        when = when.astimezone() if local else when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)
