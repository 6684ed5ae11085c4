"""An audience sync cut short by the platform (CONTRACT §11): what the platform took is
held and counted, what it refused is not, and the next sync sends only the rest."""

from __future__ import annotations

from fastapi import FastAPI
from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.destinations import meta
from partnerlink.destinations.models import DestinationMember
from partnerlink.settings import Settings
from tests.destinations import fake_meta
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import Destinations, meta_audience, run_worker
from tests.factories import ConnectedStoreFixture

# One request's worth of rows, and a quarter more: two requests.
CUSTOMERS = meta.MAX_AUDIENCE_ROWS + meta.MAX_AUDIENCE_ROWS // 4


def _held(session: Session, destination_id: str) -> int:
    statement = select(func.count()).where(DestinationMember.destination_id == destination_id)
    held = int(session.scalar(statement) or 0)
    session.rollback()  # SQLite's one connection goes back to the app
    return held


def test_a_request_refused_midway_leaves_held_only_what_the_platform_took(
    app: FastAPI,
    session: Session,
    shop: ConnectedStoreFixture,
    api: Destinations,
    servers: tuple[FakeMeta, FakeGoogle],
    worker_settings: Settings,
) -> None:
    platform, _google = servers
    # A 10,000-row request: more than the suite's 1 s timeout on a busy machine.
    worker_settings = worker_settings.model_copy(update={"ad_request_timeout_seconds": 30.0})
    session.execute(
        insert(Customer),
        [
            {"profile_id": shop.profile.id, "email": f"c{n}@example.com", "country_code": "US"}
            for n in range(CUSTOMERS)
        ],
    )
    session.commit()
    created = api.create(meta_audience())
    # The first request is taken; the token expires before the second.
    platform.expire_token_after(1)
    assert run_worker(app, worker_settings) == 1

    state = api.get(created["id"])
    assert state["status"] == "needs_attention"
    assert state["lastError"]["code"] == "credentials_refused"
    taken = len(platform.audiences[fake_meta.AUDIENCE_ID])
    assert taken == meta.MAX_AUDIENCE_ROWS
    # The refused request's rows, written while it was out, were rolled back.
    assert _held(session, created["id"]) == taken
    assert state["members"] == taken and state["sent"]["added"] == taken

    platform.expire_token_after(None)  # a new token, which lasts
    patched = api.patch(created["id"], {"credentials": {"accessToken": fake_meta.ACCESS_TOKEN}})
    assert patched["status"] == "pending"
    run_worker(app, worker_settings)
    state = api.get(created["id"])
    assert state["status"] == "active"
    assert len(platform.audiences[fake_meta.AUDIENCE_ID]) == CUSTOMERS
    assert _held(session, created["id"]) == CUSTOMERS
    assert state["members"] == CUSTOMERS and state["sent"]["added"] == CUSTOMERS
    sent_rows = sum(
        len(r.json()["payload"]["data"])
        for r in platform.requests_to(lambda r: r.path.endswith("/users") and r.method == "POST")
        if r.headers["authorization"] == f"Bearer {fake_meta.ACCESS_TOKEN}"
    )
    # Only the rest went again (the refused request's rows among them).
    assert sent_rows == CUSTOMERS + (CUSTOMERS - taken)
