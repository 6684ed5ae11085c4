"""Reserving pairing codes: range, uniqueness, replacement, ownership, posType."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.pairing.models import PairingCode
from partnerlink.pairing.service import reserve_pairing_code
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.factories import create_partner, create_profile, create_store
from tests.pairing.builders import Shop, create_shop, pair, reserve
from tests.waiting import wait_past


def _reserve_directly(session: Session, settings: Settings, shop: Shop, store: Store) -> int:
    reserved = reserve_pairing_code(
        session,
        settings=settings,
        merchant_id=shop.merchant.id,
        store_id=store.id,
        pos_type=shop.pos_type,
    )
    session.commit()
    return reserved.code


def test_reservation_answers_code_expiry_and_pos_type(
    client: TestClient, shop: Shop, settings: Settings
) -> None:
    before = utcnow()
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes",
        json={"posType": shop.pos_type},
        headers=shop.merchant_auth,
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"code", "expiresAt", "posType"}
    assert isinstance(body["code"], int) and 100_000 <= body["code"] <= 999_999
    assert body["posType"] == shop.pos_type
    expires_at = datetime.fromisoformat(body["expiresAt"])
    assert expires_at.tzinfo is not None
    hold = timedelta(seconds=settings.pairing_code_ttl_seconds)
    assert before + hold - timedelta(seconds=5) <= expires_at <= utcnow() + hold


def test_codes_are_six_digits_and_unique_among_reserved(
    session: Session, settings: Settings, shop: Shop
) -> None:
    profile = create_profile(session, shop.merchant, name="Chain")
    stores = [create_store(session, profile, name=f"Store {i}") for i in range(40)]
    codes = [_reserve_directly(session, settings, shop, store) for store in stores]
    assert all(100_000 <= code <= 999_999 for code in codes)
    assert len(set(codes)) == len(codes)
    held = session.scalars(select(PairingCode.code)).all()
    assert sorted(held) == sorted(codes)


def test_a_drawn_number_held_by_a_live_code_is_drawn_again(
    session: Session, settings: Settings, shop: Shop, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken = _reserve_directly(session, settings, shop, shop.store)
    other = create_store(session, create_profile(session, shop.merchant), name="Second")
    draws = iter([taken - 100_000, taken - 100_000, 123_456 - 100_000])
    monkeypatch.setattr(secrets, "randbelow", lambda _n: next(draws))
    assert _reserve_directly(session, settings, shop, other) == 123_456
    assert set(session.scalars(select(PairingCode.code))) == {taken, 123_456}


def test_an_expired_code_gives_up_its_number_when_drawn_again(
    client_with: Callable[..., TestClient],
    session: Session,
    settings: Settings,
    shop: Shop,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    short_lived = client_with(pairing_code_ttl_seconds=1)
    stale = reserve(short_lived, shop)
    wait_past(utcnow() + timedelta(seconds=1))
    assert pair(short_lived, stale).status_code == 410
    # The number drawn again is reserved with the usual lifetime: on a busy machine the
    # redemption below may come well over a second later.
    client = client_with()
    other = create_store(session, create_profile(session, shop.merchant), name="Second")
    monkeypatch.setattr(secrets, "randbelow", lambda _n: stale - 100_000)
    assert reserve(client, shop, store_id=other.id) == stale
    response = pair(client, stale)
    assert response.status_code == 200
    assert response.json()["storeId"] == other.id


def test_reserving_again_replaces_the_old_code(client: TestClient, shop: Shop) -> None:
    first = reserve(client, shop)
    second = reserve(client, shop)
    assert first != second
    replaced = pair(client, first)
    assert replaced.status_code == 404
    assert replaced.json()["code"] == "unknown_code"
    assert pair(client, second).status_code == 200


def test_each_partner_gets_its_own_code_for_the_same_store(
    client: TestClient, session: Session, shop: Shop
) -> None:
    create_partner(session, name="Other POS", pos_type="other-pos")
    acme = reserve(client, shop)
    other = reserve(client, shop, pos_type="other-pos")
    assert acme != other
    answers = [pair(client, acme).json(), pair(client, other).json()]
    assert [a["posType"] for a in answers] == ["acme-pos", "other-pos"]
    assert {a["storeId"] for a in answers} == {shop.store.id}


def test_reserving_sets_the_store_pos_type(
    client: TestClient, session: Session, shop: Shop
) -> None:
    assert shop.store.pos_type is None
    reserve(client, shop)
    session.expire_all()
    assert session.get(Store, shop.store.id).pos_type == "acme-pos"  # type: ignore[union-attr]


def test_another_merchants_store_answers_404(
    client: TestClient, session: Session, shop: Shop
) -> None:
    stranger = create_shop(session, email="stranger@example.com", pos_type="stranger-pos")
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes",
        json={"posType": shop.pos_type},
        headers=stranger.merchant_auth,
    )
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    assert session.scalar(select(PairingCode.id)) is None


@pytest.mark.parametrize("store_id", ["no-such-store", "x" * 5000, "caf\u00e9", "a%00b"])
def test_unknown_store_answers_404(client: TestClient, shop: Shop, store_id: str) -> None:
    response = client.post(
        f"/merchant/api/stores/{store_id}/pairing-codes",
        json={"posType": shop.pos_type},
        headers=shop.merchant_auth,
    )
    assert response.status_code == 404


@pytest.mark.parametrize("pos_type", ["no-such-pos", "", "ACME-POS", "acme-pos\n", "a\x00b", "é"])
def test_unknown_pos_type_answers_400_on_pos_type(
    client: TestClient, session: Session, shop: Shop, pos_type: str
) -> None:
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes",
        json={"posType": pos_type},
        headers=shop.merchant_auth,
    )
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_field"
    assert body["errors"][0]["field"] == "posType"
    assert session.scalar(select(PairingCode.id)) is None


def test_inactive_partner_cannot_be_chosen(
    client: TestClient, session: Session, shop: Shop
) -> None:
    shop.partner.partner.active = False
    session.add(shop.partner.partner)
    session.commit()
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes",
        json={"posType": shop.pos_type},
        headers=shop.merchant_auth,
    )
    assert response.status_code == 400


@pytest.mark.parametrize(
    ("body", "code"),
    [({}, "missing_field"), ({"posType": 7}, "invalid_field"), ([], "invalid_field")],
)
def test_malformed_reservation_body_answers_400(
    client: TestClient, shop: Shop, body: object, code: str
) -> None:
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes",
        json=body,
        headers=shop.merchant_auth,
    )
    assert response.status_code == 400
    assert response.json()["code"] == code


def test_reservation_needs_a_signed_in_merchant(client: TestClient, shop: Shop) -> None:
    response = client.post(
        f"/merchant/api/stores/{shop.store.id}/pairing-codes", json={"posType": shop.pos_type}
    )
    assert response.status_code == 401
    assert response.json()["code"] == "not_signed_in"


def test_a_replacement_never_draws_the_replaced_number(
    session: Session, settings: Settings, shop: Shop, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = _reserve_directly(session, settings, shop, shop.store)
    draws = iter([first - 100_000, 654_321 - 100_000])
    monkeypatch.setattr(secrets, "randbelow", lambda _n: next(draws))
    assert _reserve_directly(session, settings, shop, shop.store) == 654_321
