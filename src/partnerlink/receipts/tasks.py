"""Background sending of e-receipt SMS: claim due receipts, send, record the outcome.

Claiming is one atomic UPDATE that sets a lease (with FOR UPDATE SKIP LOCKED on
PostgreSQL, so several workers take different rows); a crashed worker's rows
are claimed again once the lease runs out. Sending happens outside any
transaction, so a slow provider never holds the database (on SQLite: its one
connection). An outcome is recorded only by the worker that still holds the
lease, so two workers never both send a receipt. The one window left: a worker
that dies between the provider's answer and recording it leaves that receipt
to be claimed again after the lease (120 s); real sends are therefore recorded
one by one, right after each answer.

The outbox provider sends nothing: its "send" is the record. Its receipts are
claimed and marked sent by one UPDATE, then logged; no lease, no second
transaction, no statement per receipt (under bench/orders.py the worker's two
transactions and per-receipt UPDATE had cost about a tenth of the server's CPU).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, String, Table, cast, literal, select, update
from sqlalchemy.orm import Session, sessionmaker

from partnerlink import jobs
from partnerlink.db.base import utcnow
from partnerlink.receipts.models import Receipt
from partnerlink.receipts.outbox import FAILED, PENDING, SENT
from partnerlink.receipts.providers import (
    Delivery,
    Message,
    OutboxProvider,
    SmsProvider,
    provider_for,
)
from partnerlink.receipts.service import stopped_receipt, suppress_stopped
from partnerlink.security.identifier_digests import identifier_key
from partnerlink.settings import Settings
from partnerlink.stores.models import Store

log = logging.getLogger("partnerlink.receipts")

BATCH_SIZE = 100
# The outbox's receipts are marked sent by one UPDATE, with no call to wait for: larger
# batches, fewer rounds of the worker under a stream of orders.
OUTBOX_BATCH_SIZE = 1000
LEASE_SECONDS = 120
MAX_ATTEMPTS = 10
BACKOFF_BASE_SECONDS = 5.0
BACKOFF_CAP_SECONDS = 3600.0
_KEY_PARAM = "?k="


@dataclass(frozen=True)
class _Claimed:
    id: int
    order_id: str
    to: str
    body: str
    link: str
    attempts: int
    lease_until: datetime


def send_due_receipts(sessions: sessionmaker[Session], settings: Settings) -> int:
    """Sends receipts that are due; returns how many it handled."""
    provider = provider_for(settings)
    digest_key = identifier_key(settings.signing_key)
    if isinstance(provider, OutboxProvider):
        return _record_in_outbox(sessions, provider, digest_key)
    # A sandbox partner's test stores: recorded as the outbox does, never sent (CONTRACT §9).
    handled = _record_in_outbox(sessions, OutboxProvider(), digest_key, test_stores=True)
    try:
        claimed = _claim_due(sessions, digest_key, limit=BATCH_SIZE)
        for receipt in claimed:
            message = Message(receipt.id, receipt.order_id, receipt.to, receipt.body)
            # Each send is recorded at once: the window in which a crash could make the
            # message go out twice stays one HTTP call wide.
            _record(sessions, [(receipt, provider.send(message))], provider)
    finally:
        provider.close()
    return handled + len(claimed)


_receipts: Table = Receipt.__table__  # type: ignore[assignment]


def _due(
    now: datetime,
    stopped: ColumnElement[bool] | None,
    *,
    test_stores: bool | None = None,
) -> ColumnElement[bool]:
    """Pending receipts due now; with `test_stores`, only those of test stores (True) or of
    real ones (False). (That no lease is held is the jobs module's part of the claim.)"""
    due = (Receipt.status == PENDING) & (Receipt.next_attempt_at <= now)
    if stopped is not None:  # a STOP that lands between suppress_stopped and this claim
        due = due & ~stopped
    if test_stores is not None:
        of_test_store = Receipt.store_id.in_(select(Store.id).where(Store.is_test.is_(True)))
        due = due & (of_test_store if test_stores else ~of_test_store)
    return due


def _record_in_outbox(
    sessions: sessionmaker[Session],
    outbox: OutboxProvider,
    digest_key: bytes,
    *,
    test_stores: bool | None = None,
) -> int:
    """Claims the due receipts and marks them sent in one statement, then logs each."""
    now = utcnow()
    with sessions.begin() as session:
        stopped = _stopped_suppressed(session, digest_key)
        # Sent by being recorded: no lease is taken, the due rows are marked sent at once.
        due = jobs.due_keys(
            _receipts,
            due=_due(now, stopped, test_stores=test_stores),
            order_by=[Receipt.next_attempt_at],
            limit=OUTBOX_BATCH_SIZE,
            now=now,
        )
        rows = session.execute(
            update(Receipt)
            .where(Receipt.id.in_(due))
            .values(
                status=SENT,
                provider=outbox.name,
                provider_message_id=literal(outbox.message_id_prefix) + cast(Receipt.id, String),
                attempts=Receipt.attempts + 1,
                sent_at=now,
                next_attempt_at=now,
                last_error=None,
                lease_until=None,
            )
            .returning(Receipt.id, Receipt.order_id, Receipt.to_phone, Receipt.body)
            .execution_options(synchronize_session=False)
        ).all()
        if not rows:
            return 0
    for row in rows:
        outbox.send(Message(row.id, row.order_id or "?", row.to_phone or "", row.body))
    return len(rows)


def _claim_due(sessions: sessionmaker[Session], digest_key: bytes, *, limit: int) -> list[_Claimed]:
    now = utcnow()
    with sessions.begin() as session:
        stopped = _stopped_suppressed(session, digest_key)
        rows = jobs.claim_due(
            session,
            _receipts,
            due=_due(now, stopped, test_stores=False),
            order_by=[Receipt.next_attempt_at],
            limit=limit,
            lease_seconds=LEASE_SECONDS,
            now=now,
            returning=[
                Receipt.id,
                Receipt.order_id,
                Receipt.to_phone,
                Receipt.body,
                Receipt.link,
                Receipt.attempts,
            ],
        )
        if not rows:
            return []
    return [
        _Claimed(
            id=row.id,
            order_id=row.order_id or "?",
            to=row.to_phone or "",
            body=row.body,
            link=row.link,
            attempts=row.attempts,
            lease_until=row.lease_until,
        )
        for row in rows
    ]


def _record(
    sessions: sessionmaker[Session],
    outcomes: list[tuple[_Claimed, Delivery]],
    provider: SmsProvider,
) -> None:
    """Writes outcomes, each only if this worker still holds the receipt's lease (a STOP
    that suppressed the receipt meanwhile ended the lease: the STOP stands)."""
    if not outcomes:
        return
    rows = [_outcome_values(receipt, delivery, provider) for receipt, delivery in outcomes]
    with sessions.begin() as session:
        for (receipt, _), values in zip(outcomes, rows, strict=True):
            jobs.record_if_leased(
                session,
                _receipts,
                row_id=receipt.id,
                lease_until=receipt.lease_until,
                values=values,
            )
    for (receipt, delivery), row in zip(outcomes, rows, strict=True):
        if row["status"] != SENT:
            log.info(
                "e-receipt for order %s: %s (%s)",
                receipt.order_id,
                "retry scheduled" if row["status"] == PENDING else row["status"],
                delivery.reason,
            )


def _outcome_values(
    receipt: _Claimed, delivery: Delivery, provider: SmsProvider
) -> dict[str, object]:
    now = utcnow()
    values: dict[str, object] = {
        "provider": provider.name,
        "provider_message_id": None,
        "next_attempt_at": now,
        "sent_at": None,
        "link": receipt.link,
        "body": receipt.body,
    }
    if delivery.outcome == "sent":
        values.update(
            status=SENT, sent_at=now, provider_message_id=delivery.message_id, last_error=None
        )
    elif delivery.outcome == "retry" and receipt.attempts < MAX_ATTEMPTS:
        delay = jobs.backoff_seconds(
            receipt.attempts,
            base=BACKOFF_BASE_SECONDS,
            cap=BACKOFF_CAP_SECONDS,
            retry_after=delivery.retry_after_seconds,
        )
        values.update(
            status=PENDING,
            next_attempt_at=now + timedelta(seconds=delay),
            last_error=delivery.reason,
        )
    else:
        values.update(status=FAILED, last_error=delivery.reason or "gave up")
    if values["status"] in (SENT, FAILED):
        # Delivered (or given up): the key in the stored text is no longer needed; the
        # page finds the receipt by the key's digest. (The outbox, recorded elsewhere,
        # keeps its messages whole: they are what `partnerlink sms list` shows.)
        values.update(_without_key(receipt))
    return values


def _without_key(receipt: _Claimed) -> dict[str, str]:
    base, found, _key = receipt.link.rpartition(_KEY_PARAM)
    if not found:
        return {}
    link = f"{base}{_KEY_PARAM}[redacted]"
    return {"link": link, "body": receipt.body.replace(receipt.link, link)}


def _stopped_suppressed(session: Session, digest_key: bytes) -> ColumnElement[bool] | None:
    """Which receipts go to a phone that replied STOP; those still due are suppressed now,
    in the claiming transaction, so none of them is ever sent."""
    stopped = stopped_receipt(session, digest_key)
    suppress_stopped(session, stopped)
    return stopped
