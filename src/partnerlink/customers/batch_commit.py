"""One batch of an upload committed with its progress: the serial way (commit_batch, one
transaction that looks up, plans and writes, retried on write conflicts), and what the
pipelined way (ingest_pipeline.py) shares with it: the claimed upload, its lease and its
list of reported errors."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers import queries
from partnerlink.customers.batch_apply import apply_records
from partnerlink.customers.batch_queries import ConcurrentInsert
from partnerlink.customers.reader import ParsedBatch
from partnerlink.customers.uploads import MAX_REPORTED_ERRORS
from partnerlink.db.raw import Sql
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.customers")

# A batch that collides with a concurrent writer (an order creating the same
# customer) is rolled back and planned again against the new state.
BATCH_RETRIES = 5


class Reclassify(Protocol):
    """Classifies again the orders of customers whose email or phone an upload changed
    (orders/conversion.reclassify_customers), in the batch's transaction: ad touches may
    match them anew. Passed in by the worker, since orders import customers, not the
    other way round."""

    def __call__(
        self, sql: Sql, *, profile_id: str, customer_ids: set[int], window_days: int
    ) -> int: ...


class LeaseLost(Exception):
    """Another worker took the upload over (our lease ran out)."""


@dataclass
class ClaimedUpload:
    id: str
    attempt: int
    lease_until: datetime  # the lease held, renewed as batches commit
    store_id: str
    profile_id: str
    storage_key: str
    size_bytes: int
    records_committed: int
    errors: list[dict[str, Any]]
    default_region: str | None
    connection_revoked: bool = False  # the partner lost the store since the PUT


def renew_lease(session: Session, settings: Settings, upload: ClaimedUpload) -> datetime:
    """Extends the lease in the session's transaction; LeaseLost if another worker took over.
    Answers the new lease, which the caller holds once the transaction has committed."""
    renewed = queries.renew_lease(
        session,
        upload_id=upload.id,
        lease_until=upload.lease_until,
        lease_seconds=settings.upload_lease_seconds,
    )
    if renewed is None:
        raise LeaseLost
    return renewed


def commit_batch(
    sessions: sessionmaker[Session],
    settings: Settings,
    upload: ClaimedUpload,
    batch: ParsedBatch,
    reclassify: Reclassify,
) -> None:
    """Applies one batch and its progress in one transaction, retrying on write conflicts."""
    new_errors = errors_with(upload.errors, batch.rejections)
    careful = False
    for attempt in range(1, BATCH_RETRIES + 1):
        try:
            with sessions() as session, session.begin():
                lease_until = renew_lease(session, settings, upload)
                rekeyed: set[int] = set()
                counts = apply_records(
                    session,
                    profile_id=upload.profile_id,
                    batch=batch,
                    careful=careful,
                    rekeyed=rekeyed,
                )
                if rekeyed:
                    reclassify(
                        Sql.of_session(session),
                        profile_id=upload.profile_id,
                        customer_ids=rekeyed,
                        window_days=settings.attribution_window_days,
                    )
                queries.record_progress(
                    session,
                    upload_id=upload.id,
                    next_index=batch.next_index,
                    created=counts[0],
                    updated=counts[1],
                    unchanged=counts[2],
                    rejected=len(batch.rejections),
                    errors=new_errors if new_errors is not upload.errors else None,
                )
        except ConcurrentInsert:
            careful = True  # next time, create this batch's new customers one by one
            continue
        except DBAPIError as error:
            # A unique-key collision with a concurrent writer, or a PostgreSQL deadlock:
            # planned again, the batch sees the other writer's rows.
            if attempt == BATCH_RETRIES or not is_write_conflict(error):
                raise
            log.info(
                "upload %s: batch at %d retried after a write conflict",
                upload.id,
                batch.first_index,
            )
            continue
        upload.lease_until = lease_until  # committed: the renewed lease is the one held
        upload.errors = new_errors
        upload.records_committed = batch.next_index
        return
    raise RuntimeError(f"batch at {batch.first_index} did not settle after {BATCH_RETRIES} tries")


def errors_with(
    errors: list[dict[str, Any]], rejections: list[tuple[int, str]]
) -> list[dict[str, Any]]:
    """The first MAX_REPORTED_ERRORS rejections (the same list object when nothing is added)."""
    room = MAX_REPORTED_ERRORS - len(errors)
    if room <= 0 or not rejections:
        return errors
    return errors + [{"index": index, "reason": reason} for index, reason in rejections[:room]]


def is_write_conflict(error: DBAPIError) -> bool:
    """A unique violation or a PostgreSQL deadlock / serialization failure."""
    if isinstance(error, IntegrityError):
        return True
    code = getattr(error.orig, "sqlstate", None)
    return code in {"40P01", "40001"}  # deadlock detected, serialization failure


class SerialCommits:
    """Commits an upload's batches one after another (SQLite: its pool's one connection is
    shared with every request, so each batch checks it out and gives it back). The same
    interface as ingest_pipeline.PipelinedCommits."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        settings: Settings,
        upload: ClaimedUpload,
        reclassify: Reclassify,
    ) -> None:
        self._sessions = sessions
        self._settings = settings
        self._upload = upload
        self._reclassify = reclassify

    def __enter__(self) -> SerialCommits:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def quiesce(self) -> None:
        """Nothing is ever being written between two calls of commit."""

    def commit(self, batch: ParsedBatch) -> None:
        commit_batch(self._sessions, self._settings, self._upload, batch, self._reclassify)
