"""The webhooks' reads: partners' own deliveries (CONTRACT.md §13), and the operator's
delivery log (`partnerlink webhooks list`)."""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from partnerlink.db.pages import Page, keyset_page
from partnerlink.partners.models import Partner
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


def delivery_log(
    session: Session, *, failed_only: bool, limit: int
) -> list[tuple[WebhookEvent, str]]:
    """The newest events, each with its partner's client id; `failed_only`: those given
    up, or pending after a failed attempt."""
    query = (
        select(WebhookEvent, Partner.client_id)
        .join(Partner, Partner.id == WebhookEvent.partner_id)
        .order_by(WebhookEvent.seq.desc())
        .limit(limit)
    )
    if failed_only:
        query = query.where(
            or_(
                WebhookEvent.status == "failed",
                (WebhookEvent.status == "pending") & (WebhookEvent.attempts > 0),
            )
        )
    return [(event, client_id) for event, client_id in session.execute(query)]
