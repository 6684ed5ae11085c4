"""A partner replaying its own webhook deliveries (CONTRACT.md §13)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.queries import partner_event
from partnerlink.webhooks.schedule import UnknownEvent


def replay_delivery(session: Session, *, partner_id: str, event_id: str) -> WebhookEvent:
    """The partner's event becomes pending and due now, whatever its status: as
    `partnerlink webhooks retry` does (schedule.retry_event), and a delivered event is
    sent again too (the partner asks for it). It keeps its place in its connection's
    queue and its age: an event older than 72 hours has one attempt, then is given up
    again. Another partner's event answers 404 as an unknown one does."""
    event = partner_event(session, partner_id=partner_id, event_id=event_id)
    if event is None:
        raise UnknownEvent("no webhook event of yours has this id")
    event.status = "pending"
    event.next_attempt_at = utcnow()
    session.flush()
    return event
