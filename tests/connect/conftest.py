"""Builders for the consent-screen flow: a partner, a merchant with a profile and store;
and for OAuth, a partner with a redirect URI and Authlib's client acting as it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from authlib.integrations.httpx_client import OAuth2Client
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.connect import service
from partnerlink.merchant.models import Merchant, Profile
from partnerlink.merchant.sessions import start_session
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.connect.oauth_steps import OAuthWorld, build_oauth_world, reset_budgets, stock_client
from tests.factories import (
    PartnerWithSecret,
    create_merchant_account,
    create_partner,
    create_profile,
    create_store,
)


@dataclass
class World:
    partner: PartnerWithSecret
    merchant: Merchant
    profile: Profile
    store: Store

    @property
    def creds(self) -> dict[str, str]:
        return credentials(self.partner)


def credentials(partner: PartnerWithSecret) -> dict[str, str]:
    return {"client_id": partner.client_id, "client_secret": partner.client_secret}


def build_world(session: Session, *, ereceipt: bool = False) -> World:
    partner = create_partner(session, ereceipt=ereceipt)
    merchant = create_merchant_account(session)
    profile = create_profile(session, merchant)
    store = create_store(session, profile, manual=True)
    return World(partner, merchant, profile, store)


@pytest.fixture
def world(session: Session) -> World:
    return build_world(session)


@pytest.fixture
def oauth_world(session: Session, settings: Settings) -> Iterator[OAuthWorld]:
    """A partner with a registered redirect URI, a merchant who signs in on the pages; the
    authorization budgets (process memory) fresh, so no test counts in the next."""
    reset_budgets(settings)
    yield build_oauth_world(session)
    reset_budgets(settings)


@pytest.fixture
def oauth(client: TestClient, oauth_world: OAuthWorld) -> Iterator[OAuth2Client]:
    """Authlib's own client as the partner, in process; `client` follows no redirect."""
    client.follow_redirects = False
    with stock_client(
        "http://testserver", oauth_world.partner, transport=client._transport
    ) as partner_client:
        yield partner_client


def new_integration_token(client: TestClient, partner: PartnerWithSecret) -> str:
    response = client.post("/v1/auth/integration", params=credentials(partner))
    assert response.status_code == 200, response.text
    token: str = response.json()["integrationToken"]
    return token


def approve(
    session: Session,
    world: World,
    token: str,
    *,
    store_id: str | None = None,
    profile_id: str | None = None,
    green_invoices: bool = False,
) -> str:
    """Approves as the world's merchant (the store by default) and commits."""
    if profile_id is None and store_id is None:
        store_id = world.store.id
    chosen = service.approve_consent(
        session,
        integration_token=token,
        client_id=world.partner.client_id,
        merchant_id=world.merchant.id,
        profile_id=profile_id,
        store_id=store_id,
        green_invoices=green_invoices,
    )
    session.commit()
    return chosen


def exchange(client: TestClient, world: World, token: str) -> dict[str, object]:
    response = client.get(
        "/v1/auth/integration/token", params={**world.creds, "integration_token": token}
    )
    assert response.status_code == 200, response.text
    body: dict[str, object] = response.json()
    return body


def merchant_headers(session: Session, merchant: Merchant) -> dict[str, str]:
    started = start_session(session, merchant=merchant, ttl_seconds=3600)
    session.commit()
    return {"Authorization": f"Bearer {started.token}"}


def fetch_all(session: Session, statement: Any) -> list[Any]:
    """Reads fresh rows, then ends the transaction: on SQLite the app shares one connection."""
    session.expire_all()
    rows = list(session.scalars(statement))
    session.commit()
    return rows


def fetch_one(session: Session, statement: Any) -> Any:
    rows = fetch_all(session, statement)
    assert len(rows) == 1, rows
    return rows[0]


def assert_problem(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """Checks a CONTRACT.md §3 problem body and returns it."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body: dict[str, Any] = response.json()
    assert body["code"] == code and body["status"] == status and body["success"] is False
    return body
