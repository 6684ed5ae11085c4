"""Making webhook events due now (CONTRACT.md §12): every pending event of a partner
whose URL changed, so one wrong URL never holds a connection's events, and one event
an operator retries (`partnerlink webhooks retry EVENT_ID`)."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.problems import Conflict, NotFound
from partnerlink.webhooks.models import WebhookEvent


class UnknownEvent(NotFound):
    code = "unknown_event"
    detail = "No webhook event has this id."


class AlreadyDelivered(Conflict):
    code = "already_delivered"
    detail = "This webhook event was delivered; only failed or pending events are retried."


def pending_due_now(session: Session, partner_id: str) -> None:
    """Every pending event of the partner is due now (one being sent keeps its lease and
    is tried again at once if it fails)."""
    session.execute(
        update(WebhookEvent)
        .where(WebhookEvent.partner_id == partner_id, WebhookEvent.status == "pending")
        .values(next_attempt_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def retry_event(session: Session, event_id: str) -> WebhookEvent:
    """A failed (given up) or pending event becomes pending and due now. A given-up event
    keeps its age: should this attempt fail too, it is given up again."""
    event = session.scalar(select(WebhookEvent).where(WebhookEvent.event_id == event_id))
    if event is None:
        raise UnknownEvent(f"no webhook event has the id {event_id!r}")
    if event.status == "delivered":
        raise AlreadyDelivered(f"webhook event {event_id} was delivered; nothing to retry")
    event.status = "pending"
    event.next_attempt_at = utcnow()
    session.flush()
    return event
