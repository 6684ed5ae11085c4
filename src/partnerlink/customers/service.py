"""Customer matching and merging for single records (orders) and the customer listing.

The matching rule of CONTRACT.md §6, in one place: with an email, match by
email; else take over the phone-only customer with the same phone; else create.
Without an email, match by phone. Non-empty incoming fields overwrite stored
ones. Bulk ingestion (`ingest.py`) applies the same rule batch-wise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Row, Table, bindparam, case, func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from partnerlink.customers import queries
from partnerlink.customers.models import Customer
from partnerlink.customers.normalize import (
    normalize_country_code,
    normalize_email,
    normalize_phone,
    normalize_text,
)
from partnerlink.db.base import utcnow


@dataclass(frozen=True, slots=True)
class CustomerFields:
    """One normalized incoming record; None means "not given" (never overwrites)."""

    email: str | None
    phone_number: str | None
    first_name: str | None = None
    last_name: str | None = None
    city: str | None = None
    country_code: str | None = None

    def changes_for(self, stored: CustomerRecord | Customer | dict[str, Any]) -> dict[str, str]:
        """The columns this record would change on a stored customer."""
        get = stored.get if isinstance(stored, dict) else lambda k: getattr(stored, k)
        out: dict[str, str] = {}
        for column in MERGED_COLUMNS:
            value = getattr(self, column)
            if value is not None and get(column) != value:
                out[column] = value
        return out


Outcome = Literal["created", "updated", "unchanged"]
MERGED_COLUMNS = ("email", "phone_number", "first_name", "last_name", "city", "country_code")


def normalize_fields(
    *,
    default_region: str | None,
    email: object,
    phone_number: object,
    first_name: object = None,
    last_name: object = None,
    city: object = None,
    country_code: object = None,
) -> CustomerFields:
    """Normalizes one incoming record."""
    return CustomerFields(
        email=normalize_email(email),
        phone_number=normalize_phone(phone_number, default_region),
        first_name=normalize_text(first_name),
        last_name=normalize_text(last_name),
        city=normalize_text(city),
        country_code=normalize_country_code(country_code),
    )


def resolve_customer(
    session: Session,
    *,
    profile_id: str,
    default_region: str | None,
    email: object,
    phone_number: object,
    first_name: object = None,
    last_name: object = None,
    city: object = None,
    country_code: object = None,
) -> CustomerRecord | None:
    """Finds or creates the profile's customer for one record; None when anonymous.

    Safe when two requests create the same customer at once: creation is an
    INSERT ... ON CONFLICT DO NOTHING on a unique key (email, or phone among
    customers without email), followed by a re-read of the winner.
    """
    fields = normalize_fields(
        default_region=default_region,
        email=email,
        phone_number=phone_number,
        first_name=first_name,
        last_name=last_name,
        city=city,
        country_code=country_code,
    )
    if fields.email is None and fields.phone_number is None:
        return None
    return upsert_customer(session, profile_id=profile_id, fields=fields)[0]


@dataclass(frozen=True, slots=True)
class CustomerRecord:
    """A stored customer as matching hands it back (no ORM identity to keep in sync)."""

    id: int
    email: str | None
    phone_number: str | None
    first_name: str | None
    last_name: str | None
    city: str | None
    country_code: str | None


_customers: Table = Customer.__table__  # type: ignore[assignment]
_RECORD_COLUMNS = (_customers.c.id, *(_customers.c[name] for name in MERGED_COLUMNS))
_P = bindparam("profile_id", type_=_customers.c.profile_id.type)
_EMAIL = bindparam("email", type_=_customers.c.email.type)
_PHONE = bindparam("phone_number", type_=_customers.c.phone_number.type)
# Built once: orders resolve a customer on every POST, and Core statements that are
# reused skip ORM loading and per-call cache-key work (measured ~0.4 ms an order).
_BY_EMAIL = select(*_RECORD_COLUMNS).where(
    _customers.c.profile_id == _P, _customers.c.email == _EMAIL
)
_PHONE_ONLY = select(*_RECORD_COLUMNS).where(
    _customers.c.profile_id == _P,
    _customers.c.phone_number == _PHONE,
    _customers.c.email.is_(None),
)
_BY_PHONE = (
    select(*_RECORD_COLUMNS)
    .where(_customers.c.profile_id == _P, _customers.c.phone_number == _PHONE)
    .order_by(case((_customers.c.email.is_(None), 0), else_=1), _customers.c.id)
    .limit(1)
)


def upsert_customer(
    session: Session, *, profile_id: str, fields: CustomerFields
) -> tuple[CustomerRecord, Outcome]:
    """Applies one normalized record (with an email or a phone) by the matching rule.

    A lost race (another writer created or took the customer meanwhile) is
    resolved by matching again, against the winner's row.
    """
    for _attempt in range(5):
        existing = _find_match(session, profile_id=profile_id, fields=fields)
        if existing is not None:
            changes = fields.changes_for(existing)
            if not changes:
                return existing, "unchanged"
            merged = _merge(session, existing, changes)
            if merged is not None:
                return merged, "updated"
            continue
        created = _insert_new(session, profile_id=profile_id, fields=fields)
        if created is not None:
            return created, "created"
    raise RuntimeError("customer matching did not settle after concurrent changes")


def _record(row: Row[Any] | None) -> CustomerRecord | None:
    return None if row is None else CustomerRecord(**row._mapping)


def _find_match(
    session: Session, *, profile_id: str, fields: CustomerFields
) -> CustomerRecord | None:
    connection = session.connection()
    if fields.email is not None:
        found = connection.execute(
            _BY_EMAIL, {"profile_id": profile_id, "email": fields.email}
        ).first()
        if found is not None or fields.phone_number is None:
            return _record(found)
        statement = _PHONE_ONLY
    else:
        statement = _BY_PHONE
    params = {"profile_id": profile_id, "phone_number": fields.phone_number}
    return _record(connection.execute(statement, params).first())


def _merge(
    session: Session, customer: CustomerRecord, changes: dict[str, str]
) -> CustomerRecord | None:
    statement = (
        update(_customers)
        .where(_customers.c.id == customer.id)
        .values(**changes, updated_at=utcnow())
        .returning(*_RECORD_COLUMNS)
    )
    if "email" not in changes:
        return _record(session.connection().execute(statement).first())
    # Taking over a phone-only customer: only while it still has no email, and
    # only if nobody took this email meanwhile (unique key) — else match again.
    try:
        with session.begin_nested():
            taken = (
                session.connection().execute(statement.where(_customers.c.email.is_(None))).first()
            )
    except IntegrityError:
        return None
    return _record(taken)


def _insert_new(
    session: Session, *, profile_id: str, fields: CustomerFields
) -> CustomerRecord | None:
    now = utcnow()
    values = {
        "profile_id": profile_id,
        **{column: getattr(fields, column) for column in MERGED_COLUMNS},
        "created_at": now,
        "updated_at": now,
    }
    statement = queries.insert_ignoring_duplicates(session, [values]).returning(*_RECORD_COLUMNS)
    return _record(session.connection().execute(statement).first())


def count_customers(session: Session, *, profile_id: str) -> int:
    """Counts the profile's customers."""
    return (
        session.scalar(
            select(func.count()).select_from(Customer).where(Customer.profile_id == profile_id)
        )
        or 0
    )


def list_customers(session: Session, *, profile_id: str, limit: int) -> list[Customer]:
    """The profile's customers, newest first."""
    return list(
        session.scalars(
            select(Customer)
            .where(Customer.profile_id == profile_id)
            .order_by(Customer.id.desc())
            .limit(limit)
        )
    )


def customer_json(customer: Customer) -> dict[str, Any]:
    """The merchant API's shape of a customer (CONTRACT.md §4)."""
    return {
        "id": str(customer.id),
        "email": customer.email,
        "phoneNumber": customer.phone_number,
        "firstName": customer.first_name,
        "lastName": customer.last_name,
        "city": customer.city,
        "countryCode": customer.country_code,
    }
