"""A store never turns from real to test (CONTRACT §12): a sandbox partner gets no
pairing code from a merchant, no existing store from a consent, and a new test store
when a consent names a profile; the merchant's real sales keep counting."""

from __future__ import annotations

from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.pairing.models import PairingCode
from partnerlink.partners.service import find_partner_by_client_id, register_partner
from partnerlink.stores.models import Store
from partnerlink.stores.service import open_connection
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import SandboxPartnerRealStore
from tests.factories import ConnectedStoreFixture as ConnectedStore
from tests.factories import create_connected_store
from tests.merchant.helpers import sign_in
from tests.orders.builders import order_body
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, form, text

SANDBOX_POS = "acme-sandbox"


@pytest.fixture
def sandbox(session: Session) -> dict[str, str]:
    registered = register_partner(
        session, name="Acme Sandbox", pos_type=SANDBOX_POS, ereceipt=True, sandbox=True
    )
    session.commit()
    return {"client_id": registered.partner.client_id, "client_secret": registered.client_secret}


@pytest.fixture
def live(session: Session) -> ConnectedStore:
    shop = create_connected_store(session, ereceipt=True)
    session.commit()
    return shop


def is_test(session: Session, store_id: str) -> bool:
    session.expire_all()
    store = session.get(Store, store_id)
    assert store is not None
    flag = store.is_test
    session.rollback()
    return flag


def counts(session: Session) -> tuple[int, int, int]:
    found = tuple(
        int(session.scalar(select(func.count()).select_from(model)) or 0)
        for model in (Store, PairingCode, Connection)
    )
    session.rollback()
    return found  # type: ignore[return-value]


def test_a_merchant_cannot_reserve_a_code_for_a_sandbox_partner(
    client: TestClient, session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    store_id = live.store.id
    before = counts(session)
    refused = client.post(
        f"/merchant/api/stores/{store_id}/pairing-codes",
        json={"posType": SANDBOX_POS},
        headers=sign_in(client),
    )
    assert refused.status_code == 400, refused.text
    body = refused.json()
    assert body["code"] == "invalid_field" and body["errors"][0]["field"] == "posType"
    assert counts(session) == before
    assert not is_test(session, store_id)


def test_the_console_offers_no_sandbox_partner_and_refuses_one_posted(
    client: TestClient, session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    store_id = live.store.id
    sign_in_console(client, live.merchant.email)
    action = f"/merchant/stores/{store_id}/pairing-codes"
    page = client.get(f"/merchant/stores/{store_id}").text
    assert "Acme Sandbox" not in text(page) and SANDBOX_POS not in page
    before = counts(session)
    answer = client.post(action, data={**form(page, action).fields, "pos_type": SANDBOX_POS})
    assert_html(answer, 400)
    assert counts(session) == before


def test_a_sandbox_consent_cannot_choose_an_existing_store(
    client: TestClient, session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    profile_id = live.profile.id
    session.rollback()
    merchant = sign_in(client)
    manual = client.post(
        f"/merchant/api/profiles/{profile_id}/stores",
        json={"name": "Pop-up", "address": "2 Main Street", "countryCode": "US"},
        headers=merchant,
    ).json()["store"]
    integration = client.post("/v1/auth/integration", params=sandbox).json()["integrationToken"]
    before = counts(session)
    refused = client.post(
        f"/merchant/api/consents/{integration}/approve",
        json={"clientId": sandbox["client_id"], "storeId": manual["id"]},
        headers=merchant,
    )
    assert refused.status_code == 400, refused.text
    assert refused.json()["code"] == "invalid_field"
    assert counts(session) == before
    assert not is_test(session, manual["id"])
    status = client.get(
        "/v1/auth/integration", params={**sandbox, "integration_token": integration}
    ).json()
    assert status["status"] == "pending"  # nothing was recorded: the merchant may choose again


def test_a_code_reserved_before_the_rule_binds_nothing(
    client: TestClient, session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    """A code a merchant reserved for a sandbox partner before such codes were refused
    (the row as the old reservation wrote it) is dead: 404, nothing connected, store real."""
    store_id = live.store.id
    partner = find_partner_by_client_id(session, sandbox["client_id"])
    assert partner is not None
    now = utcnow()
    session.add(
        PairingCode(
            code=654321,
            store_id=store_id,
            partner_id=partner.id,
            reserved_at=now,
            expires_at=now + timedelta(hours=72),
        )
    )
    session.commit()
    before = counts(session)
    answer = client.post("/v1/auth/integration/pair", json={"code": 654321})
    assert answer.status_code == 404 and answer.json()["code"] == "unknown_code"
    assert counts(session) == before
    assert not is_test(session, store_id)


def test_no_path_connects_a_sandbox_partner_to_a_real_store(
    session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    """The connection itself refuses, whatever path led there."""
    partner = find_partner_by_client_id(session, sandbox["client_id"])
    assert partner is not None
    with pytest.raises(SandboxPartnerRealStore):
        open_connection(
            session,
            store_id=live.store.id,
            partner_id=partner.id,
            method="pairing",
            pos_type=partner.pos_type,
        )
    session.rollback()
    assert not is_test(session, live.store.id)


def test_a_sandbox_consent_with_a_profile_makes_a_new_test_store_and_real_sales_still_count(
    client: TestClient, session: Session, sandbox: dict[str, str], live: ConnectedStore
) -> None:
    profile_id, live_store_id = live.profile.id, live.store.id
    session.rollback()
    merchant = sign_in(client)
    integration = client.post("/v1/auth/integration", params=sandbox).json()["integrationToken"]
    approved = client.post(
        f"/merchant/api/consents/{integration}/approve",
        json={"clientId": sandbox["client_id"], "profileId": profile_id},
        headers=merchant,
    )
    assert approved.status_code == 200, approved.text
    tokens = client.get(
        "/v1/auth/integration/token", params={**sandbox, "integration_token": integration}
    ).json()
    test_bearer = {"Authorization": f"Bearer {tokens['accessToken']}"}
    test_store_id = client.get("/v1/auth/token/status", headers=test_bearer).json()["storeId"]
    assert test_store_id != live_store_id
    assert is_test(session, test_store_id) and not is_test(session, live_store_id)
    for order_id, who, headers in (
        ("LIVE-1", "live@example.com", live.auth),
        ("TEST-1", "test@example.com", test_bearer),
        ("LIVE-2", "later@example.com", live.auth),
    ):
        body = order_body(order_id, customerEmail=who, customerPhoneNumber=None)
        assert client.post("/v1/orders", json=body, headers=headers).status_code == 200
    assert not is_test(session, live_store_id)  # the sandbox's sales flipped nothing

    results = client.get(
        f"/merchant/api/profiles/{profile_id}/results?from=2024-01-01&to=2030-12-31",
        headers=merchant,
    ).json()
    assert sum(c["orders"] for c in results["classes"].values()) == 2
    exported = client.get(
        f"/merchant/api/profiles/{profile_id}/audiences/all/export?format=meta", headers=merchant
    )
    assert exported.status_code == 200
    assert len(exported.text.strip().splitlines()) == 3  # the header and the two live customers
