"""The customers domain's queries, in one place (single-record and batch alike)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Insert, Row, Select, and_, case, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer, Upload
from partnerlink.db.base import utcnow
from partnerlink.stores.models import Store


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
    # One row goes as a plain VALUES dict: SQLAlchemy caches that statement's compiled form,
    # while a multi-row VALUES list is compiled afresh every time (~1 ms per order, measured).
    values = rows[0] if len(rows) == 1 else list(rows)
    return insert(Customer).values(values).on_conflict_do_nothing()


# --- upload claiming and progress ---


def _claimable(now: datetime) -> ColumnElement[bool]:
    return or_(
        Upload.status == "received",
        and_(Upload.status == "processing", Upload.lease_until < now),
    )


def claim_next_upload(session: Session, *, lease_seconds: int) -> Row[Any] | None:
    """Takes the oldest received upload, or one whose worker's lease ran out.

    One conditional UPDATE decides (after SKIP LOCKED on PostgreSQL, so workers
    do not queue on the same row); `attempts` doubles as the lease holder's
    fencing token.
    """
    now = utcnow()
    candidate = session.scalar(
        select(Upload.id)
        .where(_claimable(now))
        .order_by(Upload.created_at)
        .limit(1)
        .with_for_update(skip_locked=True)
    )
    if candidate is None:
        return None
    return session.execute(
        update(Upload)
        .where(Upload.id == candidate, _claimable(now))
        .values(
            status="processing",
            attempts=Upload.attempts + 1,
            lease_until=now + timedelta(seconds=lease_seconds),
        )
        .returning(
            Upload.id,
            Upload.attempts,
            Upload.store_id,
            Upload.profile_id,
            Upload.storage_key,
            Upload.size_bytes,
            Upload.records_committed,
            Upload.errors,
        )
        .execution_options(synchronize_session=False)
    ).first()


def renew_lease(session: Session, *, upload_id: str, attempt: int, lease_seconds: int) -> bool:
    """Extends the lease if this attempt still holds it (and locks the upload row)."""
    return (
        session.execute(
            update(Upload)
            .where(
                Upload.id == upload_id, Upload.attempts == attempt, Upload.status == "processing"
            )
            .values(lease_until=utcnow() + timedelta(seconds=lease_seconds))
            .returning(Upload.id)
            .execution_options(synchronize_session=False)
        ).first()
        is not None
    )


def record_progress(
    session: Session,
    *,
    upload_id: str,
    next_index: int,
    created: int,
    updated: int,
    unchanged: int,
    rejected: int,
    errors: list[dict[str, Any]] | None,
) -> None:
    """Commits a batch's counts with the batch: a restart resumes after `next_index`."""
    values: dict[str, Any] = {
        "records": next_index,
        "records_committed": next_index,
        "created": Upload.created + created,
        "updated": Upload.updated + updated,
        "unchanged": Upload.unchanged + unchanged,
        "rejected": Upload.rejected + rejected,
    }
    if errors is not None:
        values["errors"] = errors
    session.execute(
        update(Upload)
        .where(Upload.id == upload_id)
        .values(**values)
        .execution_options(synchronize_session=False)
    )


def finish_upload(
    session: Session, *, upload_id: str, attempt: int, status: str, reason: str | None
) -> bool:
    """Ends the upload as done or failed, if this attempt still holds it."""
    return (
        session.execute(
            update(Upload)
            .where(
                Upload.id == upload_id, Upload.attempts == attempt, Upload.status == "processing"
            )
            .values(status=status, failure_reason=reason, lease_until=None, finished_at=utcnow())
            .returning(Upload.id)
            .execution_options(synchronize_session=False)
        ).first()
        is not None
    )


def release_lease(session: Session, *, upload_id: str, attempt: int) -> None:
    """Lets another loop retry at once after an unexpected error."""
    session.execute(
        update(Upload)
        .where(Upload.id == upload_id, Upload.attempts == attempt, Upload.status == "processing")
        .values(lease_until=utcnow())
        .execution_options(synchronize_session=False)
    )


def store_country(session: Session, *, store_id: str) -> str | None:
    return session.scalar(select(Store.country_code).where(Store.id == store_id))


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
