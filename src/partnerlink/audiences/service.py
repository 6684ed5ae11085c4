"""Rules of audiences: segment sizes and export plans (CONTRACT.md §8); customers'
choices are choices.py's.

Services never commit: the request's session dependency does. An export is planned
in the request (ownership, segment, format, the `top` cut) so that every refusal is
a problem body; its rows are then streamed on connections of their own, a chunk of
customers at a time, so memory stays flat whatever the segment's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from partnerlink.audiences import one_pass, queries
from partnerlink.audiences.hashing import FORMATS
from partnerlink.db.base import utcnow
from partnerlink.problems import NotFound, ValidationFailed
from partnerlink.security.identifier_digests import identifier_key

EXPORT_CHUNK = 10_000

DESCRIPTIONS = {
    "all": "Every customer of this business.",
    "buyers": "Customers with at least one order.",
    "new": f"Customers whose first order was within the last {queries.NEW_DAYS} days.",
    "repeat": "Customers with 3 or more orders.",
    "lapsed": f"Customers with 2 or more orders, none in the last {queries.LAPSED_DAYS} days.",
    "top": "The top fifth of buyers by total spend in your most used currency.",
}

BEFORE_TOP = tuple(s for s in queries.SEGMENTS if s != "top")

# Leaves a customer out of an export by id (a campaign's control group).
Exclusion = Callable[[int], bool]


class UnknownSegment(NotFound):
    code = "unknown_segment"
    detail = "No such segment: use all, buyers, new, repeat, lapsed or top."


def audience_scope(
    session: Session, profile_id: str, digest_key: bytes, *, guess_currency: bool = False
) -> queries.Scope:
    """The profile's audience as of now. With `guess_currency`, its currency is the latest
    order's, which the caller must check (segment sizes do, in their one pass), unless
    test stores' orders are in the profile: their orders count in the most used currency
    but stay out of the pass."""
    connection = session.connection()
    queries.prepare(connection, digest_key)
    test_stores = queries.has_test_stores(connection, profile_id)
    if guess_currency and not test_stores:
        currency = queries.latest_currency(connection, profile_id)
    else:
        currency = queries.most_used_currency(connection, profile_id)
    return queries.Scope(
        profile_id=profile_id,
        now=utcnow(),
        currency=currency,
        has_suppressions=queries.has_suppressions(connection, profile_id),
        has_test_stores=test_stores,
        dialect=connection.dialect.name,
        digest_key=digest_key,
        has_legacy_suppressions=queries.has_suppressions(connection, profile_id, legacy=True),
    )


def top_size(buyers: int) -> int:
    return math.ceil(buyers / 5)


def _top_cut(session: Session, scope: queries.Scope) -> queries.TopCut | None:
    connection = session.connection()
    buyers = queries.segment_counts(connection, scope, ("buyers",), None)["buyers"][0]
    return queries.top_cut(connection, scope, top_size(buyers))


def audiences(session: Session, *, profile_id: str, digest_key: bytes) -> list[dict[str, object]]:
    """Every segment with its size and identifier coverage (opted-out and erased left out)."""
    connection = session.connection()
    if connection.dialect.name == "postgresql":
        scope = audience_scope(session, profile_id, digest_key, guess_currency=True)
        sizes = one_pass.segment_sizes(connection, scope)
        if not scope.has_test_stores and not sizes.currency_is_most_used(scope):
            # No currency has most of the orders: count them all, and pass again in the
            # most used one (a profile selling in several currencies alike).
            exact = queries.most_used_currency(connection, profile_id)
            if exact != scope.currency:
                sizes = one_pass.segment_sizes(connection, replace(scope, currency=exact))
        counts = sizes.sizes
    else:
        scope = audience_scope(session, profile_id, digest_key)
        # Two passes over the profile: every segment but `top`, then `top` from the
        # buyers' count (SQLite has no ordered array aggregate for the one pass).
        counts = queries.segment_counts(connection, scope, BEFORE_TOP, None)
        counts["top"] = queries.top_coverage(connection, scope, top_size(counts["buyers"][0]))
    return [
        {"segment": s, "customers": n, "withEmail": emails, "withPhone": phones}
        for s, (n, emails, phones) in counts.items()
    ]


@dataclass(frozen=True)
class ExportPlan:
    scope: queries.Scope
    segment: str
    file_format: str
    cut: queries.TopCut | None

    @property
    def filename(self) -> str:
        return f"audience-{self.segment}-{self.file_format}.csv"


def plan_export(
    session: Session, *, profile_id: str, segment: str, file_format: str, digest_key: bytes
) -> ExportPlan:
    if segment not in queries.SEGMENTS:
        raise UnknownSegment()
    if file_format not in FORMATS:
        raise ValidationFailed(
            "format must be meta or google",
            errors=[{"field": "format", "message": "must be meta or google"}],
        )
    scope = audience_scope(session, profile_id, digest_key)
    cut = _top_cut(session, scope) if segment == "top" else None
    return ExportPlan(scope, segment, file_format, cut)


def export_lines(
    engine: Engine, plan: ExportPlan, *, exclude: Exclusion | None = None
) -> Iterator[bytes]:
    """The CSV file, a chunk of customers at a time, each chunk on a short transaction."""
    header, line = FORMATS[plan.file_format]
    yield (header + "\n").encode()
    after = 0
    while True:
        with engine.connect() as connection:
            queries.prepare(connection, plan.scope.digest_key)
            profile_id = plan.scope.profile_id
            until = queries.chunk_end(connection, profile_id, after, EXPORT_CHUNK)
            members = queries.export_statement(plan.scope, plan.segment, plan.cut, after, until)
            rows = connection.execute(members.order_by(queries.customers.c.id)).all()
        lines = [line(row[1:]) for row in rows if exclude is None or not exclude(row[0])]
        if lines:
            yield ("\n".join(lines) + "\n").encode()
        if until is None:
            return
        after = until


def digest_key(signing_key: bytes) -> bytes:
    """The key of the suppression list's digests (derived from the service key)."""
    return identifier_key(signing_key)
