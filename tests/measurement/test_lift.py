"""Lift statistics (CONTRACT.md §7): Wilson and Newcombe against SciPy, holdout assignment,
and a simulation with a planted effect recovered through the merchant API."""

from __future__ import annotations

import hashlib
import hmac
import random
from datetime import UTC, datetime, timedelta
from math import sqrt

import pytest
from fastapi.testclient import TestClient
from scipy.stats import binomtest, norm
from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.models import Campaign
from partnerlink.measurement.stats import newcombe, wilson
from partnerlink.orders.models import Order
from tests.factories import ConnectedStoreFixture

CASES = [(0, 10), (10, 10), (3, 17), (120, 1000), (1, 20000), (997, 1000), (45, 300)]


@pytest.mark.parametrize(("successes", "trials"), CASES)
def test_wilson_matches_scipy(successes: int, trials: int) -> None:
    reference = binomtest(successes, trials).proportion_ci(0.95, method="wilson")
    assert wilson(successes, trials) == pytest.approx((reference.low, reference.high), abs=1e-12)


@pytest.mark.parametrize(("a", "b"), [(c1, c2) for c1 in CASES for c2 in CASES[::2]])
def test_newcombe_matches_an_independent_computation(
    a: tuple[int, int], b: tuple[int, int]
) -> None:
    """Newcombe (1998) method 10, written out from SciPy's Wilson limits and normal quantile."""
    z = norm.ppf(0.975)
    p1, p2 = a[0] / a[1], b[0] / b[1]
    l1, u1 = binomtest(*a).proportion_ci(0.95, method="wilson")
    l2, u2 = binomtest(*b).proportion_ci(0.95, method="wilson")
    expected = (
        p1 - p2 - sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2),
        p1 - p2 + sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2),
    )
    assert newcombe(a[0], a[1], b[0], b[1], z) == pytest.approx(expected, abs=1e-12)
    # Newcombe's own worked example (Statistics in Medicine 17, 1998, table II, row 1):
    # 56/70 against 48/80 gives -0.0524 .. 0.3339 by method 10.
    low, high = newcombe(56, 70, 48, 80)
    assert (round(low, 4), round(high, 4)) == (0.0524, 0.3339)


def test_holdout_assignment_is_the_written_hmac_rule() -> None:
    salt = b"s" * 32
    for customer_id in range(1, 2000):
        digest = hmac.new(salt, str(customer_id).encode(), hashlib.sha256).hexdigest()
        expected = int(digest[:8], 16) < 0.2 * 2**32
        assert is_control(salt, customer_id, 20) is expected
    share = sum(is_control(salt, i, 20) for i in range(20_000)) / 20_000
    assert 0.19 < share < 0.21
    assert not any(is_control(salt, i, 0) for i in range(1000))


def test_simulated_campaign_recovers_its_planted_lift(
    client: TestClient, session: Session, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    """20,000 customers, 20% held out; buyers at 10% without the ads and 13% with them."""
    profile_id, store_id = shop.profile.id, shop.store.id
    starts = datetime(2024, 5, 1, tzinfo=UTC)
    created = client.post(
        f"/merchant/api/profiles/{profile_id}/campaigns",
        headers=owner,
        json={
            "campaignId": "sim",
            "name": "Simulated",
            "startsAt": starts.isoformat(),
            "endsAt": (starts + timedelta(days=28)).isoformat(),
            "holdoutPercent": 20,
        },
    )
    assert created.status_code == 200, created.text
    # The salt is random per campaign; fixed here so that the draw below is reproducible
    # (a 95% interval misses the truth in one draw out of twenty).
    salt = bytes(range(32))
    session.execute(update(Campaign).values(salt=salt))
    before = starts - timedelta(days=30)
    session.execute(
        insert(Customer),
        [
            {
                "profile_id": profile_id,
                "email": f"c{i}@example.com",
                "created_at": before,
                "updated_at": before,
            }
            for i in range(20_000)
        ],
    )
    ids = list(session.scalars(select(Customer.id).where(Customer.profile_id == profile_id)))
    assert len(ids) == 20_000
    rng = random.Random(14)
    planted = 0.03
    rows = []
    for customer_id in ids:
        rate = 0.10 if is_control(salt, customer_id, 20) else 0.10 + planted
        if rng.random() < rate:
            rows.append(
                {
                    "store_id": store_id,
                    "profile_id": profile_id,
                    "partner_id": shop.partner.partner.id,
                    "order_id": f"o{customer_id}",
                    "order_price": 1000,
                    "order_currency": "USD",
                    "customer_id": customer_id,
                    "ordered_at": starts + timedelta(days=rng.randrange(28)),
                    "conversion": "organic",
                    "details": {},
                }
            )
    session.execute(insert(Order), rows)
    session.commit()

    answer = client.get(f"/merchant/api/profiles/{profile_id}/campaigns/sim/lift", headers=owner)
    assert answer.status_code == 200, answer.text
    lift = answer.json()
    test, control = lift["test"], lift["control"]
    assert test["customers"] + control["customers"] == 20_000
    assert 3_700 < control["customers"] < 4_300
    assert test["buyers"] + control["buyers"] == len(rows)
    rate = lift["conversionRate"]
    assert rate["test"] == test["buyers"] / test["customers"]
    assert rate["absoluteLift"] == pytest.approx(rate["test"] - rate["control"])
    low, high = rate["ci95"]
    assert low <= planted <= high
    assert lift["significant"] is (low > 0)
    assert lift["incrementalBuyers"] == round(rate["absoluteLift"] * test["customers"])
    assert test["revenue"] == [{"currency": "USD", "amount": str(1000 * test["buyers"])}]
