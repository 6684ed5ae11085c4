"""The measurement domain's statements, in one place."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import Date, Select, and_, cast, distinct, exists, func, select
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from partnerlink.customers.models import Customer
from partnerlink.db.sums import exact_sum
from partnerlink.measurement.models import Campaign
from partnerlink.orders.conversion import NEW
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


def campaign_ids(profile_id: str, wanted: Iterable[str]) -> Select[str]:
    return select(Campaign.campaign_id).where(
        Campaign.profile_id == profile_id, Campaign.campaign_id.in_(list(wanted))
    )


def find_campaign(profile_id: str, campaign_id: str) -> Select[Campaign]:
    return select(Campaign).where(
        Campaign.profile_id == profile_id, Campaign.campaign_id == campaign_id
    )


def customer_identifiers(profile_id: str) -> Select[int, str | None, str | None]:
    return select(Customer.id, Customer.email, Customer.phone_number).where(
        Customer.profile_id == profile_id
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


def new_customers_by_campaign(
    profile_id: str, start: datetime, end: datetime, live_only: bool = False
) -> Select[str | None, int]:
    return (
        select(Order.campaign_id, func.count(distinct(Order.customer_id)))
        .where(*_in_period(profile_id, start, end, live_only), Order.conversion == NEW)
        .group_by(Order.campaign_id)
    )


def customers_before(profile_id: str, moment: datetime, live_only: bool = False) -> Select[int]:
    statement = select(Customer.id).where(
        Customer.profile_id == profile_id, Customer.created_at < moment
    )
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
