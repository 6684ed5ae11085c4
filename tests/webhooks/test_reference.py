"""The events the OpenAPI document's `webhooks` section describes are the events written."""

from __future__ import annotations

import json

from pydantic import BaseModel
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from partnerlink.tokens.service import event_receivers
from partnerlink.webhooks import events
from partnerlink.webhooks.reference import (
    ConnectionRevokedEvent,
    StoreSettingsUpdatedEvent,
    UploadFinishedEvent,
)
from partnerlink.webhooks.registration import set_webhook_url
from tests.factories import create_connected_store
from tests.webhooks.conftest import events as written

DOCUMENTED: dict[str, type[BaseModel]] = {
    events.CONNECTION_REVOKED: ConnectionRevokedEvent,
    events.STORE_SETTINGS_UPDATED: StoreSettingsUpdatedEvent,
    events.UPLOAD_FINISHED: UploadFinishedEvent,
}


def test_every_event_written_is_of_its_documented_shape(
    session: Session, settings: Settings
) -> None:
    assert set(DOCUMENTED) == set(events.EVENT_TYPES)
    settings.webhook_allow_private = True
    shop = create_connected_store(session, ereceipt=True)
    partner = shop.partner.partner
    set_webhook_url(session, settings, partner=partner, url="http://127.0.0.1:9/hooks")
    receivers = event_receivers(session, store_id=shop.store.id)
    [(connection_id, _partner_id)] = receivers
    events.store_settings_updated(
        session, receivers=receivers, store_id=shop.store.id, green_invoices=True
    )
    events.upload_finished(
        session,
        receivers=receivers,
        data={
            "uploadId": "u1",
            "storeId": shop.store.id,
            "status": "done",
            "records": 3,
            "created": 1,
            "updated": 1,
            "unchanged": 0,
            "rejected": 1,
        },
    )
    events.connection_revoked(
        session,
        connection_id=connection_id,
        store_id=shop.store.id,
        partner_id=partner.id,
        reason="merchant",
    )
    session.commit()
    bodies = [json.loads(event.body) for event in written(session)]
    assert sorted(body["type"] for body in bodies) == sorted(events.EVENT_TYPES)
    for body in bodies:
        model = DOCUMENTED[body["type"]]
        assert model.model_validate(body).model_dump() == body
        assert set(body) == set(model.model_fields)
