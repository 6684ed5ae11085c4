"""One sync of one destination, and what it leaves on the row (CONTRACT.md §11).

- Done: `active`, `lastSyncAt` now (even with nothing to send), the error cleared, the
  next sync PARTNERLINK_AD_SYNC_SECONDS later.
- The platform is busy or away (429, 5xx, a timeout, a refused connection, an answer
  that is not its JSON): tried again with backoff, never sooner than its Retry-After;
  the status stays as it was and nothing is lost (what was sent is recorded).
- The platform refuses the credentials (401, 403, `invalid_grant`) or the target:
  `needs_attention`, `lastError` in words, and no call until new credentials or a
  sync request.
Every outcome is written only while this worker still holds the destination's lease,
and with it, in the same transaction, the sync's run (runs.py: its trigger, outcome and
its own counts) and, for a Meta audience, Meta's estimate of its size (`match_report`).

Where a sync reads: the hot standby (`PARTNERLINK_DATABASE_READ_URL`) once it has
replayed what the primary held when the sync began (db/replica.caught_up_reads), else
the primary. It must not read older data: the audience sync compares the segment with
the held rows (destination_members) that the syncs themselves write on the primary,
and the conversions sync skips the orders already sent (destination_conversions); a
standby that had not replayed the last sync's records would send them again.

Within one sync the standby stays sound although it lags this sync's own writes: the
customers are read in ascending ranges of ids (audience sync) and the orders in
ascending row ids (conversion sync), and what is written after a range is read (held
rows, their fingerprints, the orders sent) concerns only ids of ranges already read.
No later read looks at a row this sync wrote, and the lease keeps every other sync of
the destination away meanwhile. What is read after the sync (the member count) and
every write (records, counters, the basis, VACUUM) go to the primary.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db import replica
from partnerlink.db.base import utcnow
from partnerlink.destinations import queries, runs, verdicts
from partnerlink.destinations.models import ACTIVE, NEEDS_ATTENTION, Destination
from partnerlink.destinations.platform import PlatformError, holds_credential
from partnerlink.destinations.schemas import printable_ascii
from partnerlink.destinations.service import open_credentials
from partnerlink.destinations.sync import members
from partnerlink.destinations.sync.audience_sync import sync_audience
from partnerlink.destinations.sync.conversion_sync import sync_conversions
from partnerlink.destinations.sync.progress import Lease, Report
from partnerlink.destinations.sync.senders import (
    Events,
    GoogleAudience,
    MetaAudience,
    sender_for,
)
from partnerlink.jobs import LeaseLost, backoff_seconds, record_if_leased
from partnerlink.security.identifier_digests import identifier_key
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.destinations")

RETRY_CAP_SECONDS = 3600.0

# What the merchant should do, by the kind of refusal.
ADVICE = {
    "credentials": (
        "credentials_refused",
        "Connect again with a new access token or refresh token (Ad platforms page), then sync.",
    ),
    "invalid": (
        "target_refused",
        "Check the ids you gave (they must be of an account these credentials can manage); "
        "disconnect and connect again with the right ones.",
    ),
    "retry": ("platform_unavailable", "Nothing to do: PartnerLink tries again by itself."),
    # Our own failure: the merchant is told it failed, not that there is nothing to do.
    "internal": ("sync_failed", "PartnerLink tries again by itself."),
}


INTERNAL_FAILURE = "The sync failed in PartnerLink before it finished."


@dataclass(frozen=True)
class SyncResult:
    """How one destination's sync ended (logged by the worker, answered by sync_now)."""

    destination_id: str
    result: str  # synced | retry | needs_attention | lease_lost | gone


def _error(kind: str, message: str) -> dict[str, str]:
    code, advice = ADVICE[kind]
    return {"code": code, "message": f"{message} {advice}".strip()}


def _load(sessions: sessionmaker[Session], destination_id: str) -> Destination | None:
    with sessions() as session:
        destination = session.scalar(select(Destination).where(Destination.id == destination_id))
        if destination is not None:
            session.expunge(destination)
        return destination


