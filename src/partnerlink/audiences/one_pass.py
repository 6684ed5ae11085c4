"""The audiences list on PostgreSQL: every segment's sizes, `top` too, in one statement
(docs/audiences.md, "How the segment sizes are computed")."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Integer, and_, case, cast, func, select
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection

from partnerlink.audiences import queries
from partnerlink.audiences.queries import SEGMENTS, Scope, customers

# The one pass of `segment_sizes` streams: the orders' (profile, customer) index read in
# customer order, aggregated per customer as it goes, merge-joined with the customers in id
# order, in bounded memory whatever the profile's size. These settings keep the planner
# to that plan (measured at 1,000,000 customers, docs/audiences.md): its hash plans read
# every order of every profile and spill their 500,000-group tables to disk (twice the
# time); parallel workers each rebuilt every customer's statistics; JIT compilation
# cost more than it saved on this one scan.
ONE_PASS_SETTINGS = {
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
    "enable_hashjoin": "off",
    "enable_hashagg": "off",
}


@dataclass(frozen=True)
class OnePass:
    """Every segment's (customers, with an email, with a phone), and the profile's orders
    (test stores' left out) in the scope's currency less those in others."""

    sizes: dict[str, tuple[int, int, int]]
    currency_balance: int

    def currency_is_most_used(self, scope: Scope) -> bool:
        """The scope's currency is the profile's most used one: more than half of its
        orders are in it (no other can then have as many), or it has no orders."""
        return self.currency_balance > 0 or scope.currency is None


def segment_sizes(connection: Connection, scope: Scope) -> OnePass:
    """Every segment's sizes, `top` too, in one pass over the profile's customers and
    orders (PostgreSQL).

    Each customer's order statistics come once from the orders' (profile, customer)
    index in customer order (the orders without a customer as one last group), full-
    joined with the eligible customers in id order: statistics without an eligible
    customer (opted out, erased, anonymous orders) count only in the orders' currency
    tally. Every segment but `top` is a FILTER count. `top` (the ceil(buyers / 5)
    buyers of highest spend, then lowest id) is read from the buyers' identifier codes
    (1 email, 2 phone, 3 both) aggregated in that order: its first ceil(buyers / 5)
    elements are `top`'s members.
    """
    stats = queries.order_stats(scope, anonymous=True)
    eligible = (
        select(customers.c.id, customers.c.email, customers.c.phone_number)
        .where(queries.eligible(scope))
        .subquery("eligible")
    )
    known = eligible.c.id.is_not(None)
    has_email = eligible.c.email.is_not(None)
    has_phone = eligible.c.phone_number.is_not(None)
    # In-currency orders less the others: positive when the currency has most orders.
    balance = func.sum(cast(2 * stats.c.in_currency - stats.c.orders, Integer))
    columns: list[Any] = [balance, func.count(eligible.c.id)]
    columns += [func.count(eligible.c.email), func.count(eligible.c.phone_number)]
    for segment in SEGMENTS[1:-1]:
        member = queries.predicate(segment, scope, stats, None)
        # An identifier is an eligible customer's: only the plain count needs `known`.
        columns.append(func.count().filter(and_(known, member)))
        columns += [func.count().filter(and_(member, extra)) for extra in (has_email, has_phone)]
    code = case((has_email, 1), else_=0) + case((has_phone, 2), else_=0)
    ranked = func.array_agg(aggregate_order_by(code, stats.c.spend.desc(), eligible.c.id))
    columns.append(ranked.filter(known, stats.c.orders >= 1).label("ranked"))
    joined = eligible.join(stats, stats.c.customer_id == eligible.c.id, full=True)
    one_pass = select(*columns).select_from(joined).subquery("one_pass")
    balance_of, counted = one_pass.c[0], list(one_pass.c)[1:-1]
    buyers = counted[SEGMENTS.index("buyers") * 3]
    top = one_pass.c.ranked[1 : (buyers + 4) // 5]

    def top_with(*codes: int) -> ColumnElement[int]:
        found = [func.coalesce(func.cardinality(func.array_positions(top, c)), 0) for c in codes]
        return found[0] + found[1]

    statement = select(balance_of, *counted, top_with(1, 3), top_with(2, 3))
    statement = statement.select_from(one_pass)
    for name, value in ONE_PASS_SETTINGS.items():
        connection.exec_driver_sql(f"SET LOCAL {name} = {value}")
    try:
        row = connection.execute(statement).one()
    finally:
        for name in ONE_PASS_SETTINGS:
            connection.exec_driver_sql(f"SET LOCAL {name} TO DEFAULT")
    sizes = {
        segment: (int(row[1 + 3 * i]), int(row[2 + 3 * i]), int(row[3 + 3 * i]))
        for i, segment in enumerate(SEGMENTS[:-1])
    }
    sizes["top"] = ((sizes["buyers"][0] + 4) // 5, int(row[-2]), int(row[-1]))
    return OnePass(sizes, int(row[0] or 0))
