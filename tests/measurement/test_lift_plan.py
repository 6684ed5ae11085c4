"""The lift planner (CONTRACT.md §16): its answer from the profile's own history, checked
against statsmodels' NormalIndPower and proportion_effectsize, and against a simulation
in which campaigns with a planted lift of the planned size are found significant by the
lift call about 80% of the time; too little history and bad parameters answer 400."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from partnerlink.customers.models import Customer
from partnerlink.measurement import planner
from partnerlink.measurement.results import _rates
from partnerlink.measurement.stats import detectable_effect, rate_with_effect, wilson
from partnerlink.orders.models import Order
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.measurement.test_merchant_api import base
from tests.merchant.helpers import OTHER, sign_in

SPLITS = [(2000, 10), (2000, 50), (200_000, 1), (100, 20), (45_000, 33), (731, 5)]


@pytest.mark.parametrize(("customers", "holdout"), SPLITS)
def test_the_detectable_effect_is_statsmodels(customers: int, holdout: int) -> None:
    control = customers * holdout / 100
    test = customers - control
    ours = detectable_effect(test, control, power=0.8, alpha=0.05)
    reference = NormalIndPower().solve_power(
        effect_size=None, nobs1=test, alpha=0.05, power=0.8, ratio=control / test
    )
    # statsmodels' root finder stops within ~2e-5 of the root; at ours, its own power is
    # 0.8 to twelve places.
    assert ours == pytest.approx(reference, rel=1e-4)
    power = NormalIndPower().power(ours, test, 0.05, ratio=control / test)
    assert power == pytest.approx(0.8, abs=1e-12)
    for baseline in (0.01, 0.05, 0.3, 0.9):
        lifted = rate_with_effect(baseline, ours)
        if lifted is not None:
            assert proportion_effectsize(lifted, baseline) == pytest.approx(ours, rel=1e-9)
            continue
        assert proportion_effectsize(1.0, baseline) < ours  # no rate is far enough above


def test_a_planted_lift_of_the_planned_size_is_found_in_about_80_percent_of_campaigns() -> None:
    """2,000 simulated campaigns of 2,000 customers with a 10% holdout, buying at the
    baseline rate (20%) in the control group and at the planned minimum detectable lift
    above it in the test group; the lift call (results._rates: Newcombe's interval
    excluding 0) finds the lift significant in 1,571 of them: 78.6% (Wilson 95% interval
    76.7% to 80.3%), against the 80% planned (Newcombe's interval is a little wider than
    the normal test the plan assumes)."""
    customers, holdout, baseline = 2000, 10, 0.2
    control = customers * holdout // 100
    test = customers - control
    lift = planner.detectable_lift(
        baseline, detectable_effect(test, control, power=0.8, alpha=0.05)
    )
    assert lift["absolute"] is not None
    planted = baseline + lift["absolute"]
    rng = random.Random(51)
    found = 0
    for _ in range(2000):
        buyers_test = sum(rng.random() < planted for _ in range(test))
        buyers_control = sum(rng.random() < baseline for _ in range(control))
        found += _rates(buyers_test, test, buyers_control, control)["significant"]
    low, high = wilson(found, 2000)
    assert (found, round(low, 3), round(high, 3)) == (1571, 0.767, 0.803), (found, low, high)
    assert low <= 0.8 <= high


def make_history(
    session: Session, shop: ConnectedStoreFixture, customers: int
) -> tuple[list[int], datetime]:
    """`customers` customers; every fourth orders every 20 to 50 days, the first of them 60
    days ago, a quarter day off the day boundaries the planner counts."""
    now = datetime.now(UTC)
    session.execute(
        insert(Customer),
        [
            {"profile_id": shop.profile.id, "email": f"c{i}@example.com", "created_at": now}
            for i in range(customers)
        ],
    )
    ids = sorted(session.scalars(select(Customer.id).where(Customer.profile_id == shop.profile.id)))
    rows: list[dict[str, Any]] = []
    for i, customer_id in enumerate(ids):
        if i % 4:
            continue
        every = (i % 7) * 5 + 20
        for days_ago in range(60 - i % 11, 0, -every):
            rows.append(
                {
                    "store_id": shop.store.id,
                    "profile_id": shop.profile.id,
                    "partner_id": shop.partner.partner.id,
                    "order_id": f"o{customer_id}-{days_ago}",
                    "order_price": 1000,
                    "order_currency": "USD",
                    "customer_id": customer_id,
                    "ordered_at": now - timedelta(days=days_ago, hours=6),
                    "conversion": "organic",
                    "details": {},
                }
            )
    session.execute(insert(Order), rows)
    session.commit()
    return ids, now


def _share(session: Session, ids: list[int], now: datetime, days: int, windows: int) -> float:
    """The mean share of `ids` with an order in each of the last `windows` windows of `days`."""
    times = session.execute(select(Order.customer_id, Order.ordered_at)).all()
    session.rollback()
    shares = []
    for k in range(windows):
        low, high = now - timedelta(days=(k + 1) * days), now - timedelta(days=k * days)
        shares.append(len({c for c, at in times if low <= at < high}) / len(ids))
    return sum(shares) / windows


def test_the_plan_reads_the_profiles_history(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    ids, now = make_history(session, shop, 2000)
    answer = client.get(f"{base(shop)}/lift-plan?holdoutPercent=10&days=28", headers=owner)
    assert answer.status_code == 200, answer.text
    plan = answer.json()
    assert set(plan) == {
        "customers",
        "baselineRate",
        "holdoutPercent",
        "days",
        "minimumDetectableLift",
        "power",
        "alpha",
        "daysFor",
    }
    assert (plan["customers"], plan["holdoutPercent"], plan["days"]) == (2000, 10, 28)
    assert (plan["power"], plan["alpha"]) == (0.8, 0.05)
    # 61 days of orders (the first 60 days ago): two whole windows of 28 days.
    baseline = _share(session, ids, now, 28, 2)
    assert plan["baselineRate"] == pytest.approx(baseline)
    h = NormalIndPower().solve_power(
        effect_size=None, nobs1=1800, alpha=0.05, power=0.8, ratio=200 / 1800
    )
    lift = plan["minimumDetectableLift"]
    assert proportion_effectsize(baseline + lift["absolute"], baseline) == pytest.approx(
        h, rel=1e-5
    )
    assert lift["relative"] == pytest.approx(lift["absolute"] / baseline)
    assert set(plan["daysFor"]) == {"10%", "20%", "30%"}
    for share, days in plan["daysFor"].items():
        if days is None:
            continue
        at = client.get(f"{base(shop)}/lift-plan?holdoutPercent=10&days={days}", headers=owner)
        assert at.json()["minimumDetectableLift"]["relative"] <= int(share[:-1]) / 100
    # Half held out tells smaller lifts than a tenth.
    half = client.get(f"{base(shop)}/lift-plan?holdoutPercent=50&days=28", headers=owner).json()
    assert half["minimumDetectableLift"]["relative"] < lift["relative"]


def test_a_large_profile_is_read_through_a_fixed_sample(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ids, now = make_history(session, shop, 600)
    exact = client.get(f"{base(shop)}/lift-plan?days=14", headers=owner).json()
    monkeypatch.setattr(planner, "SAMPLE", 200)
    sampled = client.get(f"{base(shop)}/lift-plan?days=14", headers=owner).json()
    assert sampled == client.get(f"{base(shop)}/lift-plan?days=14", headers=owner).json()
    assert exact["customers"] == sampled["customers"] == 600
    assert exact["baselineRate"] == pytest.approx(_share(session, ids, now, 14, 4))
    assert sampled["baselineRate"] == pytest.approx(exact["baselineRate"], rel=0.15)


@pytest.mark.parametrize(("customers", "days"), [(99, 60), (150, 27)])
def test_too_little_history_answers_not_enough_history(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    owner: dict[str, str],
    customers: int,
    days: int,
) -> None:
    make_history(session, shop, customers)
    if days < 28:
        session.execute(
            delete(Order).where(Order.ordered_at < datetime.now(UTC) - timedelta(days=days))
        )
        session.commit()
    answer = client.get(f"{base(shop)}/lift-plan", headers=owner)
    assert answer.status_code == 400
    assert answer.headers["content-type"].startswith("application/problem+json")
    problem = answer.json()
    assert problem["code"] == "not_enough_history" and problem["status"] == 400
    assert "100 customers and 28 days" in problem["detail"]
    assert {e["field"] for e in problem["errors"]} == {"customers", "days"}


@pytest.mark.parametrize(
    "query",
    [
        "holdoutPercent=0",
        "holdoutPercent=51",
        "holdoutPercent=ten",
        "days=6",
        "days=91",
        "days=7.5",
    ],
)
def test_bad_parameters_answer_invalid_field(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], query: str
) -> None:
    answer = client.get(f"{base(shop)}/lift-plan?{query}", headers=owner)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["code"] == "invalid_field"
    assert problem["errors"][0]["field"] == query.split("=")[0]


def test_another_merchants_profile_answers_404(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    create_connected_store(session, email=OTHER, pos_type="other-pos")
    answer = client.get(f"{base(shop)}/lift-plan", headers=sign_in(client, OTHER))
    assert answer.status_code == 404 and answer.json()["code"] == "not_found"
