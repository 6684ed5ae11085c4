"""Failure budgets for anything that can be guessed (pairing codes, merchant passwords).

Counters live in a `limits` storage: memory for one process, Redis
(`PARTNERLINK_RATE_LIMIT_STORAGE=redis://...`) when several processes serve.
Only failures are counted, so honest traffic is never slowed; once a budget is
spent, every attempt under that key answers 429 until the window moves on.

When the storage cannot be reached (Redis stopped, the network gone), every
budget fails closed: it reads as spent, so each attempt it guards answers 429
with a short Retry-After, and no guess goes uncounted. One warning line says so
(at most every LOG_EVERY_SECONDS per budget), the counter
`partnerlink_rate_limit_storage_errors_total` counts the refusals, and one line
says when the storage is back. Reconnecting is the Redis client's own: the next
attempt after Redis returns succeeds.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from functools import lru_cache

from limits import RateLimitItem, parse
from limits.errors import StorageError
from limits.storage import Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from prometheus_client import Counter

log = logging.getLogger("partnerlink.security")

STORAGE_ERRORS = Counter(
    "partnerlink_rate_limit_storage_errors_total",
    "Attempts refused (failing closed) because the rate-limit storage could not be reached",
    ["budget"],
)
LOG_EVERY_SECONDS = 30.0
# While the storage is away: how long a refused client is told to wait.
UNREACHABLE_RETRY_AFTER_SECONDS = 5
# A Redis that does not answer must not hold a request for long.
REDIS_TIMEOUT_SECONDS = 1.0


@lru_cache(maxsize=8)
def shared_storage(uri: str) -> Storage:
    """The `limits` storage at `uri`, one per process (memory, or Redis shared by all)."""
    options: dict[str, float] = {}
    if uri.startswith(("redis://", "rediss://", "redis+")):
        options = {
            "socket_timeout": REDIS_TIMEOUT_SECONDS,
            "socket_connect_timeout": REDIS_TIMEOUT_SECONDS,
        }
    storage = storage_from_string(uri, wrap_exceptions=True, **options)
    assert isinstance(storage, Storage)  # the sync storages; we never ask for async:// ones
    return storage


class FailureBudget:
    """A named budget, e.g. FailureBudget("pairing-ip", "10/10minutes", storage_uri)."""

    def __init__(self, name: str, limit: str, storage_uri: str) -> None:
        self.name = name
        self.item: RateLimitItem = parse(limit)
        self.limiter = MovingWindowRateLimiter(shared_storage(storage_uri))
        self._lock = threading.Lock()
        self._unreachable_since: float | None = None
        self._last_warning = 0.0
        STORAGE_ERRORS.labels(budget=name)  # exported at 0, so alerts can use rate()

    def exhausted(self, key: str = "all") -> bool:
        """True when no failure is left in the window for this key, or when the storage
        cannot say (fail closed)."""
        try:
            allowed = self.limiter.test(self.item, self.name, key)
        except StorageError as error:
            self._unreachable(error)
            return True
        self._reachable()
        return not allowed

    def record_failure(self, key: str = "all") -> None:
        try:
            self.limiter.hit(self.item, self.name, key)
        except StorageError as error:
            self._unreachable(error)
        else:
            self._reachable()

    def retry_after_seconds(self, key: str = "all") -> int:
        if self._unreachable_since is not None:
            return UNREACHABLE_RETRY_AFTER_SECONDS
        try:
            stats = self.limiter.get_window_stats(self.item, self.name, key)
        except StorageError as error:
            self._unreachable(error)
            return UNREACHABLE_RETRY_AFTER_SECONDS
        return max(1, math.ceil(stats.reset_time - time.time()))

    def reset(self, key: str = "all") -> None:
        try:
            self.limiter.clear(self.item, self.name, key)
        except StorageError as error:
            self._unreachable(error)

    def _unreachable(self, error: StorageError) -> None:
        STORAGE_ERRORS.labels(budget=self.name).inc()
        now = time.monotonic()
        with self._lock:
            if self._unreachable_since is None:
                self._unreachable_since = now
            due = now - self._last_warning >= LOG_EVERY_SECONDS
            if due:
                self._last_warning = now
        if due:
            log.warning(
                "rate-limit storage unreachable (%s): failing closed, every attempt guarded"
                " by the %s budget answers 429 until it is back",
                type(getattr(error, "storage_error", error)).__name__,
                self.name,
            )

    def _reachable(self) -> None:
        if self._unreachable_since is None:
            return
        with self._lock:
            since, self._unreachable_since = self._unreachable_since, None
            self._last_warning = 0.0
        if since is not None:
            log.warning(
                "rate-limit storage reachable again: the %s budget counts again after %.0f s",
                self.name,
                time.monotonic() - since,
            )
