"""Touches and campaigns with an Idempotency-Key, and touches stored once (CONTRACT.md §13)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.measurement.models import Campaign
from partnerlink.orders.models import Touch
from tests.factories import ConnectedStoreFixture, create_profile
from tests.measurement.test_merchant_api import ADA_HASH, base, count

TOUCH = {"campaignId": "spring", "touchedAt": "2024-05-09T10:00:00Z", "emailSha256": ADA_HASH}


def test_equal_touches_are_stored_once_and_counted_as_duplicates(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    other_time = {**TOUCH, "touchedAt": "2024-05-10T10:00:00Z"}
    by_phone = {"campaignId": "spring", "touchedAt": TOUCH["touchedAt"], "phoneSha256": ADA_HASH}
    both = {**TOUCH, "phoneSha256": ADA_HASH}
    plain = {"campaignId": "spring", "touchedAt": TOUCH["touchedAt"], "email": "Ada@Example.com"}

    first = client.post(
        f"{base(shop)}/touches", json={"touches": [TOUCH, TOUCH, other_time]}, headers=owner
    )
    second = client.post(
        f"{base(shop)}/touches",
        json={"touches": [TOUCH, by_phone, both, plain, other_time]},
        headers=owner,
    )

    assert first.status_code == second.status_code == 200, second.text
    assert (first.json()["imported"], first.json()["duplicates"]) == (2, 1)
    # `plain` hashes to ADA_HASH: equal to TOUCH.
    assert (second.json()["imported"], second.json()["duplicates"]) == (2, 3)
    assert set(second.json()) == {"imported", "duplicates", "rejected", "reclassified", "errors"}
    assert count(session, Touch) == 4


def test_the_same_touch_in_another_profile_or_campaign_is_stored(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    second_profile = create_profile(session, shop.merchant, name="Second")
    other_base = f"/merchant/api/profiles/{second_profile.id}"
    session.rollback()
    for path, touch in (
        (base(shop), TOUCH),
        (base(shop), {**TOUCH, "campaignId": "autumn"}),
        (other_base, TOUCH),
    ):
        answer = client.post(f"{path}/touches", json={"touches": [touch]}, headers=owner)
        assert answer.json()["duplicates"] == 0, answer.text
    assert count(session, Touch) == 3


def test_a_keyed_touch_import_replays_its_answer(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    headers = owner | {"Idempotency-Key": "touches-1"}
    body = {"touches": [TOUCH]}
    first = client.post(f"{base(shop)}/touches", json=body, headers=headers)
    again = client.post(f"{base(shop)}/touches", json=body, headers=headers)
    unkeyed = client.post(f"{base(shop)}/touches", json=body, headers=owner)

    assert first.json()["imported"] == 1
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert unkeyed.json()["duplicates"] == 1 and "Idempotent-Replayed" not in unkeyed.headers
    other = client.post(f"{base(shop)}/touches", json={"touches": [TOUCH, TOUCH]}, headers=headers)
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_reused"


def test_a_keyed_campaign_replays_instead_of_409_campaign_exists(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    headers = owner | {"Idempotency-Key": "campaign-spring"}
    body = {"campaignId": "spring", "name": "Spring", "startsAt": "2024-05-01T00:00:00Z"}

    first = client.post(f"{base(shop)}/campaigns", json=body, headers=headers)
    again = client.post(f"{base(shop)}/campaigns", json=body, headers=headers)
    unkeyed = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    reused = client.post(
        f"{base(shop)}/campaigns", json={**body, "campaignId": "autumn"}, headers=headers
    )
    # The key sent to another endpoint of the profile is another request.
    elsewhere = client.post(f"{base(shop)}/touches", json={"touches": [TOUCH]}, headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content and again.headers["Idempotent-Replayed"] == "true"
    assert unkeyed.status_code == 409 and unkeyed.json()["code"] == "campaign_exists"
    assert reused.status_code == 409 and reused.json()["code"] == "idempotency_key_reused"
    assert elsewhere.status_code == 409
    assert count(session, Campaign) == 1


def test_a_refused_keyed_campaign_keeps_no_key(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    headers = owner | {"Idempotency-Key": "c"}
    body = {"campaignId": "spring", "name": "Spring", "startsAt": "2024-05-01T00:00:00Z"}
    client.post(f"{base(shop)}/campaigns", json=body, headers=owner)

    exists = client.post(f"{base(shop)}/campaigns", json=body, headers=headers)
    created = client.post(
        f"{base(shop)}/campaigns", json={**body, "campaignId": "autumn"}, headers=headers
    )

    assert exists.status_code == 409 and exists.json()["code"] == "campaign_exists"
    assert created.status_code == 200 and "Idempotent-Replayed" not in created.headers
    too_long = client.post(
        f"{base(shop)}/campaigns",
        json={**body, "campaignId": "x"},
        headers=owner | {"Idempotency-Key": "k" * 256},
    )
    assert too_long.status_code == 400 and too_long.json()["code"] == "invalid_field"
    assert count(session, Campaign) == 2
