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
checks the whole stored file (reader.check_file). On SQLite, and when an upload is
resumed, it runs before the first batch, renewing the lease as it goes. On
PostgreSQL a first reading of a large file checks it beside the reading
(reader_process.py), and the batches applied meanwhile wait in one transaction that
commits only once the file has passed (batch_commit.apply_until_checked).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from functools import partial
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers import queries
from partnerlink.customers.ingestion.batch_commit import (
    ClaimedUpload,
    HeldBatchCollided,
    Reclassify,
    apply_until_checked,
    commit_batch,
)
from partnerlink.customers.ingestion.reader import (
    ParsedBatch,
    UploadFileInvalid,
    read_checked_batches,
)
from partnerlink.customers.ingestion.reader_process import (
    SUBPROCESS_MIN_BYTES,
    Prefetched,
    read_batches_elsewhere,
)
from partnerlink.customers.models import Upload
from partnerlink.customers.storage import UploadStorage
from partnerlink.customers.storage.configured import upload_storage
from partnerlink.jobs import LeaseLost
from partnerlink.settings import Settings
from partnerlink.tokens.service import event_receivers
from partnerlink.webhooks.events import upload_finished

log = logging.getLogger("partnerlink.customers")

# Measured (bench/README.md): a batch this size keeps each SQLite write transaction short
# enough that requests sharing the connection barely notice, while amortizing the round
# trips.
BATCH_SIZE = 5000
# An upload whose ingestion keeps dying (the process is killed every time) ends failed.
MAX_ATTEMPTS = 5


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
    on_postgresql = sessions.kw["bind"].dialect.name == "postgresql"
    options: dict[str, Any] = {
        "default_region": upload.default_region,
        "skip": upload.records_committed,
        "batch_size": BATCH_SIZE,
        "keep_alive": _lease_keeper(sessions, settings, upload),
        # A resumed upload looks everything up: its earlier batches' emails were not kept.
        "narrow_emails": upload.first_list,
        "copy_lines": on_postgresql,  # COPY is PostgreSQL's
    }
    # PostgreSQL only: SQLite's one write transaction, held while the check runs, would
    # keep every request from writing.
    check_beside = upload.records_committed == 0 and on_postgresql
    try:
        with _batch_sessions(sessions) as batch_sessions:
            if upload.size_bytes >= SUBPROCESS_MIN_BYTES:
                read_elsewhere = partial(
                    _ingest_elsewhere,
                    batch_sessions,
                    settings,
                    storage,
                    upload,
                    reclassify,
                    options,
                )
                try:
                    read_elsewhere(check_beside=check_beside)
                except HeldBatchCollided:
                    # Rare (another writer took a key of the first batches): nothing of
                    # the held batches stayed; read again with the check first.
                    log.info("upload %s: read again with the check first", upload.id)
                    read_elsewhere(check_beside=False)
            else:
                with storage.open(upload.storage_key) as stream:
                    for batch in read_checked_batches(stream, **options):
                        commit_batch(
                            batch_sessions, settings, upload, batch, reclassify, upload.first_list
                        )
    except FileNotFoundError:
        _finish(sessions, upload, "failed", "the stored file is missing")
    except UploadFileInvalid as error:
        _finish(sessions, upload, "failed", str(error))
    else:
        _finish(sessions, upload, "done", None)


def _ingest_elsewhere(
    sessions: sessionmaker[Session],
    settings: Settings,
    storage: UploadStorage,
    upload: ClaimedUpload,
    reclassify: Reclassify,
    options: dict[str, Any],
    *,
    check_beside: bool,
) -> None:
    """The batches read by a child process (reader_process.py) applied one by one; with
    `check_beside`, the first ones held in one transaction until the file has passed."""
    reading = read_batches_elsewhere(
        storage, upload.storage_key, check_beside=check_beside, **options
    )
    with closing(reading):
        batches = Prefetched(reading)
        narrow_emails = upload.first_list
        if check_beside:
            apply_until_checked(
                sessions, settings, upload, batches, reclassify, narrow_emails, batches.prefetch
            )
        for batch in batches:
            assert isinstance(batch, ParsedBatch), "FILE_CHECKED comes once"
            commit_batch(
                sessions, settings, upload, batch, reclassify, narrow_emails, batches.prefetch
            )


@contextmanager
def _batch_sessions(sessions: sessionmaker[Session]) -> Iterator[sessionmaker[Session]]:
    """Sessions for the upload's batches. PostgreSQL: all on one connection held for the
    upload, since a checkout from the pool pings the server first (pool_pre_ping), a round
    trip in every batch's path (py-spy at 1,000,000 records: bench/README.md).
    A connection lost meanwhile fails the batch, and the upload is taken up again later
    (MAX_ATTEMPTS). SQLite: its pool's one connection is shared with every request, so
    each batch checks it out and gives it back."""
    engine = sessions.kw["bind"]
    if engine.dialect.name != "postgresql":
        yield sessions
        return
    with engine.connect() as connection:
        yield sessionmaker(bind=connection, expire_on_commit=False, autoflush=True)


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
        if upload.batch_open or time.monotonic() - renewed < every:
            return
        with sessions() as session, session.begin():
            lease_until = queries.renew_upload_lease(
                session,
                upload_id=upload.id,
                lease_until=upload.lease_until,
                lease_seconds=settings.upload_lease_seconds,
            )
        upload.lease_until = lease_until
        renewed = time.monotonic()

    return keep_alive


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
