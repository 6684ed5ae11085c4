"""The delivery log `partnerlink webhooks list` shows."""

from __future__ import annotations

from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from partnerlink.partners.models import Partner
from partnerlink.webhooks.models import WebhookEvent


def delivery_log(session: Session, *, failed_only: bool, limit: int) -> list[dict[str, Any]]:
    query = (
        select(WebhookEvent, Partner.client_id)
        .join(Partner, Partner.id == WebhookEvent.partner_id)
        .order_by(WebhookEvent.seq.desc())
        .limit(limit)
    )
    if failed_only:  # given up, or pending after a failed attempt
        query = query.where(
            or_(
                WebhookEvent.status == "failed",
                (WebhookEvent.status == "pending") & (WebhookEvent.attempts > 0),
            )
        )
    return [
        {
            "eventId": event.event_id,
            "type": event.event_type,
            "clientId": client_id,
            "url": event.url,
            "status": event.status,
            "attempts": event.attempts,
            "lastStatusCode": event.last_status_code,
            "lastError": event.last_error,
            "createdAt": event.created_at.isoformat(),
            "nextAttemptAt": event.next_attempt_at.isoformat()
            if event.status == "pending"
            else None,
            "deliveredAt": event.delivered_at.isoformat() if event.delivered_at else None,
        }
        for event, client_id in session.execute(query)
    ]
