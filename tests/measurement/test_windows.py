"""Attribution windows per campaign and touches of two kinds (CONTRACT.md §16): a campaign's
click and view windows, a touch's `kind`, a window changed by PATCH re-classifying the
orders it affects in one transaction, Results split into click and view orders, and bad
input answered with a problem body that stores nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.measurement.models import Campaign
from partnerlink.orders.models import Order, Touch
from partnerlink.settings import Settings
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.measurement.test_merchant_api import base, count
from tests.measurement.test_touches_cli import run_cli, write_lines
from tests.merchant.helpers import OTHER, sign_in
from tests.orders.builders import order_body, post

MAY = "2024-05-01T00:00:00Z"


def campaign(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], **more: Any
) -> Any:
    body = {"campaignId": "meta", "name": "Meta ads", "startsAt": MAY, **more}
    answer = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    assert answer.status_code == 200, answer.text
    return answer.json()["campaign"]


def touches(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], *sent: dict[str, Any]
) -> Any:
    answer = client.post(f"{base(shop)}/touches", json={"touches": list(sent)}, headers=owner)
    assert answer.status_code == 200, answer.text
    return answer.json()


def order(
    client: TestClient, shop: ConnectedStoreFixture, order_id: str, created_at: str, email: str
) -> None:
    body = order_body(order_id, createdAt=created_at, customerEmail=email, customerPhoneNumber=None)
    assert post(client, shop.auth, body).status_code == 200


def meta_reaches(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], **kinds: str
) -> None:
    """A campaign with Meta's usual windows, whose ads reached each person named (`a` for
    a@example.com) on 2 May at noon by a touch of the kind given."""
    campaign(client, shop, owner, clickWindowDays=7, viewWindowDays=1)
    reached = [
        {"campaignId": "meta", "touchedAt": "2024-05-02T12:00:00Z", "email": f"{who}@example.com"}
        | {"kind": kind}
        for who, kind in kinds.items()
    ]
    touches(client, shop, owner, *reached)


def classes(session: Session) -> dict[str, tuple[str, str | None, str | None]]:
    found = {
        o.order_id: (o.conversion, o.campaign_id, o.touch_kind)
        for o in session.scalars(select(Order))
    }
    session.rollback()
    return found


def test_a_campaigns_windows_default_to_the_setting_and_one_day(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    made = campaign(client, shop, owner)
    assert (made["clickWindowDays"], made["viewWindowDays"]) == (7, 1)
    google = campaign(
        client, shop, owner, campaignId="google", clickWindowDays=30, viewWindowDays=0
    )
    assert (google["clickWindowDays"], google["viewWindowDays"]) == (30, 0)
    listed = client.get(f"{base(shop)}/campaigns", headers=owner).json()["campaigns"]
    assert [(c["clickWindowDays"], c["viewWindowDays"]) for c in listed] == [(7, 1), (30, 0)]


def test_each_touch_counts_for_its_campaigns_window_of_its_kind(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    """Meta's usual windows: 7 days after a click, 1 after a view."""
    meta_reaches(client, shop, owner, a="click", b="view", c="view")
    order(client, shop, "a", "2024-05-08T12:00:00Z", "a@example.com")  # 6 days after a click
    order(client, shop, "b", "2024-05-03T11:00:00Z", "b@example.com")  # 23 hours after a view
    order(client, shop, "c", "2024-05-04T12:00:00Z", "c@example.com")  # 2 days after a view
    assert classes(session) == {
        "a": ("new", "meta", "click"),
        "b": ("new", "meta", "view"),
        "c": ("organic", None, None),
    }
    stored = session.scalars(select(Touch.kind).order_by(Touch.id)).all()
    assert stored == ["click", "view", "view"]
    session.rollback()
    results = client.get(f"{base(shop)}/results?from=2024-05-01&to=2024-05-28", headers=owner)
    entry = results.json()["campaigns"][0]
    assert (entry["orders"], entry["clickOrders"], entry["viewOrders"]) == (2, 1, 1)