def _record(
    sessions: sessionmaker[Session],
    lease: Lease,
    values: dict[str, Any],
    then: Callable[[Session], None] | None = None,
) -> bool:
    """Writes the outcome if the lease still holds, and then `then` in the same
    transaction (not run when the lease was lost)."""
    with sessions.begin() as session:
        recorded = record_if_leased(
            session,
            queries.destinations,
            row_id=lease.destination_id,
            lease_until=lease.until,
            values={**values, "sync_requested": False, "updated_at": utcnow()},
        )
        if recorded and then is not None:
            then(session)
        return recorded


def _run(
    sessions: sessionmaker[Session],
    settings: Settings,
    destination: Destination,
    sender: MetaAudience | GoogleAudience | Events,
    lease: Lease,
    read_sessions: sessionmaker[Session] | None,
) -> Report:
    reads = replica.caught_up_reads(sessions, read_sessions, f"destination {destination.id}")
    if isinstance(sender, MetaAudience | GoogleAudience):
        return sync_audience(
            sessions,
            destination,
            sender,
            batch=sender.batch,
            lease=lease,
            digest_key=identifier_key(settings.signing_key),
            reads=reads,
        )
    return sync_conversions(
        sessions,
        destination,
        sender,
        batch=sender.batch,
        lease=lease,
        signing_key=settings.signing_key,
        reads=reads,
    )


@dataclass(frozen=True)
class Run:
    """What the run record of this sync needs: when it began, why, and the row it
    started from (its counters are the baseline of the run's counts)."""

    destination: Destination
    started_at: datetime
    trigger: str

    def record(
        self, outcome: str | None, error: dict[str, Any] | None
    ) -> Callable[[Session], None]:
        def write(session: Session) -> None:
            runs.record_run(
                session,
                self.destination,
                started_at=self.started_at,
                trigger=self.trigger,
                outcome=outcome,
                error=error,
            )

        return write


def sync_destination(
    sessions: sessionmaker[Session],
    settings: Settings,
    destination_id: str,
    lease_until: datetime,
    http: httpx.Client,
    read_sessions: sessionmaker[Session] | None = None,
    trigger: str | None = None,
) -> SyncResult:
    """Syncs a destination this worker has claimed, and records how it went; its reads
    go to `read_sessions` (the read replica) when it has caught up (see the module doc).
    `trigger`: why it runs (runs.py), when the row cannot tell (the operator's sync)."""
    started_at = utcnow()
    lease = Lease(destination_id, lease_until)
    destination = _load(sessions, destination_id)
    if destination is None:
        return SyncResult(destination_id, "gone")
    run = Run(destination, started_at, trigger or runs.trigger_of(destination))
    credentials = open_credentials(settings.signing_key, destination)
    if credentials is None:
        message = "The stored credentials cannot be read (the service key changed)."
        _record_attention(sessions, lease, run, "credentials", message)
        return SyncResult(destination_id, "needs_attention")
    if not all(printable_ascii(value) for value in credentials.values()):
        # Stored before they were checked: no HTTP request can carry them, so every
        # retry would fail alike.
        message = "The stored credentials hold a line break, control or non-ASCII character."
        _record_attention(sessions, lease, run, "credentials", message)
        return SyncResult(destination_id, "needs_attention")
    try:
        sender = sender_for(destination, credentials, settings, http)
        report = _run(sessions, settings, destination, sender, lease, read_sessions)
    except LeaseLost:
        return SyncResult(destination_id, "lease_lost")
    except PlatformError as error:
        return _failed(sessions, settings, run, lease, error, credentials.values())
    except Exception:
        log.exception("sync of destination %s failed; will retry", destination_id)
        retry = _retry(settings, destination, "internal", INTERNAL_FAILURE, None)
        _record(sessions, lease, retry, run.record(runs.RETRY, retry["last_error"]))
        return SyncResult(destination_id, "retry")
    now = utcnow()
    values: dict[str, Any] = {
        "status": ACTIVE,
        "last_sync_at": now,
        "last_error": None,
        "attempts": 0,
        "next_attempt_at": now + timedelta(seconds=settings.ad_sync_seconds),
    }
    if destination.kind == "audience" and report.recount:  # on the primary: with its records
        with sessions() as session:
            values["members"] = members.count_members(session.connection(), destination.id)
    answer = report.as_json()
    if answer is not None:
        values["last_report"] = answer
    estimate = None
    if isinstance(sender, MetaAudience) and _estimate_due(destination, sent=answer is not None):
        estimate = _meta_estimate(sender, destination.id)
    write_run = run.record(None, None)

    def then(session: Session) -> None:
        verdicts.queue_checks(session, destination, report.requests)
        write_run(session)
        if estimate is not None:
            merge_match_report(session, destination.id, "meta", estimate)

    recorded = _record(sessions, lease, values, then)
    return SyncResult(destination_id, "synced" if recorded else "lease_lost")


