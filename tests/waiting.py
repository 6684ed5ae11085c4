"""Waiting on conditions, not on sleeps, with deadlines generous enough for a busy machine.

The suite runs on small shared machines (2 cores, several test runs at once):
a condition that takes 50 ms on an idle laptop can take seconds there. A
deadline is only the point where we give up, so it costs nothing when all is
well; make it generous.
"""

from __future__ import annotations

import time
from collections.abc import Callable
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
