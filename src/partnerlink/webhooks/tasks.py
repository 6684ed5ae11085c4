"""Delivering webhook events: at least once, in order per connection, retried for 72 hours.

A worker task claims the head of each queue (the oldest pending event of a
connection whose earlier events are all delivered or given up) with an atomic
UPDATE and a lease, like the other tasks, and hands each to a thread pool.

CONTRACT.md §12 bounds what a receiver can do to the others:
- an attempt lasts at most ATTEMPT_SECONDS from connect to the receiver's last byte
  (addresses.AttemptStream cuts off a receiver that trickles its answer), and always
  ends LEASE_MARGIN_SECONDS before its lease: no other worker claims an event while
  an attempt of it is open;
- a worker claims only as many events as it has idle threads, so a claimed event
  starts at once (its lease is not spent waiting in a queue), and at most
  PER_PARTNER_DELIVERIES of one partner are under way at once, across workers
  (counted from the live leases): one partner's slow receivers hold at most that
  many threads, and a partner with fewer under way is served first, so another
  partner's event starts within a worker poll.

The outcome is recorded only while the lease is held. Anything but a 2xx is retried
after PARTNERLINK_WEBHOOK_RETRY_SECONDS, doubling each time (with jitter, capped at
360 times the first wait: an hour by default), until 72 hours after the event, then
the event is `failed` (given up) and the queue moves on. Each attempt goes to the
partner's webhook URL as it is then (CONTRACT.md §12).
"""

from __future__ import annotations

import functools
import logging
import ssl
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpcore
import httpx
from sqlalchemy import Table, exists, func, select
from sqlalchemy.orm import Session, aliased, sessionmaker

from partnerlink import jobs
from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from partnerlink.webhooks.addresses import NonPublicAddress, PublicAddressesOnly
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.signing import signature_headers, signing_secrets

log = logging.getLogger("partnerlink.webhooks")

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
GIVE_UP_AFTER = timedelta(hours=72)
ATTEMPT_SECONDS = 10.0  # CONTRACT.md §12: from connect to the receiver's last byte
LEASE_SECONDS = 60
LEASE_MARGIN_SECONDS = 5.0  # an attempt ends this long before its lease, at the latest
POOL_THREADS = 32
PER_PARTNER_DELIVERIES = 4
MAX_BACKOFF_FACTOR = 360
# What a receiver or the network can do to a delivery; anything else is our bug.
DELIVERY_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)

_events: Table = WebhookEvent.__table__  # type: ignore[assignment]

_threads = jobs.JobThreads(POOL_THREADS, name="webhook")


@dataclass(frozen=True)
class _Claimed:
    seq: int
    event_id: str
    partner_id: str
    url: str | None  # the partner's webhook URL at the claim
    body: str
    secrets: tuple[str, ...]  # the partner's, and the one it replaced while it still signs
    attempts: int
    created_at: datetime
    lease_until: datetime


