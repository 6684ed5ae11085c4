"""Rules of audiences: segment sizes, export plans, opt-out and erasure (CONTRACT.md §8).

Services never commit: the request's session dependency does. An export is planned
in the request (ownership, segment, format, the `top` cut) so that every refusal is
a problem body; its rows are then streamed on connections of their own, a chunk of
customers at a time, so memory stays flat whatever the segment's size.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Engine, delete, or_, select, update
from sqlalchemy.orm import Session

from partnerlink.audiences import queries
from partnerlink.audiences.hashing import FORMATS, suppression_hashes
from partnerlink.audiences.models import OptOut, Suppression
from partnerlink.customers.models import Customer
from partnerlink.customers.normalize import normalize_email, normalize_phone
from partnerlink.db.base import utcnow
from partnerlink.measurement.models import Touch
from partnerlink.orders.models import Order
from partnerlink.problems import NotFound, ValidationFailed
from partnerlink.receipts.models import Receipt
from partnerlink.stores.models import Store

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


class MissingIdentifier(ValidationFailed):
    code = "missing_field"
    detail = "Give an email or a phoneNumber."


def _scope(session: Session, profile_id: str) -> queries.Scope:
    connection = session.connection()
    queries.prepare(connection)
    return queries.Scope(
        profile_id=profile_id,
        now=utcnow(),
        currency=queries.most_used_currency(connection, profile_id),
        has_suppressions=queries.has_suppressions(connection, profile_id),
        has_test_stores=queries.has_test_stores(connection, profile_id),
    )


def top_size(buyers: int) -> int:
    return math.ceil(buyers / 5)


def _top_cut(session: Session, scope: queries.Scope) -> queries.TopCut | None:
    connection = session.connection()
    buyers = queries.segment_counts(connection, scope, ("buyers",), None)["buyers"][0]
    return queries.top_cut(connection, scope, top_size(buyers))


def audiences(session: Session, *, profile_id: str) -> list[dict[str, object]]:
    """Every segment with its size and identifier coverage (opted-out and erased left out)."""
    scope = _scope(session, profile_id)
    connection = session.connection()
    # Two passes over the profile: every segment but `top`, then `top` from the buyers' count.
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


def plan_export(session: Session, *, profile_id: str, segment: str, file_format: str) -> ExportPlan:
    if segment not in queries.SEGMENTS:
        raise UnknownSegment()
    if file_format not in FORMATS:
        raise ValidationFailed(
            "format must be meta or google",
            errors=[{"field": "format", "message": "must be meta or google"}],
        )
    scope = _scope(session, profile_id)
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
            queries.prepare(connection)
            profile_id = plan.scope.profile_id
            until = queries.chunk_end(connection, profile_id, after, EXPORT_CHUNK)
            rows = queries.export_chunk(
                connection, plan.scope, plan.segment, plan.cut, after, until
            )
        lines = [line(row[1:]) for row in rows if exclude is None or not exclude(row[0])]
        if lines:
            yield ("\n".join(lines) + "\n").encode()
        if until is None:
            return
        after = until


@dataclass(frozen=True)
class Person:
    email: str | None
    phone: str | None


def _person(session: Session, profile_id: str, email: str | None, phone: str | None) -> Person:
    """The normalized identifiers a request names; 400 when it names none usable."""
    if not (email or "").strip() and not (phone or "").strip():
        raise MissingIdentifier(
            errors=[{"field": "email", "message": "give an email or a phoneNumber"}]
        )
    normalized_email = normalize_email(email) if email else None
    if email and normalized_email is None:
        raise ValidationFailed(
            "email is not a valid address",
            errors=[{"field": "email", "message": "not a valid address"}],
        )
    normalized_phone = None
    if phone:
        regions = session.scalars(
            select(Store.country_code)
            .where(Store.profile_id == profile_id, Store.country_code.is_not(None))
            .limit(1)
        ).all()
        normalized_phone = normalize_phone(phone, regions[0] if regions else None)
        if normalized_phone is None:
            raise ValidationFailed(
                "phoneNumber is not a usable phone number",
                errors=[{"field": "phoneNumber", "message": "not a usable phone number"}],
            )
    return Person(normalized_email, normalized_phone)


def _matching(profile_id: str, person: Person) -> list[ColumnElement[bool]]:
    matches: list[ColumnElement[bool]] = []
    if person.email:
        matches.append(Customer.email == person.email)
    if person.phone:
        matches.append(Customer.phone_number == person.phone)
    return [Customer.profile_id == profile_id, or_(*matches)]


def _opt_out_ids(session: Session, rows: Sequence[Any]) -> int:
    """Opts (customer id, profile id) rows out; answers how many."""
    now = utcnow()
    values = [{"customer_id": r.id, "profile_id": r.profile_id, "created_at": now} for r in rows]
    for start in range(0, len(values), 1000):
        queries.insert_new(session.connection(), OptOut.__table__, values[start : start + 1000])
    return len(values)


def opt_out(session: Session, *, profile_id: str, email: str | None, phone: str | None) -> int:
    """Opts the matching customers out of every export; answers how many match."""
    person = _person(session, profile_id, email, phone)
    rows = session.execute(
        select(Customer.id, Customer.profile_id).where(*_matching(profile_id, person))
    ).all()
    return _opt_out_ids(session, rows)


def opt_out_phone(session: Session, phone_e164: str) -> int:
    """An SMS STOP: every customer with this phone, in every profile, is opted out."""
    rows = session.execute(
        select(Customer.id, Customer.profile_id).where(Customer.phone_number == phone_e164)
    ).all()
    return _opt_out_ids(session, rows)


def opt_in_phone(session: Session, phone_e164: str) -> int:
    """An SMS START: the opt-outs of every customer with this phone are lifted."""
    ids = select(Customer.id).where(Customer.phone_number == phone_e164)
    result = session.execute(delete(OptOut).where(OptOut.customer_id.in_(ids)))
    return int(getattr(result, "rowcount", 0) or 0)


def erase(session: Session, *, profile_id: str, email: str | None, phone: str | None) -> int:
    """Carries out a data subject's erasure in the profile; answers how many customers.

    Name, email, phone and city go from the customers, their orders and the orders'
    receipts and touches; the orders stay, detached and `anonymous`; only SHA-256 of
    the emails and phones is kept, in the suppression list.
    """
    person = _person(session, profile_id, email, phone)
    found = session.execute(
        select(Customer.id, Customer.email, Customer.phone_number).where(
            *_matching(profile_id, person)
        )
    ).all()
    ids = [r.id for r in found]
    emails = {e for e in [person.email, *(r.email for r in found)] if e}
    phones = {p for p in [person.phone, *(r.phone_number for r in found)] if p}
    order_match = [Order.customer_id.in_(ids)] if ids else []
    if emails:
        order_match.append(Order.customer_email.in_(emails))
    if phones:
        order_match.append(Order.customer_phone_number.in_(phones))
    order_pks = list(
        session.scalars(select(Order.id).where(Order.profile_id == profile_id, or_(*order_match)))
    )
    if not ids and not order_pks:
        return 0
    _scrub_orders(session, order_pks)
    erased = suppression_hashes(sorted(emails), sorted(phones))
    # Touches keep only identifier hashes (measurement); the person's go too.
    session.execute(
        delete(Touch).where(
            Touch.profile_id == profile_id,
            or_(Touch.email_sha256.in_(erased), Touch.phone_sha256.in_(erased)),
        )
    )
    if ids:
        session.execute(delete(Customer).where(Customer.id.in_(ids)))
    _suppress(session, profile_id, erased)
    return len(ids)


def _scrub_orders(session: Session, order_pks: list[int]) -> None:
    for start in range(0, len(order_pks), 1000):
        pks = order_pks[start : start + 1000]
        session.execute(
            update(Order)
            .where(Order.id.in_(pks))
            .values(
                customer_id=None,
                customer_first_name=None,
                customer_last_name=None,
                customer_email=None,
                customer_phone_number=None,
                conversion="anonymous",
                updated_at=utcnow(),
            )
        )
        # An SMS not sent yet is not sent; a sent one forgets its number.
        session.execute(
            delete(Receipt).where(Receipt.order_pk.in_(pks), Receipt.status == "pending")
        )
        session.execute(update(Receipt).where(Receipt.order_pk.in_(pks)).values(to_phone=None))


def _suppress(session: Session, profile_id: str, hashes: set[str]) -> None:
    now = utcnow()
    rows = [
        {"profile_id": profile_id, "identifier_sha256": h, "created_at": now}
        for h in sorted(hashes)
    ]
    queries.insert_new(session.connection(), Suppression.__table__, rows)
