"""The console's Audiences page in a real Chromium: sizes, exports, opt-out, erasure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.stores.models import Store
from tests.audiences.helpers import add_customer, add_order
from tests.browser.conftest import Deployment
from tests.browser.test_console_browser import console_sign_in
from tests.factories import create_partner

pytestmark = pytest.mark.browser


def _arrange(deployment: Deployment, store_id: str) -> None:
    engine = make_engine(deployment.database_url)
    try:
        with make_sessionmaker(engine)() as session:
            store = session.get(Store, store_id)
            assert store is not None
            # Orders are a partner's (CONTRACT §6: keyed by store, partner and orderId).
            partner = create_partner(session, name="Bakery POS", pos_type="bakery-pos").partner
            people = [
                ("ada@example.com", "+14155550101", "Ada", "Lovelace", 3),
                ("grace@example.com", None, "Grace", "Hopper", 1),
                (None, "+14155550103", "Alan", "Turing", 0),
                ("erase.me@example.com", "+14155550104", "Eve", "Gone", 2),
            ]
            for email, phone, first, last, orders in people:
                customer = add_customer(
                    session, store, email=email, phone=phone, first_name=first, last_name=last
                )
                for n in range(orders):
                    add_order(
                        session,
                        store,
                        customer,
                        days_ago=5 + 70 * n,
                        price=1200,
                        partner_id=partner.id,
                    )
    finally:
        engine.dispose()


def _row(page: Any, segment: str) -> str:
    return str(page.get_by_role("row").filter(has_text=segment).first.inner_text())


def test_audiences_page_exports_opts_out_and_erases(
    page: Any, deployment: Deployment, shots: Path
) -> None:
    email = deployment.merchant(profile="Corner Bakery")
    auth = deployment.merchant_api_auth(email)
    base = f"{deployment.url}/merchant/api"
    profile = httpx.get(f"{base}/profiles", headers=auth).json()["profiles"][0]
    store = httpx.post(
        f"{base}/profiles/{profile['id']}/stores",
        json={"name": "Bakery Main St", "address": "2 Main St", "countryCode": "US"},
        headers=auth,
    ).json()["store"]
    _arrange(deployment, store["id"])

    console_sign_in(page, deployment, email)
    page.goto(f"{deployment.url}/merchant/profiles/{profile['id']}")
    page.get_by_role("link", name="Audiences and customers' choices").click()
    page.get_by_role("heading", name="Audiences").wait_for()
    assert "4" in _row(page, "Every customer of this business.")
    assert "Customers with 3 or more orders." in _row(page, "repeat")
    page.screenshot(path=shots / "audiences.png", full_page=True)

    with page.expect_download() as download_info:
        page.get_by_role("link", name="Export buyers for Meta").click()
    download = download_info.value
    lines = Path(download.path()).read_text().splitlines()
    assert lines[0] == "email,phone,fn,ln,ct,country"
    assert len(lines) == 4  # three buyers
    assert download.suggested_filename == "audience-buyers-meta.csv"

    page.locator("#f-email").fill("GRACE@example.com")
    page.get_by_role("button", name="Opt out").click()
    page.get_by_text("will not be exported again").wait_for()
    assert "3" in _row(page, "Every customer of this business.")

    page.locator("#erase-phone").fill("(415) 555-0104")
    page.get_by_role("button", name="Erase…").click()
    page.get_by_role("heading", name="Erase this customer?").wait_for()
    page.get_by_role("button", name="Erase for good").click()
    page.get_by_text("Erased: their details are gone").wait_for()
    assert "2" in _row(page, "Every customer of this business.")
    customers = httpx.get(f"{base}/profiles/{profile['id']}/customers", headers=auth).json()
    assert "erase.me@example.com" not in str(customers) and customers["total"] == 3
