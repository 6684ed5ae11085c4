"""The SQL of audiences: per-customer order statistics, segment predicates, exclusions.

Every segment is a predicate over a customer and the statistics of its orders, so
counts are one pass over the profile and exports walk the customers in id order a
chunk at a time (keyset pages), whatever the segment: `top` too, through the spend
and id of its last member.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    String,
    Subquery,
    and_,
    case,
    exists,
    false,
    func,
    literal,
    or_,
    select,
    true,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.functions import FunctionElement

from partnerlink.audiences.models import DIGEST_OF_SHA256, OptOut, Suppression
from partnerlink.customers.models import Customer
from partnerlink.db import sums
from partnerlink.kit.digests import sha256_hex
from partnerlink.orders.models import Order
from partnerlink.security.identifier_digests import identifier_digest_sql, register_digest_function
from partnerlink.stores.models import Store

SEGMENTS = ("all", "buyers", "new", "repeat", "lapsed", "top")
NEW_DAYS = 30
LAPSED_DAYS = 60

customers = Customer.__table__
orders = Order.__table__
opt_outs = OptOut.__table__
suppressions = Suppression.__table__
stores = Store.__table__

EXPORT_COLUMNS = (
    customers.c.email,
    customers.c.phone_number,
    customers.c.first_name,
    customers.c.last_name,
    customers.c.city,
    customers.c.country_code,
    customers.c.postal_code,
)


class sha256_of(FunctionElement[str]):
    """Lower-case hex SHA-256 of a text column (NULL for NULL), in SQL."""

    type = String()
    inherit_cache = True


@compiles(sha256_of, "postgresql")
def _sha256_postgresql(element: sha256_of, compiler: SQLCompiler, **kw: Any) -> str:
    return f"encode(sha256(convert_to({compiler.process(element.clauses, **kw)}, 'UTF8')), 'hex')"


@compiles(sha256_of)
def _sha256_sqlite(element: sha256_of, compiler: SQLCompiler, **kw: Any) -> str:
    return f"partnerlink_sha256({compiler.process(element.clauses, **kw)})"


def upsert_opt_outs(connection: Connection, rows: Sequence[dict[str, Any]], by: str) -> None:
    """Records `by`'s opt-out (`by_merchant` or `by_stop`) beside any other already held."""
    if not rows:
        return
    postgres = connection.dialect.name == "postgresql"
    insert = postgresql.insert if postgres else sqlite.insert
    statement = insert(OptOut).values(list(rows))
    # PostgreSQL's primary key carries profile_id, the distribution column (migration
    # 0025); SQLite keeps customer_id alone (the rowid, which an upsert names only alone).
    key = [opt_outs.c.customer_id, *([opt_outs.c.profile_id] if postgres else [])]
    connection.execute(
        statement.on_conflict_do_update(index_elements=key, set_={by: statement.excluded[by]})
    )


def _sqlite_sha256(value: str | None) -> str | None:
    return None if value is None else sha256_hex(value)


def prepare(connection: Connection, digest_key: bytes) -> None:
    """Gives SQLite the SHA-256 function PostgreSQL has built in, and the identifiers'
    keyed digest (idempotent, per connection)."""
    if connection.dialect.name == "sqlite":
        raw: Any = connection.connection.driver_connection
        raw.create_function("partnerlink_sha256", 1, _sqlite_sha256, deterministic=True)
        register_digest_function(connection, digest_key)


@dataclass(frozen=True)
class Scope:
    """One profile's audience, as of `now`."""

    profile_id: str
    now: datetime
    currency: str | None  # the profile's most used order currency (top's spend)
    has_suppressions: bool
    # The suppression list's keyed digests, as the database computes them.
    dialect: str = "sqlite"
    digest_key: bytes = b""
    # Rows erased before digests were keyed: digests of the identifiers' SHA-256.
    has_legacy_suppressions: bool = False
    # A sandbox partner's stores are in it: their orders, and the customers known only
    # from them, stay out (CONTRACT §9).
    has_test_stores: bool = False


def most_used_currency(connection: Connection, profile_id: str) -> str | None:
    statement = (
        select(orders.c.order_currency)
        .where(orders.c.profile_id == profile_id)
        .group_by(orders.c.order_currency)
        .order_by(func.count().desc(), orders.c.order_currency)
        .limit(1)
    )
    return connection.scalar(statement)


