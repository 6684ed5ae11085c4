"""Google's verdicts on what a sync sent (CONTRACT §15, "Match results").

Google answers an ingest call with a `requestId` at once and processes the rows later;
what it made of them (how many matched, which were dropped for consent, age, duplicates
or format) is read with `requestStatus:retrieve`. A sync queues one check per request it
sent (`queue_checks`, in the transaction that records the sync's outcome); the worker
(`read_verdicts`, the task "google verdicts") reads them until Google no longer answers
PROCESSING: asked again after 1 min, doubling up to 1 h, given up 24 h after the send.
Credentials Google refuses, or a request it does not know, drop the check quietly (the
sync itself reports credential trouble).

What is kept, per destination, is `Destination.match_report["google"]` (shown as
`lastReport.google`), the verdict of the latest sync's requests summed up:

- `status`: `processing` (none read yet) | `success` | `partial_success` | `failed` |
  `gave_up` (none read within 24 h);
- `kind`: the destination's (`audience`: people; `conversions`: sales);
- `sentAt`: when the sync sent them; `checkedAt`: when Google last answered;
- `requestId`: the last request read;
- `recordCount`: the records Google counted in the requests read;
- `processing`: the records of the sync's requests still being processed;
- `gaveUp`: the records Google had not finished after 24 h (with `message` saying so);
- `matchRateRange`: `{"low", "high"}` in percent (`MATCH_RATE_RANGE_20_TO_30` →
  20, 30; `LESS_THAN_20` → 0, 20), widened over the requests; null when Google gave none
  (events, or not eligible);
- `errors`, `warnings`: `[{"reason", "recordCount"}]`, Google's ProcessingErrorReason /
  ProcessingWarningReason names, summed over the requests, most first.

`match_report["meta"]` is written by others: this module reads and writes the column in
one transaction holding the destination's row, and replaces only its own key. A
verdict of an older sync than the one shown is not kept. `google_words`
(google_verdict.py, the reading of Google's answer) says the report in a store owner's
words for the console.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import Any

import httpx
from sqlalchemy import Table, delete, func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.db.base import utcnow
from partnerlink.destinations.google import GoogleClient
from partnerlink.destinations.google_oauth import GoogleCredentials
from partnerlink.destinations.google_verdict import Verdict, google_words, verdict_of, widened
from partnerlink.destinations.models import Destination, DestinationRequestCheck
from partnerlink.destinations.platform import PlatformError, platform_client
from partnerlink.destinations.service import open_credentials
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.destinations")

# google_words (google_verdict.py) is the console's to call from here too.
__all__ = ["google_words", "queue_checks", "read_verdicts", "wait_for_verdicts"]


def queue_checks(
    session: Session, destination: Destination, requests: Sequence[tuple[str, int]]
) -> None:
    """Queues the reading of each (request id, rows sent) Google answered this sync with."""
    if not requests:
        return
    now = utcnow()
    session.execute(
        insert(DestinationRequestCheck),
        [
            {
                "destination_id": destination.id,
                "profile_id": destination.profile_id,
                "request_id": request_id[:200],
                "records": records,
                "sent_at": now,
                "next_check_at": now,
                "attempts": 0,
            }
            for request_id, records in requests
        ],
    )


# -- reading them (the worker) -----------------------------------------------------------

checks: Table = DestinationRequestCheck.__table__  # type: ignore[assignment]
destinations: Table = Destination.__table__  # type: ignore[assignment]

POOL_THREADS = 2
LEASE_SECONDS = 120.0  # one retrieve call, bounded by the HTTP client's timeouts
FIRST_WAIT_SECONDS = 60.0  # PROCESSING: asked again after 1 min, doubling up to 1 h
MAX_WAIT_SECONDS = 3600.0
GIVE_UP_AFTER = timedelta(hours=24)
GAVE_UP_MESSAGE = "Google had not finished processing after 24 hours."

_threads = jobs.JobThreads(POOL_THREADS, name="google-verdicts")


@cache
def _http(timeout: float) -> httpx.Client:
    """One HTTP client (its connection pool) per timeout, shared by the reads."""
    return platform_client(connect_seconds=min(5.0, timeout), request_seconds=timeout)


def read_verdicts(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims the checks that are due (as many as the pool has idle threads) with a
    lease, and reads each on a thread of its own; answers how many it started."""
    idle = _threads.idle()
    if idle <= 0:
        return 0
    now = utcnow()
    with sessions.begin() as session:
        claimed = jobs.claim_due(
            session,
            checks,
            due=checks.c.next_check_at <= now,
            order_by=[checks.c.next_check_at],
            limit=idle,
            lease_seconds=LEASE_SECONDS,
            now=now,
            returning=[checks.c.id],
        )
    for row in claimed:
        _threads.start(_read_logged, sessions, settings, row.id, row.lease_until)
    return len(claimed)