def deliver_due_webhooks(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims due events (queue heads only, as many as there are idle threads) and starts
    sending them; answers how many."""
    idle = _threads.idle()
    claimed = _claim(sessions, settings, idle) if idle > 0 else []
    for event in claimed:
        _threads.start(_deliver, sessions, settings, event)
    return len(claimed)


def wait_for_deliveries(timeout: float = 30.0) -> None:
    """Waits until every started delivery is recorded (tests, and a worker shutting down)."""
    _threads.wait(timeout)


def _candidates(session: Session, now: datetime) -> list[tuple[int, str, int]]:
    """Due queue heads as (seq, partner id, rank among the partner's heads), at most
    PER_PARTNER_DELIVERIES of each partner: a partner with a thousand connections
    waiting does not hide another partner's one event."""
    earlier = aliased(WebhookEvent)
    rank = (
        func.row_number()
        .over(partition_by=WebhookEvent.partner_id, order_by=WebhookEvent.seq)
        .label("rank")
    )
    heads = (
        select(WebhookEvent.seq, WebhookEvent.partner_id, rank)
        .where(
            WebhookEvent.status == PENDING,
            WebhookEvent.next_attempt_at <= now,
            jobs.lease_is_free(_events, now),
            ~exists(
                select(earlier.seq).where(
                    earlier.queue == WebhookEvent.queue,
                    earlier.status == PENDING,
                    earlier.seq < WebhookEvent.seq,
                )
            ),
        )
        .subquery()
    )
    rows = session.execute(
        select(heads.c.seq, heads.c.partner_id, heads.c.rank).where(
            heads.c.rank <= PER_PARTNER_DELIVERIES
        )
    ).all()
    return [(row.seq, row.partner_id, row.rank) for row in rows]


def _chosen(session: Session, now: datetime, limit: int) -> list[int]:
    """Which due heads to claim: none of a partner with PER_PARTNER_DELIVERIES under way
    (live leases, any worker's), and the partners with the fewest under way first."""
    under_way: dict[str, int] = {
        partner_id: count
        for partner_id, count in session.execute(
            select(WebhookEvent.partner_id, func.count())
            .where(WebhookEvent.status == PENDING, WebhookEvent.lease_until >= now)
            .group_by(WebhookEvent.partner_id)
        ).all()
    }
    allowed = [
        (under_way.get(partner_id, 0) + rank, seq)
        for seq, partner_id, rank in _candidates(session, now)
        if under_way.get(partner_id, 0) + rank <= PER_PARTNER_DELIVERIES
    ]
    return [seq for _, seq in sorted(allowed)[:limit]]


def _claim(sessions: sessionmaker[Session], settings: Settings, limit: int) -> list[_Claimed]:
    now = utcnow()
    with sessions.begin() as session:
        chosen = _chosen(session, now, limit)
        if not chosen:
            return []
        # Claimed only if still free: another worker's claim in between wins (its rows are
        # skipped on PostgreSQL; SQLite writes one at a time).
        rows = jobs.claim_due(
            session,
            _events,
            due=WebhookEvent.seq.in_(chosen) & (WebhookEvent.status == PENDING),
            order_by=[WebhookEvent.seq],
            limit=len(chosen),
            lease_seconds=LEASE_SECONDS,
            now=now,
            returning=[
                WebhookEvent.seq,
                WebhookEvent.event_id,
                WebhookEvent.body,
                WebhookEvent.partner_id,
                WebhookEvent.attempts,
                WebhookEvent.created_at,
            ],
        )
        if not rows:
            return []
        partners = {
            row.id: row
            for row in session.execute(
                select(
                    Partner.id,
                    Partner.webhook_url,
                    Partner.webhook_secret_nonce,
                    Partner.webhook_previous_secret_nonce,
                    Partner.webhook_previous_secret_until,
                ).where(Partner.id.in_({row.partner_id for row in rows}))
            ).all()
        }
    return [
        _Claimed(
            seq=row.seq,
            event_id=row.event_id,
            partner_id=row.partner_id,
            url=partners[row.partner_id].webhook_url,
            body=row.body,
            secrets=signing_secrets(
                settings.signing_key,
                nonce=partners[row.partner_id].webhook_secret_nonce,
                previous_nonce=partners[row.partner_id].webhook_previous_secret_nonce,
                previous_until=partners[row.partner_id].webhook_previous_secret_until,
                now=now,
            ),
            attempts=row.attempts,
            created_at=row.created_at,
            lease_until=row.lease_until,
        )
        for row in sorted(rows, key=lambda row: row.seq)
    ]


def _deliver(sessions: sessionmaker[Session], settings: Settings, event: _Claimed) -> None:
    # The attempt's own limit, or less: it must end before the lease, never after.
    seconds = min(
        ATTEMPT_SECONDS,
        (event.lease_until - utcnow()).total_seconds() - LEASE_MARGIN_SECONDS,
    )
    if seconds <= 0:  # not sent; the lease runs out and the event is claimed again
        log.warning("webhook %s: its lease ran out before the attempt began", event.event_id)
        return
    status_code: int | None = None
    error: str | None = None
    started = time.monotonic()
    try:
        if event.url is None:
            raise NonPublicAddress("the partner has no webhook URL")
        status_code = post_event(
            event.url,
            event.body.encode(),
            event.secrets,
            event_id=event.event_id,
            allow_private=settings.webhook_allow_private,
            timeout=seconds,
        )
    except NonPublicAddress as refused:
        error = f"not sent: {refused}"
    except DELIVERY_ERRORS as failure:
        error = f"{type(failure).__name__}"
        if time.monotonic() - started >= seconds:
            error = f"cut off: no whole answer within {seconds:g} s ({error})"
    try:
        _record(sessions, settings, event, status_code, error)
    except Exception:
        log.exception(
            "webhook %s: recording the delivery failed; it will be retried", event.event_id
        )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One verifying context for every delivery: loading the CA bundle costs
    milliseconds, and a context is safe to share between the pool's threads."""
    return httpx.create_ssl_context()


def post_event(
    url: str,
    body: bytes,
    secrets: Sequence[str],
    *,
    event_id: str,
    allow_private: bool,
    timeout: float = ATTEMPT_SECONDS,
) -> int:
    """POST one signed event and answer the receiver's status, all within `timeout`
    seconds (the connection is shut at the deadline whatever the receiver does). httpcore
    rather than httpx: its network backend can be given, and ours connects only to the
    addresses it has just checked (no redirects followed, no proxy from the environment)."""
    deadline = time.monotonic() + timeout
    headers = [
        (b"Content-Type", b"application/json"),
        (b"User-Agent", b"PartnerLink-Webhooks/1"),
        *signature_headers(secrets, event_id, body, int(time.time())),
    ]
    timeouts = dict.fromkeys(("connect", "read", "write", "pool"), timeout)
    with (
        httpcore.ConnectionPool(
            ssl_context=_tls_context(),
            network_backend=PublicAddressesOnly(allow_private=allow_private, deadline=deadline),
        ) as pool,
        pool.stream(
            "POST", url, headers=headers, content=body, extensions={"timeout": timeouts}
        ) as answer,
    ):
        return answer.status


def _record(
    sessions: sessionmaker[Session],
    settings: Settings,
    event: _Claimed,
    status_code: int | None,
    error: str | None,
) -> None:
    now = utcnow()
    values: dict[str, object] = {"last_status_code": status_code}
    if event.url is not None:
        values["url"] = event.url  # where the last attempt went, for the delivery log
    if status_code is not None and 200 <= status_code < 300:
        values.update(status=DELIVERED, delivered_at=now, last_error=None)
    else:
        values["last_error"] = (error or f"HTTP {status_code}")[:500]
        if jobs.gave_up(event.created_at, now, GIVE_UP_AFTER.total_seconds()):
            values["status"] = FAILED
            log.warning("webhook %s given up after %d attempts", event.event_id, event.attempts)
        else:
            first = settings.webhook_retry_seconds
            values["next_attempt_at"] = now + timedelta(
                seconds=jobs.backoff_seconds(
                    event.attempts, base=first, cap=first * MAX_BACKOFF_FACTOR
                )
            )
    with sessions.begin() as session:
        current_url = session.scalar(
            select(Partner.webhook_url).where(Partner.id == event.partner_id)
        )
        if "next_attempt_at" in values and current_url != event.url:
            values["next_attempt_at"] = now  # the URL changed meanwhile: try the new one now
        jobs.record_if_leased(
            session, _events, row_id=event.seq, lease_until=event.lease_until, values=values
        )
