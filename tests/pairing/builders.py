"""Builders for pairing tests: a merchant's store, a partner, and HTTP helpers."""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.merchant.models import Merchant
from partnerlink.merchant.sessions import start_session
from partnerlink.stores.models import Store
from tests.factories import (
    PartnerWithSecret,
    create_merchant_account,
    create_partner,
    create_profile,
    create_store,
)


@dataclass
class Shop:
    """A partner and a merchant with one store, and the merchant's API session header."""

    partner: PartnerWithSecret
    merchant: Merchant
    store: Store
    merchant_auth: dict[str, str]

    @property
    def pos_type(self) -> str:
        return self.partner.partner.pos_type


def merchant_auth(session: Session, merchant: Merchant) -> dict[str, str]:
    started = start_session(session, merchant=merchant, ttl_seconds=3600)
    session.commit()
    return {"Authorization": f"Bearer {started.token}"}


def create_shop(
    session: Session, *, email: str = "owner@example.com", pos_type: str = "acme-pos"
) -> Shop:
    partner = create_partner(session, name=f"{pos_type} partner", pos_type=pos_type)
    merchant = create_merchant_account(session, email=email)
    store = create_store(session, create_profile(session, merchant))
    return Shop(partner, merchant, store, merchant_auth(session, merchant))


def reserve(
    client: TestClient | httpx.Client,
    shop: Shop,
    *,
    pos_type: str | None = None,
    store_id: str | None = None,
) -> int:
    """Reserves a code through the merchant API and returns it."""
    response = client.post(
        f"/merchant/api/stores/{store_id or shop.store.id}/pairing-codes",
        json={"posType": pos_type or shop.pos_type},
        headers=shop.merchant_auth,
    )
    assert response.status_code == 200, response.text
    code: int = response.json()["code"]
    return code


def pair(
    client: TestClient | httpx.Client, code: object, *, forwarded_for: str | None = None
) -> httpx.Response:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    return client.post("/v1/auth/integration/pair", json={"code": code}, headers=headers)
