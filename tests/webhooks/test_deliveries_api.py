"""`GET /v1/webhooks/deliveries` and `POST /v1/webhooks/deliveries/{eventId}/replay`
(CONTRACT.md §13): a partner sees and replays its own deliveries, no one else's."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from partnerlink_client import (
    NotFound,
    PartnerLinkClient,
    verify_standard_webhook,
    verify_webhook,
)
from sqlalchemy import update
from sqlalchemy.orm import Session
from standardwebhooks.webhooks import Webhook

from partnerlink.kit.cursors import encode_cursor
from partnerlink.settings import Settings
from partnerlink.webhooks.events import STORE_SETTINGS_UPDATED, record_event
from partnerlink.webhooks.models import WebhookEvent
from partnerlink.webhooks.registration import set_webhook_url
from tests.factories import ConnectedStoreFixture, PartnerWithSecret, create_partner
from tests.webhooks.conftest import deliver, events, until
from tests.webhooks.receiver import Receiver, verified

DELIVERIES = "/v1/webhooks/deliveries"


def credentials(partner: PartnerWithSecret) -> dict[str, str]:
    return {"client_id": partner.client_id, "client_secret": partner.client_secret}


def add_events(session: Session, partner_id: str, count: int) -> list[str]:
    ids = []
    for n in range(count):
        event_id = record_event(
            session,
            partner_id=partner_id,
            connection_id=None,
            event_type=STORE_SETTINGS_UPDATED,
            data={"storeId": "s", "greenInvoices": n % 2 == 0},
        )
        assert event_id is not None
        ids.append(event_id)
    session.commit()
    return ids


def all_pages(client: TestClient, params: dict[str, Any]) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []
    cursor = None
    while True:
        answer = client.get(DELIVERIES, params={**params, **({"cursor": cursor} if cursor else {})})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert set(body) == {"deliveries", "nextCursor"}
        seen += body["deliveries"]
        cursor = body["nextCursor"]
        if cursor is None:
            return seen


@pytest.fixture
def other(session: Session, hook_settings: Settings) -> PartnerWithSecret:
    """Another partner with webhooks (its receiver is never reached: nothing is delivered
    to it in these tests), and two events of its own."""
    partner = create_partner(session, name="Other POS", pos_type="other-pos")
    set_webhook_url(session, hook_settings, partner=partner.partner, url="http://127.0.0.1:9/x")
    add_events(session, partner.partner.id, 2)
    return partner


def test_a_partner_lists_its_own_deliveries_with_their_state(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
    other: PartnerWithSecret,
) -> None:
    shop, _ = hooked
    [first] = add_events(session, shop.partner.partner.id, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    receiver.status = 503
    [second] = add_events(session, shop.partner.partner.id, 1)
    deliver(app, hook_settings)
    answer = client.get(DELIVERIES, params=credentials(shop.partner))
    assert answer.status_code == 200
    assert answer.json()["nextCursor"] is None
    delivered, failing = answer.json()["deliveries"]
    assert delivered == {
        "eventId": first,
        "type": "store.settings.updated",
        "status": "delivered",
        "attempts": 1,
        "lastResponseStatus": 200,
        "nextAttemptAt": None,
    }
    assert failing["eventId"] == second and failing["status"] == "pending"
    assert failing["attempts"] == 1 and failing["lastResponseStatus"] == 503
    assert failing["nextAttemptAt"].endswith("Z")
    # The other partner sees its own two, none of these.
    theirs = client.get(DELIVERIES, params=credentials(other)).json()["deliveries"]
    assert len(theirs) == 2 and {first, second}.isdisjoint(d["eventId"] for d in theirs)


def test_deliveries_page_with_cursors_never_repeating_or_skipping(
    client: TestClient,
    session: Session,
    hooked: tuple[ConnectedStoreFixture, str],
    other: PartnerWithSecret,
) -> None:
    shop, _ = hooked
    partner_id = shop.partner.partner.id
    ids = add_events(session, partner_id, 5)
    params = {**credentials(shop.partner), "limit": "2"}
    page = client.get(DELIVERIES, params=params).json()
    assert [d["eventId"] for d in page["deliveries"]] == ids[:2]
    added = add_events(session, partner_id, 2)  # written between two pages
    seen = page["deliveries"] + all_pages(client, {**params, "cursor": page["nextCursor"]})
    assert [d["eventId"] for d in seen] == ids + added

    # Default 100, at most 1,000.
    more = add_events(session, partner_id, 95)
    everything = ids + added + more
    first = client.get(DELIVERIES, params=credentials(shop.partner)).json()
    assert [d["eventId"] for d in first["deliveries"]] == everything[:100]
    assert first["nextCursor"] is not None
    rest = client.get(
        DELIVERIES, params={**credentials(shop.partner), "cursor": first["nextCursor"]}
    ).json()
    assert [d["eventId"] for d in rest["deliveries"]] == everything[100:]
    assert rest["nextCursor"] is None
    whole = client.get(DELIVERIES, params={**credentials(shop.partner), "limit": "1000"}).json()
    assert len(whole["deliveries"]) == 102 and whole["nextCursor"] is None


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"limit": "many"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": encode_cursor(["evt_x"])}, "cursor"),
        ({"cursor": "\x00"}, "cursor"),
    ],
)
def test_a_bad_page_request_is_400(
    client: TestClient,
    hooked: tuple[ConnectedStoreFixture, str],
    params: dict[str, str],
    field: str,
) -> None:
    shop, _ = hooked
    answer = client.get(DELIVERIES, params={**credentials(shop.partner), **params})
    assert answer.status_code == 400
    problem = answer.json()
    assert problem["code"] == "invalid_field" and problem["success"] is False
    assert problem["errors"][0]["field"] == field


def test_a_cursor_beyond_every_event_is_an_empty_last_page(
    client: TestClient, hooked: tuple[ConnectedStoreFixture, str]
) -> None:
    shop, _ = hooked
    for seq in (2**62, 2**63 - 1):
        answer = client.get(
            DELIVERIES, params={**credentials(shop.partner), "cursor": encode_cursor([seq])}
        )
        assert answer.status_code == 200
        assert answer.json() == {"deliveries": [], "nextCursor": None}
    # Beyond a 64-bit key no list made it (and neither database could compare it).
    for seq in (2**63, 10**30, -(2**70)):
        answer = client.get(
            DELIVERIES, params={**credentials(shop.partner), "cursor": encode_cursor([seq])}
        )
        assert answer.status_code == 400
        assert answer.json()["errors"][0]["field"] == "cursor"


def test_replay_sends_a_delivered_event_again(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, secret = hooked
    [event_id] = add_events(session, shop.partner.partner.id, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    deliver(app, hook_settings)
    assert len(receiver.received) == 1
    answer = client.post(f"{DELIVERIES}/{event_id}/replay", params=credentials(shop.partner))
    assert answer.status_code == 202
    assert answer.json() == {"eventId": event_id}
    until(lambda: len(receiver.received) >= 2, app, hook_settings, 10)
    first, again = receiver.received
    assert again.body == first.body and again.event["id"] == event_id
    assert verified(again, secret)
    assert Webhook(secret).verify(again.body, again.headers)["id"] == event_id
    [listed] = client.get(DELIVERIES, params=credentials(shop.partner)).json()["deliveries"]
    assert listed["status"] == "delivered" and listed["attempts"] == 2


def test_replay_of_a_given_up_event_makes_it_due_now(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    shop, _ = hooked
    [event_id] = add_events(session, shop.partner.partner.id, 1)
    session.execute(update(WebhookEvent).values(status="failed"))  # given up
    session.commit()
    deliver(app, hook_settings)
    assert receiver.received == []  # given up: not sent
    assert (
        client.post(f"{DELIVERIES}/{event_id}/replay", params=credentials(shop.partner)).status_code
        == 202
    )
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    assert [e.status for e in events(session)] == ["delivered"]


def test_another_partners_event_or_an_unknown_one_is_404_and_changes_nothing(
    client: TestClient,
    session: Session,
    hooked: tuple[ConnectedStoreFixture, str],
    other: PartnerWithSecret,
) -> None:
    shop, _ = hooked
    theirs = client.get(DELIVERIES, params=credentials(other)).json()["deliveries"][0]
    before = [(e.event_id, e.status, e.next_attempt_at) for e in events(session)]
    for event_id in (theirs["eventId"], "evt_unknown", "evt_%00", "x" * 300):
        answer = client.post(f"{DELIVERIES}/{event_id}/replay", params=credentials(shop.partner))
        assert answer.status_code == 404, event_id
        assert answer.headers["content-type"].startswith("application/problem+json")
        problem = answer.json()
        assert problem["status"] == 404 and problem["success"] is False
        assert problem["code"] == "unknown_event"
    assert [(e.event_id, e.status, e.next_attempt_at) for e in events(session)] == before


@pytest.mark.parametrize(
    "params",
    [
        {"client_id": "plk_ci_nobody", "client_secret": "plk_cs_nothing"},
        {"client_id": "WRONG-SECRET", "client_secret": "plk_cs_nothing"},
        {"client_id": "plk_ci_\x00", "client_secret": "x"},
    ],
)
def test_invalid_client_credentials_are_403(
    client: TestClient,
    session: Session,
    hooked: tuple[ConnectedStoreFixture, str],
    params: dict[str, str],
) -> None:
    shop, _ = hooked
    [event_id] = add_events(session, shop.partner.partner.id, 1)
    if params["client_id"] == "WRONG-SECRET":
        params = {**params, "client_id": shop.partner.client_id}
    before = [(e.status, e.next_attempt_at) for e in events(session)]
    for answer in (
        client.get(DELIVERIES, params=params),
        client.post(f"{DELIVERIES}/{event_id}/replay", params=params),
    ):
        assert answer.status_code == 403
        assert answer.json()["code"] == "invalid_credentials"
        assert shop.partner.client_secret not in answer.text
    assert [(e.status, e.next_attempt_at) for e in events(session)] == before


def test_missing_credentials_are_400(
    client: TestClient, hooked: tuple[ConnectedStoreFixture, str]
) -> None:
    shop, _ = hooked
    for params in (
        {},
        {"client_id": shop.partner.client_id},
        {"client_id": " ", "client_secret": " "},
    ):
        answer = client.get(DELIVERIES, params=params)
        assert answer.status_code == 400
        assert answer.json()["code"] == "missing_field"
        answer = client.post(f"{DELIVERIES}/evt_x/replay", params=params)
        assert answer.status_code == 400


def test_a_partner_without_webhooks_has_an_empty_list(client: TestClient, session: Session) -> None:
    partner = create_partner(session)
    answer = client.get(DELIVERIES, params=credentials(partner))
    assert answer.json() == {"deliveries": [], "nextCursor": None}


def test_the_python_client_lists_replays_and_verifies(
    client: TestClient,
    app: FastAPI,
    session: Session,
    hook_settings: Settings,
    receiver: Receiver,
    hooked: tuple[ConnectedStoreFixture, str],
) -> None:
    """clients/python against this app: its delivery calls, and both of its checks on what
    the worker really sent."""
    shop, secret = hooked
    [event_id] = add_events(session, shop.partner.partner.id, 1)
    until(lambda: len(receiver.received) >= 1, app, hook_settings, 10)
    pl = PartnerLinkClient(
        "http://testserver",
        client_id=shop.partner.client_id,
        client_secret=shop.partner.client_secret,
        http=client,  # the app itself (a TestClient is an httpx.Client)
    )
    page = pl.webhook_deliveries(limit=1)
    assert [d["eventId"] for d in page["deliveries"]] == [event_id]
    assert page["nextCursor"] is None
    assert pl.replay_webhook(event_id) == event_id
    until(lambda: len(receiver.received) >= 2, app, hook_settings, 10)
    for received in receiver.received:
        assert verify_standard_webhook(secret, received.body, received.headers)["id"] == event_id
        assert verify_webhook(secret, received.body, received.signature)["id"] == event_id
    with pytest.raises(NotFound):
        pl.replay_webhook("evt_unknown")