# Meta's estimate of an audience's size is read after a sync that sent it rows, and at
# least this often otherwise (Meta revises it as it matches what it was sent).
META_ESTIMATE_SECONDS = 3600.0


def _estimate_due(destination: Destination, *, sent: bool) -> bool:
    if sent:
        return True
    previous = (destination.match_report or {}).get("meta")
    read_at = previous.get("readAt") if isinstance(previous, dict) else None
    if not isinstance(read_at, str):
        return True
    try:
        age = (utcnow() - datetime.fromisoformat(read_at)).total_seconds()
    except (TypeError, ValueError):
        return True
    return age >= META_ESTIMATE_SECONDS


def _meta_estimate(sender: MetaAudience, destination_id: str) -> dict[str, Any] | None:
    """Meta's estimate of the audience's size, as lastReport.meta keeps it; None when
    it could not be read (logged: the sync itself succeeded all the same)."""
    try:
        lower, upper = sender.audience_size()
    except Exception as error:  # never fails the sync
        log.warning(
            "destination %s: Meta's audience size not read (%s)",
            destination_id,
            type(error).__name__,
        )
        return None
    return {
        "approximateCountLowerBound": lower,
        "approximateCountUpperBound": upper,
        # Also under Meta's own names, as CONTRACT §15 names what lastReport.meta keeps.
        "approximate_count_lower_bound": lower,
        "approximate_count_upper_bound": upper,
        "readAt": utcnow().isoformat(),
    }


def merge_match_report(session: Session, destination_id: str, platform: str, value: Any) -> None:
    """Sets match_report[platform], keeping the other platform's key: read and written in
    one transaction, the row locked on PostgreSQL (the Google verdicts' reader writes
    "google" beside it)."""
    current = session.scalar(
        select(queries.destinations.c.match_report)
        .where(queries.destinations.c.id == destination_id)
        .with_for_update()
    )
    merged = {**(current if isinstance(current, dict) else {}), platform: value}
    session.execute(
        update(queries.destinations)
        .where(queries.destinations.c.id == destination_id)
        .values(match_report=merged)
    )


def _attention(kind: str, message: str) -> dict[str, Any]:
    return {
        "status": NEEDS_ATTENTION,
        "last_error": _error(kind, message),
        "next_attempt_at": None,
    }


def _record_attention(
    sessions: sessionmaker[Session], lease: Lease, run: Run, kind: str, message: str
) -> bool:
    values = _attention(kind, message)
    return _record(sessions, lease, values, run.record(runs.NEEDS_ATTENTION, values["last_error"]))


def _retry(
    settings: Settings,
    destination: Destination,
    kind: str,
    message: str,
    retry_after: float | None,
) -> dict[str, Any]:
    wait = backoff_seconds(
        max(1, destination.attempts),
        base=settings.ad_retry_seconds,
        cap=RETRY_CAP_SECONDS,
        retry_after=retry_after,
    )
    return {
        "last_error": _error(kind, message),
        "next_attempt_at": utcnow() + timedelta(seconds=wait),
    }


def _failed(
    sessions: sessionmaker[Session],
    settings: Settings,
    run: Run,
    lease: Lease,
    error: PlatformError,
    credentials: Iterable[str],
) -> SyncResult:
    destination = run.destination
    # The clients' messages hold only our words and known platform messages; should one
    # ever hold a piece of a credential anyway, the advice alone is stored.
    message = "" if holds_credential(error.message, credentials) else error.message
    if error.kind in ("credentials", "invalid"):
        _record_attention(sessions, lease, run, error.kind, message)
        return SyncResult(destination.id, "needs_attention")
    # `retry`; a `rejected` the client could not split is retried alike.
    values = _retry(settings, destination, "retry", message, error.retry_after)
    _record(sessions, lease, values, run.record(runs.RETRY, values["last_error"]))
    return SyncResult(destination.id, "retry")
