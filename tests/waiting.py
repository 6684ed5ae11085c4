"""Waiting on conditions, not on sleeps, with deadlines generous enough for a busy machine.

The suite runs on small shared machines (2 cores, several test runs at once):
a condition that takes 50 ms on an idle laptop can take seconds there. A
deadline is only the point where we give up, so it costs nothing when all is
well; make it generous.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    check: Callable[[], T | None], timeout: float, what: str = "condition", interval: float = 0.1
) -> T:
    """Polls `check` until it answers something truthy and answers that; fails after
    `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(interval)


def wait_past(moment: datetime) -> None:
    """Waits until the clock the service reads (UTC wall time) has passed `moment`.

    For something to expire at its own time: a token made before `created` with a
    lifetime of `ttl` has expired once `created + ttl` is past, however long the
    steps in between took.
    """
    left = (moment - datetime.now(UTC)).total_seconds()
    wait_for(
        lambda: datetime.now(UTC) > moment,
        max(left, 0) + 60,
        f"the clock past {moment.isoformat()}",
        interval=0.05,
    )
