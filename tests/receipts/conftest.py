from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy.orm import Session

from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.receipts.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM, FakeTwilio, start_fake_twilio


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    """A connected store with e-receipts on."""
    return create_connected_store(session, ereceipt=True, green_invoices=True)


@pytest.fixture
def fake_twilio() -> Iterator[FakeTwilio]:
    fake = start_fake_twilio()
    try:
        yield fake
    finally:
        fake.server.shutdown()
        fake.server.server_close()


@pytest.fixture
def twilio_settings(settings: Settings, fake_twilio: FakeTwilio) -> Settings:
    settings.sms_provider = "twilio"
    settings.twilio_account_sid = ACCOUNT_SID
    settings.twilio_auth_token = AUTH_TOKEN
    settings.twilio_from = FROM
    settings.twilio_api_url = fake_twilio.url
    return settings
