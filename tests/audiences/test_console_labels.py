"""The Audiences page names its segments in a store owner's words: its "new" is a first
order in the last 30 days, so it must not read as the Results page's "new" (a customer an
ad brought). The API keeps the segment's name `new` (CONTRACT §8)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.audiences.helpers import add_customer, add_order
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, text


def test_the_new_segment_is_first_time_buyers_in_the_console_and_new_in_the_api(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    add_order(
        session, shop.store, add_customer(session, shop.store, email="a@example.com"), days_ago=2
    )
    sign_in_console(client)
    page = client.get(f"/merchant/profiles/{shop.profile.id}/audiences")
    assert_html(page, 200)
    shown = text(page.text)
    assert "First-time buyers (last 30 days) Customers whose first order was within" in shown
    assert 'aria-label="Export First-time buyers (last 30 days) for Meta"' in page.text
    assert "/audiences/new/export?format=meta" in page.text  # the file is still the API's
    assert ">new<" not in page.text
    for label in ("All customers", "Buyers", "Repeat buyers", "Lapsed buyers", "Top spenders"):
        assert label in shown, label

    answer = client.get(f"/merchant/api/profiles/{shop.profile.id}/audiences", headers=owner)
    segments = {a["segment"]: a["customers"] for a in answer.json()["audiences"]}
    assert segments["new"] == 1