def test_a_window_changed_reclassifies_the_orders_it_affects_at_once(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    meta_reaches(client, shop, owner, a="click", b="view")
    order(client, shop, "a", "2024-05-20T12:00:00Z", "a@example.com")  # 18 days after the click
    order(client, shop, "b", "2024-05-03T11:00:00Z", "b@example.com")  # 23 hours after the view
    assert classes(session)["a"] == ("organic", None, None)

    # Google's store sales count 30 days after a click; views not at all.
    path = f"{base(shop)}/campaigns/meta"
    changed = client.patch(path, json={"clickWindowDays": 30, "viewWindowDays": 0}, headers=owner)
    assert changed.status_code == 200, changed.text
    answer = changed.json()
    assert answer["reclassified"] == 2
    assert (answer["campaign"]["clickWindowDays"], answer["campaign"]["viewWindowDays"]) == (30, 0)
    assert classes(session) == {"a": ("new", "meta", "click"), "b": ("organic", None, None)}

    same = client.patch(path, json={"clickWindowDays": 30}, headers=owner)
    assert same.json()["reclassified"] == 0
    back = client.patch(path, json={"viewWindowDays": 1}, headers=owner)
    assert back.json()["reclassified"] == 1
    assert classes(session)["b"] == ("new", "meta", "view")
    # A touch arriving later reads the window as it is now.
    touches(
        client,
        shop,
        owner,
        {"campaignId": "meta", "touchedAt": "2024-04-25T12:00:00Z", "email": "c@example.com"},
    )
    order(client, shop, "c", "2024-05-20T12:00:00Z", "c@example.com")  # 25 days after
    assert classes(session)["c"] == ("new", "meta", "click")


@pytest.mark.parametrize(
    "body",
    [
        {"clickWindowDays": 0},
        {"clickWindowDays": 91},
        {"viewWindowDays": -1},
        {"viewWindowDays": 31},
        {"clickWindowDays": "7"},
        {"clickWindowDays": 7.5},
        {},
    ],
)
def test_windows_out_of_range_answer_400_and_store_nothing(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    body: dict[str, Any],
) -> None:
    campaign(client, shop, owner)
    refused = client.patch(f"{base(shop)}/campaigns/meta", json=body, headers=owner)
    assert refused.status_code == 400, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    assert problem["code"] == ("missing_field" if not body else "invalid_field")
    assert problem["errors"] and problem["success"] is False
    created = client.post(
        f"{base(shop)}/campaigns",
        json={"campaignId": "other", "name": "Other", "startsAt": MAY, **body},
        headers=owner,
    )
    assert created.status_code == (200 if not body else 400), created.text
    stored = session.scalars(select(Campaign).where(Campaign.campaign_id == "meta")).one()
    assert (stored.click_window_days, stored.view_window_days) == (7, 1)
    session.rollback()


def test_another_merchants_campaign_or_an_unknown_one_answers_404(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    campaign(client, shop, owner)
    create_connected_store(session, email=OTHER, pos_type="other-pos")
    intruder = sign_in(client, OTHER)
    path = f"{base(shop)}/campaigns/meta"
    answer = client.patch(path, json={"clickWindowDays": 30}, headers=intruder)
    assert answer.status_code == 404 and answer.json()["code"] == "not_found"
    unknown = client.patch(
        f"{base(shop)}/campaigns/nope", json={"clickWindowDays": 30}, headers=owner
    )
    assert unknown.status_code == 404
    assert unknown.headers["content-type"].startswith("application/problem+json")
    stored = session.scalars(select(Campaign.click_window_days)).all()
    assert stored == [7]
    session.rollback()


def test_a_touch_of_an_unknown_kind_refuses_the_request_and_stores_nothing(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    touch = {"campaignId": "meta", "touchedAt": "2024-05-02T12:00:00Z", "email": "a@example.com"}
    sent: list[dict[str, Any]] = [
        {**touch, "kind": None},
        {**touch, "kind": "impression"},
        {**touch, "kind": 1},
    ]
    refused = client.post(f"{base(shop)}/touches", json={"touches": sent}, headers=owner)
    assert refused.status_code == 400
    assert refused.headers["content-type"].startswith("application/problem+json")
    problem = refused.json()
    assert (problem["code"], problem["detail"]) == (
        "invalid_field",
        "touches[1].kind must be click or view",
    )
    assert [e["field"] for e in problem["errors"]] == ["touches[1].kind", "touches[2].kind"]
    assert count(session, Touch) == count(session, Campaign) == 0
    # Left out or null, a touch is a click.
    assert touches(client, shop, owner, touch, sent[0])["imported"] == 1


def test_the_import_command_takes_the_kind_too(
    settings: Settings, session: Session, shop: ConnectedStoreFixture, tmp_path: Path
) -> None:
    line = {
        "profileId": shop.profile.id,
        "campaignId": "meta",
        "touchedAt": MAY,
        "email": "a@example.com",
    }
    file = write_lines(tmp_path / "t.jsonl", [{**line, "kind": "view"}, {**line, "kind": "banner"}])
    done = run_cli(settings, "touches", "import", str(file), "--json")
    assert done.exit_code == 0, done.output
    assert '"imported": 1' in done.output and "kind must be click or view" in done.output
    assert session.scalars(select(Touch.kind)).all() == ["view"]
    session.rollback()
