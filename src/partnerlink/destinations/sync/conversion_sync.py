"""Sending a conversions destination its eligible orders, each once (CONTRACT.md §11).

The orders not yet sent are read in row-id order a platform request's worth at a time;
once the platform took a request, its orders are recorded as sent (with the counters,
and the lease renewed) in one transaction. An order's event id is a keyed digest of
its row id: the same on every attempt, different for two partners' equal `orderId`s,
and telling the platform nothing about our ids.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.base import utcnow
from partnerlink.destinations import queries
from partnerlink.destinations.identifiers import Identity
from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync.progress import Lease, Report
from partnerlink.destinations.sync.senders import EventSender, Sale
from partnerlink.kit.currencies import minor_units
from partnerlink.kit.digests import hmac_sha256
from partnerlink.security.secrets import sign

_KEY_CONTEXT = "ad-platform-event-id-key:"


def event_key(signing_key: bytes) -> bytes:
    """The event ids' key, derived from the service key."""
    return sign(signing_key, _KEY_CONTEXT).encode()


def event_id(key: bytes, order_row_id: int) -> str:
    """32 hex digits, stable for the order's row."""
    return hmac_sha256(key, f"order:{order_row_id}".encode()).hex()[:32]


def major_units(price: int, currency: str) -> float | int:
    digits = minor_units(currency)
    if digits == 0:
        return int(price)
    return float(Decimal(int(price)).scaleb(-digits))


def _sale(key: bytes, row: Any) -> Sale:
    return Sale(
        event_id=event_id(key, int(row.id)),
        order_id=row.order_id,
        created_at=row.ordered_at,
        value=major_units(row.order_price, row.order_currency),
        currency=row.order_currency,
        identity=Identity(
            email=row.email,
            phone=row.phone,
            first_name=row.first,
            last_name=row.last,
            city=row.city,
            country=row.country,
            postal_code=row.postal_code,
        ),
    )


def sync_conversions(
    sessions: sessionmaker[Session],
    destination: Destination,
    sender: EventSender,
    *,
    batch: int,
    lease: Lease,
    signing_key: bytes,
    reads: sessionmaker[Session] | None = None,
) -> Report:
    """`reads` (the read replica once caught up, see engine.py) reads the orders due; the
    records go to `sessions`, the primary.

    While a request is out and then recorded (on a thread of its own: its time is mostly
    the platform's, then the database's), this thread reads the next orders and makes
    their events (hashing their buyers' identifiers). One request at a time: the next
    goes once the one before is recorded, so a failure stops the sync with every request
    the platform took recorded."""
    reads = reads or sessions
    report = Report()
    key = event_key(signing_key)
    now = utcnow()

    def send_and_record(events: list[dict[str, Any]], order_ids: list[int]) -> None:
        sent = sender.post(events)
        with sessions.begin() as session:
            connection = session.connection()
            queries.remember_conversions(
                connection, destination.id, destination.profile_id, order_ids, utcnow()
            )
            queries.add_to_counters(
                connection,
                destination.id,
                sent_events=sent.taken - sent.rejected,
                sent_rejected=sent.rejected,
            )
            lease.renew(session)
        report.add(sent.report)

    after = 0
    out: Future[None] | None = None
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="conversions-send") as caller:
        while True:
            with reads() as session:
                rows = queries.conversions_due(
                    session.connection(),
                    destination_id=destination.id,
                    profile_id=destination.profile_id,
                    now=now,
                    after=after,
                    limit=batch,
                )
            events = sender.events([_sale(key, row) for row in rows])
            if out is not None:
                out.result()  # the request before, recorded (or its failure raised)
                out = None
            if not rows:
                return report
            out = caller.submit(send_and_record, events, [int(row.id) for row in rows])
            after = int(rows[-1].id)
