"""Results and lift over the largest amounts (CONTRACT §12, added 2026-11-29): orders at
the largest amount an order may carry, and spends beyond a 64-bit integer (orders stored
before amounts were bounded), sum exactly, never a 5xx."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from tests.audiences.big_spenders import LARGER, SMALLER, big_spenders, post_ceiling_orders
from tests.factories import ConnectedStoreFixture


def _revenue(amounts: list[dict[str, str]]) -> int:
    return sum(int(a["amount"]) for a in amounts if a["currency"] == "USD")


def _results(client: TestClient, path: str, owner: dict[str, str]) -> tuple[dict[str, Any], int]:
    """Results as JSON, and the revenue of its CSV."""
    answer = client.get(f"{path}/results", headers=owner)
    assert answer.status_code == 200, answer.text
    download = client.get(f"{path}/results", params={"format": "csv"}, headers=owner)
    assert download.status_code == 200, download.text
    rows = csv.DictReader(io.StringIO(download.text))
    return answer.json(), sum(int(row["revenue"]) for row in rows)


def test_orders_at_the_ceiling_sum_exactly_in_results(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    total = post_ceiling_orders(client, shop)
    results, csv_revenue = _results(client, f"/merchant/api/profiles/{shop.profile.id}", owner)
    classes = results["classes"].values()
    assert sum(_revenue(c["revenue"]) for c in classes) == total == csv_revenue
    assert sum(c["orders"] for c in classes) == 12


def test_spends_beyond_a_bigint_sum_exactly_in_results_and_lift(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    path = f"/merchant/api/profiles/{shop.profile.id}"
    now = datetime.now(UTC)
    campaign = {
        "campaignId": "spring",
        "name": "Spring",
        "startsAt": (now - timedelta(days=5)).isoformat(),
        "holdoutPercent": 50,
    }
    assert client.post(f"{path}/campaigns", json=campaign, headers=owner).status_code == 200
    spenders = big_spenders(session, shop)
    for order in spenders.orders:
        order.campaign_id = "spring"
    session.execute(
        update(Customer)
        .where(Customer.profile_id == shop.profile.id)
        .values(created_at=now - timedelta(days=10))
    )
    session.commit()
    big = sum(LARGER) + sum(SMALLER)
    assert big > 2 * (2**63 - 1)
    everyone = big + 1000 + 1001 + 1002

    results, csv_revenue = _results(client, path, owner)
    assert _revenue(results["classes"]["organic"]["revenue"]) == everyone == csv_revenue
    [spring] = results["campaigns"]
    assert spring["orders"] == len(LARGER) + len(SMALLER)
    assert _revenue(spring["revenue"]) == big

    lift = client.get(f"{path}/campaigns/spring/lift", headers=owner)
    assert lift.status_code == 200, lift.text
    groups = [lift.json()[name] for name in ("test", "control")]
    assert sum(g["buyers"] for g in groups) == 5
    assert sum(_revenue(g["revenue"]) for g in groups) == everyone
