"""The measurement domain's statements, in one place."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Date,
    Integer,
    Select,
    and_,
    any_,
    bindparam,
    cast,
    distinct,
    exists,
    func,
    literal,
    select,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from partnerlink.customers.models import Customer
from partnerlink.db.base import UTCDateTime
from partnerlink.db.sums import exact_sum
from partnerlink.measurement.models import Campaign
from partnerlink.orders.conversion import CLICK, NEW, VIEW
from partnerlink.orders.models import Order
from partnerlink.stores.models import Store


def campaigns_of(profile_id: str) -> Select[Campaign]:
    return (
        select(Campaign)
        .where(Campaign.profile_id == profile_id)
        .order_by(Campaign.starts_at, Campaign.campaign_id)
    )


def campaigns_unordered(profile_id: str) -> Select[Campaign]:
    """The profile's campaigns, for a caller that picks the order (a page's key)."""
    return select(Campaign).where(Campaign.profile_id == profile_id)


def campaign_windows(profile_id: str, wanted: Iterable[str]) -> Select[str, int, int]:
    """The click and view windows of the campaigns among `wanted` that exist."""
    return select(
        Campaign.campaign_id, Campaign.click_window_days, Campaign.view_window_days
    ).where(Campaign.profile_id == profile_id, Campaign.campaign_id.in_(list(wanted)))


def find_campaign(profile_id: str, campaign_id: str) -> Select[Campaign]:
    return select(Campaign).where(
        Campaign.profile_id == profile_id, Campaign.campaign_id == campaign_id
    )


def _day(session: Session) -> ColumnElement[Any]:
    """The UTC calendar day of an order's createdAt."""
    if session.get_bind().dialect.name == "postgresql":
        return cast(func.timezone("UTC", Order.ordered_at), Date)
    return func.date(Order.ordered_at)


def has_test_stores(profile_id: str) -> Select[str]:
    """A sandbox partner's store in the profile (CONTRACT §9): its orders stay out."""
    return select(Store.id).where(Store.profile_id == profile_id, Store.is_test.is_(True)).limit(1)


def _live(live_only: bool) -> list[ColumnElement[bool]]:
    if not live_only:
        return []
    return [Order.store_id.not_in(select(Store.id).where(Store.is_test.is_(True)))]


def _in_period(
    profile_id: str, start: datetime, end: datetime, live_only: bool = False
) -> list[ColumnElement[bool]]:
    return [
        Order.profile_id == profile_id,
        Order.ordered_at >= start,
        Order.ordered_at < end,
        *_live(live_only),
    ]


def orders_by_day(
    session: Session, profile_id: str, start: datetime, end: datetime, live_only: bool = False
) -> Select[Any]:
    """Counts and revenue (the parts of an exact sum, db/sums.py) by (day, class, campaign,
    currency): one pass over the period."""
    day = _day(session)
    groups = (day, Order.conversion, Order.campaign_id, Order.order_currency)
    revenue = exact_sum(session.get_bind().dialect.name, Order.order_price, "revenue")
    return (
        select(*groups, func.count(), *revenue)
        .where(*_in_period(profile_id, start, end, live_only))
        .group_by(*groups)
    )


def campaign_counts(
    profile_id: str, start: datetime, end: datetime, live_only: bool = False
) -> Select[str | None, int, int, int]:
    """Each campaign's new customers in the period, and its orders by the kind of the touch
    that brought them (click, view)."""
    return (
        select(
            Order.campaign_id,
            func.count(distinct(Order.customer_id)).filter(Order.conversion == NEW),
            func.count().filter(Order.touch_kind == CLICK),
            func.count().filter(Order.touch_kind == VIEW),
        )
        .where(*_in_period(profile_id, start, end, live_only), Order.campaign_id.is_not(None))
        .group_by(Order.campaign_id)
    )


def customers_before(
    profile_id: str, moment: datetime | None, live_only: bool = False
) -> Select[int]:
    """The profile's customers created before `moment` (None: every one it has now)."""
    statement = select(Customer.id).where(Customer.profile_id == profile_id)
    if moment is not None:
        statement = statement.where(Customer.created_at < moment)
    if live_only:  # not a customer known only from a sandbox partner's (test) stores
        at_test = Order.store_id.in_(select(Store.id).where(Store.is_test.is_(True)))
        statement = statement.where(
            ~and_(
                exists().where(Order.customer_id == Customer.id, at_test),
                ~exists().where(Order.customer_id == Customer.id, ~at_test),
            )
        )
    return statement


def spend_by_customer(
    session: Session, profile_id: str, start: datetime, end: datetime, live_only: bool = False
) -> Select[Any]:
    """What each customer bought in [start, end] (the parts of an exact sum, db/sums.py),
    by currency (anonymous orders left out)."""
    spend = exact_sum(session.get_bind().dialect.name, Order.order_price, "spend")
    return (
        select(Order.customer_id, Order.order_currency, *spend)
        .where(
            Order.profile_id == profile_id,
            Order.ordered_at >= start,
            Order.ordered_at <= end,
            Order.customer_id.is_not(None),
            *_live(live_only),
        )
        .group_by(Order.customer_id, Order.order_currency)
    )


# The lift planner's history (measurement/planner.py).
def customer_count(profile_id: str, live_only: bool = False) -> Select[int]:
    """How many customers the profile has now (an index-only count)."""
    return select(func.count()).select_from(
        customers_before(profile_id, None, live_only).subquery()
    )


def sampled_customers(profile_id: str, live_only: bool, cut: int) -> Select[int]:
    """A fixed sample of the profile's customers: those whose id times an odd constant falls
    below `cut` modulo 2^16 (a share of cut / 2^16, spread over any run of ids)."""
    return customers_before(profile_id, None, live_only).where((Customer.id * 40503) % 65536 < cut)


def first_order_at(profile_id: str, moment: datetime, live_only: bool = False) -> Select[Any]:
    return select(func.min(Order.ordered_at)).where(
        Order.profile_id == profile_id, Order.ordered_at <= moment, *_live(live_only)
    )


def buyer_days(
    session: Session,
    profile_id: str,
    since: datetime,
    until: datetime,
    customer_ids: list[int] | None,
    live_only: bool = False,
) -> Select[int | None, int]:
    """Each (customer, whole days before `until`) with an order in [since, until), of the
    given customers (None: all of the profile's)."""
    postgres = session.get_bind().dialect.name == "postgresql"
    if postgres:
        age: ColumnElement[Any] = func.extract("epoch", until - Order.ordered_at) / 86400
        period = [Order.ordered_at >= since, Order.ordered_at < until]
    else:  # SQLite keeps times as text: julianday reads them
        day = func.julianday(Order.ordered_at)
        age = func.julianday(literal(until, UTCDateTime())) - day
        # Read through julianday, the time is no index's: without statistics, SQLite read a
        # sample's orders through every order of the 90 days (ix_orders_profile_ordered).
        period = [day >= func.julianday(literal(since, UTCDateTime())), age > 0]
    if customer_ids is None:
        who: ColumnElement[bool] = Order.customer_id.is_not(None)
        period = [Order.ordered_at >= since, Order.ordered_at < until]
    elif postgres:
        who = Order.customer_id == any_(
            bindparam("customers", customer_ids, type_=ARRAY(BigInteger))
        )
    else:
        who = Order.customer_id.in_(customer_ids)
    offset = cast(func.floor(age), Integer) if postgres else cast(age, Integer)
    return (
        select(Order.customer_id, offset)
        .where(Order.profile_id == profile_id, who, *period, *_live(live_only))
        .distinct()
    )
