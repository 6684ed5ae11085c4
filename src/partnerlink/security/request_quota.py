"""Requests per minute per partner (CONTRACT.md §13), counted cheaply and shared.

A fixed window of one minute (aligned to the clock, so every process agrees on it and
`RateLimit`'s `t` is the same everywhere). Counting a request is a dictionary update in
memory; the count goes to the shared `limits` storage (PARTNERLINK_RATE_LIMIT_STORAGE,
Redis when several processes serve, as the pairing budgets use) in one INCRBY per
partner every 1% of the quota or every SYNC_SECONDS, and at every request once the
partner is within 1% of its quota, so the hot order path pays a round trip about once per
hundred requests and never more than a few times a second. Several processes may
together let through a little more than the quota (up to 1% per process) before they see
each other's counts: the quota guards capacity, not a secret.

When the storage cannot be reached, each process counts on alone (fails open): a
partner's honest traffic is never refused for our own outage. One warning says so.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass

from limits.errors import StorageError

from partnerlink.security.rate_limit import shared_storage

log = logging.getLogger("partnerlink.security")

WINDOW_SECONDS = 60
SYNC_SECONDS = 0.5
LOG_EVERY_SECONDS = 30.0
# Counters of past windows are dropped when this many partners are counted at once.
MAX_COUNTERS = 100_000


@dataclass(slots=True)
class Verdict:
    allowed: bool
    remaining: int
    reset_seconds: int  # until the window ends: RateLimit's `t`, a refusal's Retry-After


@dataclass(slots=True)
class _Counter:
    window: int
    known: int = 0  # the shared count at the last sync (ours included)
    pending: int = 0  # counted here since
    synced_at: float = 0.0


class RequestQuota:
    """One app's counters; `name` prefixes the shared keys."""

    def __init__(self, name: str, storage_uri: str) -> None:
        self.name = name
        self.storage = shared_storage(storage_uri)
        self.counters: dict[str, _Counter] = {}
        self._last_warning = 0.0

    def count(self, partner_id: str, quota: int, now: float | None = None) -> Verdict:
        """Counts one request of the partner; whether it is within `quota` this minute."""
        now = time.time() if now is None else now
        window = int(now // WINDOW_SECONDS)
        counter = self.counters.get(partner_id)
        if counter is None or counter.window != window:
            if len(self.counters) >= MAX_COUNTERS:
                self.counters.clear()
            counter = self.counters[partner_id] = _Counter(window, synced_at=now)
        counter.pending += 1
        step = max(1, quota // 100)
        used = counter.known + counter.pending
        if (
            counter.pending >= step
            or now - counter.synced_at >= SYNC_SECONDS
            or used + step > quota
        ):
            used = self._sync(partner_id, counter, now)
        reset = max(1, math.ceil((window + 1) * WINDOW_SECONDS - now))
        return Verdict(used <= quota, max(0, quota - used), reset)

    def give_back(self, partner_id: str, now: float | None = None) -> None:
        """Takes back a request counted this window that turned out to name nobody (its
        token was revoked since it was known): it goes to the shared count at the next sync."""
        now = time.time() if now is None else now
        counter = self.counters.get(partner_id)
        if counter is not None and counter.window == int(now // WINDOW_SECONDS):
            counter.pending -= 1

    def _sync(self, partner_id: str, counter: _Counter, now: float) -> int:
        key = f"{self.name}/{partner_id}/{counter.window}"
        try:
            # Kept two windows: a process whose clock lags a little still finds it.
            total = self.storage.incr(key, 2 * WINDOW_SECONDS, amount=counter.pending)
        except StorageError as error:
            self._warn(error, now)
            counter.known += counter.pending
        else:
            counter.known = int(total)
        counter.pending = 0
        counter.synced_at = now
        return counter.known

    def _warn(self, error: StorageError, now: float) -> None:
        if now - self._last_warning < LOG_EVERY_SECONDS:
            return
        self._last_warning = now
        log.warning(
            "rate-limit storage unreachable (%s): partner quotas are counted per process"
            " until it is back",
            type(getattr(error, "storage_error", error)).__name__,
        )
