"""Ingestion on PostgreSQL, two batches at a time: one written while the next is looked up.

One batch after another, a batch waits for its look-ups, is planned, then written
(COPY), and PostgreSQL's work on the COPY, most of a batch's time, leaves the worker
idle while the next batch's look-ups wait behind it. Here each batch's writes and
commit run in a writer thread, on one of two connections, while the next batch is
looked up on the other and planned (py-spy: the worker waited on the COPY for 38% of
an upload of 1,000,000 records, and on its look-ups for 13%).

The next batch is planned as if the previous one had committed first, as serial
ingestion would:

- Its look-ups lock nothing (serial ingestion's FOR UPDATE would wait for the batch
  being written wherever both batches found the same customer, measured as half of
  the look-ups' time). Instead, an update applies only to the row as it was read
  (batch_queries.update_customers_if_unchanged); a row another writer changed meanwhile
  fails the batch, which is then committed the serial way, below. A customer merely
  matched, not changed, needs no lock: the batch is as if it ran before that change.
- What its look-ups cannot see is what the batch being written changes: the rows it
  creates, and the emails and phones it gives to or takes from rows. Every such key
  is in that batch's plan, so once it has committed, the rows it updated are
  dropped from what was read, the records sharing a key are looked up again, and
  the batch is planned again: rare in a file (a person twice, a few thousand
  records apart).
- Its writes start once the previous batch has committed: batches commit in file
  order, each with its progress, and a restart resumes after the last, as before.

A batch whose writes fail on a concurrent writer (an order created one of its new
customers; a deadlock) is committed again the serial way (batch_commit.commit_batch,
which plans it against the winner and retries), and the batch looked up meanwhile
is looked up again after it.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import ExitStack
from dataclasses import dataclass
from types import TracebackType

from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.customers import queries
from partnerlink.customers.batch_apply import match_candidates, rekeyed_ids, write_plan
from partnerlink.customers.batch_commit import (
    ClaimedUpload,
    Reclassify,
    commit_batch,
    errors_with,
    is_write_conflict,
    renew_lease,
)
from partnerlink.customers.batch_queries import ConcurrentInsert
from partnerlink.customers.merge import EMAIL, PHONE, BatchPlan, StoredRow, plan_batch
from partnerlink.customers.reader import ParsedBatch
from partnerlink.db.raw import Sql
from partnerlink.settings import Settings


@dataclass
class _InFlight:
    """A batch handed to the writer thread: its plan, and the connection it is written on."""

    batch: ParsedBatch
    plan: BatchPlan
    lane: int
    future: Future[None]


class PipelinedCommits:
    """Commits an upload's batches in order, each written while the next is planned.
    A context manager: on leaving it without an error, the last batch has committed."""

    def __init__(
        self,
        engine: Engine,
        settings: Settings,
        upload: ClaimedUpload,
        reclassify: Reclassify,
    ) -> None:
        self._engine = engine
        self._settings = settings
        self._upload = upload
        self._reclassify = reclassify
        self._stack = ExitStack()
        self._lanes: list[sessionmaker[Session]] = []
        self._next_lane = 0
        self._in_flight: _InFlight | None = None
        self._errors = upload.errors  # the reported errors once the last batch handed over commits

    def __enter__(self) -> PipelinedCommits:
        with ExitStack() as stack:
            # Connections held for the upload: a checkout from the pool pings the server
            # first (pool_pre_ping), a round trip in every batch's path. One lost meanwhile
            # fails the upload's attempt; it is taken up again after the last batch.
            for _ in range(2):
                connection = stack.enter_context(self._engine.connect())
                self._lanes.append(
                    sessionmaker(bind=connection, expire_on_commit=False, autoflush=True)
                )
            self._writer = stack.enter_context(
                ThreadPoolExecutor(max_workers=1, thread_name_prefix="upload-writer")
            )
            self._stack = stack.pop_all()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        with self._stack:
            in_flight, self._in_flight = self._in_flight, None
            if in_flight is None:
                return
            if kind is None:
                self._settle(in_flight)
            else:
                wait([in_flight.future])  # its outcome gives way to the error raised here

    def quiesce(self) -> None:
        """Waits until the batch being written has committed (or failed): then the lease
        the upload holds is the one the database holds."""
        if self._in_flight is not None:
            wait([self._in_flight.future])

    def commit(self, batch: ParsedBatch) -> None:
        """Looks the batch up and plans it while the previous one is written, then, once
        that one has committed, hands it to the writer."""
        lane = self._next_lane
        session = self._lanes[lane]()
        session.begin()
        try:
            stored, plan = self._plan(session, batch)
        except DBAPIError as error:  # a deadlock with another writer, while looking up
            session.rollback()
            session.close()
            if not is_write_conflict(error):
                raise
            self._settle_all()
            self._commit_serially(batch, lane)
            return
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            if not self._written(in_flight):
                session.rollback()  # its look-ups may miss what the serial commit writes
                session.close()
                self._commit_serially(in_flight.batch, in_flight.lane)
                self.commit(batch)
                return
            touched = set(_touched_keys(in_flight.plan))
            again = [r for r in batch.records if r[EMAIL] in touched or r[PHONE] in touched]
            if again:
                for entity in in_flight.plan.updates:
                    stored.pop(entity.id, None)  # type: ignore[arg-type]
                fresh = match_candidates(session, self._upload.profile_id, again, lock=False)
                stored.update((row[0], row) for row in fresh)
                plan = plan_batch(batch.records, stored.values())
        errors = errors_with(self._errors, batch.rejections)
        future = self._writer.submit(self._write, session, batch, plan, errors)
        self._in_flight = _InFlight(batch=batch, plan=plan, lane=lane, future=future)
        self._errors = errors
        self._next_lane = 1 - lane

    def _plan(self, session: Session, batch: ParsedBatch) -> tuple[dict[int, StoredRow], BatchPlan]:
        if not batch.records:
            return {}, BatchPlan()
        found = match_candidates(session, self._upload.profile_id, batch.records, lock=False)
        stored = {row[0]: row for row in found}
        return stored, plan_batch(batch.records, stored.values())

    def _write(
        self, session: Session, batch: ParsedBatch, plan: BatchPlan, errors: list[dict]
    ) -> None:
        """The writer thread: the batch's writes, its progress, the commit."""
        upload = self._upload
        try:
            lease_until = renew_lease(session, self._settings, upload)
            write_plan(session, profile_id=upload.profile_id, plan=plan, if_unchanged=True)
            rekeyed = rekeyed_ids(plan)
            if rekeyed:
                self._reclassify(
                    Sql.of_session(session),
                    profile_id=upload.profile_id,
                    customer_ids=rekeyed,
                    window_days=self._settings.attribution_window_days,
                )
            queries.record_progress(
                session,
                upload_id=upload.id,
                next_index=batch.next_index,
                created=plan.created,
                updated=plan.updated,
                unchanged=plan.unchanged,
                rejected=len(batch.rejections),
                errors=errors if errors is not upload.errors else None,
            )
            session.commit()
        except BaseException:
            session.rollback()
            raise
        finally:
            session.close()
        upload.lease_until = lease_until  # committed: the renewed lease is the one held
        upload.errors = errors
        upload.records_committed = batch.next_index

    def _written(self, in_flight: _InFlight) -> bool:
        """Waits for a batch handed to the writer: True once committed, False if a
        concurrent writer got in its way (rolled back); any other failure raises."""
        failure = in_flight.future.exception()
        if failure is None:
            return True
        if isinstance(failure, ConcurrentInsert) or (
            isinstance(failure, DBAPIError) and is_write_conflict(failure)
        ):
            return False
        raise failure

    def _settle(self, in_flight: _InFlight) -> None:
        if not self._written(in_flight):
            self._commit_serially(in_flight.batch, in_flight.lane)

    def _settle_all(self) -> None:
        in_flight, self._in_flight = self._in_flight, None
        if in_flight is not None:
            self._settle(in_flight)

    def _commit_serially(self, batch: ParsedBatch, lane: int) -> None:
        commit_batch(self._lanes[lane], self._settings, self._upload, batch, self._reclassify)
        self._errors = self._upload.errors


def _touched_keys(plan: BatchPlan) -> Iterator[str]:
    """Every email and phone the plan's writes give to a row or take from one."""
    for entity in (*plan.inserts, *plan.updates):
        for values in (entity.values, entity.initial or ()):
            for key in values[EMAIL : PHONE + 1]:
                if key is not None:
                    yield key
