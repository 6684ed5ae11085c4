"""The merchant console in a real Chromium: pairing codes, connections, orders, phones."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.browser.conftest import PASSWORD, Deployment

pytestmark = pytest.mark.browser


def console_sign_in(
    page: Any, deployment: Deployment, email: str, shots: Path | None = None
) -> None:
    page.goto(f"{deployment.url}/merchant")
    page.get_by_role("heading", name="Sign in").wait_for()
    if shots:
        page.screenshot(path=shots / "console-signin.png")
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.get_by_role("heading", name="Your businesses").wait_for()


def reserve_code(page: Any, system: str) -> int:
    page.get_by_label("Terminal system").select_option(label=system)
    page.get_by_role("button", name="Get pairing code").click()
    shown = page.locator(".pairing-code")
    shown.wait_for()
    return int(shown.inner_text())


def test_pairing_a_terminal_then_revoking_it(
    page: Any, deployment: Deployment, shots: Path
) -> None:
    deployment.partner("Till Co")
    email = deployment.merchant(profile="Bistro Group")
    console_sign_in(page, deployment, email, shots)

    # A manual store, added in the console.
    page.get_by_role("link", name="Customers and stores").click()
    page.get_by_label("Store name").fill("Bistro Central")
    page.get_by_label("Street address").fill("1 Main St")
    page.get_by_label("Country code").fill("US")
    page.get_by_role("button", name="Add store").click()
    page.get_by_role("heading", name="Bistro Central").wait_for()
    store_url = page.url.split("?")[0]

    code = reserve_code(page, "Till Co")
    assert 100000 <= code <= 999999
    assert re.search(r"Valid until .+ \(72 hours\)", page.inner_text("main"))
    page.screenshot(path=shots / "console-pairing-code.png")

    paired = httpx.post(f"{deployment.url}/v1/auth/integration/pair", json={"code": code})
    assert paired.status_code == 200, paired.text
    access = {"Authorization": f"Bearer {paired.json()['access_token']}"}
    assert httpx.get(f"{deployment.url}/v1/stores", headers=access).status_code == 200

    page.goto(store_url)
    row = page.get_by_role("row").filter(has_text="Till Co")
    assert "Pairing code" in row.inner_text() and "Active" in row.inner_text()
    row.get_by_role("button", name="Revoke Till Co").click()
    page.get_by_text("Connection revoked").wait_for()
    assert "Revoked" in page.get_by_role("row").filter(has_text="Till Co").inner_text()
    assert httpx.get(f"{deployment.url}/v1/stores", headers=access).status_code == 403

    # A redeemed code is consumed.
    again = httpx.post(f"{deployment.url}/v1/auth/integration/pair", json={"code": code})
    assert again.status_code == 404


def test_store_page_with_orders_and_ereceipts(
    page: Any, phone: Any, deployment: Deployment, shots: Path, tmp_path: Path
) -> None:
    till = deployment.partner("Till Co", ereceipt=True)
    email = deployment.merchant(profile="Bistro Group")
    auth = deployment.merchant_api_auth(email)
    profile = httpx.get(f"{deployment.url}/merchant/api/profiles", headers=auth).json()["profiles"][
        0
    ]
    store = httpx.post(
        f"{deployment.url}/merchant/api/profiles/{profile['id']}/stores",
        json={"name": "Bistro Central", "address": "1 Main St", "countryCode": "US"},
        headers=auth,
    ).json()["store"]
    code = httpx.post(
        f"{deployment.url}/merchant/api/stores/{store['id']}/pairing-codes",
        json={"posType": till.pos_type},
        headers=auth,
    ).json()["code"]
    token = httpx.post(f"{deployment.url}/v1/auth/integration/pair", json={"code": code}).json()[
        "access_token"
    ]
    _send_orders(deployment, token, profile["id"], tmp_path)

    console_sign_in(page, deployment, email)
    page.screenshot(path=shots / "console-home.png", full_page=True)
    page.get_by_role("link", name="Manage Bistro Central").click()
    page.get_by_role("heading", name="Recent orders").wait_for()
    orders = page.get_by_role("table").last.inner_text()
    for expected in (
        "A-1004",
        "$18.50",
        "New customer from an ad",
        "Returning",
        "Organic",
        "Anonymous",
    ):
        assert expected in orders, orders
    page.get_by_role("button", name="Turn e-receipts on").click()
    page.get_by_text("E-receipts are on for this store.").wait_for()
    page.screenshot(path=shots / "console-store.png", full_page=True)
    page.get_by_role("link", name="Bistro Group").click()
    page.get_by_role("heading", name="Customers").wait_for()
    assert "3" in page.locator(".stat").inner_text()
    page.screenshot(path=shots / "console-profile.png", full_page=True)

    # The same console on a phone: no sideways scrolling, tables read as cards.
    phone.context.add_cookies(page.context.cookies())
    phone.goto(f"{deployment.url}/merchant/stores/{store['id']}")
    phone.get_by_role("heading", name="Recent orders").wait_for()
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    phone.screenshot(path=shots / "console-store-phone.png")


def _send_orders(deployment: Deployment, token: str, profile_id: str, tmp_path: Path) -> None:
    """Four orders, one of each conversion class (an ad touch makes `new` and `returning`)."""
    now = datetime.now(UTC).replace(microsecond=0)
    touches = tmp_path / "touches.jsonl"
    touches.write_text(
        json.dumps(
            {
                "profileId": profile_id,
                "campaignId": "spring",
                "email": "ann@example.com",
                "touchedAt": (now - timedelta(days=2)).isoformat(),
            }
        )
        + "\n"
    )
    deployment.cli_json("touches", "import", str(touches))
    orders = [
        ("A-1001", "1200", None, now - timedelta(hours=30)),
        ("A-1002", "4200", "bob@example.com", now - timedelta(hours=20)),
        ("A-1003", "2400", "ann@example.com", now - timedelta(hours=10)),
        ("A-1004", "1850", "ann@example.com", now - timedelta(hours=1)),
    ]
    headers = {"Authorization": f"Bearer {token}"}
    for order_id, price, email, created in orders:
        body: dict[str, Any] = {
            "orderId": order_id,
            "orderPrice": price,
            "orderCurrency": "USD",
            "createdAt": created.isoformat(),
            "orderDetails": {"orderStatus": "CLOSED"},
        }
        if email:
            body["customerEmail"] = email
        sent = httpx.post(f"{deployment.url}/v1/orders", json=body, headers=headers)
        assert sent.status_code == 200, sent.text
    # A third customer known only from the uploaded list would need the worker; an
    # order with only a phone number is enough to show a third customer.
    phone_only = {
        "orderId": "A-1005",
        "orderPrice": "900",
        "orderCurrency": "USD",
        "createdAt": now.isoformat(),
        "customerPhoneNumber": "+12025550143",
        "orderDetails": {"orderStatus": "OPEN"},
    }
    assert (
        httpx.post(f"{deployment.url}/v1/orders", json=phone_only, headers=headers).status_code
        == 200
    )
