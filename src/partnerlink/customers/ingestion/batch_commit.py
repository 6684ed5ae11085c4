"""One batch of an upload committed with the upload's progress, in one transaction
(ingest.py drives the batches): the lease renewed, the records applied
(batch_apply.py), the orders of re-keyed customers classified again, retried on a
write conflict. And the batches of a first reading held in one transaction until the
file has passed its check (apply_until_checked)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers import queries
from partnerlink.customers.ingestion.batch_apply import apply_records
from partnerlink.customers.ingestion.batch_queries import ConcurrentInsert
from partnerlink.customers.ingestion.reader import ParsedBatch
from partnerlink.customers.ingestion.reader_process import FileChecked
from partnerlink.customers.uploads import MAX_REPORTED_ERRORS
from partnerlink.db.raw import Sql
from partnerlink.settings import Settings

log = logging.getLogger("partnerlink.customers")

# A batch that collides with a concurrent writer (an order creating the same
# customer) is rolled back and planned again against the new state.
BATCH_RETRIES = 5


class Reclassify(Protocol):
    """Classifies again the orders of customers whose email or phone an upload changed
    (orders/reclassification.reclassify_customers), in the batch's transaction: ad touches may
    match them anew. Passed in by the worker, since orders import customers, not the
    other way round."""

    def __call__(self, sql: Sql, *, profile_id: str, customer_ids: set[int]) -> int: ...


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
    # Nothing applied yet, into a profile without customers (a merchant's first list):
    # its batches may skip most email look-ups (upload_emails.py).
    first_list: bool = False
    # A batch's transaction is open (it holds the upload's row): the lease is renewed
    # by the batch, not by ingest's keep-alive, which would wait for that row forever.
    batch_open: bool = False


def commit_batch(
    sessions: sessionmaker[Session],
    settings: Settings,
    upload: ClaimedUpload,
    batch: ParsedBatch,
    reclassify: Reclassify,
    narrow_emails: bool = False,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Applies one batch and its progress in one transaction, retrying on write conflicts.

    A first attempt narrowed to the batch's `maybe_written` emails that collides is
    retried with every look-up; a collision after that, with new customers created one
    by one (`careful`). `meanwhile`: batch_queries.insert_customers.
    """
    new_errors = _errors_with(upload.errors, batch)
    careful = False
    narrowed = narrow_emails
    for attempt in range(1, BATCH_RETRIES + 1):
        try:
            with sessions() as session, session.begin(), _batch_open(upload):
                lease_until = _apply_batch(
                    session,
                    settings,
                    upload,
                    batch,
                    reclassify,
                    careful=careful,
                    narrow_emails=narrowed,
                    errors=new_errors,
                    meanwhile=meanwhile,
                )
        except ConcurrentInsert:
            # Next time: every look-up; if they were all made, new customers one by one.
            careful, narrowed = not narrowed, False
            continue
        except DBAPIError as error:
            # A unique-key collision with a concurrent writer, or a PostgreSQL deadlock:
            # planned again, the batch sees the other writer's rows.
            if attempt == BATCH_RETRIES or not _is_write_conflict(error):
                raise
            narrowed = False
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


def _apply_batch(
    session: Session,
    settings: Settings,
    upload: ClaimedUpload,
    batch: ParsedBatch,
    reclassify: Reclassify,
    *,
    careful: bool,
    narrow_emails: bool,
    errors: list[dict[str, Any]],
    meanwhile: Callable[[], None] | None = None,
) -> datetime:
    """One batch and the upload's progress, in the caller's transaction: answers the
    renewed lease, held once that transaction commits."""
    lease_until = queries.renew_upload_lease(
        session,
        upload_id=upload.id,
        lease_until=upload.lease_until,
        lease_seconds=settings.upload_lease_seconds,
    )
    rekeyed: set[int] = set()
    counts = apply_records(
        session,
        profile_id=upload.profile_id,
        batch=batch,
        careful=careful,
        rekeyed=rekeyed,
        narrow_emails=narrow_emails,
        meanwhile=meanwhile,
    )
    if rekeyed:
        reclassify(Sql.of_session(session), profile_id=upload.profile_id, customer_ids=rekeyed)
    queries.record_progress(
        session,
        upload_id=upload.id,
        next_index=batch.next_index,
        created=counts[0],
        updated=counts[1],
        unchanged=counts[2],
        rejected=len(batch.rejections),
        errors=errors if errors is not upload.errors else None,
    )
    return lease_until


def _errors_with(errors: list[dict[str, Any]], batch: ParsedBatch) -> list[dict[str, Any]]:
    """The first MAX_REPORTED_ERRORS rejections and warnings, by index (the same list
    object when nothing is added). A warning names its field and says so (`severity`):
    its record was kept."""
    room = MAX_REPORTED_ERRORS - len(errors)
    if room <= 0 or not (batch.rejections or batch.warnings):
        return errors
    added: list[dict[str, Any]] = [
        {"index": index, "reason": reason} for index, reason in batch.rejections[:room]
    ]
    if batch.warnings:
        added += [
            {"index": index, "reason": reason, "field": name, "severity": "warning"}
            for index, name, reason in batch.warnings[:room]
        ]
        added.sort(key=lambda entry: entry["index"])
    return errors + added[:room]


def _is_write_conflict(error: DBAPIError) -> bool:
    """A unique violation or a PostgreSQL deadlock / serialization failure."""
    if isinstance(error, IntegrityError):
        return True
    code = getattr(error.orig, "sqlstate", None)
    return code in {"40P01", "40001"}  # deadlock detected, serialization failure


class HeldBatchCollided(Exception):
    """A batch applied before the file had passed its check met another writer's
    customer: the held batches were rolled back."""


def apply_until_checked(
    sessions: sessionmaker[Session],
    settings: Settings,
    upload: ClaimedUpload,
    batches: Iterator[ParsedBatch | FileChecked],
    reclassify: Reclassify,
    narrow_emails: bool,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Applies the batches that come before FILE_CHECKED in one transaction, committed
    once the file has passed its check (CONTRACT.md §6: an invalid file applies nothing;
    UploadFileInvalid rolls it back). Measured: the check no longer delays the first
    batch (bench/README.md).

    The transaction renews the lease batch by batch and so holds the upload's row:
    other workers' claims skip it (SKIP LOCKED) until it commits. A collision with
    another writer rolls every held batch back (HeldBatchCollided) rather than
    retrying inside: the caller reads the file again, checked first."""
    committed = (upload.lease_until, upload.errors, upload.records_committed)
    try:
        with sessions() as session, session.begin(), _batch_open(upload):
            for batch in batches:
                if isinstance(batch, FileChecked):
                    return  # commits the held batches
                new_errors = _errors_with(upload.errors, batch)
                try:
                    upload.lease_until = _apply_batch(
                        session,
                        settings,
                        upload,
                        batch,
                        reclassify,
                        careful=False,
                        narrow_emails=narrow_emails,
                        errors=new_errors,
                        meanwhile=meanwhile,
                    )
                except ConcurrentInsert as collision:
                    raise HeldBatchCollided from collision
                except DBAPIError as error:
                    if _is_write_conflict(error):
                        raise HeldBatchCollided from error
                    raise
                # As if committed, for the next batch's progress; undone below on failure.
                upload.errors = new_errors
                upload.records_committed = batch.next_index
    except BaseException:
        upload.lease_until, upload.errors, upload.records_committed = committed
        raise


@contextmanager
def _batch_open(upload: ClaimedUpload) -> Iterator[None]:
    upload.batch_open = True
    try:
        yield
    finally:
        upload.batch_open = False
