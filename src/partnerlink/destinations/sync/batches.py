"""An audience sync's requests and their records (destinations/sync/audience_sync.py): rows
waiting to be sent, a platform request's worth at a time, and what the platform took,
recorded in the order it was taken."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Executor, Future

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.destinations import queries
from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync import members
from partnerlink.destinations.sync.progress import Lease, Report
from partnerlink.destinations.sync.senders import AudienceSender, Sent

# A row to remove: customer id, row, and whether the customer is added again by this
# sync with a new row (a changed member): its held row is then replaced by the addition's
# record, one UPDATE where a DELETE and an INSERT touched the table's pages twice.
Removal = tuple[int, str, bool]
# A row to add: customer id, row, fingerprint, and whether it replaces a held row.
Addition = tuple[int, str, int | None, bool]


class Batches:
    """Rows waiting to be sent, a platform request's worth at a time.

    Three threads share the work: this one reads and hashes the customers, `caller`'s
    makes the requests one after the other (their time is mostly the platform's), and
    `recorder`'s records what the platform took, in the same order (its time is mostly
    the database's). A request goes once the one before it was answered, and once the
    record before that one is written: at most two requests' rows are ever taken by the
    platform and not yet recorded. An addition's rows are written before the platform
    answers, in a transaction committed once it took them and rolled back if it did not
    (`stage_added`): the upsert of 10,000 held rows took longer than the request itself,
    and an incremental sync's one request waited for both, one after the other. With a
    `stager` (PostgreSQL), a part is staged on its thread as soon as it is formed, while
    the removals before it are still out; without (SQLite, whose one connection a staged
    transaction holds), the recorder stages it when its request goes.
    A failure anywhere stops the sync at the next request;
    what was taken is recorded all the same (leaving the executors' `with` blocks waits
    for it). A sync cut short keeps what it recorded; the next sends the rest, and any row
    taken but not recorded again, which the platforms take as the same addition or
    removal."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        destination: Destination,
        sender: AudienceSender,
        batch: int,
        lease: Lease,
        report: Report,
        caller: Executor,
        recorder: Executor,
        stager: Executor | None = None,
    ) -> None:
        self.sessions = sessions
        self.destination = destination
        self.sender = sender
        self.batch = batch
        self.lease = lease
        self.report = report
        self.caller = caller
        self.recorder = recorder
        self.stager = stager
        self.adds: list[Addition] = []
        self.removes: list[Removal] = []
        self.in_flight: Future[Future[None]] | None = None
        self.recording: deque[Future[None]] = deque()
        self.written = 0  # held rows added, removed or refingerprinted

    def queue(self, adds: list[Addition], removes: list[Removal]) -> None:
        self.written += len(adds) + len(removes)
        self.removes += removes
        self.adds += adds
        if len(self.removes) >= self.batch:
            self.send_removes()
        if len(self.adds) >= self.batch:
            self.send_removes()  # a changed member's old row goes before its new one
            self.send_adds()

    def refingerprint(self, rows: list[tuple[int, int]]) -> None:
        """Records new fingerprints of unchanged rows, in turn with the requests'."""
        if rows:
            self.written += len(rows)
            self.wait(pending_records=1)
            self.recording.append(self.recorder.submit(self.record_fingerprints, rows))

    def finish(self) -> None:
        self.send_removes()
        self.send_adds()
        self.wait(pending_records=0)

    def send_removes(self) -> None:
        while self.removes:
            part, self.removes = self.removes[: self.batch], self.removes[self.batch :]
            self.wait(pending_records=1)
            self.in_flight = self.caller.submit(self.remove, part)

    def send_adds(self) -> None:
        while self.adds:
            part, self.adds = self.adds[: self.batch], self.adds[self.batch :]
            staged = self.stager.submit(self.stage_added, part) if self.stager else None
            try:
                self.wait(pending_records=1)
            except BaseException:
                if staged is not None:
                    self.recorder.submit(self.discard, staged)
                raise
            self.in_flight = self.caller.submit(self.add, part, staged)

    def wait(self, *, pending_records: int) -> None:
        """Until the request in flight is answered and at most `pending_records` records
        remain to write; a failure of either is raised here."""
        if self.in_flight is not None:
            call, self.in_flight = self.in_flight, None
            self.recording.append(call.result())
        while len(self.recording) > pending_records:
            self.recording.popleft().result()

    def add(self, part: list[Addition], staged: Future[Session] | None) -> Future[None]:
        """On the caller's thread: one request, its rows staged (by the stager, or now by
        the recorder); the recorder then commits them, or should the request fail, rolls
        them back."""
        if staged is None:
            staged = self.recorder.submit(self.stage_added, part)
        try:
            sent = self.sender.add([row for _, row, _, _ in part])
        except BaseException:
            self.recorder.submit(self.discard, staged)
            raise
        return self.recorder.submit(self.record_added, staged, part, sent)

    def remove(self, part: list[Removal]) -> Future[None]:
        sent = self.sender.remove([row for _, row, _ in part])
        return self.recorder.submit(self.record_removed, part, sent)

    def stage_added(self, part: list[Addition]) -> Session:
        """On the stager's thread (or the recorder's), before the platform answers: the
        rows as held once it takes them, written in a transaction left open."""
        session = self.sessions()
        try:
            connection = session.connection()
            members.record_without_waiting_for_disk(connection)
            rows = [(customer_id, row, fingerprint) for customer_id, row, fingerprint, _ in part]
            members.remember_members(
                connection, self.destination.id, self.destination.profile_id, rows
            )
        except BaseException:
            session.close()
            raise
        return session

    def discard(self, staged: Future[Session]) -> None:
        """The request failed or never went: its staged rows are rolled back (closing
        rolls back), once staged."""
        if staged.exception() is None:
            staged.result().close()

    def record_added(self, staged: Future[Session], part: list[Addition], sent: Sent) -> None:
        """The platform took the staged rows: they are committed with the counters, once
        staged."""
        with staged.result() as session:
            queries.add_to_counters(
                session.connection(),
                self.destination.id,
                sent_added=sent.taken - sent.rejected,
                sent_rejected=sent.rejected,
                members=sum(1 for *_, replaces in part if not replaces),
            )
            self.lease.renew(session)
            session.commit()
        self.report.add(sent.report)

    def record_removed(self, part: list[Removal], sent: Sent) -> None:
        with self.sessions.begin() as session:
            connection = session.connection()
            members.record_without_waiting_for_disk(connection)
            destination_id = self.destination.id
            gone = [customer_id for customer_id, _, replaced in part if not replaced]
            members.forget_members(connection, destination_id, gone)
            queries.add_to_counters(
                connection, destination_id, sent_removed=len(part), members=-len(gone)
            )
            self.lease.renew(session)
        self.report.add(sent.report)

    def record_fingerprints(self, rows: list[tuple[int, int]]) -> None:
        with self.sessions.begin() as session:
            members.record_without_waiting_for_disk(session.connection())
            members.refingerprint_members(session.connection(), self.destination.id, rows)
            self.lease.renew(session)
