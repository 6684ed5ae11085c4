"""The webhooks' SQL for partners reading their own deliveries (CONTRACT.md §13)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.pages import Page, keyset_page
from partnerlink.webhooks.models import WebhookEvent


def deliveries_page(
    session: Session, *, partner_id: str, limit: int, cursor: str | None
) -> Page[WebhookEvent]:
    """A page of the partner's events, oldest first, keyed by `seq`: an event written
    between two pages comes after every one already shown (ix_webhook_events_partner)."""
    return keyset_page(
        session,
        select(WebhookEvent).where(WebhookEvent.partner_id == partner_id),
        key=(WebhookEvent.seq,),
        limit=limit,
        cursor=cursor,
    )


def partner_event(session: Session, *, partner_id: str, event_id: str) -> WebhookEvent | None:
    """The partner's own event of this id; another partner's is None, as an unknown one."""
    if "\x00" in event_id:  # PostgreSQL refuses NUL in text; no event id holds one
        return None
    return session.scalar(
        select(WebhookEvent).where(
            WebhookEvent.event_id == event_id, WebhookEvent.partner_id == partner_id
        )
    )
