"""The webhook events as the partner API's OpenAPI document shows them: its `webhooks`
section (OpenAPI 3.1), one operation per event type, each with the headers that sign it.

Nothing here is served: `create_app` adds `router` to FastAPI's `app.webhooks`, whose
routes only describe what PartnerLink POSTs to a partner's webhook URL (events.py
writes the events; signing.py signs them; docs/webhooks.md says the rest).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Response
from pydantic import BaseModel, Field

from partnerlink.webhooks.events import CONNECTION_REVOKED, STORE_SETTINGS_UPDATED, UPLOAD_FINISHED

router = APIRouter(tags=["Webhooks"])


class _Event(BaseModel):
    """What every event carries; each type adds its `type` and `data`."""

    id: str = Field(
        description="`evt_...`, the same on every attempt and replay: deduplicate by it."
    )
    createdAt: str = Field(description="When the event happened (ISO-8601, UTC).")


class ConnectionRevokedData(BaseModel):
    connectionId: str
    storeId: str
    reason: Literal["merchant", "partner", "replaced"] = Field(
        description="`merchant`: disconnected by the merchant; `partner`: you revoked it; "
        "`replaced`: the store connected to you again."
    )


class ConnectionRevokedEvent(_Event):
    type: Literal["connection.revoked"]
    data: ConnectionRevokedData


class StoreSettingsUpdatedData(BaseModel):
    storeId: str
    greenInvoices: bool


class StoreSettingsUpdatedEvent(_Event):
    type: Literal["store.settings.updated"]
    data: StoreSettingsUpdatedData


class UploadFinishedData(BaseModel):
    uploadId: str
    storeId: str
    status: Literal["done", "failed"]
    records: int
    created: int
    updated: int
    unchanged: int
    rejected: int


class UploadFinishedEvent(_Event):
    type: Literal["customers.upload.finished"]
    data: UploadFinishedData


def _signed(
    webhook_id: Annotated[str, Header(alias="webhook-id", description="The event's `id`.")],
    webhook_timestamp: Annotated[
        str, Header(alias="webhook-timestamp", description="Unix seconds of this attempt.")
    ],
    webhook_signature: Annotated[
        str,
        Header(
            alias="webhook-signature",
            description="Standard Webhooks: `v1,<base64 HMAC-SHA256>` of "
            '"<webhook-id>.<webhook-timestamp>.<raw body>", keyed with the bytes after '
            "`whsec_`; two, space-separated, for 24 h after a secret's rotation.",
        ),
    ],
    partnerlink_signature: Annotated[
        str,
        Header(
            alias="PartnerLink-Signature",
            description='`t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>`, '
            "keyed with the whole secret; a second `v1=` for 24 h after a rotation.",
        ),
    ],
) -> None:
    """The headers that sign every event (the operations' parameters)."""


def _event(event_type: str, summary: str) -> Callable[[Callable[..., None]], Any]:
    """The operation of one event type: what a delivery's answer means to PartnerLink."""
    return router.post(
        event_type,
        summary=summary,
        operation_id=event_type.replace(".", "_"),
        dependencies=[Depends(_signed)],
        response_class=Response,
        status_code=200,
        response_description="Received (any 2xx). Answer within 10 s; do the work afterwards.",
        responses={
            "default": {
                "description": "Anything else, or no answer within 10 s: sent again later, "
                "the wait doubling, for 72 hours."
            }
        },
    )


@_event(CONNECTION_REVOKED, "A connection was revoked")
def connection_revoked(event: ConnectionRevokedEvent) -> None:
    """Its tokens no longer work: the merchant disconnected, you revoked it, or the store
    connected to you again (a new pairing or consent replaces the old connection)."""


@_event(STORE_SETTINGS_UPDATED, "A store's e-receipt setting changed")
def store_settings_updated(event: StoreSettingsUpdatedEvent) -> None:
    """To every partner connected to the store: offer e-receipts only while it is on."""


@_event(UPLOAD_FINISHED, "A customer file was ingested")
def upload_finished(event: UploadFinishedEvent) -> None:
    """To the partner whose connection asked for the upload URL."""
