"""CONTRACT §14 in a real Chromium on a real `partnerlink serve`: sign in to the console,
"Connect with Meta" (the local stand-in's login dialog approves), pick the ad account,
"Create a new audience", and see the worker sync it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import Deployment, empty_all_tables, live_env_for
from tests.browser.test_ad_platforms_browser import _arrange
from tests.browser.test_console_browser import console_sign_in
from tests.conftest import LiveServer
from tests.destinations import fake_google, fake_meta, fake_meta_login
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def meta() -> Iterator[FakeMeta]:
    with FakeMeta() as server:
        yield server


@pytest.fixture(scope="module")
def google() -> Iterator[FakeGoogle]:
    with FakeGoogle() as server:
        yield server


@pytest.fixture(scope="module")
def signing_in(
    browser: Any,
    database_url: str,
    partner_origin: str,
    meta: FakeMeta,
    google: FakeGoogle,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Deployment]:
    """A deployment with the operator's Meta app and Google client registered, both
    platforms being the stand-ins."""
    empty_all_tables(database_url)
    env = live_env_for(
        database_url,
        tmp_path_factory.mktemp("live"),
        PARTNERLINK_META_GRAPH_URL=meta.graph_url,
        PARTNERLINK_META_DIALOG_URL=meta.url,
        PARTNERLINK_META_API_VERSION=fake_meta.VERSION,
        PARTNERLINK_META_APP_ID=fake_meta_login.APP_ID,
        PARTNERLINK_META_APP_SECRET=fake_meta_login.APP_SECRET,
        PARTNERLINK_GOOGLE_CLIENT_ID=fake_google.CLIENT_ID,
        PARTNERLINK_GOOGLE_CLIENT_SECRET=fake_google.CLIENT_SECRET,
        PARTNERLINK_GOOGLE_AUTH_URL=f"{google.url}/auth",
        PARTNERLINK_GOOGLE_TOKEN_URL=google.token_url,
        PARTNERLINK_GOOGLE_DATAMANAGER_URL=google.datamanager_url,
    )
    server = LiveServer(env)
    server.start()
    deployment = Deployment(server, partner_origin, database_url)
    try:
        yield deployment
    finally:
        deployment.close()
        server.stop()


def _signed_in_shop(page: Any, deployment: Deployment, business: str) -> str:
    """A merchant with a business, a store and three customers, signed in to the console;
    answers the business's profile id."""
    email = deployment.merchant(profile=business)
    auth = deployment.merchant_api_auth(email)
    base = f"{deployment.url}/merchant/api"
    profile = httpx.get(f"{base}/profiles", headers=auth).json()["profiles"][0]
    store = httpx.post(
        f"{base}/profiles/{profile['id']}/stores",
        json={"name": f"{business} shop", "address": "2 Lane", "countryCode": "GB"},
        headers=auth,
    ).json()["store"]
    _arrange(deployment, store["id"])
    console_sign_in(page, deployment, email)
    return str(profile["id"])


def test_sign_in_connect_pick_and_sync(
    page: Any, signing_in: Deployment, meta: FakeMeta, shots: Path
) -> None:
    deployment = signing_in
    profile_id = _signed_in_shop(page, deployment, "Corner Bakery")
    page.goto(f"{deployment.url}/merchant/profiles/{profile_id}/audiences")
    page.get_by_role("link", name="Keep All customers in sync on Meta").first.click()
    page.screenshot(path=shots / "ad-platforms-connect.png", full_page=True)
    page.get_by_role("link", name="Connect with Meta").click()
    # The stand-in's dialog approves at once and sends the browser back to the callback.
    page.get_by_role("heading", name="Connected with Meta: Maria Bakery Ads").wait_for()
    page.get_by_label("Ad account", exact=True).select_option("101000000001")
    page.get_by_role("button", name="Show its audiences and datasets").click()
    page.get_by_label("Audience (for an audience)").select_option("new")
    page.screenshot(path=shots / "ad-platforms-pick.png", full_page=True)
    page.get_by_role("button", name="Keep it in sync").click()
    page.get_by_text("Connected. The first sync starts within a minute.").wait_for()
    (audience_id,) = [a for a in meta.audience_info if a not in (fake_meta.AUDIENCE_ID,)]
    assert meta.created_audiences[0]["name"] == "Corner Bakery – all"

    assert "Up to date" in _synced(page, "Meta audience")
    assert len(meta.audiences[audience_id]) == 3
    assert fake_meta.ACCESS_TOKEN not in page.content()


def _synced(page: Any, name: str) -> str:
    """The row of the destination once the server's worker synced it (within seconds)."""
    row = page.get_by_role("row").filter(has_text=name)
    for _ in range(120):
        if "Up to date" in row.inner_text():
            break
        page.wait_for_timeout(500)
        page.reload()
        row = page.get_by_role("row").filter(has_text=name)
    text: str = row.inner_text()
    return text


def test_connect_with_google_type_the_customer_id_and_pick_a_list(
    page: Any, signing_in: Deployment, google: FakeGoogle
) -> None:
    deployment = signing_in
    profile_id = _signed_in_shop(page, deployment, "Harbour Deli")
    google.add_user_list("1234567890", "900000001", "Newsletter")
    page.goto(f"{deployment.url}/merchant/profiles/{profile_id}/ad-platforms")
    page.get_by_role("link", name="Connect with Google").click()
    page.get_by_role("heading", name="Connected with Google: Google account").wait_for()
    page.get_by_label("Google Ads customer id").fill("123-456-7890")
    page.get_by_role("button", name="Show its customer lists").click()
    page.get_by_label("Customer list (for an audience)").select_option("900000001")
    page.get_by_role("button", name="Keep it in sync").click()
    page.get_by_text("Connected. The first sync starts within a minute.").wait_for()
    assert "Up to date" in _synced(page, "Google audience")
    assert len(google.members("900000001")) == 3
