"""Builders for the page tests: partners, merchants, integration tokens, signed-in consoles."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.connect.service import create_integration_token
from partnerlink.connect.signin import consent_address_budget
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.sessions import sign_in_budgets
from partnerlink.settings import Settings
from tests.factories import (
    DEFAULT_PASSWORD,
    PartnerWithSecret,
    create_merchant_account,
    create_partner,
    create_profile,
)
from tests.web.pages import form

PARTNER_ORIGIN = "https://pos.example.com"
EMAIL = "owner@example.com"


@pytest.fixture(autouse=True)
def fresh_sign_in_budgets(settings: Settings) -> Iterator[None]:
    """Failure counters live in process memory; one test's failures must not leak into the next."""

    def reset() -> None:
        by_email, by_address = sign_in_budgets(settings.rate_limit_storage)
        for key in ("testclient", "127.0.0.1"):
            by_address.reset(key)
            consent_address_budget(settings).reset(key)
        for email in (EMAIL, "other@example.com", "nobody@example.com"):
            by_email.reset(email)

    reset()
    yield
    reset()


@dataclass
class ConsentWorld:
    partner: PartnerWithSecret
    merchant: Merchant
    profile: Profile | None
    token: str

    @property
    def link(self) -> dict[str, str]:
        return {"client_id": self.partner.client_id, "integration_token": self.token}


def new_token(session: Session, partner: PartnerWithSecret, ttl_seconds: int = 3600) -> str:
    token = create_integration_token(session, partner=partner.partner, ttl_seconds=ttl_seconds)
    session.commit()
    return token


def build_consent_world(
    session: Session,
    *,
    ereceipt: bool = False,
    frame_origins: list[str] | None = None,
    with_profile: bool = True,
) -> ConsentWorld:
    partner = create_partner(
        session,
        ereceipt=ereceipt,
        frame_origins=[PARTNER_ORIGIN] if frame_origins is None else frame_origins,
    )
    merchant = create_merchant_account(session, email=EMAIL)
    profile = create_profile(session, merchant) if with_profile else None
    return ConsentWorld(partner, merchant, profile, new_token(session, partner))


@pytest.fixture
def consent(session: Session) -> ConsentWorld:
    return build_consent_world(session)


def signed_in_consent(
    client: TestClient, world: ConsentWorld, password: str = DEFAULT_PASSWORD
) -> str:
    """Opens the consent link, signs in, and returns the choice page's HTML."""
    page = client.get("/connect/", params=world.link)
    assert page.status_code == 200, page.text
    fields = form(page.text, "/connect/signin").fields
    answer = client.post("/connect/signin", data={**fields, "email": EMAIL, "password": password})
    assert answer.status_code == 200, answer.text
    return answer.text


def sign_in_console(client: TestClient, email: str = EMAIL) -> None:
    answer = client.post(
        "/merchant/signin",
        data={"email": email, "password": DEFAULT_PASSWORD},
        follow_redirects=False,
    )
    assert answer.status_code == 303, answer.text
