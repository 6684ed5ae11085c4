"""Delivering webhook events: at least once, in order per connection, retried for 72 hours.

A worker task claims the head of each queue (the oldest pending event of a
connection whose earlier events are all delivered or given up) with an atomic
UPDATE and a lease, like the other tasks, and hands each to a small thread pool:
one receiver that hangs holds one thread for at most the timeout, never the
worker loop or another partner's deliveries. The outcome is recorded only while
the lease is held. Anything but a 2xx is retried after
PARTNERLINK_WEBHOOK_RETRY_SECONDS, doubling each time (with jitter, capped at
360 times the first wait: an hour by default), until 72 hours after the event,
then the event is `failed` (given up) and the queue moves on.
"""

from __future__ import annotations

import functools
import logging
import random
import ssl
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timedelta

import httpcore
import httpx
from sqlalchemy import exists, select, update
from sqlalchemy.orm import Session, aliased, sessionmaker

from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from partnerlink.webhooks.addresses import NonPublicAddress, PublicAddressesOnly
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.signing import signature_header, webhook_secret

log = logging.getLogger("partnerlink.webhooks")

PENDING, DELIVERED, FAILED = "pending", "delivered", "failed"
GIVE_UP_AFTER = timedelta(hours=72)
TIMEOUT_SECONDS = 10.0
LEASE_SECONDS = 60  # well past the timeout: a claimed event is never sent twice at once
CLAIM_LIMIT = 32
POOL_THREADS = 8
MAX_BACKOFF_FACTOR = 360
# What a receiver or the network can do to a delivery; anything else is our bug.
DELIVERY_ERRORS = (
    httpcore.TimeoutException,
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
)

_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_in_flight: set[Future[None]] = set()


@dataclass(frozen=True)
class _Claimed:
    seq: int
    event_id: str
    url: str
    body: str
    secret: str
    attempts: int
    created_at: datetime
    lease_until: datetime


def deliver_due_webhooks(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Claims due events (queue heads only) and starts sending them; answers how many."""
    claimed = _claim(sessions, settings)
    pool = _shared_pool()
    for event in claimed:
        future = pool.submit(_deliver, sessions, settings, event)
        with _pool_lock:
            _in_flight.add(future)
        future.add_done_callback(_forget)
    return len(claimed)


def wait_for_deliveries(timeout: float = 30.0) -> None:
    """Waits until every started delivery is recorded (tests, and a worker shutting down)."""
    with _pool_lock:
        pending = set(_in_flight)
    wait(pending, timeout=timeout)


def _shared_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="webhook")
        return _pool


def _forget(future: Future[None]) -> None:
    with _pool_lock:
        _in_flight.discard(future)


def _claim(sessions: sessionmaker[Session], settings: Settings) -> list[_Claimed]:
    now = utcnow()
    lease_until = now + timedelta(seconds=LEASE_SECONDS)
    earlier = aliased(WebhookEvent)
    heads = (
        select(WebhookEvent.seq)
        .where(
            WebhookEvent.status == PENDING,
            WebhookEvent.next_attempt_at <= now,
            (WebhookEvent.lease_until.is_(None)) | (WebhookEvent.lease_until < now),
            ~exists(
                select(earlier.seq).where(
                    earlier.queue == WebhookEvent.queue,
                    earlier.status == PENDING,
                    earlier.seq < WebhookEvent.seq,
                )
            ),
        )
        .order_by(WebhookEvent.seq)
        .limit(CLAIM_LIMIT)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    with sessions.begin() as session:
        rows = session.execute(
            update(WebhookEvent)
            .where(WebhookEvent.seq.in_(heads))
            .values(lease_until=lease_until, attempts=WebhookEvent.attempts + 1)
            .returning(
                WebhookEvent.seq,
                WebhookEvent.event_id,
                WebhookEvent.url,
                WebhookEvent.body,
                WebhookEvent.partner_id,
                WebhookEvent.attempts,
                WebhookEvent.created_at,
            )
            .execution_options(synchronize_session=False)
        ).all()
        if not rows:
            return []
        nonces = dict(
            session.execute(
                select(Partner.id, Partner.webhook_secret_nonce).where(
                    Partner.id.in_({row.partner_id for row in rows})
                )
            ).all()
        )
    return [
        _Claimed(
            seq=row.seq,
            event_id=row.event_id,
            url=row.url,
            body=row.body,
            secret=webhook_secret(settings.signing_key, nonces.get(row.partner_id) or ""),
            attempts=row.attempts,
            created_at=row.created_at,
            lease_until=lease_until,
        )
        for row in rows
    ]


def _deliver(sessions: sessionmaker[Session], settings: Settings, event: _Claimed) -> None:
    status_code: int | None = None
    error: str | None = None
    try:
        status_code = post_event(
            event.url,
            event.body.encode(),
            event.secret,
            allow_private=settings.webhook_allow_private,
        )
    except NonPublicAddress as refused:
        error = f"not sent: {refused}"
    except DELIVERY_ERRORS as failure:
        error = f"{type(failure).__name__}"
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
    url: str, body: bytes, secret: str, *, allow_private: bool, timeout: float = TIMEOUT_SECONDS
) -> int:
    """POST one signed event and answer the receiver's status. httpcore rather than
    httpx: its network backend can be given, and ours connects only to the addresses it
    has just checked (no redirects followed, no proxy from the environment)."""
    headers = [
        (b"Content-Type", b"application/json"),
        (b"User-Agent", b"PartnerLink-Webhooks/1"),
        (b"PartnerLink-Signature", signature_header(secret, body, int(time.time())).encode()),
    ]
    timeouts = dict.fromkeys(("connect", "read", "write", "pool"), timeout)
    with (
        httpcore.ConnectionPool(
            ssl_context=_tls_context(),
            network_backend=PublicAddressesOnly(allow_private=allow_private),
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
    values: dict[str, object] = {"lease_until": None, "last_status_code": status_code}
    if status_code is not None and 200 <= status_code < 300:
        values.update(status=DELIVERED, delivered_at=now, last_error=None)
    else:
        values["last_error"] = (error or f"HTTP {status_code}")[:500]
        if now >= event.created_at + GIVE_UP_AFTER:
            values["status"] = FAILED
            log.warning("webhook %s given up after %d attempts", event.event_id, event.attempts)
        else:
            values["next_attempt_at"] = now + timedelta(
                seconds=backoff_seconds(settings.webhook_retry_seconds, event.attempts)
            )
    with sessions.begin() as session:
        session.execute(
            update(WebhookEvent)
            .where(WebhookEvent.seq == event.seq, WebhookEvent.lease_until == event.lease_until)
            .values(**values)
            .execution_options(synchronize_session=False)
        )


def backoff_seconds(first: float, attempts: int) -> float:
    """The wait after the n-th failed attempt: first, then doubling, plus up to a quarter
    of jitter so that receivers coming back are not hit by every sender at once."""
    delay = min(first * MAX_BACKOFF_FACTOR, first * 2 ** max(0, attempts - 1))
    return delay + random.uniform(0, delay / 4)
