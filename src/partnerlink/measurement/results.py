"""Results of a profile for a period, and the lift of a campaign with a holdout (§7).

Counts are of orders by `createdAt` in the period; an order is one row, kept
at its latest price, so a re-sent order counts once. Money is per currency,
never summed across currencies.
"""

from __future__ import annotations

import csv
import io
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.db.plans import plan_for_given_values
from partnerlink.db.sums import total
from partnerlink.measurement import queries
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.models import Campaign
from partnerlink.measurement.stats import newcombe
from partnerlink.measurement.touches import CAMPAIGN_ID_RULE, is_campaign_id
from partnerlink.orders.conversion import CLASSES
from partnerlink.orders.schemas import FIRST_DAY, LAST_DAY
from partnerlink.problems import BadRequest, NotFound

DEFAULT_DAYS = 28
MAX_DAYS = 3660
CSV_HEADER = ("weekStart", "class", "currency", "orders", "revenue")


class NoHoldout(BadRequest):
    code = "no_holdout"
    detail = "This campaign holds out no customers: create it with holdoutPercent above 0."


def period(start: date | None, end: date | None) -> tuple[date, date]:
    """`from` and `to`, both inclusive; by default today and the 27 days before."""
    errors = [
        {"field": name, "message": f"must be a date from {FIRST_DAY} to {LAST_DAY}"}
        for name, day in (("from", start), ("to", end))
        if day is not None and not FIRST_DAY <= day <= LAST_DAY
    ]
    if errors:
        raise BadRequest(
            errors[0]["field"] + " " + errors[0]["message"], code="invalid_field", errors=errors
        )
    end = end or utcnow().date()
    start = start or max(end - timedelta(days=DEFAULT_DAYS - 1), FIRST_DAY)
    if start > end:
        errors.append({"field": "from", "message": "must not be after to"})
    elif (end - start).days >= MAX_DAYS:
        errors.append({"field": "to", "message": f"at most {MAX_DAYS} days after from"})
    if errors:
        raise BadRequest(
            errors[0]["field"] + " " + errors[0]["message"], code="invalid_field", errors=errors
        )
    return start, end


def _bounds(start: date, end: date) -> tuple[datetime, datetime]:
    return (
        datetime.combine(start, time.min, UTC),
        datetime.combine(end + timedelta(days=1), time.min, UTC),
    )


def week_start(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _as_date(value: Any) -> date:
    return value if isinstance(value, date) else date.fromisoformat(str(value)[:10])


def _money(amounts: dict[str, int]) -> list[dict[str, str]]:
    return [{"currency": c, "amount": str(amounts[c])} for c in sorted(amounts)]


def _grouped(
    session: Session, profile_id: str, start: date, end: date
) -> list[tuple[date, str, str | None, str, int, int]]:
    """(week, class, campaign, currency, orders, revenue) groups: one pass over the period.
    Like every read over the whole profile here, planned for its own values (db/plans.py),
    for the rest of the caller's transaction."""
    plan_for_given_values(session)
    low, high = _bounds(start, end)
    live_only = _has_test_stores(session, profile_id)
    return [
        (week_start(_as_date(day)), conversion, campaign_id, currency, count, total(amount))
        for day, conversion, campaign_id, currency, count, *amount in session.execute(
            queries.orders_by_day(session, profile_id, low, high, live_only)
        )
    ]


def _has_test_stores(session: Session, profile_id: str) -> bool:
    """Orders of a sandbox partner's (test) stores stay out of results and lift; the
    filter is added only where there are some, so the usual query is unchanged."""
    return session.scalar(queries.has_test_stores(profile_id)) is not None


def results(session: Session, *, profile_id: str, start: date, end: date) -> dict[str, Any]:
    """Results of CONTRACT.md §7."""
    class_orders: Counter[str] = Counter()
    class_money: dict[str, Counter[str]] = defaultdict(Counter)
    campaign_orders: Counter[str] = Counter()
    campaign_money: dict[str, Counter[str]] = defaultdict(Counter)
    weekly: dict[date, Counter[str]] = defaultdict(Counter)
    for week, conversion, campaign_id, currency, count, amount in _grouped(
        session, profile_id, start, end
    ):
        class_orders[conversion] += count
        class_money[conversion][currency] += amount
        weekly[week][conversion] += count
        if campaign_id is not None:
            campaign_orders[campaign_id] += count
            campaign_money[campaign_id][currency] += amount
    low, high = _bounds(start, end)
    attributed: dict[str | None, tuple[int, int, int]] = {
        campaign_id: (new, clicks, views)
        for campaign_id, new, clicks, views in session.execute(
            queries.campaign_counts(profile_id, low, high, _has_test_stores(session, profile_id))
        )
    }
    campaigns = {c.campaign_id: c.name for c in session.scalars(queries.campaigns_of(profile_id))}
    for campaign_id in campaign_orders:
        campaigns.setdefault(campaign_id, campaign_id)
    weeks = []
    week = week_start(start)
    while week <= end:
        counts = weekly.get(week, Counter())
        weeks.append({"weekStart": week.isoformat(), **{k: counts[k] for k in CLASSES}})
        week += timedelta(days=7)
    return {
        "from": start.isoformat(),
        "to": end.isoformat(),
        "classes": {
            k: {"orders": class_orders[k], "revenue": _money(class_money[k])} for k in CLASSES
        },
        "campaigns": [
            {
                "campaignId": campaign_id,
                "name": name,
                "orders": campaign_orders[campaign_id],
                **dict(
                    zip(
                        ("newCustomers", "clickOrders", "viewOrders"),
                        attributed.get(campaign_id, (0, 0, 0)),
                        strict=True,
                    )
                ),
                "revenue": _money(campaign_money[campaign_id]),
            }
            for campaign_id, name in campaigns.items()
        ],
        "weeks": weeks,
    }


def results_csv(session: Session, *, profile_id: str, start: date, end: date) -> str:
    """weekStart,class,currency,orders,revenue: one row per week x class x currency."""
    orders: Counter[tuple[date, str, str]] = Counter()
    money: Counter[tuple[date, str, str]] = Counter()
    for week, conversion, _campaign, currency, count, amount in _grouped(
        session, profile_id, start, end
    ):
        orders[(week, conversion, currency)] += count
        money[(week, conversion, currency)] += amount
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_HEADER)
    for key in sorted(orders, key=lambda k: (k[0], CLASSES.index(k[1]), k[2])):
        writer.writerow((key[0].isoformat(), key[1], key[2], orders[key], money[key]))
    return out.getvalue()


