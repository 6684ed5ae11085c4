"""Run history (CONTRACT §15): one run per sync, with why it ran, how it ended and what
it sent itself; newest first in pages; 90 days kept; none written when the lease was lost."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import meta as meta_protocol
from partnerlink.destinations import runs, tasks
from partnerlink.destinations.models import Destination, DestinationRun
from partnerlink.destinations.sync.engine import sync_destination
from partnerlink.destinations.tasks import _http_client, sync_now
from tests.audiences.helpers import add_customer, add_order
from tests.destinations import fake_meta
from tests.destinations.sync_helpers import (
    Destinations,
    Syncing,
    meta_audience,
    meta_conversions,
)
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import OTHER, sign_in

RUN_KEYS = {
    "id",
    "startedAt",
    "finishedAt",
    "trigger",
    "outcome",
    "added",
    "removed",
    "events",
    "rejected",
    "error",
}


def _runs(api: Destinations, destination_id: str, query: str = "") -> dict[str, Any]:
    response = api.client.get(f"{api.base}/{destination_id}/runs{query}", headers=api.headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _count_runs(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(DestinationRun))
    session.rollback()  # the SQLite test database has one connection: give it back
    return int(count or 0)


def _due_now(session: Session, destination_id: str) -> None:
    session.execute(
        update(Destination)
        .where(Destination.id == destination_id)
        .values(next_attempt_at=utcnow() - timedelta(seconds=1))
    )
    session.commit()


def test_each_sync_is_a_run_with_its_trigger_outcome_and_own_counts(
    syncing: Syncing, session: Session, shop: ConnectedStoreFixture
) -> None:
    created = syncing.api.create(meta_audience())
    syncing.run()  # the first: scheduled, adds someone@example.com
    syncing.api.sync(created["id"])
    syncing.run()  # asked for, nothing new
    add_customer(session, shop.store, email="new@example.com")
    add_customer(session, shop.store, email="newer@example.com")
    session.rollback()
    _due_now(session, created["id"])
    syncing.run()  # scheduled, adds two

    listed = _runs(syncing.api, created["id"])
    assert listed["nextCursor"] is None
    newest, middle, first = listed["runs"]
    assert all(set(run) == RUN_KEYS for run in listed["runs"])
    assert (first["trigger"], first["outcome"], first["added"]) == ("schedule", "ok", 1)
    assert (middle["trigger"], middle["outcome"]) == ("request", "nothing_to_do")
    assert (middle["added"], middle["removed"], middle["events"]) == (0, 0, 0)
    assert (newest["trigger"], newest["outcome"], newest["added"]) == ("schedule", "ok", 2)
    assert newest["error"] is None and newest["rejected"] == 0
    # ISO 8601 UTC, like every timestamp of the API; a run ends after it starts.
    assert newest["startedAt"].endswith("+00:00") and newest["finishedAt"] >= newest["startedAt"]
    assert int(newest["id"]) > int(middle["id"]) > int(first["id"])
    # The runs add up to the destination's cumulative counts.
    assert syncing.api.get(created["id"])["sent"]["added"] == sum(
        r["added"] for r in listed["runs"]
    )


def test_failures_are_runs_too_retry_and_needs_attention(
    syncing: Syncing, session: Session, shop: ConnectedStoreFixture
) -> None:
    created = syncing.api.create(meta_audience())
    syncing.meta.server_error_next(503)
    syncing.run()
    _due_now(session, created["id"])
    syncing.run()  # the retry goes through
    add_customer(session, shop.store, email="new@example.com")
    session.rollback()
    syncing.meta.expired_token_next()
    syncing.api.sync(created["id"])
    syncing.run()

    attention, retried, failed = _runs(syncing.api, created["id"])["runs"]
    assert (failed["trigger"], failed["outcome"]) == ("schedule", "retry")
    assert failed["error"]["code"] == "platform_unavailable" and failed["error"]["message"]
    assert failed["added"] == 0
    assert (retried["trigger"], retried["outcome"], retried["added"]) == ("retry", "ok", 1)
    assert retried["error"] is None
    assert (attention["trigger"], attention["outcome"]) == ("request", "needs_attention")
    assert attention["error"]["code"] == "credentials_refused"
    assert fake_meta.ACCESS_TOKEN not in str(attention)


def test_a_run_cut_short_counts_what_it_sent_before_failing(
    syncing: Syncing, session: Session, shop: ConnectedStoreFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = syncing.api.create(meta_conversions())
    syncing.run()
    assert _runs(syncing.api, created["id"])["runs"][0]["outcome"] == "nothing_to_do"

    buyer = add_customer(session, shop.store, email="buyer@example.com")
    for _ in range(4):
        add_order(session, shop.store, buyer, days_ago=1, status="CLOSED")
    session.commit()
    # Two requests of two sales; the second finds Meta down.
    monkeypatch.setattr(meta_protocol, "MAX_EVENTS", 2)
    syncing.meta.answer_next(200, {"events_received": 2, "messages": [], "fbtrace_id": "A1"})
    syncing.meta.server_error_next(500)
    syncing.api.sync(created["id"])
    syncing.run()
    cut = _runs(syncing.api, created["id"])["runs"][0]
    assert (cut["trigger"], cut["outcome"], cut["events"]) == ("request", "retry", 2)
    assert cut["error"]["code"] == "platform_unavailable"


def test_the_operators_sync_is_a_request_and_a_lost_lease_writes_no_run(
    syncing: Syncing, session: Session
) -> None:
    created = syncing.api.create(meta_audience())
    sessions = syncing.app.state.sessionmaker
    assert sync_now(sessions, syncing.settings, created["id"]).result == "synced"
    assert _runs(syncing.api, created["id"])["runs"][0]["trigger"] == "request"

    before = _count_runs(session)
    # A lease this worker does not hold (another worker's claim came meanwhile).
    result = sync_destination(
        sessions,
        syncing.settings,
        created["id"],
        utcnow() + timedelta(minutes=5),
        _http_client(syncing.settings),
    )
    assert result.result == "lease_lost"
    assert _count_runs(session) == before


def test_runs_page_newest_first_with_cursors_and_refuse_bad_pages(
    syncing: Syncing, session: Session
) -> None:
    created = syncing.api.create(meta_audience())
    for _ in range(5):
        syncing.api.sync(created["id"])
        syncing.run()
    everything = _runs(syncing.api, created["id"], "?limit=100")["runs"]
    assert len(everything) == 5
    ids = [run["id"] for run in everything]
    assert ids == sorted(ids, key=int, reverse=True)

    seen: list[str] = []
    query = "?limit=2"
    while True:
        page = _runs(syncing.api, created["id"], query)
        seen += [run["id"] for run in page["runs"]]
        if page["nextCursor"] is None:
            break
        query = f"?limit=2&cursor={page['nextCursor']}"
    assert seen == ids
    assert len(_runs(syncing.api, created["id"])["runs"]) == 5  # default 20

    base = f"{syncing.api.base}/{created['id']}/runs"
    for bad in ("?limit=0", "?limit=101", "?limit=x", "?cursor=not-ours", "?cursor=WyJ4Il0"):
        refused = syncing.api.client.get(base + bad, headers=syncing.api.headers)
        assert refused.status_code == 400, bad
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["code"] == "invalid_field"


def test_another_merchants_destination_runs_and_preview_answer_404(
    client: TestClient, session: Session, syncing: Syncing
) -> None:
    created = syncing.api.create(meta_audience())
    syncing.run()
    create_connected_store(session, email=OTHER, pos_type="other-pos")
    other = sign_in(client, OTHER)
    for tail in ("runs", "preview"):
        path = f"{syncing.api.base}/{created['id']}/{tail}"
        assert client.get(path, headers=other).status_code == 404
        unknown = f"{syncing.api.base}/00000000-0000-4000-8000-000000000000/{tail}"
        assert client.get(unknown, headers=syncing.api.headers).status_code == 404


def test_runs_older_than_90_days_are_deleted(syncing: Syncing, session: Session) -> None:
    created = syncing.api.create(meta_audience())
    syncing.run()
    syncing.api.sync(created["id"])
    syncing.run()
    oldest = session.scalar(select(func.min(DestinationRun.id)))
    session.execute(
        update(DestinationRun)
        .where(DestinationRun.id == oldest)
        .values(started_at=utcnow() - timedelta(days=91))
    )
    session.commit()
    assert runs.forget_old_runs(syncing.app.state.sessionmaker) == 1
    left = _runs(syncing.api, created["id"])["runs"]
    assert len(left) == 1 and int(left[0]["id"]) != oldest
    assert runs.forget_old_runs(syncing.app.state.sessionmaker) == 0


def test_the_ad_platforms_task_deletes_old_runs_once_an_hour(
    syncing: Syncing, session: Session, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = syncing.api.create(meta_audience())
    syncing.run()  # the first run: kept
    old = utcnow() - timedelta(days=runs.KEEP_DAYS, hours=1)
    session.execute(update(DestinationRun).values(started_at=old, finished_at=old))
    session.commit()
    monkeypatch.setattr(tasks, "_forget_runs_at", [0.0])  # this process's deletion is due

    syncing.api.sync(created["id"])
    syncing.run()  # deletes the 91-day-old run; its own run is new
    kept = session.scalars(select(DestinationRun.started_at)).all()
    session.rollback()
    assert len(kept) == 1 and kept[0] > utcnow() - timedelta(minutes=5)

    session.execute(update(DestinationRun).values(started_at=old, finished_at=old))
    session.commit()
    syncing.api.sync(created["id"])
    syncing.run()  # within the hour: nothing deleted
    assert session.scalar(select(func.count()).select_from(DestinationRun)) == 2
    session.rollback()


def test_the_merchant_reference_documents_runs_and_preview(client: TestClient) -> None:
    schema = client.get("/merchant/api/openapi.json").json()
    base = "/merchant/api/profiles/{profileId}/destinations/{destinationId}"
    listed = schema["paths"][f"{base}/runs"]["get"]
    parameters = {p["name"]: p for p in listed["parameters"]}
    assert {"limit", "cursor"} <= set(parameters)
    assert parameters["limit"]["schema"]["maximum"] == runs.MAX_LIMIT
    assert parameters["limit"]["schema"]["default"] == runs.DEFAULT_LIMIT
    shown = schema["paths"][f"{base}/preview"]["get"]
    for operation in (listed, shown):
        assert {"200", "400", "404"} <= set(operation["responses"])
