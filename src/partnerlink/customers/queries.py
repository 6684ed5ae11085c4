"""The customers domain's SQL, with ingestion's batch statements in batch_queries.py.

Two styles, by measurement: hand-written statements on the driver's connection
where every order or every record of a file runs them (matching, ingestion), the
ORM elsewhere (uploads, listing). ARCHITECTURE.md states the split.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Table, exists, func, select, update
from sqlalchemy.orm import Session

from partnerlink import jobs
from partnerlink.customers.matching import MERGED_COLUMNS, LookUp
from partnerlink.customers.models import Customer, Upload
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection

# --- matching: single records and order batches, on the driver's connection (db/raw.py) ---
# Orders resolve a customer on every POST; the look-ups are matching.py's steps.

MERGED_LIST = ", ".join(MERGED_COLUMNS)
_RECORD = f"id, {MERGED_LIST}"
# Every INSERT of a customer, named (single records) or positional (ingestion).
INSERT_COLUMNS = ("profile_id", *MERGED_COLUMNS, "created_at", "updated_at")


def insert_customers_sql(values: str) -> str:
    return (
        f"INSERT INTO customers ({', '.join(INSERT_COLUMNS)}) VALUES ({values})"
        " ON CONFLICT DO NOTHING"
    )


LOOK_UPS = {
    LookUp.BY_EMAIL: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id AND email = :email"
    ),
    LookUp.PHONE_ONLY: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id"
        " AND phone_number = :phone_number AND email IS NULL"
    ),
    LookUp.BY_PHONE: Statement(
        f"SELECT {_RECORD} FROM customers WHERE profile_id = :profile_id"
        " AND phone_number = :phone_number"
        " ORDER BY CASE WHEN email IS NULL THEN 0 ELSE 1 END, id LIMIT 1"
    ),
}
INSERT_ONE = Statement(
    insert_customers_sql(
        ", ".join(f":{name}" for name in ("profile_id", *MERGED_COLUMNS, "now", "now"))
    )
    + f" RETURNING {_RECORD}"
)
# Non-empty incoming fields overwrite stored ones: NULL (not given) keeps the column.
_MERGE_SET = ", ".join(f"{column} = COALESCE(:{column}, {column})" for column in MERGED_COLUMNS)
MERGE_ONE = Statement(
    f"UPDATE customers SET {_MERGE_SET}, updated_at = :now WHERE id = :id RETURNING {_RECORD}"
)
# Taking over a phone-only customer: only while it still has no email.
TAKE_OVER_PHONE_ONLY = Statement(
    f"UPDATE customers SET {_MERGE_SET}, updated_at = :now"
    f" WHERE id = :id AND email IS NULL RETURNING {_RECORD}"
)


# --- upload claiming and progress ---


_uploads: Table = Upload.__table__  # type: ignore[assignment]
# Received, or taken by a worker whose lease ran out (the jobs module checks the lease).
_CLAIMABLE = Upload.status.in_(("received", "processing"))


def claim_next_upload(session: Session, *, lease_seconds: int) -> Row[Any] | None:
    """Takes the oldest received upload, or one whose worker's lease ran out (one
    conditional UPDATE, after SKIP LOCKED on PostgreSQL, so workers do not queue on the
    same row). The row answers `lease_until`, the lease to hold the upload by."""
    claimed = jobs.claim_due(
        session,
        _uploads,
        due=_CLAIMABLE,
        order_by=[Upload.created_at],
        limit=1,
        lease_seconds=lease_seconds,
        now=utcnow(),
        returning=[
            Upload.id,
            Upload.attempts,
            Upload.store_id,
            Upload.profile_id,
            Upload.storage_key,
            Upload.size_bytes,
            Upload.records_committed,
            Upload.errors,
            Upload.connection_id,
        ],
        values={"status": "processing"},
    )
    return claimed[0] if claimed else None


def nonce_used(session: Session, *, nonce: str) -> bool:
    """Whether an upload already consumed this upload URL's nonce."""
    return session.scalar(select(Upload.id).where(Upload.nonce == nonce)) is not None


def connection_live(session: Session, *, connection_id: str, store_id: str) -> bool:
    """Whether the store's connection that got an upload URL is still live."""
    live = select(Connection.id).where(
        Connection.id == connection_id,
        Connection.store_id == store_id,
        Connection.revoked_at.is_(None),
    )
    return session.scalar(live) is not None


def upload_and_partner(session: Session, *, upload_id: str) -> tuple[Upload, str | None] | None:
    """An upload with the partner whose connection got its URL."""
    found = session.execute(
        select(Upload, Connection.partner_id)
        .outerjoin(Connection, Connection.id == Upload.connection_id)
        .where(Upload.id == upload_id)
    ).first()
    return None if found is None else (found[0], found[1])


def connection_revoked(session: Session, *, connection_id: str | None) -> bool:
    """Whether the connection that asked for an upload's URL is revoked by now."""
    if connection_id is None:  # none recorded (before migration 0013 and a store without any)
        return False
    return bool(
        session.scalar(
            select(Connection.revoked_at.is_not(None)).where(Connection.id == connection_id)
        )
    )


def renew_upload_lease(
    session: Session, *, upload_id: str, lease_until: datetime, lease_seconds: int
) -> datetime:
    """Extends the held lease (and locks the upload row); the new lease, held once the
    transaction commits, or jobs.LeaseLost if another worker took the upload over."""
    return jobs.renew_lease(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        lease_seconds=lease_seconds,
        now=utcnow(),
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
    session: Session, *, upload_id: str, lease_until: datetime, status: str, reason: str | None
) -> bool:
    """Ends the upload as done or failed, if this worker still holds its lease."""
    return jobs.record_if_leased(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        values={"status": status, "failure_reason": reason, "finished_at": utcnow()},
    )


def release_lease(session: Session, *, upload_id: str, lease_until: datetime) -> None:
    """Lets another loop retry at once after an unexpected error."""
    jobs.record_if_leased(
        session,
        _uploads,
        row_id=upload_id,
        lease_until=lease_until,
        values={"lease_until": utcnow()},
    )


def store_profile_id(session: Session, *, store_id: str) -> str | None:
    return session.scalar(select(Store.profile_id).where(Store.id == store_id))


def store_country(session: Session, *, store_id: str) -> str | None:
    return session.scalar(select(Store.country_code).where(Store.id == store_id))


def profile_has_customers(session: Session, *, profile_id: str) -> bool:
    return bool(session.scalar(select(exists().where(Customer.profile_id == profile_id))))


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


def identifiers_of(sql: Sql, *, profile_id: str, ids: Sequence[int]) -> list[Any]:
    """(id, email, phone_number) of the profile's customers among `ids` (orders'
    re-classification hashes them to find their touches)."""
    placeholders = ", ".join(f":c{n}" for n in range(len(ids)))
    params: dict[str, Any] = {f"c{n}": value for n, value in enumerate(ids)}
    params["profile_id"] = profile_id
    return sql.all_rows(
        Statement(
            "SELECT id, email, phone_number FROM customers"
            f" WHERE profile_id = :profile_id AND id IN ({placeholders})"
        ),
        params,
    )
