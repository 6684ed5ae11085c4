"""Ingestion of one claimed upload: batch by batch, each batch one short transaction.

Per batch: load every stored customer the batch could match (two queries; on a
first upload into an empty profile, only the emails the upload may have written are
looked up: upload_emails.py),
plan creates and updates in memory (merge.py), write them (new customers
through COPY on PostgreSQL, executemany on SQLite; updates with executemany),
and commit the upload's progress in the same transaction. A restart resumes
after the last committed batch; re-applying a batch would be harmless anyway,
since matching makes it a no-op.

Duplicates collapse within a batch (see merge.py); across batches they are
matched against what earlier batches stored, so they never duplicate a
customer. An invalid file (not a JSON array, truncated, a non-object element)
ends `failed` with a reason and applies nothing (CONTRACT.md §6): a first pass
checks the whole stored file before the first batch (reader.check_file),
renewing the lease as it goes.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers import queries
from partnerlink.customers.batch_apply import apply_records
from partnerlink.customers.batch_queries import ConcurrentInsert
from partnerlink.customers.models import Upload
from partnerlink.customers.reader import ParsedBatch, UploadFileInvalid, read_checked_batches
from partnerlink.customers.reader_process import SUBPROCESS_MIN_BYTES, read_batches_elsewhere
from partnerlink.customers.storage import UploadStorage
from partnerlink.customers.storage.configured import upload_storage
from partnerlink.customers.upload_emails import EmailsWritten
from partnerlink.customers.uploads import MAX_REPORTED_ERRORS
from partnerlink.db.raw import Sql
from partnerlink.settings import Settings
from partnerlink.tokens.service import event_receivers
from partnerlink.webhooks.events import upload_finished

log = logging.getLogger("partnerlink.customers")

# Measured: 5,000 records a batch keeps each SQLite write transaction near 50 ms
# (requests sharing the connection barely notice) while amortizing the round trips.
BATCH_SIZE = 5000
# A batch that collides with a concurrent writer (an order creating the same
# customer) is rolled back and planned again against the new state.
BATCH_RETRIES = 5
# An upload whose ingestion keeps dying (the process is killed every time) ends failed.
MAX_ATTEMPTS = 5


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
    # Nothing applied yet, into a profile without customers (a merchant's first list):
    # its batches may skip most email look-ups (upload_emails.py).
    first_list: bool = False


def claim_upload(sessions: sessionmaker[Session], settings: Settings) -> ClaimedUpload | None:
    """Claims the next upload to ingest, if any."""
    with sessions() as session, session.begin():
        row = queries.claim_next_upload(session, lease_seconds=settings.upload_lease_seconds)
        if row is None:
            return None
        return ClaimedUpload(
            id=row.id,
            attempt=row.attempts,
            lease_until=row.lease_until,
            store_id=row.store_id,
            profile_id=row.profile_id,
            storage_key=row.storage_key,
            size_bytes=row.size_bytes,
            records_committed=row.records_committed,
            errors=list(row.errors or []),
            default_region=queries.store_country(session, store_id=row.store_id),
            connection_revoked=queries.connection_revoked(session, connection_id=row.connection_id),
            first_list=row.records_committed == 0
            and not queries.profile_has_customers(session, profile_id=row.profile_id),
        )


def ingest_upload(
    sessions: sessionmaker[Session],
    settings: Settings,
    upload: ClaimedUpload,
    *,
    reclassify: Reclassify,
) -> None:
    """Ingests a claimed upload to the end (done or failed)."""
    storage = upload_storage(settings)
    try:
        if upload.attempt > MAX_ATTEMPTS:
            _finish(
                sessions,
                upload,
                "failed",
                f"ingestion did not finish after {MAX_ATTEMPTS} attempts",
            )
        elif upload.connection_revoked:  # CONTRACT.md §12: the URL died with its connection
            _finish(sessions, upload, "failed", "the connection of this upload was revoked")
        else:
            _ingest(sessions, settings, storage, upload, reclassify)
    except LeaseLost:
        log.warning("upload %s was taken over by another worker", upload.id)
        return
    except BaseException:
        _release(sessions, upload)
        raise
    storage.delete(upload.storage_key)


def _ingest(
    sessions: sessionmaker[Session],
    settings: Settings,
    storage: UploadStorage,
    upload: ClaimedUpload,
    reclassify: Reclassify,
) -> None:
    # A resumed upload looks everything up: its earlier batches' emails were not kept.
    emails_written = EmailsWritten() if upload.first_list else None
    options: dict[str, Any] = {
        "default_region": upload.default_region,
        "skip": upload.records_committed,
        "batch_size": BATCH_SIZE,
        "keep_alive": _lease_keeper(sessions, settings, upload),
    }
    try:
        with _batch_sessions(sessions) as batch_sessions:
            if upload.size_bytes >= SUBPROCESS_MIN_BYTES:
                batches = read_batches_elsewhere(storage, upload.storage_key, **options)
                with closing(batches):
                    for batch in batches:
                        commit_batch(
                            batch_sessions, settings, upload, batch, reclassify, emails_written
                        )
            else:
                with storage.open(upload.storage_key) as stream:
                    for batch in read_checked_batches(stream, **options):
                        commit_batch(
                            batch_sessions, settings, upload, batch, reclassify, emails_written
                        )
    except FileNotFoundError:
        _finish(sessions, upload, "failed", "the stored file is missing")
    except UploadFileInvalid as error:
        _finish(sessions, upload, "failed", str(error))
    else:
        _finish(sessions, upload, "done", None)


@contextmanager
def _batch_sessions(sessions: sessionmaker[Session]) -> Iterator[sessionmaker[Session]]:
    """Sessions for the upload's batches. PostgreSQL: all on one connection held for the
    upload, since a checkout from the pool pings the server first (pool_pre_ping), a round
    trip in every batch's path: ~2.6% of the worker's time at 1,000,000 records (py-spy).
    A connection lost meanwhile fails the batch, and the upload is taken up again later
    (MAX_ATTEMPTS). SQLite: its pool's one connection is shared with every request, so
    each batch checks it out and gives it back."""
    engine = sessions.kw["bind"]
    if engine.dialect.name != "postgresql":
        yield sessions
        return
    with engine.connect() as connection:
        yield sessionmaker(bind=connection, expire_on_commit=False, autoflush=True)


def _renew_lease(session: Session, settings: Settings, upload: ClaimedUpload) -> datetime:
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


def _lease_keeper(
    sessions: sessionmaker[Session], settings: Settings, upload: ClaimedUpload
) -> Callable[[], None]:
    """Renews the upload's lease while no batch is committed (the reading of a large file,
    or of one element that takes long to read past), at most every third of the lease;
    raises LeaseLost if it was taken over."""
    every = settings.upload_lease_seconds / 3
    renewed = time.monotonic()

    def keep_alive() -> None:
        nonlocal renewed
        if time.monotonic() - renewed < every:
            return
        with sessions() as session, session.begin():
            lease_until = _renew_lease(session, settings, upload)
        upload.lease_until = lease_until
        renewed = time.monotonic()

    return keep_alive


def commit_batch(
    sessions: sessionmaker[Session],
    settings: Settings,
    upload: ClaimedUpload,
    batch: ParsedBatch,
    reclassify: Reclassify,
    emails_written: EmailsWritten | None = None,
) -> None:
    """Applies one batch and its progress in one transaction, retrying on write conflicts.

    A first attempt narrowed by `emails_written` that collides is retried with every
    look-up; a collision after that, with new customers created one by one (`careful`).
    """
    new_errors = _errors_with(upload.errors, batch.rejections)
    careful = False
    narrowed = emails_written
    for attempt in range(1, BATCH_RETRIES + 1):
        try:
            with sessions() as session, session.begin():
                lease_until = _renew_lease(session, settings, upload)
                rekeyed: set[int] = set()
                counts = apply_records(
                    session,
                    profile_id=upload.profile_id,
                    batch=batch,
                    careful=careful,
                    rekeyed=rekeyed,
                    emails_written=narrowed,
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
            # Next time: every look-up; if they were all made, new customers one by one.
            careful, narrowed = narrowed is None, None
            continue
        except DBAPIError as error:
            # A unique-key collision with a concurrent writer, or a PostgreSQL deadlock:
            # planned again, the batch sees the other writer's rows.
            if attempt == BATCH_RETRIES or not _is_write_conflict(error):
                raise
            narrowed = None
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


def _errors_with(
    errors: list[dict[str, Any]], rejections: list[tuple[int, str]]
) -> list[dict[str, Any]]:
    """The first MAX_REPORTED_ERRORS rejections (the same list object when nothing is added)."""
    room = MAX_REPORTED_ERRORS - len(errors)
    if room <= 0 or not rejections:
        return errors
    return errors + [{"index": index, "reason": reason} for index, reason in rejections[:room]]


def _is_write_conflict(error: DBAPIError) -> bool:
    """A unique violation or a PostgreSQL deadlock / serialization failure."""
    if isinstance(error, IntegrityError):
        return True
    code = getattr(error.orig, "sqlstate", None)
    return code in {"40P01", "40001"}  # deadlock detected, serialization failure


def _finish(
    sessions: sessionmaker[Session], upload: ClaimedUpload, status: str, reason: str | None
) -> None:
    with sessions() as session, session.begin():
        if not queries.finish_upload(
            session,
            upload_id=upload.id,
            lease_until=upload.lease_until,
            status=status,
            reason=reason,
        ):
            raise LeaseLost
        finished = session.get(Upload, upload.id)
        assert finished is not None
        upload_finished(
            session,
            receivers=event_receivers(
                session, store_id=upload.store_id, connection_id=finished.connection_id
            ),
            data={
                "uploadId": upload.id,
                "storeId": upload.store_id,
                "status": status,
                "records": finished.records,
                "created": finished.created,
                "updated": finished.updated,
                "unchanged": finished.unchanged,
                "rejected": finished.rejected,
            },
        )
    log.info("upload %s %s%s", upload.id, status, f": {reason}" if reason else "")


def _release(sessions: sessionmaker[Session], upload: ClaimedUpload) -> None:
    try:
        with sessions() as session, session.begin():
            queries.release_lease(session, upload_id=upload.id, lease_until=upload.lease_until)
    except Exception:
        log.exception("could not release the lease of upload %s", upload.id)
