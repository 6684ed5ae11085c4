"""The console's Results page in a real Chromium: chart, campaign table, CSV, on a phone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import Deployment
from tests.browser.test_console_browser import console_sign_in

pytestmark = pytest.mark.browser


def test_results_page_draws_weeks_and_campaigns(
    page: Any, phone: Any, deployment: Deployment, shots: Path
) -> None:
    till = deployment.partner("Results Till")
    email = deployment.merchant(profile="Harbour Cafés")
    auth = deployment.merchant_api_auth(email)
    api = f"{deployment.url}/merchant/api"
    profile = httpx.get(f"{api}/profiles", headers=auth).json()["profiles"][0]
    store = httpx.post(
        f"{api}/profiles/{profile['id']}/stores",
        json={"name": "Harbour Front", "address": "2 Quay St", "countryCode": "US"},
        headers=auth,
    ).json()["store"]
    code = httpx.post(
        f"{api}/stores/{store['id']}/pairing-codes", json={"posType": till.pos_type}, headers=auth
    ).json()["code"]
    token = httpx.post(f"{deployment.url}/v1/auth/integration/pair", json={"code": code}).json()[
        "access_token"
    ]
    now = datetime.now(UTC).replace(microsecond=0)
    people = [f"guest{i}@example.com" for i in range(12)]
    # Orders over four weeks, sent newest first: late data re-classifies.
    for n in range(40):
        created = now - timedelta(hours=n * 15 + 1)
        body = {
            "orderId": f"R-{n}",
            "orderPrice": str(1200 + 50 * n),
            "orderCurrency": "USD",
            "createdAt": created.isoformat(),
            "orderDetails": {"orderStatus": "CLOSED"},
        }
        if n % 5:
            body["customerEmail"] = people[n % len(people)]
        sent = httpx.post(
            f"{deployment.url}/v1/orders", json=body, headers={"Authorization": f"Bearer {token}"}
        )
        assert sent.status_code == 200, sent.text
    touches = [
        {
            "campaignId": "spring-search" if i % 2 else "spring-social",
            "email": person,
            "touchedAt": (now - timedelta(days=3 + i)).isoformat(),
        }
        for i, person in enumerate(people[:8])
    ]
    imported = httpx.post(
        f"{api}/profiles/{profile['id']}/touches", json={"touches": touches}, headers=auth
    ).json()
    assert imported["imported"] == 8 and imported["reclassified"] > 0

    console_sign_in(page, deployment, email)
    page.get_by_role("link", name="Manage Harbour Front").wait_for()
    page.goto(f"{deployment.url}/merchant/profiles/{profile['id']}")
    page.get_by_role("link", name="Results").click()
    page.get_by_role("heading", name="Results").wait_for()
    assert page.locator("svg.chart rect").count() > 4
    campaigns = page.get_by_role("table").last.inner_text().lower()
    assert "spring-search" in campaigns and "spring-social" in campaigns
    assert page.locator("script").count() == 0
    page.screenshot(path=shots / "results.png", full_page=True)

    with page.expect_download() as download:
        page.get_by_role("link", name="Download CSV").click()
    lines = Path(download.value.path()).read_text().splitlines()
    assert lines[0] == "weekStart,class,currency,orders,revenue" and len(lines) > 2

    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{deployment.url}/merchant/profiles/{profile['id']}/results")
    phone.get_by_role("heading", name="Results").wait_for()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=shots / "results-phone.png", full_page=True)
