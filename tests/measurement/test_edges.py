"""Results, lift and campaign ids at their edges (CONTRACT §12): periods outside
2000–2999 and campaign ids a lift URL cannot carry answer 400, never 5xx; currencies
with no minor unit are drawn by code, in whole units, with their sign."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.measurement.models import Campaign
from partnerlink.orders.models import Touch
from partnerlink.settings import Settings
from partnerlink.web.money import format_money
from tests.factories import ConnectedStoreFixture
from tests.measurement.test_touches_cli import run_cli, write_lines
from tests.orders.builders import order_body
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, text

START = "2024-05-01T00:00:00Z"
OUT_OF_RANGE = [
    "from=9999-12-25&to=9999-12-31",
    "from=2024-01-01&to=9999-12-31",
    "from=1999-12-31&to=2000-01-05",
    "from=2999-12-01&to=3000-01-01",
    "to=0001-01-01",
    "from=0001-01-01",
]
BAD_IDS = ["a/b", "a b", "x" * 65, "é", "spring!", ".", "..", "a%2Fb", ""]


def base(shop: ConnectedStoreFixture) -> str:
    if "_base" not in shop.__dict__:
        shop.__dict__["_base"] = f"/merchant/api/profiles/{shop.profile.id}"
    path: str = shop.__dict__["_base"]
    return path


def count(session: Session, model: object) -> int:
    found = int(session.scalar(select(func.count()).select_from(model)) or 0)  # type: ignore[arg-type]
    session.rollback()
    return found


@pytest.mark.parametrize("query", OUT_OF_RANGE)
def test_a_period_outside_2000_to_2999_answers_400(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], query: str
) -> None:
    for extra in ("", "&format=csv"):
        answer = client.get(f"{base(shop)}/results?{query}{extra}", headers=owner)
        assert answer.status_code == 400, (query, extra, answer.text)
        assert answer.json()["code"] == "invalid_field"
    edge = client.get(f"{base(shop)}/results?from=2999-12-25&to=2999-12-31", headers=owner)
    assert edge.status_code == 200 and edge.json()["to"] == "2999-12-31"
    first = client.get(f"{base(shop)}/results?to=2000-01-03", headers=owner)
    assert first.status_code == 200 and first.json()["from"] == "2000-01-01"


def test_the_console_answers_a_400_page_for_such_a_period(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    profile_id = shop.profile.id
    sign_in_console(client)
    for query in OUT_OF_RANGE[:2]:
        page = client.get(f"/merchant/profiles/{profile_id}/results?{query}")
        assert_html(page, 400)
        download = client.get(f"/merchant/profiles/{profile_id}/results.csv?{query}")
        assert download.status_code == 400, download.text


@pytest.mark.parametrize("campaign_id", BAD_IDS)
def test_a_campaign_id_beyond_the_rule_answers_400_and_stores_nothing(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    campaign_id: str,
) -> None:
    body = {"campaignId": campaign_id, "name": "Odd", "startsAt": START, "holdoutPercent": 10}
    answer = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["code"] in ("invalid_field", "missing_field")
    assert problem["errors"][0]["field"] == "campaignId"
    assert count(session, Campaign) == 0


def test_every_allowed_campaign_id_reaches_its_lift(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    for campaign_id in ("Spring_2024.v-1", "x" * 64, "...a"):
        body = {"campaignId": campaign_id, "name": "Ok", "startsAt": START, "holdoutPercent": 10}
        created = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
        assert created.status_code == 200, created.text
        lift = client.get(f"{base(shop)}/campaigns/{campaign_id}/lift", headers=owner)
        assert lift.status_code == 200 and lift.json()["campaignId"] == campaign_id
    odd = client.get(f"{base(shop)}/campaigns/a%20b/lift", headers=owner)
    assert odd.status_code == 400 and odd.json()["code"] == "invalid_field"


def test_a_touch_with_a_bad_campaign_id_is_rejected_alone(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    good = {"campaignId": "spring", "touchedAt": "2024-05-09T00:00:00Z"}
    touches = [
        {**good, "email": "ada@example.com"},
        {**good, "campaignId": "spring/2024", "email": "b@example.com"},
        {**good, "campaignId": "x" * 65, "email": "c@example.com"},
        {**good, "email": "d@example.com"},
    ]
    answer = client.post(f"{base(shop)}/touches", json={"touches": touches}, headers=owner)
    assert answer.status_code == 200, answer.text
    result = answer.json()
    assert (result["imported"], result["rejected"]) == (2, 2)
    assert [e["index"] for e in result["errors"]] == [1, 2]
    assert all("campaignId" in e["reason"] for e in result["errors"])
    names = sorted(session.scalars(select(Campaign.campaign_id)))
    session.rollback()
    assert names == ["spring"]


def test_the_import_command_rejects_a_bad_campaign_id_with_its_line(
    settings: Settings, session: Session, shop: ConnectedStoreFixture, tmp_path: Path
) -> None:
    good = {"profileId": shop.profile.id, "campaignId": "spring", "touchedAt": START}
    file = write_lines(
        tmp_path / "touches.jsonl",
        [
            {**good, "email": "ada@example.com"},
            {**good, "campaignId": "summer/2024", "email": "b@example.com"},
        ],
    )
    session.rollback()
    result = run_cli(settings, "touches", "import", str(file), "--json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert (out["imported"], out["rejected"]) == (1, 1)
    assert out["errors"][0]["line"] == 2 and "campaignId" in out["errors"][0]["reason"]
    assert count(session, Touch) == 1


def test_currencies_without_a_minor_unit_are_drawn_by_code_with_their_sign() -> None:
    assert format_money("5", "XTS") == "XTS\u00a05"
    assert format_money("-5", "XXX") == "-XXX\u00a05"
    assert format_money("123456", "XAU") == "XAU\u00a0123,456"
    assert format_money("-5", "USD") == "-$0.05"
    assert format_money("-1234", "KWD") == "-KWD\u00a01.234"
    assert format_money("1234", "JPY") == "¥1,234"


def test_the_results_page_draws_xxx_and_xts_revenue_sanely(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    for order_id, price, currency in (("T-1", "5", "XTS"), ("T-2", "-5", "XXX")):
        body = order_body(order_id, orderPrice=price, orderCurrency=currency)
        answer = client.post("/v1/orders", json=body, headers=shop.auth)
        assert answer.status_code == 200, answer.text
    profile_id = shop.profile.id
    sign_in_console(client)
    page = client.get(f"/merchant/profiles/{profile_id}/results?from=2024-04-01&to=2024-05-31")
    assert_html(page, 200)
    shown = text(page.text)
    assert "XTS 5" in shown and "-XXX 5" in shown  # text() reads the no-break space as a space
    assert "¤" not in shown and "0.05" not in shown
