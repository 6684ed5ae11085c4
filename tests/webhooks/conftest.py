"""What the webhook tests share: a real local receiver, a connected store whose partner
has a webhook URL there, and rounds of delivery as the worker runs them."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.registration import set_webhook_url
from partnerlink.webhooks.tasks import deliver_due_webhooks, wait_for_deliveries
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.webhooks.receiver import Receiver, start_receiver


@pytest.fixture
def hook_settings(settings: Settings) -> Settings:
    settings.webhook_allow_private = True  # the receiver is on loopback
    settings.webhook_retry_seconds = 0.05
    return settings


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = start_receiver()
    yield server
    server.close()


@pytest.fixture
def hooked(
    session: Session, hook_settings: Settings, receiver: Receiver
) -> tuple[ConnectedStoreFixture, str]:
    """A connected store whose partner has a webhook URL: (the store, the signing secret)."""
    shop = create_connected_store(session, ereceipt=True)
    registration = set_webhook_url(
        session, hook_settings, partner=shop.partner.partner, url=receiver.url
    )
    session.commit()
    assert registration.secret is not None
    return shop, registration.secret


def deliver(app: FastAPI, settings: Settings, rounds: int = 1) -> None:
    for _ in range(rounds):
        deliver_due_webhooks(app.state.sessionmaker, settings)
        wait_for_deliveries()


def until(check: Callable[[], bool], app: FastAPI, settings: Settings, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not delivered in time"
        deliver(app, settings)
        time.sleep(0.02)


def events(session: Session) -> list[WebhookEvent]:
    found = list(session.scalars(select(WebhookEvent).order_by(WebhookEvent.seq)))
    session.expunge_all()  # read as they are now; the connection goes back (SQLite has one)
    session.rollback()
    return found
