"""Google's verdicts on what a sync sent (CONTRACT §15, "Match results"), read by the
worker from the strict local Google server until it is no longer PROCESSING; and a
consented merchant's erasures, which must reach Google (CONTRACT §11)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import verdicts
from partnerlink.destinations.models import Destination, DestinationRequestCheck
from partnerlink.destinations.tasks import read_google_verdicts
from partnerlink.settings import Settings
from tests.audiences.helpers import add_customer
from tests.destinations.sync_helpers import (
    Destinations,
    Syncing,
    google_audience,
    google_conversions,
    run_worker,
)
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import OTHER, sign_in

NO_CONSENT = "PROCESSING_ERROR_REASON_NO_CONSENT"


def _read(syncing: Syncing) -> int:
    started = read_google_verdicts(syncing.app.state.sessionmaker, syncing.settings)
    verdicts.wait_for_verdicts(timeout=30)
    return started


def _checks(session: Session, destination_id: str | None = None) -> list[Any]:
    """The checks queued, as plain rows (nothing left to load on the test's connection)."""
    check = DestinationRequestCheck
    query = select(
        check.destination_id,
        check.request_id,
        check.records,
        check.attempts,
        check.next_check_at,
    ).order_by(check.id)
    if destination_id is not None:
        query = query.where(check.destination_id == destination_id)
    found = list(session.execute(query).all())
    session.rollback()  # the SQLite test database has one connection: give it back
    return found


def _due_now(session: Session, **moved: Any) -> None:
    """Every check due now (and `moved` set): the worker's backoff and Google's 24 h,
    made to have passed."""
    session.execute(
        update(DestinationRequestCheck).values(
            next_check_at=utcnow() - timedelta(seconds=1), **moved
        )
    )
    session.commit()


def _match_report(session: Session, destination_id: str) -> dict[str, Any]:
    session.expire_all()
    destination = session.get(Destination, destination_id)
    assert destination is not None
    report = dict(destination.match_report or {})
    session.rollback()
    return report


def test_a_consented_merchants_erasure_reaches_google(
    session: Session,
    client: TestClient,
    syncing: Syncing,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
) -> None:
    add_customer(session, shop.store, email="stays@example.com")
    created = syncing.api.create(google_audience())  # consent stated: granted
    syncing.run()
    assert len(syncing.google.members()) == 2

    erased = client.post(
        f"/merchant/api/profiles/{shop.profile.id}/customers/erase",
        json={"email": "someone@example.com"},
        headers=owner,
    )
    assert erased.json() == {"erased": 1}
    syncing.api.sync(created["id"])
    syncing.run()

    removal = syncing.google.requests_to(lambda r: r.path == "/v1/audienceMembers:remove")
    assert len(removal) == 1 and "consent" not in removal[0].json()
    assert syncing.google.bodies[0]["consent"]["adUserData"] == "CONSENT_GRANTED"
    assert len(syncing.google.members()) == 1 and syncing.google.refusals == []
    state = syncing.api.get(created["id"])
    assert state["status"] == "active" and state["lastError"] is None
    assert state["sent"]["removed"] == 1


def test_verdicts_are_read_until_done_and_shown_in_last_report(
    session: Session, syncing: Syncing, shop: ConnectedStoreFixture
) -> None:
    for n in range(4):
        add_customer(session, shop.store, email=f"p{n}@example.com")
    created = syncing.api.create(google_audience())
    syncing.google.script_verdicts(processing=1, status="PARTIAL_SUCCESS", errors={NO_CONSENT: 2})
    syncing.run()
    (check,) = _checks(session)
    assert (check.request_id, check.records) == (syncing.google.request_ids()[0], 5)

    assert _read(syncing) == 1  # Google: PROCESSING
    (check,) = _checks(session)
    assert check.attempts == 1 and check.next_check_at > utcnow() + timedelta(seconds=50)
    processing = _match_report(session, created["id"])["google"]
    assert processing["status"] == "processing" and processing["processing"] == 5
    assert verdicts.google_words(processing) == "Google is still processing the 5 people sent."
    assert _read(syncing) == 0  # not due yet

    _due_now(session)
    assert _read(syncing) == 1  # Google: PARTIAL_SUCCESS
    assert _checks(session) == []
    google = _match_report(session, created["id"])["google"]
    assert google["status"] == "partial_success" and google["kind"] == "audience"
    assert google["requestId"] == check.request_id
    assert google["recordCount"] == 5 and google["processing"] == 0
    assert google["matchRateRange"] == {"low": 20, "high": 30}
    assert google["errors"] == [{"reason": NO_CONSENT, "recordCount": 2}]
    assert google["warnings"] == []
    assert verdicts.google_words(google) == (
        "Google matched 20–30% of the 5 people sent. Google dropped 2 of 5: consent not given."
    )
    # The merchant API shows it beside the sync's own answer.
    last = syncing.api.get(created["id"])["lastReport"]
    assert last["requestId"] and last["google"] == google
    retrieves = syncing.google.requests_to(lambda r: "requestStatus" in r.path)
    assert len(retrieves) == 2 and {r.method for r in retrieves} == {"GET"}


def test_a_verdict_keeps_what_others_wrote_beside_it(session: Session, syncing: Syncing) -> None:
    created = syncing.api.create(google_conversions())
    assert syncing.run() == 1 and _checks(session) == []  # no sale yet: no request, no check
    session.execute(
        update(Destination)
        .where(Destination.id == created["id"])
        .values(match_report={"meta": {"lower": 1000}})
    )
    session.commit()
    # A check as a sync sending one sale queues it, for the request Google took.
    request_id = _ingest_one_event(syncing)
    session.add(
        DestinationRequestCheck(
            destination_id=created["id"],
            profile_id=_profile_of(session, created["id"]),
            request_id=request_id,
            records=1,
            sent_at=utcnow(),
            next_check_at=utcnow(),
            attempts=0,
        )
    )
    session.commit()
    _read(syncing)
    report = _match_report(session, created["id"])
    assert report["meta"] == {"lower": 1000}
    assert report["google"]["kind"] == "conversions"
    assert report["google"]["matchRateRange"] is None  # events have none
    assert verdicts.google_words(report["google"]) == "Google processed the 1 sales sent."


def _profile_of(session: Session, destination_id: str) -> str:
    destination = session.get(Destination, destination_id)
    assert destination is not None
    return destination.profile_id


def _ingest_one_event(syncing: Syncing) -> str:
    from partnerlink.destinations.google import GoogleClient, GoogleTarget, google_purchase_event
    from partnerlink.destinations.google_oauth import GoogleCredentials, TokenCache
    from tests.destinations import fake_google

    with GoogleClient(
        datamanager_url=syncing.google.datamanager_url,
        token_url=syncing.google.token_url,
        credentials=GoogleCredentials(
            fake_google.CLIENT_ID, fake_google.CLIENT_SECRET, fake_google.REFRESH_TOKEN
        ),
        tokens=TokenCache(),
    ) as client:
        report = client.send_events(
            GoogleTarget(fake_google.CUSTOMER_ID, fake_google.CONVERSION_ACTION_ID),
            [
                google_purchase_event(
                    transaction_id="pl-1",
                    created_at=utcnow(),
                    value=10.0,
                    currency="USD",
                    user_data={"userIdentifiers": [{"emailAddress": "a" * 64}]},
                )
            ],
        )
    return report.requests[0][0]


def test_processing_for_24_hours_is_given_up_and_said(
    session: Session, syncing: Syncing, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = syncing.api.create(google_audience())
    syncing.google.script_verdicts(processing=1_000)
    syncing.run()
    _read(syncing)
    assert len(_checks(session)) == 1
    assert _match_report(session, created["id"])["google"]["status"] == "processing"

    # A day and a second later (the worker's clock; the check's backoff made due).
    later = utcnow() + timedelta(hours=24, seconds=1)
    monkeypatch.setattr(verdicts, "utcnow", lambda: later)
    _due_now(session)
    _read(syncing)
    assert _checks(session) == []
    google = _match_report(session, created["id"])["google"]
    assert google["status"] == "gave_up" and google["gaveUp"] == 1
    assert google["processing"] == 0
    assert google["message"] == "Google had not finished processing after 24 hours."
    assert verdicts.google_words(google) == (
        "Google had not finished processing the 1 people sent after 24 hours."
    )
    # Given up without asking Google again: the one retrieve was the first read.
    assert len(syncing.google.requests_to(lambda r: "requestStatus" in r.path)) == 1


def test_a_check_sent_more_than_24_hours_ago_is_given_up_at_once(
    session: Session, syncing: Syncing
) -> None:
    created = syncing.api.create(google_audience())
    syncing.run()
    _due_now(session, sent_at=utcnow() - timedelta(hours=24, seconds=1))
    _read(syncing)
    assert _checks(session) == []
    assert _match_report(session, created["id"])["google"]["status"] == "gave_up"
    assert syncing.google.requests_to(lambda r: "requestStatus" in r.path) == []


def test_a_check_google_refuses_credentials_for_is_dropped_quietly(
    session: Session, syncing: Syncing
) -> None:
    created = syncing.api.create(google_audience())
    syncing.run()
    syncing.google.revoke_refresh_token()
    _read(syncing)
    assert _checks(session) == []
    assert "google" not in _match_report(session, created["id"])
    assert syncing.api.get(created["id"])["status"] == "active"  # the next sync will say


def test_another_merchants_checks_are_never_mixed(
    app: FastAPI,
    client: TestClient,
    session: Session,
    syncing: Syncing,
    worker_settings: Settings,
) -> None:
    other_shop = create_connected_store(session, email=OTHER, pos_type="other-pos")
    for n in range(3):
        add_customer(session, other_shop.store, email=f"other{n}@example.com")
    other = Destinations(client, other_shop.profile.id, sign_in(client, OTHER))
    mine = syncing.api.create(google_audience())
    theirs = other.create(google_audience())
    run_worker(app, worker_settings)
    by_destination = {check.destination_id: check for check in _checks(session)}
    assert by_destination[mine["id"]].records == 1
    assert by_destination[theirs["id"]].records == 3
    syncing.google.script_verdicts(
        request_id=by_destination[theirs["id"]].request_id,
        status="FAILED",
        errors={NO_CONSENT: 3},
    )
    assert _read(syncing) == 2

    my_report = _match_report(session, mine["id"])["google"]
    their_report = _match_report(session, theirs["id"])["google"]
    assert my_report["status"] == "success" and my_report["recordCount"] == 1
    assert my_report["requestId"] == by_destination[mine["id"]].request_id
    assert my_report["errors"] == []
    assert their_report["status"] == "failed" and their_report["recordCount"] == 3
    assert their_report["requestId"] == by_destination[theirs["id"]].request_id
    assert verdicts.google_words(their_report) == (
        "Google could not use the 3 people sent: consent not given."
    )
    # Each merchant's API shows its own.
    assert syncing.api.get(mine["id"])["lastReport"]["google"] == my_report
    assert other.get(theirs["id"])["lastReport"]["google"] == their_report
