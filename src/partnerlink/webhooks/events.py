"""Writing webhook events, in the caller's transaction (so an event exists exactly when
its cause was committed). Only partners with a webhook URL get events.

Types (CONTRACT.md §9): `connection.revoked` {connectionId, storeId, reason:
merchant | partner | replaced}, `store.settings.updated` {storeId, greenInvoices},
`customers.upload.finished` {uploadId, storeId, status, records, created, updated,
unchanged, rejected}. A store's settings go to every partner connected to it; a
finished upload to the partner whose connection asked for its URL.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.webhooks.models import WebhookEvent

CONNECTION_REVOKED = "connection.revoked"
STORE_SETTINGS_UPDATED = "store.settings.updated"
UPLOAD_FINISHED = "customers.upload.finished"
EVENT_TYPES = (CONNECTION_REVOKED, STORE_SETTINGS_UPDATED, UPLOAD_FINISHED)

# webhooks sits below tokens and reads no connection: the caller names the receivers, the
# (connection id, partner id) pairs that tokens' `event_receivers` read (ARCHITECTURE.md).
Receivers = Sequence[tuple[str, str]]


def new_event_id() -> str:
    return "evt_" + secrets.token_urlsafe(16)


def record_event(
    session: Session,
    *,
    partner_id: str,
    connection_id: str | None,
    event_type: str,
    data: dict[str, Any],
) -> str | None:
    """Adds an event for the partner (none when it has no webhook URL); its id."""
    url = session.scalar(select(Partner.webhook_url).where(Partner.id == partner_id))
    if not url:
        return None
    now = utcnow()
    event_id = new_event_id()
    body = {
        "id": event_id,
        "type": event_type,
        "createdAt": now.isoformat().replace("+00:00", "Z"),
        "data": data,
    }
    session.add(
        WebhookEvent(
            event_id=event_id,
            partner_id=partner_id,
            queue=connection_id or partner_id,
            event_type=event_type,
            body=json.dumps(body, separators=(",", ":")),
            url=url,
            status="pending",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )
    return event_id


def connection_revoked(
    session: Session, *, connection_id: str, store_id: str, partner_id: str, reason: str
) -> None:
    record_event(
        session,
        partner_id=partner_id,
        connection_id=connection_id,
        event_type=CONNECTION_REVOKED,
        data={"connectionId": connection_id, "storeId": store_id, "reason": reason},
    )


def to_connected_partners(
    session: Session, *, receivers: Receivers, event_type: str, data: dict[str, Any]
) -> None:
    """The event, to each receiver (a store's live connections: tokens' `event_receivers`)."""
    for connection_id, partner_id in receivers:
        record_event(
            session,
            partner_id=partner_id,
            connection_id=connection_id,
            event_type=event_type,
            data=data,
        )


def upload_finished(session: Session, *, receivers: Receivers, data: dict[str, Any]) -> None:
    """To the partner whose connection asked for the upload URL, while it is connected
    (an upload from before connections were recorded: to every connected partner);
    `receivers` are tokens' `event_receivers` for the upload's store and connection."""
    to_connected_partners(session, receivers=receivers, event_type=UPLOAD_FINISHED, data=data)


def store_settings_updated(
    session: Session, *, receivers: Receivers, store_id: str, green_invoices: bool
) -> None:
    to_connected_partners(
        session,
        receivers=receivers,
        event_type=STORE_SETTINGS_UPDATED,
        data={"storeId": store_id, "greenInvoices": green_invoices},
    )