def latest_currency(connection: Connection, profile_id: str) -> str | None:
    """The currency of the profile's latest order: a guess at its most used one that
    the one pass (one_pass.py) checks (one row from ix_orders_profile_ordered)."""
    statement = (
        select(orders.c.order_currency)
        .where(orders.c.profile_id == profile_id)
        .order_by(orders.c.ordered_at.desc())
        .limit(1)
    )
    return connection.scalar(statement)


def has_test_stores(connection: Connection, profile_id: str) -> bool:
    statement = select(stores.c.id).where(stores.c.profile_id == profile_id, stores.c.is_test)
    return connection.scalar(statement.limit(1)) is not None


def _test_store_ids() -> Select[Any]:
    return select(stores.c.id).where(stores.c.is_test)


def has_suppressions(connection: Connection, profile_id: str, *, legacy: bool = False) -> bool:
    statement = select(suppressions.c.profile_id).where(suppressions.c.profile_id == profile_id)
    if legacy:
        statement = statement.where(suppressions.c.digest_of == DIGEST_OF_SHA256)
    return connection.scalar(statement.limit(1)) is not None


def order_stats(
    scope: Scope, low: int | None = None, high: int | None = None, *, anonymous: bool = False
) -> Subquery:
    """Each customer's order statistics, of the customers with ids in (low, high]; with
    `anonymous`, the orders without a customer too (one row of customer_id NULL, with
    the range that has no `high`), and how many of each one's orders are in the scope's
    currency (`in_currency`)."""
    in_currency = orders.c.order_currency == (scope.currency or "")
    columns = [
        orders.c.customer_id,
        func.count().label("orders"),
        func.min(orders.c.ordered_at).label("first_at"),
        func.max(orders.c.ordered_at).label("last_at"),
        # Exact whatever the amounts (db/sums.py): `top` ranks by it.
        *sums.exact_sum(scope.dialect, case((in_currency, orders.c.order_price), else_=0), "spend"),
    ]
    if anonymous:
        columns.append(func.count().filter(in_currency).label("in_currency"))
    statement = (
        select(*columns)
        .where(orders.c.profile_id == scope.profile_id)
        .group_by(orders.c.customer_id)
    )
    if not anonymous:
        statement = statement.where(orders.c.customer_id.is_not(None))
    if scope.has_test_stores:
        statement = statement.where(orders.c.store_id.not_in(_test_store_ids()))
    if low is not None:
        after_low = orders.c.customer_id > low
        if anonymous and high is None:
            after_low = or_(after_low, orders.c.customer_id.is_(None))
        statement = statement.where(after_low)
    if high is not None:
        statement = statement.where(orders.c.customer_id <= high)
    return statement.subquery("stats")


def eligible(scope: Scope) -> ColumnElement[bool]:
    """Of the profile, neither opted out nor matching an erased identifier."""
    clauses = [
        customers.c.profile_id == scope.profile_id,
        ~exists().where(opt_outs.c.customer_id == customers.c.id),
    ]
    if scope.has_test_stores:  # a customer whose orders are all at test stores
        at_test = orders.c.store_id.in_(_test_store_ids())
        clauses.append(
            ~and_(
                exists().where(orders.c.customer_id == customers.c.id, at_test),
                ~exists().where(orders.c.customer_id == customers.c.id, ~at_test),
            )
        )
    if scope.has_suppressions:
        identifiers: list[ColumnElement[Any]] = [customers.c.email, customers.c.phone_number]
        if scope.has_legacy_suppressions:
            identifiers += [sha256_of(customers.c.email), sha256_of(customers.c.phone_number)]
        clauses.append(
            ~exists().where(
                suppressions.c.profile_id == scope.profile_id,
                suppressions.c.identifier_digest.in_(
                    [identifier_digest_sql(scope.dialect, scope.digest_key, i) for i in identifiers]
                ),
            )
        )
    return and_(*clauses)


@dataclass(frozen=True)
class TopCut:
    """The last member of `top`: its spend (the parts of its exact sum) and id (spend
    descending, id ascending)."""

    spend: tuple[Any, ...]
    customer_id: int


def spend_of(stats: Subquery) -> list[ColumnElement[Any]]:
    """The columns of a customer's spend in `order_stats`: ordered by them in turn, the
    customers are in the order of their spend."""
    return sums.parts(stats.c, "spend")


