"""The lift planner (CONTRACT.md §16): what a campaign with a holdout can tell, worked out
before it starts from the profile's own history.

The history is the profile's customers now, and how many of them bought in windows of a
test's length over the last 90 days (orders by `createdAt`, sandbox stores' left out as in
results and lift). From it: the smallest lift a two-sided test of the two conversion rates
detects with 80% power at α 0.05 for a holdout split (measurement/stats.py), and the days a
10%, 20% or 30% lift would need.

A profile with more than `SAMPLE` customers is read through a fixed sample of them (those
whose id, multiplied by an odd constant, falls in the first share of 2^16): the share who
buy is estimated from them (a standard error of at most about one percentage point, less
over several windows), and the answer stays fast at any size (bench/measurement.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.db.plans import plan_for_given_values
from partnerlink.measurement import queries
from partnerlink.measurement.stats import detectable_effect, rate_with_effect
from partnerlink.problems import BadRequest

LOOKBACK_DAYS = 90
MIN_CUSTOMERS = 100
MIN_HISTORY_DAYS = 28
HOLDOUT_PERCENT = (1, 50)
TEST_DAYS = (7, 90)
LIFTS = (10, 20, 30)  # relative lifts, in percent, whose days are planned
POWER = 0.8
ALPHA = 0.05
SAMPLE = 2_000
_SAMPLE_SPACE = 65_536


class NotEnoughHistory(BadRequest):
    code = "not_enough_history"
    detail = (
        f"The planner needs at least {MIN_CUSTOMERS} customers and {MIN_HISTORY_DAYS} days"
        " of orders."
    )


@dataclass(frozen=True)
class History:
    """The profile's customers, and when the sampled ones bought.

    `firsts[o][t]` counts the (customer, day) pairs `o` whole days before now whose
    customer's previous order day, looking back, lies more than `t` days further back:
    such a day is the first of its customer's days in any window of length d that holds
    it exactly when `o mod d < t + 1`, so each window's buyers are counted from it alone.
    """

    customers: int
    sampled: int
    days: int  # days of orders: today and the days before, back to the first order (≤ 90)
    firsts: list[list[int]]

    def rate(self, days: int) -> float:
        """The mean share of the customers who bought in a window of `days` days, over the
        whole windows of the history ending now (the last `days` days when it is shorter)."""
        windows = max(1, self.days // days)
        buyers = sum(self.firsts[o][o % days] for o in range(min(windows * days, LOOKBACK_DAYS)))
        return buyers / (windows * self.sampled) if self.sampled else 0.0


def history(session: Session, profile_id: str, now: datetime | None = None) -> History:
    """The profile's history as the planner reads it (planned for its values: db/plans.py)."""
    plan_for_given_values(session)
    now = now or utcnow()
    live_only = session.scalar(queries.has_test_stores(profile_id)) is not None
    customers = session.scalar(queries.customer_count(profile_id, live_only)) or 0
    first = session.scalar(queries.first_order_at(profile_id, now, live_only))
    days = 0 if first is None else min(LOOKBACK_DAYS, (now - first) // timedelta(days=1) + 1)
    if customers < MIN_CUSTOMERS or days < MIN_HISTORY_DAYS:
        raise NotEnoughHistory(
            errors=[
                {"field": "customers", "message": f"{customers} (at least {MIN_CUSTOMERS})"},
                {
                    "field": "days",
                    "message": f"{days} days of orders (at least {MIN_HISTORY_DAYS})",
                },
            ]
        )
    sample: list[int] | None = None
    sampled = customers
    if customers > SAMPLE:
        cut = math.ceil(_SAMPLE_SPACE * SAMPLE / customers)
        sample = list(session.scalars(queries.sampled_customers(profile_id, live_only, cut)))
        sampled = len(sample)
    since = now - timedelta(days=LOOKBACK_DAYS)
    days_of: dict[int, set[int]] = defaultdict(set)
    for customer_id, offset in session.execute(
        queries.buyer_days(session, profile_id, since, now, sample, live_only)
    ):
        if customer_id is not None and 0 <= offset < LOOKBACK_DAYS:
            days_of[customer_id].add(int(offset))
    return History(customers, sampled, days, _firsts(days_of.values()))


def _firsts(days_of: Any) -> list[list[int]]:
    """`History.firsts` from each customer's set of order days (whole days before now)."""
    gaps = [[0] * (LOOKBACK_DAYS + 1) for _ in range(LOOKBACK_DAYS)]
    for offsets in days_of:
        previous = None
        for offset in sorted(offsets):
            gap = LOOKBACK_DAYS if previous is None else offset - previous
            gaps[offset][gap] += 1
            previous = offset
    firsts = []
    for counts in gaps:
        more_than, running = [0] * LOOKBACK_DAYS, 0
        for t in range(LOOKBACK_DAYS, 0, -1):  # pairs whose gap exceeds t - 1
            running += counts[t]
            more_than[t - 1] = running
        firsts.append(more_than)
    return firsts


def detectable_lift(rate: float, h: float) -> dict[str, float | None]:
    """The smallest lift over `rate` of effect size `h`: absolute (a difference of rates) and
    relative (to `rate`); None when no rate is that far above."""
    lifted = rate_with_effect(rate, h)
    if lifted is None:
        return {"absolute": None, "relative": None}
    absolute = lifted - rate
    return {"absolute": absolute, "relative": absolute / rate if rate else None}


def plan(found: History, *, holdout_percent: int, days: int) -> dict[str, Any]:
    """CONTRACT.md §16's answer for a test of `days` days holding out that share."""
    control = found.customers * holdout_percent / 100
    h = detectable_effect(found.customers - control, control, power=POWER, alpha=ALPHA)
    relative = {
        length: detectable_lift(found.rate(length), h)["relative"]
        for length in range(TEST_DAYS[0], TEST_DAYS[1] + 1)
    }
    days_for = {
        f"{lift}%": next(
            (length for length, r in relative.items() if r is not None and r <= lift / 100), None
        )
        for lift in LIFTS
    }
    rate = found.rate(days)
    return {
        "customers": found.customers,
        "baselineRate": rate,
        "holdoutPercent": holdout_percent,
        "days": days,
        "minimumDetectableLift": detectable_lift(rate, h),
        "power": POWER,
        "alpha": ALPHA,
        "daysFor": days_for,
    }
