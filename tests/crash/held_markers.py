"""`python -m tests.crash.held_markers [broker flags]`: the real broker, except that its transaction
coordinator waits ``MINIKAFKA_TEST_HOLD_MARKERS_S`` seconds before writing a transaction's markers.

On one broker the window between the durable PrepareCommit record and the markers is a few
microseconds of the event loop, too short to SIGKILL the process inside it from outside; this
widens it, so a test can kill the broker there and check that the restarted broker (started
the normal way) completes the commit from its log. Nothing else differs from ``python -m broker``.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

from broker.cli import run_broker
from broker.txn.markers import MarkerWriter


def _hold_markers(seconds: float) -> None:
    write = MarkerWriter.write

    async def held(self: MarkerWriter, *args: Any, **kwargs: Any) -> None:
        await asyncio.sleep(seconds)
        await write(self, *args, **kwargs)

    MarkerWriter.write = held  # type: ignore[method-assign]


if __name__ == "__main__":
    _hold_markers(float(os.environ.get("MINIKAFKA_TEST_HOLD_MARKERS_S", "3600")))
    sys.exit(run_broker(sys.argv[1:], prog="python -m tests.crash.held_markers"))
