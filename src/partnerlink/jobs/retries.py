"""When to try a job again, and when to stop trying."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

# 2**60 times any base is past every cap we use; a larger exponent only risks an overflow.
_MAX_DOUBLINGS = 60


def backoff_seconds(
    attempts: int, *, base: float, cap: float, retry_after: float | None = None
) -> float:
    """The wait after the n-th failed attempt: `base`, doubling each time up to `cap`, plus
    up to a quarter of jitter (so that a receiver or provider coming back is not hit by
    every job at once); never sooner than the other side asked (`retry_after`)."""
    doublings = min(_MAX_DOUBLINGS, max(0, attempts - 1))
    delay = min(cap, base * 2**doublings)
    delay += random.uniform(0, delay / 4)
    return max(delay, retry_after or 0.0)


def gave_up(first_attempt_at: datetime, now: datetime, deadline_seconds: float) -> bool:
    """Whether a job begun at `first_attempt_at` is past its deadline at `now`."""
    return now >= first_attempt_at + timedelta(seconds=deadline_seconds)
