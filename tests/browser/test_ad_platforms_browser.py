"""The console's Ad platforms page in a real Chromium, on a real `partnerlink serve` whose
worker syncs to the local Meta server: connect an audience, see it listed and synced."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer
from tests.browser.conftest import Deployment, empty_all_tables, live_env_for
from tests.browser.test_console_browser import console_sign_in
from tests.conftest import LiveServer
from tests.destinations import fake_meta
from tests.destinations.fake_meta import FakeMeta

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def meta() -> Iterator[FakeMeta]:
    with FakeMeta() as server:
        yield server


@pytest.fixture(scope="module")
def ad_deployment(
    browser: Any,
    database_url: str,
    partner_origin: str,
    meta: FakeMeta,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    """A deployment whose worker's Meta is the local stand-in."""
    empty_all_tables(database_url)
    env = live_env_for(
        database_url,
        tmp_path_factory.mktemp("live"),
        PARTNERLINK_META_GRAPH_URL=meta.graph_url,
        PARTNERLINK_META_API_VERSION=fake_meta.VERSION,
    )
    server = LiveServer(env)
    server.start()
    deployment = Deployment(server, partner_origin, database_url)
    try:
        yield deployment
    finally:
        deployment.close()
        server.stop()


def _arrange(deployment: Deployment, store_id: str) -> None:
    engine = make_engine(deployment.database_url)
    try:
        with make_sessionmaker(engine)() as session:
            store = session.get(Store, store_id)
            assert store is not None
            for n in range(3):
                add_customer(session, store, email=f"guest{n}@example.com", first_name="Guest")
    finally:
        engine.dispose()


def test_connect_meta_audience_and_see_it_synced(
    page: Any, ad_deployment: Deployment, meta: FakeMeta, shots: Path
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
    _arrange(deployment, store["id"])

    console_sign_in(page, deployment, email)
    page.goto(f"{deployment.url}/merchant/profiles/{profile['id']}")
    page.get_by_role("link", name="Ad platforms").click()
    page.get_by_role("heading", name="Ad platforms", exact=True).wait_for()
    meta_form = page.locator("form", has=page.locator("input[name=platform][value=meta]"))
    meta_form.get_by_label("What to send").select_option("audience")
    meta_form.get_by_label("Segment (for an audience)").select_option("all")
    meta_form.get_by_label("Audience id (for an audience)").fill(fake_meta.AUDIENCE_ID)
    meta_form.get_by_label("Access token").fill(fake_meta.ACCESS_TOKEN)
    meta_form.get_by_role("button", name="Connect Meta").click()
    page.get_by_text("Connected. The first sync starts within a minute.").wait_for()
    row = page.get_by_role("row").filter(has_text="Meta audience")
    assert "Segment all" in row.inner_text()

    # The server's worker syncs it within seconds; the page says so once reloaded.
    for _ in range(120):
        if "Up to date" in row.inner_text():
            break
        page.wait_for_timeout(500)
        page.reload()
        row = page.get_by_role("row").filter(has_text="Meta audience")
    text = row.inner_text()
    assert "Up to date" in text, text
    assert "added 3" in text
    assert len(meta.audiences[fake_meta.AUDIENCE_ID]) == 3
    assert fake_meta.ACCESS_TOKEN not in page.content()
    page.screenshot(path=shots / "ad-platforms.png", full_page=True)
