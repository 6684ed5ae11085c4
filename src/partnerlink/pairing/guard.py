"""Brute-force protection for pairing-code redemption.

A code is six digits, so guessing is the threat. Failed redemptions (404 and
410) are counted per client address and for all addresses together; once a
budget is spent, every redemption it covers answers 429, valid code or not, so
a locked-out guesser learns nothing more.
"""

from __future__ import annotations

import logging
import threading
import uuid
from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, Request
from prometheus_client import Counter

from partnerlink.deps import SettingsDep
from partnerlink.problems import RateLimited
from partnerlink.security.client_address import client_address
from partnerlink.security.rate_limit import FailureBudget
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.pairing")

LOCKOUTS = Counter(
    "partnerlink_pairing_lockouts_total",
    "Times a pairing failure budget was spent, by scope",
    ["scope"],
)
for _scope in ("ip", "global"):  # exported at 0 from the start, so alerts can use rate()
    LOCKOUTS.labels(scope=_scope)
GLOBAL_KEY = "all"

_build_lock = threading.Lock()


class RedemptionGuard:
    """The two failure budgets of one app, built once from its settings."""

    def __init__(self, settings: Settings) -> None:
        storage = settings.rate_limit_storage
        # A memory storage is cached per URI for the whole process; several apps
        # in one process (tests) must not share counters, so each gets its own
        # names there. Shared storages (Redis) keep stable names across processes.
        prefix = f"pairing-{uuid.uuid4().hex[:12]}" if storage.startswith("memory") else "pairing"
        self.per_address = FailureBudget(f"{prefix}-ip", settings.pairing_failures_per_ip, storage)
        self.everyone = FailureBudget(f"{prefix}-global", settings.pairing_failures_global, storage)

    def ensure_allowed(self, address: str) -> None:
        """Raises RateLimited (429 with Retry-After) while either budget is spent."""
        if self.everyone.exhausted(GLOBAL_KEY):
            raise RateLimited(self.everyone.retry_after_seconds(GLOBAL_KEY))
        if self.per_address.exhausted(address):
            raise RateLimited(self.per_address.retry_after_seconds(address))

    def record_failure(self, address: str) -> None:
        """Counts one failed redemption; reports a budget the moment it is spent."""
        self.per_address.record_failure(address)
        self.everyone.record_failure(GLOBAL_KEY)
        if self.per_address.exhausted(address):
            _report_lockout("ip", address)
        if self.everyone.exhausted(GLOBAL_KEY):
            _report_lockout("global", None)

    def reset(self, address: str) -> None:
        self.per_address.reset(address)
        self.everyone.reset(GLOBAL_KEY)


def _report_lockout(scope: str, address: str | None) -> None:
    LOCKOUTS.labels(scope=scope).inc()
    # Never the code values: only who is locked out.
    if address is None:
        log.warning("pairing redemptions locked out for every address: global failure budget spent")
    else:
        log.warning(
            "pairing redemptions locked out for %s: per-address failure budget spent", address
        )


def redemption_guard(request: Request) -> RedemptionGuard:
    """The app's guard, built on first use and kept on app.state."""
    guard: RedemptionGuard | None = getattr(request.app.state, "pairing_guard", None)
    if guard is None:
        with _build_lock:
            guard = getattr(request.app.state, "pairing_guard", None)
            if guard is None:
                guard = RedemptionGuard(request.app.state.settings)
                request.app.state.pairing_guard = guard
    return guard


@dataclass(frozen=True)
class GuardedClient:
    """A redemption attempt already let through the guard, and who made it."""

    guard: RedemptionGuard
    address: str

    def record_failure(self) -> None:
        self.guard.record_failure(self.address)


def admitted_client(request: Request, settings: SettingsDep) -> GuardedClient:
    """Runs before the body is read, so a locked-out address gets 429 for any body."""
    guard = redemption_guard(request)
    address = client_address(request, settings.trusted_proxy_set)
    guard.ensure_allowed(address)
    return GuardedClient(guard, address)


AdmittedClient = Annotated[GuardedClient, Depends(admitted_client)]
