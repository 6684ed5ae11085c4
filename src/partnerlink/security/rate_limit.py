"""Failure budgets for anything that can be guessed (pairing codes, merchant passwords).

Counters live in a `limits` storage: memory for one process, Redis
(`PARTNERLINK_RATE_LIMIT_STORAGE=redis://...`) when several processes serve.
Only failures are counted, so honest traffic is never slowed; once a budget is
spent, every attempt under that key answers 429 until the window moves on.
"""

from __future__ import annotations

import math
import time
from functools import lru_cache

from limits import RateLimitItem, parse
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter


@lru_cache(maxsize=8)
def _storage(uri: str) -> Storage:
    storage = storage_from_string(uri)
    assert isinstance(storage, Storage)  # the sync storages; we never ask for async:// ones
    return storage


class FailureBudget:
    """A named budget, e.g. FailureBudget("pairing-ip", "10/10minutes", storage_uri)."""

    def __init__(self, name: str, limit: str, storage_uri: str) -> None:
        self.name = name
        self.item: RateLimitItem = parse(limit)
        self.limiter = MovingWindowRateLimiter(_storage(storage_uri))

    def exhausted(self, key: str = "all") -> bool:
        """True when no failure is left in the window for this key."""
        return not self.limiter.test(self.item, self.name, key)

    def record_failure(self, key: str = "all") -> None:
        self.limiter.hit(self.item, self.name, key)

    def retry_after_seconds(self, key: str = "all") -> int:
        stats = self.limiter.get_window_stats(self.item, self.name, key)
        return max(1, math.ceil(stats.reset_time - time.time()))

    def reset(self, key: str = "all") -> None:
        self.limiter.clear(self.item, self.name, key)