def wait_for_verdicts(timeout: float = 60.0) -> None:
    """Waits until every read started has recorded what it found (tests, the CLI)."""
    _threads.wait(timeout)


@dataclass(frozen=True)
class _Check:
    id: int
    lease: datetime
    destination_id: str
    request_id: str
    records: int
    sent_at: datetime
    attempts: int


def _read_logged(
    sessions: sessionmaker[Session], settings: Settings, check_id: int, lease: datetime
) -> None:
    try:
        outcome = _read(sessions, settings, check_id, lease)
    except Exception:
        log.exception(
            "google verdict check %s failed; read again once its lease runs out", check_id
        )
        return
    log.info("google verdict check %s: %s", check_id, outcome)


def _read(
    sessions: sessionmaker[Session], settings: Settings, check_id: int, lease: datetime
) -> str:
    with sessions() as session:
        row = session.get(DestinationRequestCheck, check_id)
        destination = session.get(Destination, row.destination_id) if row else None
        if row is None or destination is None:
            return "gone"
        check = _Check(
            row.id,
            lease,
            row.destination_id,
            row.request_id,
            row.records,
            _utc(row.sent_at),
            row.attempts,
        )
        kind = destination.kind
        credentials = (
            open_credentials(settings.signing_key, destination)
            if destination.platform == "google"
            else None
        )
    now = utcnow()
    if now >= check.sent_at + GIVE_UP_AFTER:
        _finish(sessions, check, kind, None, now)
        return "gave up after 24 hours"
    if credentials is None:
        # Not Google's, or credentials the service can no longer open: the sync says so.
        _drop(sessions, check)
        return "dropped: no credentials to read it with"
    try:
        with GoogleClient(
            datamanager_url=settings.google_datamanager_url,
            token_url=settings.google_token_url,
            credentials=GoogleCredentials(
                client_id=credentials.get("clientId", ""),
                client_secret=credentials.get("clientSecret", ""),
                refresh_token=credentials.get("refreshToken", ""),
            ),
            client=_http(settings.ad_request_timeout_seconds),
        ) as client:
            answer = client.request_status(check.request_id)
    except PlatformError as error:
        if error.kind == "retry":
            _again(sessions, check, kind, now, error.retry_after)
            return f"asked again later ({error.message})"
        # Credentials Google no longer takes are the sync's to report (needs_attention);
        # a request Google does not know (404) has no verdict to wait for.
        _drop(sessions, check)
        return f"dropped ({error.kind}: {error.message})"
    verdict = verdict_of(answer)
    if verdict is None:
        _again(sessions, check, kind, now, None)
        return "still processing"
    _finish(sessions, check, kind, verdict, now)
    return verdict.status


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# -- what is kept (Destination.match_report["google"]) ------------------------------------


def _again(
    sessions: sessionmaker[Session],
    check: _Check,
    kind: str,
    now: datetime,
    retry_after: float | None,
) -> None:
    """Still PROCESSING (or Google busy): asked again with backoff, never past the 24 h
    when it is given up; the first such answer of a sync says so in the report."""
    wait = jobs.backoff_seconds(
        check.attempts, base=FIRST_WAIT_SECONDS, cap=MAX_WAIT_SECONDS, retry_after=retry_after
    )
    due = min(now + timedelta(seconds=wait), check.sent_at + GIVE_UP_AFTER)
    with sessions.begin() as session:
        destination = _locked(session, check.destination_id)
        if not jobs.record_if_leased(
            session, checks, row_id=check.id, lease_until=check.lease, values={"next_check_at": due}
        ):
            return
        current = _google_report(destination)
        if destination is not None and (current is None or _sent_at(current) < check.sent_at):
            report = _fresh(check.sent_at, kind)
            report["processing"] = _pending(session, check)
            report["checkedAt"] = now.isoformat()
            _store(session, destination, report)