class UnknownCampaign(NotFound):
    code = "unknown_campaign"
    detail = "No such campaign in this profile."


def campaign_of(session: Session, *, profile_id: str, campaign_id: str) -> Campaign:
    if not is_campaign_id(campaign_id):
        raise BadRequest(
            f"campaignId {CAMPAIGN_ID_RULE}",
            code="invalid_field",
            errors=[{"field": "campaignId", "message": CAMPAIGN_ID_RULE}],
        )
    campaign = session.scalar(queries.find_campaign(profile_id, campaign_id))
    if campaign is None:
        raise UnknownCampaign()
    return campaign


@dataclass
class _Group:
    customers: int = 0
    buyers: int = 0
    money: Counter[str] = field(default_factory=Counter)


def lift(session: Session, campaign: Campaign) -> dict[str, Any]:
    """Test against control over the customers known before the campaign started."""
    if campaign.holdout_percent <= 0:
        raise NoHoldout()
    plan_for_given_values(session)
    start = campaign.starts_at
    end = campaign.ends_at or utcnow()
    profile_id = campaign.profile_id
    live_only = _has_test_stores(session, profile_id)
    spend: dict[int, dict[str, int]] = defaultdict(dict)
    for customer_id, currency, *amount in session.execute(
        queries.spend_by_customer(session, profile_id, start, end, live_only)
    ):
        if customer_id is not None:
            spend[customer_id][currency] = total(amount)
    groups = {"test": _Group(), "control": _Group()}
    for customer_id in session.scalars(queries.customers_before(profile_id, start, live_only)):
        control = is_control(campaign.salt, customer_id, campaign.holdout_percent)
        group = groups["control" if control else "test"]
        group.customers += 1
        bought = spend.get(customer_id)
        if bought:
            group.buyers += 1
            group.money.update(bought)
    test, held_out = groups["test"], groups["control"]
    answer: dict[str, Any] = {
        "campaignId": campaign.campaign_id,
        "from": start.isoformat(),
        "to": end.isoformat(),
        **{
            name: {"customers": g.customers, "buyers": g.buyers, "revenue": _money(g.money)}
            for name, g in groups.items()
        },
    }
    answer.update(_rates(test.buyers, test.customers, held_out.buyers, held_out.customers))
    return answer


def _rates(x1: int, n1: int, x2: int, n2: int) -> dict[str, Any]:
    rate_test = x1 / n1 if n1 else None
    rate_control = x2 / n2 if n2 else None
    if rate_test is None or rate_control is None:
        return {
            "conversionRate": {
                "test": rate_test,
                "control": rate_control,
                "absoluteLift": None,
                "relativeLift": None,
                "ci95": None,
            },
            "incrementalBuyers": None,
            "significant": False,
        }
    absolute = rate_test - rate_control
    low, high = newcombe(x1, n1, x2, n2)
    return {
        "conversionRate": {
            "test": rate_test,
            "control": rate_control,
            "absoluteLift": absolute,
            "relativeLift": absolute / rate_control if rate_control else None,
            "ci95": [low, high],
        },
        "incrementalBuyers": round(absolute * n1),
        "significant": low > 0 or high < 0,
    }
