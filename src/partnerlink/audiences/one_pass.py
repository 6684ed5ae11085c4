"""The audiences list on PostgreSQL: every segment's sizes, `top` too, in one statement
(docs/audiences.md, "How the segment sizes are computed").

A large profile is counted in two halves at once (`SPLIT_FROM`): the customers below
the middle of the profile's ids, and those above it, each half by the same statement
on a connection of its own, both reading one snapshot (the first exports it, the
second imports it: PostgreSQL's synchronized snapshots, as `pg_dump --jobs` reads).
PostgreSQL's own parallel query does not split this plan (its workers each rebuilt
every customer's statistics), and the pass is bound by the CPU of one database
process: measured at 1,000,000 customers on 2 cores, both halves together take less
time than the whole (bench/README.md).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Engine,
    Integer,
    Select,
    and_,
    case,
    cast,
    func,
    select,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.engine import Connection

from partnerlink.audiences import queries
from partnerlink.audiences.queries import SEGMENTS, Scope, customers

# The one pass of `segment_sizes` streams: the orders' (profile, customer) index read in
# customer order, aggregated per customer as it goes, merge-joined with the customers in id
# order, in bounded memory whatever the profile's size. These settings keep the planner
# to that plan (measured at 1,000,000 customers, docs/audiences.md): its hash plans read
# every order of every profile and spill their 500,000-group tables to disk (much
# slower); parallel workers each rebuilt every customer's statistics; JIT compilation
# cost more than it saved on this one scan.
ONE_PASS_SETTINGS = {
    "max_parallel_workers_per_gather": "0",
    "jit": "off",
    "enable_hashjoin": "off",
    "enable_hashagg": "off",
}
# A profile whose customer ids span at least this many is counted in two halves at
# once; a smaller one in one statement (a few milliseconds: two more connections and a
# snapshot would cost more than they save).
SPLIT_FROM = 100_000
# What pg_export_snapshot() answers (e.g. 00000003-0000001B-1): checked before it is
# written into SET TRANSACTION SNAPSHOT, which takes no parameter.
_SNAPSHOT_ID = re.compile(r"[0-9A-F]+(-[0-9A-F]+)+")


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


def segment_sizes(
    connection: Connection, scope: Scope, *, split_from: int | None = SPLIT_FROM
) -> OnePass:
    """Every segment's sizes, `top` too, in one pass over the profile's customers and
    orders (PostgreSQL): in two halves at once when the profile is large (module doc).

    Each customer's order statistics come once from the orders' (profile, customer)
    index in customer order (the orders without a customer as one last group), full-
    joined with the eligible customers in id order: statistics without an eligible
    customer (opted out, erased, anonymous orders) count only in the orders' currency
    tally. Every segment but `top` is a FILTER count. `top` (the ceil(buyers / 5)
    buyers of highest spend, then lowest id) is read from the buyers' identifier codes
    (1 email, 2 phone, 3 both) aggregated in that order: its first ceil(buyers / 5)
    elements are `top`'s members.

    `split_from`: the span of customer ids from which the profile is counted in two
    halves (None: never).
    """
    low, high = connection.execute(
        select(func.min(customers.c.id), func.max(customers.c.id)).where(
            customers.c.profile_id == scope.profile_id
        )
    ).one()
    if low is not None and split_from is not None and high - low >= split_from:
        return _in_two_halves(connection.engine, scope, middle=(low + high) // 2)
    row = _run(connection, _whole_statement(scope))
    sizes = _sizes(list(row[1:-2]))
    sizes["top"] = ((sizes["buyers"][0] + 4) // 5, int(row[-2]), int(row[-1]))
    return OnePass(sizes, int(row[0] or 0))


def _pass(scope: Scope, after: int | None, until: int | None, *, ranked_spend: bool) -> Any:
    """The pass over the customers with ids in (after, until] (None: unbounded), as a
    subquery of one row: the currency balance, every segment's three counts but `top`'s,
    then `ranked`, the buyers' identifier codes in top's order; with `ranked_spend`,
    each code with its buyer's spend, as spend * 4 + code."""
    stats = queries.order_stats(scope, after, until, anonymous=True)
    where = [queries.eligible(scope)]
    if after is not None:
        where.append(customers.c.id > after)
    if until is not None:
        where.append(customers.c.id <= until)
    eligible = (
        select(customers.c.id, customers.c.email, customers.c.phone_number)
        .where(*where)
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
    code: ColumnElement[Any] = case((has_email, 1), else_=0) + case((has_phone, 2), else_=0)
    if ranked_spend:  # a numeric, as the spend: exact whatever its size
        code = stats.c.spend * 4 + code
    ranked = func.array_agg(aggregate_order_by(code, stats.c.spend.desc(), eligible.c.id))
    columns.append(ranked.filter(known, stats.c.orders >= 1).label("ranked"))
    joined = eligible.join(stats, stats.c.customer_id == eligible.c.id, full=True)
    return select(*columns).select_from(joined).subquery("one_pass")


def _whole_statement(scope: Scope) -> Select[Any]:
    """The whole profile's pass, `top`'s coverage read from its first codes."""
    one_pass = _pass(scope, None, None, ranked_spend=False)
    counted = list(one_pass.c)[1:-1]
    buyers = counted[SEGMENTS.index("buyers") * 3]
    top = one_pass.c.ranked[1 : (buyers + 4) // 5]

    def top_with(*codes: int) -> ColumnElement[int]:
        found = [func.coalesce(func.cardinality(func.array_positions(top, c)), 0) for c in codes]
        return found[0] + found[1]

    return select(one_pass.c[0], *counted, top_with(1, 3), top_with(2, 3)).select_from(one_pass)


def _run(connection: Connection, statement: Select[Any]) -> Any:
    for name, value in ONE_PASS_SETTINGS.items():
        connection.exec_driver_sql(f"SET LOCAL {name} = {value}")
    try:
        return connection.execute(statement).one()
    finally:
        for name in ONE_PASS_SETTINGS:
            connection.exec_driver_sql(f"SET LOCAL {name} TO DEFAULT")


def _sizes(counted: list[Any]) -> dict[str, tuple[int, int, int]]:
    return {
        segment: (int(counted[3 * i]), int(counted[3 * i + 1]), int(counted[3 * i + 2]))
        for i, segment in enumerate(SEGMENTS[:-1])
    }


def _in_two_halves(engine: Engine, scope: Scope, *, middle: int) -> OnePass:
    """The pass over ids up to `middle` and over those above it, at once, in one
    snapshot; their counts added, and `top` taken from both halves' ranked buyers."""
    lower = select(_pass(scope, None, middle, ranked_spend=True))
    upper = select(_pass(scope, middle, None, ranked_spend=True))
    with (
        engine.connect().execution_options(isolation_level="REPEATABLE READ") as first,
        engine.connect().execution_options(isolation_level="REPEATABLE READ") as second,
    ):
        snapshot = first.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one()
        if not _SNAPSHOT_ID.fullmatch(snapshot):
            raise ValueError(f"unexpected snapshot id {snapshot!r}")
        second.exec_driver_sql(f"SET TRANSACTION SNAPSHOT '{snapshot}'")
        with ThreadPoolExecutor(max_workers=1) as other:
            counting_upper = other.submit(_run, second, upper)
            lower_row = _run(first, lower)
            upper_row = counting_upper.result()
        first.rollback()
        second.rollback()
    halves = (lower_row, upper_row)
    counted = [sum(int(row[i] or 0) for row in halves) for i in range(1, len(lower_row) - 1)]
    sizes = _sizes(counted)
    buyers = sizes["buyers"][0]
    lower_ranked, upper_ranked = ([int(value) for value in row[-1] or []] for row in halves)
    with_email, with_phone = top_coverage(lower_ranked, upper_ranked, (buyers + 4) // 5)
    sizes["top"] = ((buyers + 4) // 5, with_email, with_phone)
    return OnePass(sizes, sum(int(row[0] or 0) for row in halves))


def top_coverage(lower: list[int], upper: list[int], size: int) -> tuple[int, int]:
    """Of the first `size` buyers of both halves in top's order (spend descending, then
    id ascending), how many have an email and how many a phone. Each half's buyers come
    in that order as spend * 4 + code (1 email, 2 phone, 3 both), and every id of
    `lower` is below every id of `upper`: on equal spend, `lower`'s come first.

    The first `size` are `lower`'s first `taken` and `upper`'s first `size - taken`,
    found by bisection: `taken` is too small while `lower`'s next would come before
    `upper`'s last one taken."""
    low, high = max(0, size - len(upper)), min(size, len(lower))
    while low < high:
        taken = (low + high) // 2
        if lower[taken] >> 2 >= upper[size - taken - 1] >> 2:
            low = taken + 1
        else:
            high = taken
    top = lower[:low] + upper[: size - low]
    return sum(value & 1 for value in top), sum((value >> 1) & 1 for value in top)