def _drop(sessions: sessionmaker[Session], check: _Check) -> None:
    with sessions.begin() as session:
        session.execute(
            delete(checks).where(checks.c.id == check.id, checks.c.lease_until == check.lease)
        )


def _finish(
    sessions: sessionmaker[Session],
    check: _Check,
    kind: str,
    verdict: Verdict | None,
    now: datetime,
) -> None:
    """Deletes the check and merges its verdict (None: given up) into the destination's
    report of the sync that sent it, in one transaction holding the destination's row
    (SELECT ... FOR UPDATE on PostgreSQL), so that `match_report["meta"]`, written by
    others, is kept."""
    with sessions.begin() as session:
        destination = _locked(session, check.destination_id)
        gone = session.execute(
            delete(checks)
            .where(checks.c.id == check.id, checks.c.lease_until == check.lease)
            .returning(checks.c.id)
        ).first()
        if gone is None or destination is None:
            return  # the lease ran out and another worker took it, or no destination
        current = _google_report(destination)
        if current is not None and _sent_at(current) > check.sent_at:
            return  # a later sync's verdicts are shown already
        report = (
            dict(current)
            if current is not None and _sent_at(current) == check.sent_at
            else _fresh(check.sent_at, kind)
        )
        if verdict is None:
            report["gaveUp"] = int(report.get("gaveUp") or 0) + check.records
            report["message"] = GAVE_UP_MESSAGE
            if report["status"] == "processing":
                report["status"] = "gave_up"
        else:
            _merge(report, check.request_id, verdict)
        report["processing"] = _pending(session, check)
        report["checkedAt"] = now.isoformat()
        _store(session, destination, report)


def _merge(report: dict[str, Any], request_id: str, verdict: Verdict) -> None:
    known = report["status"]
    report["status"] = (
        verdict.status
        if known in ("processing", "gave_up") or known == verdict.status
        else "partial_success"
    )
    report["requestId"] = request_id
    report["recordCount"] = int(report.get("recordCount") or 0) + verdict.records
    held = report.get("matchRateRange")
    rate = widened((held["low"], held["high"]) if held else None, verdict.match_rate)
    report["matchRateRange"] = {"low": rate[0], "high": rate[1]} if rate else None
    for key, counts in (("errors", verdict.errors), ("warnings", verdict.warnings)):
        summed = {item["reason"]: item["recordCount"] for item in report.get(key) or []}
        for reason, count in counts.items():
            summed[reason] = summed.get(reason, 0) + count
        report[key] = [
            {"reason": reason, "recordCount": count}
            for reason, count in sorted(summed.items(), key=lambda pair: -pair[1])
        ]


def _fresh(sent_at: datetime, kind: str) -> dict[str, Any]:
    return {
        "status": "processing",
        "kind": kind,
        "sentAt": sent_at.isoformat(),
        "requestId": None,
        "recordCount": 0,
        "processing": 0,
        "gaveUp": 0,
        "matchRateRange": None,
        "errors": [],
        "warnings": [],
        "message": None,
        "checkedAt": None,
    }


def _locked(session: Session, destination_id: str) -> Destination | None:
    return session.scalars(
        select(Destination).where(Destination.id == destination_id).with_for_update()
    ).one_or_none()


def _google_report(destination: Destination | None) -> dict[str, Any] | None:
    found = (destination.match_report or {}).get("google") if destination else None
    return found if isinstance(found, dict) and found.get("sentAt") else None


def _sent_at(report: dict[str, Any]) -> datetime:
    return _utc(datetime.fromisoformat(str(report["sentAt"])))


def _pending(session: Session, check: _Check) -> int:
    """The rows of the sync's requests whose verdict is still to read (this one
    included while its check is kept)."""
    pending = session.scalar(
        select(func.coalesce(func.sum(checks.c.records), 0)).where(
            checks.c.destination_id == check.destination_id, checks.c.sent_at == check.sent_at
        )
    )
    return int(pending or 0)


def _store(session: Session, destination: Destination, report: dict[str, Any]) -> None:
    """A new dict (the JSON column is not mutation-tracked), every other key kept."""
    destination.match_report = {**(destination.match_report or {}), "google": report}
    session.flush()