def predicate(
    segment: str, scope: Scope, stats: Subquery, cut: TopCut | None
) -> ColumnElement[bool]:
    buyer = stats.c.orders >= 1
    if segment == "all":
        return true()
    if segment == "buyers":
        return buyer
    if segment == "new":
        return stats.c.first_at >= scope.now - timedelta(days=NEW_DAYS)
    if segment == "repeat":
        return stats.c.orders >= 3
    if segment == "lapsed":
        return and_(stats.c.orders >= 2, stats.c.last_at < scope.now - timedelta(days=LAPSED_DAYS))
    if cut is None:
        return false()
    spend = spend_of(stats)
    return and_(
        buyer,
        or_(
            sums.above(spend, cut.spend),
            and_(sums.equal(spend, cut.spend), customers.c.id <= cut.customer_id),
        ),
    )


def _joined(scope: Scope, stats: Subquery, *columns: Any) -> Select[Any]:
    return (
        select(*columns)
        .select_from(customers.outerjoin(stats, stats.c.customer_id == customers.c.id))
        .where(eligible(scope))
    )


def _top_ranked(scope: Scope, size: int, *columns: Any) -> Select[Any]:
    """The `size` buyers with the highest spend (then the oldest first)."""
    stats = order_stats(scope)
    spend = spend_of(stats)
    return (
        _joined(scope, stats, *columns, *spend, customers.c.id)
        .where(stats.c.orders >= 1)
        .order_by(*(part.desc() for part in spend), customers.c.id)
        .limit(size)
    )


def top_cut(connection: Connection, scope: Scope, size: int) -> TopCut | None:
    if size <= 0:
        return None
    row = connection.execute(_top_ranked(scope, 1).offset(size - 1)).first()
    return TopCut(tuple(row[:-1]), row.id) if row is not None else None


def top_coverage(connection: Connection, scope: Scope, size: int) -> tuple[int, int, int]:
    """(customers, with an email, with a phone) of `top`, in one pass."""
    if size <= 0:
        return 0, 0, 0
    ranked = _top_ranked(scope, size, customers.c.email, customers.c.phone_number).subquery()
    statement = select(func.count(), func.count(ranked.c.email), func.count(ranked.c.phone_number))
    row = connection.execute(statement.select_from(ranked)).one()
    return int(row[0]), int(row[1]), int(row[2])


def segment_counts(
    connection: Connection, scope: Scope, segments: Sequence[str], cut: TopCut | None
) -> dict[str, tuple[int, int, int]]:
    """(customers, with an email, with a phone) of each segment, in one pass."""
    stats = order_stats(scope)
    columns = []
    for segment in segments:
        member = predicate(segment, scope, stats, cut)
        for extra in (
            true(),
            customers.c.email.is_not(None),
            customers.c.phone_number.is_not(None),
        ):
            counted = case((and_(member, extra), literal(1)), else_=literal(0))
            columns.append(func.coalesce(func.sum(counted), 0))
    row = connection.execute(_joined(scope, stats, *columns)).one()
    return {
        segment: (int(row[3 * i]), int(row[3 * i + 1]), int(row[3 * i + 2]))
        for i, segment in enumerate(segments)
    }


def chunk_end(connection: Connection, profile_id: str, after: int, size: int) -> int | None:
    """The id of the `size`-th customer after `after`, or None when fewer remain."""
    statement = (
        select(customers.c.id)
        .where(customers.c.profile_id == profile_id, customers.c.id > after)
        .order_by(customers.c.id)
        .offset(size - 1)
        .limit(1)
    )
    return connection.scalar(statement)


def export_statement(
    scope: Scope,
    segment: str,
    cut: TopCut | None,
    after: int,
    until: int | None,
    *extra: ColumnElement[Any],
) -> Select[Any]:
    """(id, email, phone, first name, last name, city, country, postal code, *extra) of
    the members in (after, until], in no order."""
    in_chunk = [customers.c.id > after]
    if until is not None:
        in_chunk.append(customers.c.id <= until)
    with_identifier = or_(customers.c.email.is_not(None), customers.c.phone_number.is_not(None))
    if segment == "all":
        statement = select(customers.c.id, *EXPORT_COLUMNS, *extra).where(eligible(scope))
    else:
        stats = order_stats(scope, after, until)
        statement = _joined(scope, stats, customers.c.id, *EXPORT_COLUMNS, *extra).where(
            predicate(segment, scope, stats, cut)
        )
    return statement.where(*in_chunk, with_identifier)
