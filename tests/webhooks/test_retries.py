"""A wrong webhook URL never holds a connection's events (CONTRACT.md §12): each attempt
goes to the partner's URL as it is then, a new URL makes pending events due at once,
and an operator can make a failed or pending event due now."""

from __future__ import annotations

import time
from datetime import timedelta

from fastapi import FastAPI
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.partners.models import Partner
from partnerlink.settings import Settings
from partnerlink.webhooks.events import STORE_SETTINGS_UPDATED, record_event
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.registration import set_webhook_url
from partnerlink.webhooks.schedule import retry_event
from partnerlink.webhooks.tasks import deliver_due_webhooks, wait_for_deliveries
from tests.factories import ConnectedStoreFixture
from tests.webhooks.conftest import deliver, events, until
from tests.webhooks.receiver import Receiver, start_receiver


def settings_events(session: Session, partner_id: str, values: list[bool]) -> list[str]:
    ids = [
        record_event(
            session,
            partner_id=partner_id,
            connection_id=None,
            event_type=STORE_SETTINGS_UPDATED,
            data={"storeId": "store-1", "greenInvoices": value},
        )
        for value in values
    ]
    session.commit()
    return [event_id for event_id in ids if event_id is not None]


def test_a_new_url_gets_the_pending_events_at_once_in_order(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    hook_settings.webhook_retry_seconds = 3600  # a failed attempt is next tried in an hour
    receiver.status = 404  # the URL registered is wrong
    sent = settings_events(session, shop.partner.partner.id, [True, False])
    deliver(app, hook_settings)
    first, second = events(session)
    assert first.attempts == 1 and first.last_status_code == 404 and second.attempts == 0
    assert first.next_attempt_at > utcnow() + timedelta(minutes=30)

    fixed = start_receiver()
    try:
        partner = session.get(Partner, shop.partner.partner.id)
        assert partner is not None
        set_webhook_url(session, hook_settings, partner=partner, url=fixed.url)
        session.commit()
        until(lambda: len(fixed.received) >= 2, app, hook_settings, 5)
        assert [event["id"] for event in fixed.events()] == sent
        assert [(e.status, e.url) for e in events(session)] == [("delivered", fixed.url)] * 2
    finally:
        fixed.close()


def test_a_url_changed_during_an_attempt_is_tried_at_once_when_it_fails(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    hook_settings.webhook_retry_seconds = 3600
    receiver.status, receiver.delay = 503, 0.5
    settings_events(session, shop.partner.partner.id, [True])
    fixed = start_receiver()
    try:
        deliver_due_webhooks(app.state.sessionmaker, hook_settings)  # under way, not awaited
        time.sleep(0.1)
        partner = session.get(Partner, shop.partner.partner.id)
        assert partner is not None
        set_webhook_url(session, hook_settings, partner=partner, url=fixed.url)
        session.commit()
        wait_for_deliveries()  # the old URL answers 503
        until(lambda: len(fixed.received) >= 1, app, hook_settings, 5)
        [event] = events(session)
        assert event.status == "delivered" and event.attempts == 2
    finally:
        fixed.close()


def test_a_given_up_event_is_sent_again_when_retried(
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    [event_id] = settings_events(session, shop.partner.partner.id, [True])
    session.execute(  # 72 hours old: the next failure gives it up
        update(WebhookEvent)
        .where(WebhookEvent.event_id == event_id)
        .values(created_at=utcnow() - timedelta(hours=72, seconds=1))
    )
    session.commit()
    receiver.status = 500
    deliver(app, hook_settings)
    [given_up] = events(session)
    assert given_up.status == "failed"
    deliver(app, hook_settings, rounds=2)
    assert receiver.received == []  # nothing retries a given-up event by itself

    receiver.status = 200
    retried = retry_event(session, event_id)
    assert retried.status == "pending" and retried.next_attempt_at <= utcnow()
    session.commit()
    session.expunge_all()  # read anew below (the session keeps what it loaded)
    deliver(app, hook_settings)
    assert [event["id"] for event in receiver.events()] == [event_id]
    assert [e.status for e in events(session)] == ["delivered"]
