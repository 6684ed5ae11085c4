"""The audiences list's stored counts for large profiles (docs/audiences.md): answered
while younger than the freshness bound, counted again after it and by the worker, emptied
at once by the merchant's own changes; small profiles stay counted on every request.

"Large" is forced through the threshold setting (0 s: every count is long enough), not
by a million customers."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink import jobs
from partnerlink.audiences import stored_sizes
from partnerlink.audiences.models import StoredSizes
from partnerlink.audiences.stored_sizes import forget, table
from partnerlink.audiences.tasks import refresh_stored_sizes, wait_for_refreshes
from partnerlink.db.base import utcnow
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer, add_order
from tests.factories import ConnectedStoreFixture
from tests.receipts.fake_twilio import AUTH_TOKEN
from tests.receipts.test_twilio_callbacks import reply
from tests.web.conftest import sign_in_console

MAX_AGE = 300


@pytest.fixture
def large(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Every profile counts as large: its counts are stored and answered while fresh."""
    monkeypatch.setattr(stored_sizes, "LARGE_AFTER_SECONDS", 0.0)
    settings.audience_sizes_max_age_seconds = MAX_AGE
    return settings


def _list(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> tuple[int, int, datetime]:
    """(customers in `all`, in `buyers`, computedAt) of GET .../audiences."""
    response = client.get(f"/merchant/api/profiles/{shop.profile.id}/audiences", headers=owner)
    assert response.status_code == 200, response.text
    body = response.json()
    sizes = {a["segment"]: a["customers"] for a in body["audiences"]}
    return sizes["all"], sizes["buyers"], datetime.fromisoformat(body["computedAt"])


def _arrange(session: Session, shop: ConnectedStoreFixture, n: int = 3) -> None:
    for i in range(n):
        customer = add_customer(session, shop.store, email=f"c{i}@example.com")
        add_order(session, shop.store, customer, days_ago=1 + i)


def _age(session: Session, shop: ConnectedStoreFixture, seconds: float) -> None:
    """Makes the stored count `seconds` old."""
    session.execute(
        update(StoredSizes)
        .where(StoredSizes.profile_id == shop.profile.id)
        .values(computed_at=utcnow() - timedelta(seconds=seconds))
    )
    session.commit()


def _stored(session: Session, shop: ConnectedStoreFixture) -> StoredSizes | None:
    """The profile's stored row as it is now (detached: SQLite's one connection is freed)."""
    session.expire_all()
    row = session.scalar(select(StoredSizes).where(StoredSizes.profile_id == shop.profile.id))
    if row is not None:
        session.expunge(row)
    session.commit()  # nothing written: ends the read
    return row


def test_a_large_profile_answers_its_stored_count_while_fresh_and_counts_again_after(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    large: Settings,
) -> None:
    _arrange(session, shop)
    before = utcnow()
    everyone, buyers, counted_at = _list(client, shop, owner)
    assert (everyone, buyers) == (3, 3)
    assert before <= counted_at <= utcnow()
    stored = _stored(session, shop)
    assert stored is not None and stored.audiences is not None

    add_customer(session, shop.store, email="late@example.com")  # no change of the merchant's
    assert _list(client, shop, owner) == (3, 3, counted_at)  # the stored count, said so
    _age(session, shop, MAX_AGE - 5)
    assert _list(client, shop, owner)[:2] == (3, 3)  # still within the bound

    _age(session, shop, MAX_AGE + 1)  # past the bound: counted again
    everyone, buyers, again = _list(client, shop, owner)
    assert (everyone, buyers) == (4, 3)
    assert again > counted_at


@pytest.mark.parametrize("change", ["opt-out", "opt-in", "erase", "stop"])
def test_the_merchants_own_changes_and_a_stop_show_at_once(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    large: Settings,
    change: str,
) -> None:
    _arrange(session, shop)
    phone = "+14155550123"
    add_customer(session, shop.store, email="who@example.com", phone=phone)
    base = f"/merchant/api/profiles/{shop.profile.id}/customers"
    if change == "opt-in":
        assert client.post(f"{base}/opt-out", json={"phoneNumber": phone}, headers=owner).json()
    assert _list(client, shop, owner)[0] == (3 if change == "opt-in" else 4)
    add_customer(session, shop.store, email="late@example.com")  # not counted yet

    if change == "stop":
        large.twilio_auth_token = AUTH_TOKEN
        assert reply(client, large, "STOP", phone=phone).status_code == 200
    else:
        path = {"opt-out": "opt-out", "opt-in": "opt-out", "erase": "erase"}[change]
        method = "DELETE" if change == "opt-in" else "POST"
        response = client.request(
            method, f"{base}/{path}", json={"phoneNumber": phone}, headers=owner
        )
        assert response.status_code == 200, response.text
        assert list(response.json().values()) == [1]

    # Counted from the data at once: the late customer, and the change.
    assert _list(client, shop, owner)[0] == (5 if change == "opt-in" else 4)


def test_the_worker_counts_a_large_profile_again_before_its_count_gets_stale(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    large: Settings,
    app: object,
) -> None:
    sessions = app.state.sessionmaker  # type: ignore[attr-defined]
    _arrange(session, shop)
    counted_at = _list(client, shop, owner)[2]
    assert refresh_stored_sizes(sessions, large) == 0  # fresh: nothing to do

    add_customer(session, shop.store, email="late@example.com")
    _age(session, shop, MAX_AGE / 2 + 1)  # half the bound: due again
    assert refresh_stored_sizes(sessions, large) == 1  # counted on a thread of its own
    wait_for_refreshes()
    assert refresh_stored_sizes(sessions, large) == 0
    everyone, buyers, refreshed = _list(client, shop, owner)
    assert (everyone, buyers) == (4, 3)
    assert refreshed > counted_at
    stored = _stored(session, shop)
    assert stored is not None and stored.computed_at == refreshed
    assert stored.lease_until is None

    # An emptied count (an opt-out) is counted again by the worker too.
    late = "late@example.com"
    base = f"/merchant/api/profiles/{shop.profile.id}/customers"
    assert client.post(f"{base}/opt-out", json={"email": late}, headers=owner).status_code == 200
    stored = _stored(session, shop)
    assert stored is not None and stored.audiences is None
    assert refresh_stored_sizes(sessions, large) == 1
    wait_for_refreshes()
    stored = _stored(session, shop)
    assert stored is not None and stored.audiences is not None
    assert _list(client, shop, owner)[:3] == (3, 3, stored.computed_at)


def test_a_count_under_way_is_not_stored_after_a_change(
    session: Session, shop: ConnectedStoreFixture, large: Settings, app: object
) -> None:
    """The worker's lease is its fencing token: emptying the row drops it."""
    session.add(StoredSizes(profile_id=shop.profile.id, took_seconds=1.0, requested_at=utcnow()))
    session.commit()
    now = utcnow()
    claimed = jobs.claim_due(
        session,
        table,
        due=table.c.audiences.is_(None),
        order_by=[table.c.profile_id],
        limit=1,
        lease_seconds=60,
        now=now,
        returning=[table.c.profile_id],
    )
    session.commit()
    lease = claimed[0].lease_until
    forget(session, [shop.profile.id])  # an opt-out while the worker counts
    session.commit()
    written = jobs.record_if_leased(
        session, table, row_id=shop.profile.id, lease_until=lease, values={"audiences": "[]"}
    )
    assert not written
    stored = _stored(session, shop)
    assert stored is not None and stored.audiences is None and stored.generation == 1


def test_small_profiles_are_counted_on_every_request_and_nothing_is_stored(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    settings: Settings,
) -> None:
    assert stored_sizes.LARGE_AFTER_SECONDS == 0.5  # a handful of rows: well under
    _arrange(session, shop)
    assert _list(client, shop, owner)[:2] == (3, 3)
    add_customer(session, shop.store, email="late@example.com")
    assert _list(client, shop, owner)[:2] == (4, 3)
    assert _stored(session, shop) is None


def test_the_console_page_says_when_it_was_counted(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    large: Settings,
) -> None:
    _arrange(session, shop)
    counted_at = _list(client, shop, owner)[2]
    sign_in_console(client)
    page = client.get(f"/merchant/profiles/{shop.profile.id}/audiences")
    assert page.status_code == 200
    assert f'datetime="{counted_at.isoformat()}"' in page.text
    assert "Counted at <time" in page.text and counted_at.strftime("%H:%M") in page.text
