"""Customer matching and merging for single records (orders) and the customer listing.

The matching rule of CONTRACT.md §6, in one place: with an email, match by
email; else take over the phone-only customer with the same phone; else create.
Without an email, match by phone. Non-empty incoming fields overwrite stored
ones. Bulk ingestion (`ingest.py`) applies the same rule batch-wise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import func, select, update
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

    def changes_for(self, stored: Customer | dict[str, Any]) -> dict[str, str]:
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
) -> Customer | None:
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


def upsert_customer(
    session: Session, *, profile_id: str, fields: CustomerFields
) -> tuple[Customer, Outcome]:
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
        new_id = _insert_new(session, profile_id=profile_id, fields=fields)
        if new_id is not None:
            return session.get(Customer, new_id, populate_existing=True), "created"  # type: ignore[return-value]
    raise RuntimeError("customer matching did not settle after concurrent changes")


def _find_match(session: Session, *, profile_id: str, fields: CustomerFields) -> Customer | None:
    if fields.email is not None:
        found = session.scalar(
            select(Customer)
            .where(Customer.profile_id == profile_id, Customer.email == fields.email)
            .execution_options(populate_existing=True)
        )
        if found is not None or fields.phone_number is None:
            return found
        return session.scalar(
            select(Customer)
            .where(
                Customer.profile_id == profile_id,
                Customer.phone_number == fields.phone_number,
                Customer.email.is_(None),
            )
            .execution_options(populate_existing=True)
        )
    return session.scalar(
        queries.phone_match(profile_id, fields.phone_number).execution_options(
            populate_existing=True
        )
    )


def _merge(session: Session, customer: Customer, changes: dict[str, str]) -> Customer | None:
    if "email" in changes:
        # Taking over a phone-only customer: only while it still has no email, and
        # only if nobody took this email meanwhile (unique key) — else match again.
        try:
            with session.begin_nested():
                taken = session.execute(
                    update(Customer)
                    .where(Customer.id == customer.id, Customer.email.is_(None))
                    .values(**changes, updated_at=utcnow())
                    .returning(Customer.id)
                    .execution_options(synchronize_session=False)
                ).first()
        except IntegrityError:
            return None
        if not taken:
            return None
        return session.get(Customer, customer.id, populate_existing=True)
    for column, value in changes.items():
        setattr(customer, column, value)
    customer.updated_at = utcnow()
    session.flush()
    return customer


def _insert_new(session: Session, *, profile_id: str, fields: CustomerFields) -> int | None:
    now = utcnow()
    values = {
        "profile_id": profile_id,
        **{column: getattr(fields, column) for column in MERGED_COLUMNS},
        "created_at": now,
        "updated_at": now,
    }
    statement = queries.insert_ignoring_duplicates(session, [values]).returning(Customer.id)
    return session.execute(statement).scalar_one_or_none()


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
