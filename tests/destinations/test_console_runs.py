"""The Ad platforms page (CONTRACT §15): under each destination its last 20 runs in
words, the preview before its first sync, and the platforms' match results in words."""

from __future__ import annotations

import re
from datetime import timedelta

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations import verdicts
from partnerlink.destinations.models import Destination
from partnerlink.destinations.preview import Preview
from partnerlink.destinations.web import preview_in_words
from tests.audiences.helpers import add_customer, add_order
from tests.destinations import fake_meta
from tests.destinations.sync_helpers import (
    Syncing,
    google_audience,
    meta_audience,
    meta_conversions,
)
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, text


def _history(html: str, destination_id: str) -> str:
    """The text of the row under the destination: its preview, match results and runs."""
    found = re.search(
        rf'<tr class="destination-history" data-history="{destination_id}">(.*?)</td>\s*</tr>\s*'
        r"(?=<tr data-destination|</tbody>)",
        html,
        re.S,
    )
    assert found, html[:2000]
    return found.group(1)


def _page(client: TestClient, shop: ConnectedStoreFixture) -> str:
    response = client.get(f"/merchant/profiles/{shop.profile.id}/ad-platforms")
    assert_html(response, 200)
    return response.text


def test_preview_before_the_first_sync_then_runs_and_match_results(
    client: TestClient,
    syncing: Syncing,
    session: Session,
    shop: ConnectedStoreFixture,
) -> None:
    buyer = add_customer(session, shop.store, email="buyer@example.com")
    for _ in range(2):
        add_order(session, shop.store, buyer, days_ago=1, status="CLOSED")
    session.commit()
    audience = syncing.api.create(meta_audience())
    sales = syncing.api.create(meta_conversions())
    sign_in_console(client)

    html = _page(client, shop)
    assert "The first sync will add 2 people and remove none." in text(
        _history(html, audience["id"])
    )
    assert "The first sync will send 2 sales." in text(_history(html, sales["id"]))
    assert "data-runs" not in html  # no run yet

    syncing.meta.sizes[fake_meta.AUDIENCE_ID] = (1_000, 1_100)
    syncing.run()
    syncing.meta.server_error_next(503)
    add_customer(session, shop.store, email="late@example.com")
    session.rollback()
    syncing.api.sync(audience["id"])
    syncing.run()

    html = _page(client, shop)
    shown = text(_history(html, audience["id"]))
    assert "The first sync" not in shown  # the preview is for before the first sync
    assert "Meta estimates the audience at 1,000–1,100 people." in shown
    assert "Last 2 syncs" in shown
    assert re.search(r"Asked for\s+Will retry\s+nothing sent\s+Meta answered HTTP 503", shown)
    assert re.search(r"Scheduled\s+Sent\s+added 2 people\s+—", shown)
    sales_shown = text(_history(html, sales["id"]))
    assert re.search(r"Scheduled\s+Sent\s+sent 2 sales", sales_shown)
    assert "Meta estimates" not in sales_shown
    assert fake_meta.ACCESS_TOKEN not in html
    assert " style=" not in _history(html, audience["id"])  # CSP: no inline style
    assert "<script" not in _history(html, audience["id"])

    # Google's verdicts, in the words verdicts.google_words gives them.
    google = syncing.api.create(google_audience())
    verdict = {
        "status": "success",
        "recordCount": 1_240,
        "matchRateRange": {"low": 20, "high": 30},
        "errors": [],
        "warnings": [],
        "processing": 0,
    }
    session.execute(
        update(Destination)
        .where(Destination.id == google["id"])
        .values(last_sync_at=utcnow() - timedelta(minutes=5), match_report={"google": verdict})
    )
    session.commit()
    said = verdicts.google_words(verdict)
    assert said
    assert said in text(_history(_page(client, shop), google["id"]))


def test_only_the_last_20_runs_are_shown(
    client: TestClient, syncing: Syncing, shop: ConnectedStoreFixture
) -> None:
    created = syncing.api.create(meta_audience())
    for _ in range(22):
        syncing.api.sync(created["id"])
        syncing.run()
    sign_in_console(client)
    history = _history(_page(client, shop), created["id"])
    assert history.count("<tr data-run=") == 20
    assert "Last 20 syncs" in text(history)


def test_preview_words() -> None:
    assert preview_in_words("audience", Preview(add=1_240)) == (
        "The first sync will add 1,240 people and remove none."
    )
    assert preview_in_words("audience", Preview(add=1, remove=3)) == (
        "The first sync will add 1 person and remove 3."
    )
    assert preview_in_words("audience", Preview()) == "The first sync has nobody to add yet."
    assert (
        preview_in_words("conversions", Preview(events=37)) == "The first sync will send 37 sales."
    )
    assert preview_in_words("conversions", Preview(events=1)) == "The first sync will send 1 sale."
    assert preview_in_words("conversions", Preview()) == "The first sync has no sales to send yet."
