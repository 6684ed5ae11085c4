"""Audience destinations synced end to end against the local Meta and Google servers
(CONTRACT §11): all at first, then only the difference; leavers and changed identifiers;
the control group and test stores never sent."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.audiences.choices import opt_out_phone
from partnerlink.customers.models import Customer
from partnerlink.destinations.models import DestinationMember
from partnerlink.kit.digests import sha256_hex
from partnerlink.settings import Settings
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer, add_order
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import (
    Destinations,
    google_audience,
    meta_audience,
    run_worker,
)
from tests.destinations.sync_helpers import (
    customer_row as _row,
)
from tests.factories import ConnectedStoreFixture, create_store


def _users_calls(meta: FakeMeta, method: str) -> list[list[list[str]]]:
    return [
        r.json()["payload"]["data"]
        for r in meta.requests_to(lambda r: r.path.endswith("/users") and r.method == method)
    ]


def test_meta_audience_first_all_then_only_the_difference(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
    client: TestClient,
    owner: dict[str, str],
) -> None:
    meta, _google = servers
    ana = add_customer(
        session, shop.store, email="ana@example.com", first_name="Ana", city="São Paulo"
    )
    bo = add_customer(session, shop.store, email="bo@example.com", phone="+16505551212")
    cy = add_customer(session, shop.store, phone="+16505550000", last_name="Cy")
    add_customer(session, shop.store, first_name="Nameless")  # no email or phone: never sent
    created = api.create(meta_audience())
    assert run_worker(app, worker_settings) == 1

    held = meta.audiences[fake_meta.AUDIENCE_ID]
    assert held == {_row(ana), _row(bo), _row(cy)}
    first = api.get(created["id"])
    assert first["status"] == "active" and first["lastError"] is None
    assert first["members"] == 3
    assert first["sent"] == {"added": 3, "removed": 0, "events": 0, "rejected": 0}
    # Beside Meta's answer, its estimate of the audience's size (none under 1,000 people).
    meta_size = first["lastReport"].pop("meta")
    assert first["lastReport"] == {"num_received": 3, "num_invalid_entries": 0}
    assert meta_size["approximateCountLowerBound"] is None
    assert first["lastSyncAt"] is not None
    request = meta.requests_to(lambda r: r.path.endswith("/users"))[0]
    assert request.headers["authorization"] == f"Bearer {fake_meta.ACCESS_TOKEN}"
    assert set(request.json()["session"]) == {
        "session_id",
        "batch_seq",
        "last_batch_flag",
        "estimated_num_total",
    }

    # Not due again before PARTNERLINK_AD_SYNC_SECONDS: nothing happens.
    assert run_worker(app, worker_settings) == 0

    # A new customer, an opt-out, an erasure (CONTRACT §8), a STOP and a changed phone.
    dee = add_customer(session, shop.store, email="dee@example.com")
    erased = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/customers/erase",
        json={"email": "ana@example.com"},
        headers=owner,
    )
    assert erased.json() == {"erased": 1}
    stopped = add_customer(session, shop.store, phone="+16505559999")
    old_bo = _row(bo)
    session.execute(
        update(Customer).where(Customer.id == bo.id).values(phone_number="+16505557777")
    )
    session.commit()
    found = session.get(Customer, bo.id)
    assert found is not None
    bo = found
    calls_before = len(meta.requests)
    api.sync(created["id"])
    run_worker(app, worker_settings)
    # The STOP came between two syncs: its removal goes in the next one.
    opt_out_phone(session, "+16505559999")
    session.commit()
    assert _row(stopped) in held
    api.sync(created["id"])
    run_worker(app, worker_settings)

    assert held == {_row(bo), _row(cy), _row(dee)}
    removed = [tuple(row) for call in _users_calls(meta, "DELETE") for row in call]
    assert _row(ana) in removed and old_bo in removed and _row(stopped) in removed
    second_adds = [tuple(row) for call in _users_calls(meta, "POST")[1:] for row in call]
    assert sorted(second_adds) == sorted([_row(dee), _row(bo), _row(stopped)])
    assert len(meta.requests) > calls_before
    after = api.get(created["id"])
    assert after["members"] == 3
    assert after["sent"]["added"] == 6 and after["sent"]["removed"] == 3

    # Nothing to send: no call, but lastSyncAt moves.
    calls = len(meta.requests)
    api.sync(created["id"])
    run_worker(app, worker_settings)
    assert len(meta.requests) == calls
    assert api.get(created["id"])["lastSyncAt"] > after["lastSyncAt"]


def test_control_group_and_test_store_customers_are_never_sent(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
    client: TestClient,
    owner: dict[str, str],
) -> None:
    meta, _google = servers
    campaign = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/campaigns",
        json={
            "campaignId": "spring",
            "name": "Spring",
            "startsAt": datetime(2026, 1, 1, tzinfo=UTC).isoformat(),
            "holdoutPercent": 50,
        },
        headers=owner,
    )
    assert campaign.status_code == 200, campaign.text
    people = [add_customer(session, shop.store, email=f"p{i}@example.com") for i in range(40)]
    test_store = create_store(session, shop.profile, name="Sandbox till")
    session.execute(update(Store).where(Store.id == test_store.id).values(is_test=True))
    session.commit()
    tester = add_customer(session, shop.store, email="tester@example.com")
    add_order(session, test_store, tester, days_ago=1, partner_id=shop.partner.partner.id)
    created = api.create(meta_audience(campaignId="spring"))
    run_worker(app, worker_settings)

    held = meta.audiences[fake_meta.AUDIENCE_ID]
    members = set(
        session.scalars(
            select(DestinationMember.customer_id).where(
                DestinationMember.destination_id == created["id"]
            )
        )
    )
    session.rollback()
    assert _row(tester) not in held
    assert 0 < len(held) < 40  # about half are the control group
    controls = [p for p in people if p.id not in members]
    assert controls and all(_row(p) not in held for p in controls)
    session.rollback()  # the SQLite test database has one connection: give it back
    assert api.get(created["id"])["members"] == len(held)


def test_google_audience_with_consent_and_a_changed_email(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    _meta, google = servers
    kim = add_customer(session, shop.store, email="kim@example.com", phone="+16505551111")
    add_customer(
        session,
        shop.store,
        phone="+16505552222",
        first_name="Lou",
        last_name="Reed",
        postal_code="94105-1234",
    )
    created = api.create(google_audience())
    run_worker(app, worker_settings)
    members = google.members()
    assert len(members) == 2
    # An address only when first name, last name, country and postal code are known;
    # its region and postal code travel plain, the names hashed.
    addresses = [i["address"] for m in members for i in m["userIdentifiers"] if "address" in i]
    assert len(addresses) == 1
    assert addresses[0]["regionCode"] == "US" and addresses[0]["postalCode"] == "94105"
    assert addresses[0]["familyName"] == sha256_hex("reed")
    body = google.bodies[0]
    assert body["consent"] == {
        "adUserData": "CONSENT_GRANTED",
        "adPersonalization": "CONSENT_GRANTED",
    }
    assert body["encoding"] == "HEX"
    assert api.get(created["id"])["lastReport"]["requestId"]

    session.execute(update(Customer).where(Customer.id == kim.id).values(email="kim@new.example"))
    session.commit()
    api.sync(created["id"])
    run_worker(app, worker_settings)
    assert len(google.members()) == 2
    assert google.members() != members
    assert api.get(created["id"])["sent"]["removed"] == 1
