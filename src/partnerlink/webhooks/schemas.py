"""The partner API's webhook delivery replies (CONTRACT.md §13), and the operator's
delivery log (`partnerlink webhooks list`), built here."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from partnerlink.db.pages import Page
from partnerlink.webhooks.models import WebhookEvent


class DeliveryOut(BaseModel):
    eventId: str
    type: str
    status: Literal["pending", "delivered", "failed"] = Field(
        description="`failed`: given up (72 hours of retries); a replay makes it pending again."
    )
    attempts: int
    lastResponseStatus: int | None = Field(
        description="Your receiver's HTTP status at the last attempt; null before any answer."
    )
    nextAttemptAt: str | None = Field(description="When it is tried next; null unless pending.")


class DeliveryList(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={
            "examples": [
                {
                    "deliveries": [
                        {
                            "eventId": "evt_3q2Xr9YV0kS1mZpA7bCdEf",
                            "type": "store.settings.updated",
                            "status": "pending",
                            "attempts": 2,
                            "lastResponseStatus": 503,
                            "nextAttemptAt": "2026-11-24T09:12:23.120Z",
                        }
                    ],
                    "nextCursor": None,
                }
            ]
        }
    )

    deliveries: list[DeliveryOut]
    nextCursor: str | None = Field(
        description="Pass as `cursor` for the next page; null on the last page."
    )


class Replayed(BaseModel):
    model_config = ConfigDict(
        json_schema_extra={"examples": [{"eventId": "evt_3q2Xr9YV0kS1mZpA7bCdEf"}]}
    )

    eventId: str


def _timestamp(value: datetime) -> str:
    """ISO-8601 in UTC with milliseconds and `Z`, as every partner API time."""
    return value.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delivery_list(page: Page[WebhookEvent]) -> DeliveryList:
    return DeliveryList(
        deliveries=[
            DeliveryOut(
                eventId=event.event_id,
                type=event.event_type,
                status=event.status,
                attempts=event.attempts,
                lastResponseStatus=event.last_status_code,
                nextAttemptAt=_timestamp(event.next_attempt_at)
                if event.status == "pending"
                else None,
            )
            for event in page.items
        ],
        nextCursor=page.next_cursor,
    )


def delivery_log_json(rows: Sequence[tuple[WebhookEvent, str]]) -> list[dict[str, Any]]:
    """`partnerlink webhooks list`'s events, from `queries.delivery_log`'s rows."""
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
        for event, client_id in rows
    ]
