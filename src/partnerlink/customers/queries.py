"""The customers domain's queries, in one place (single-record and batch alike)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Insert, Select, case, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer


def phone_match(profile_id: str, phone_number: str | None) -> Select[Customer]:
    """The customer a record without email matches: the phone-only one, else the oldest."""
    return (
        select(Customer)
        .where(Customer.profile_id == profile_id, Customer.phone_number == phone_number)
        .order_by(case((Customer.email.is_(None), 0), else_=1), Customer.id)
        .limit(1)
    )


def insert_ignoring_duplicates(session: Session, rows: Sequence[dict[str, Any]]) -> Insert:
    """INSERT ... ON CONFLICT DO NOTHING on any unique key (email, or phone-only phone)."""
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    return insert(Customer).values(list(rows)).on_conflict_do_nothing()
