"""SPEC's handling rules, written once for both clients: what to do with an answer.

- 2xx: done.
- 403 with a refresh token not yet used for this call: refresh once, then send again;
  a second 403 raises.
- 500, or no answer: retry with exponential backoff and full jitter (never sooner than
  a `Retry-After`), up to `attempts` tries in all; then raise.
- 400, 404, 410 (and anything else): raise at once, never retried.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from enum import Enum


class Next(Enum):
    DONE = "done"
    REFRESH = "refresh"
    RETRY = "retry"
    RAISE = "raise"


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4
    base_seconds: float = 0.5
    cap_seconds: float = 8.0

    def next_step(
        self, status: int | None, *, attempt: int, can_refresh: bool, refreshed: bool
    ) -> Next:
        """`status` None: no answer (connection error). `attempt` counts from 1."""
        if status is not None and 200 <= status < 300:
            return Next.DONE
        if status == 403 and can_refresh and not refreshed:
            return Next.REFRESH
        if (status is None or status == 500) and attempt < self.attempts:
            return Next.RETRY
        return Next.RAISE

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Full jitter: a random wait up to base * 2^(attempt-1), capped."""
        ceiling = min(self.cap_seconds, self.base_seconds * 2 ** (attempt - 1))
        return max(random.uniform(0, ceiling), retry_after or 0.0)
