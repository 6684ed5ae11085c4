"""CONTRACT §15 on the console's Ad platforms page in a real Chromium, on a real
`partnerlink serve` whose worker syncs to the local Meta server: the preview of a
destination's first sync, then its runs and Meta's estimate of the audience, in words."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import update

from partnerlink.db.base import utcnow
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.destinations.models import Destination
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer, add_order
from tests.browser.conftest import Deployment
from tests.browser.test_ad_platforms_browser import ad_deployment, meta  # noqa: F401 (fixtures)
from tests.browser.test_console_browser import console_sign_in
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import meta_audience, meta_conversions
from tests.factories import create_partner

pytestmark = pytest.mark.browser


def _arrange(deployment: Deployment, store_id: str, people: int, sales: int) -> None:
    engine = make_engine(deployment.database_url)
    try:
        with make_sessionmaker(engine)() as session:
            store = session.get(Store, store_id)
            assert store is not None
            till = create_partner(session, name="Quay Till", pos_type="quay-till-runs")
            customers = [
                add_customer(session, store, email=f"guest{n}@example.com", first_name="Guest")
                for n in range(people)
            ]
            for n in range(sales):
                add_order(
                    session,
                    store,
                    customers[n],
                    days_ago=1,
                    status="CLOSED",
                    partner_id=till.partner.id,
                )
            session.commit()
    finally:
        engine.dispose()


def _hold_back(deployment: Deployment, destination_id: str) -> bool:
    """The worker leaves it for an hour, if it has not claimed it yet: its first sync is
    still to come. One UPDATE, which the worker's claim (another UPDATE of the row) comes
    before or after, never beside; False when the worker came first."""
    engine = make_engine(deployment.database_url)
    try:
        with make_sessionmaker(engine).begin() as session:
            held = session.execute(
                update(Destination)
                .where(
                    Destination.id == destination_id,
                    Destination.lease_until.is_(None),
                    Destination.last_sync_at.is_(None),
                    Destination.attempts == 0,
                )
                .values(next_attempt_at=utcnow() + timedelta(hours=1))
            )
            return bool(held.rowcount == 1)  # type: ignore[attr-defined]
    finally:
        engine.dispose()


def _never_synced_sales(destinations: str, auth: dict[str, str], deployment: Deployment) -> Any:
    """A sales destination the worker has not synced and will not for an hour. The worker
    takes a new destination at once, so on a slow machine it may come first: that one
    is disconnected and another made."""
    for _ in range(5):
        sales = httpx.post(destinations, json=meta_conversions(), headers=auth).json()
        if _hold_back(deployment, sales["destination"]["id"]):
            return sales["destination"]
        httpx.delete(f"{destinations}/{sales['destination']['id']}", headers=auth)
    raise AssertionError("the worker synced each new sales destination before it was held")


def test_preview_runs_and_metas_estimate_on_the_page(
    page: Any,
    ad_deployment: Deployment,  # noqa: F811
    meta: FakeMeta,  # noqa: F811
    shots: Path,
) -> None:
    deployment = ad_deployment
    email = deployment.merchant(profile="Harbour Café")
    auth = deployment.merchant_api_auth(email)
    base = f"{deployment.url}/merchant/api"
    profile = httpx.get(f"{base}/profiles", headers=auth).json()["profiles"][0]
    store = httpx.post(
        f"{base}/profiles/{profile['id']}/stores",
        json={"name": "Café Quay", "address": "1 Quay", "countryCode": "GB"},
        headers=auth,
    ).json()["store"]
    _arrange(deployment, store["id"], people=12, sales=7)
    destinations = f"{base}/profiles/{profile['id']}/destinations"
    meta.sizes[fake_meta.AUDIENCE_ID] = (1_000, 1_100)
    sales = _never_synced_sales(destinations, auth, deployment)
    audience = httpx.post(destinations, json=meta_audience(), headers=auth).json()["destination"]
    preview = httpx.get(f"{destinations}/{sales['id']}/preview", headers=auth).json()
    assert preview == {"add": 0, "remove": 0, "events": 7}

    console_sign_in(page, deployment, email)
    page.goto(f"{deployment.url}/merchant/profiles/{profile['id']}/ad-platforms")
    history = page.locator(f"tr[data-history='{audience['id']}']")
    for _ in range(120):  # the server's worker syncs the audience within seconds
        if history.locator("[data-runs]").count():
            break
        page.wait_for_timeout(500)
        page.reload()
    # A second sync, asked for: nothing new to send.
    httpx.post(f"{destinations}/{audience['id']}/sync", headers=auth)
    for _ in range(120):
        runs = httpx.get(f"{destinations}/{audience['id']}/runs", headers=auth).json()["runs"]
        if len(runs) == 2:
            break
        page.wait_for_timeout(500)
    page.reload()
    history = page.locator(f"tr[data-history='{audience['id']}']")
    history.locator("summary").click()
    shown = history.inner_text()
    assert "Meta estimates the audience at 1,000–1,100 people." in shown
    assert "Scheduled" in shown and "added 12 people" in shown
    assert "Asked for" in shown and "Nothing to send" in shown
    held_back = page.locator(f"tr[data-history='{sales['id']}']").inner_text()
    assert "The first sync will send 7 sales." in held_back
    assert fake_meta.ACCESS_TOKEN not in page.content()
    page.screenshot(path=shots / "ad-platforms-runs.png", full_page=True)
