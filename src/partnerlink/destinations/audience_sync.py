"""Bringing an audience destination's list up to date (CONTRACT.md §11).

The segment's exportable members (the §8 export's query: no opted-out, erased,
control-group or test-store-only customer) are compared with the rows the platform
holds by our records, a chunk of customer ids at a time: a new member is added, one
who left is removed by the row last sent, and one whose row changed is removed by
the old row and added with the new. Removals pending are always sent before
additions, so a changed member's old row goes before its new one. Every call's rows
are recorded once the platform took them, in a transaction that also renews the
lease: a sync cut short keeps what it did, and the next one sends only the rest.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences import queries as audience_queries
from partnerlink.audiences.service import EXPORT_CHUNK, ExportPlan, plan_export
from partnerlink.destinations import queries
from partnerlink.destinations.models import Destination
from partnerlink.destinations.progress import Lease, Report
from partnerlink.destinations.senders import AudienceSender
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.results import campaign_of

Pending = list[tuple[int, str]]


def _exclusion(session: Session, destination: Destination) -> Callable[[int], bool]:
    """The campaign's control group, which never sees its ads (CONTRACT §7)."""
    if destination.campaign_id is None:
        return lambda _customer_id: False
    campaign = campaign_of(
        session, profile_id=destination.profile_id, campaign_id=destination.campaign_id
    )
    salt, percent = campaign.salt, campaign.holdout_percent
    return lambda customer_id: is_control(salt, customer_id, percent)


class _Batches:
    """Rows waiting to be sent, a platform request's worth at a time.

    A request is made, and what the platform took recorded, on `caller`'s thread while
    this one reads and hashes the next customers (the request's time is mostly the
    platform's, the recording's mostly the database's). Only one is ever in flight, and
    the next goes only once it is recorded, so requests go and are recorded in the same
    order as one at a time, and a failure stops the sync as before. Should this thread
    fail meanwhile, the request in flight is still recorded (leaving the `with` block
    waits for it)."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        destination: Destination,
        sender: AudienceSender,
        batch: int,
        lease: Lease,
        report: Report,
        caller: Executor,
    ) -> None:
        self.sessions = sessions
        self.destination = destination
        self.sender = sender
        self.batch = batch
        self.lease = lease
        self.report = report
        self.caller = caller
        self.adds: Pending = []
        self.removes: Pending = []
        self.in_flight: Future[None] | None = None

    def queue(self, adds: Pending, removes: Pending) -> None:
        self.removes += removes
        self.adds += adds
        if len(self.removes) >= self.batch:
            self.send_removes()
        if len(self.adds) >= self.batch:
            self.send_removes()  # a changed member's old row goes before its new one
            self.send_adds()

    def finish(self) -> None:
        self.send_removes()
        self.send_adds()
        self.wait()

    def send_removes(self) -> None:
        while self.removes:
            part, self.removes = self.removes[: self.batch], self.removes[self.batch :]
            self.send(False, part)

    def send_adds(self) -> None:
        while self.adds:
            part, self.adds = self.adds[: self.batch], self.adds[self.batch :]
            self.send(True, part)

    def send(self, adding: bool, part: Pending) -> None:
        self.wait()
        self.in_flight = self.caller.submit(self.call_and_record, adding, part)

    def wait(self) -> None:
        """Until the request in flight is sent and recorded; its failure is raised here."""
        if self.in_flight is not None:
            call, self.in_flight = self.in_flight, None
            call.result()

    def call_and_record(self, adding: bool, part: Pending) -> None:
        """On the caller's thread: one request, then what the platform took is recorded."""
        rows = [row for _, row in part]
        sent = self.sender.add(rows) if adding else self.sender.remove(rows)
        with self.sessions.begin() as session:
            connection = session.connection()
            destination_id = self.destination.id
            if adding:
                queries.remember_members(
                    connection, destination_id, self.destination.profile_id, part
                )
                queries.add_to_counters(
                    connection,
                    destination_id,
                    sent_added=sent.taken - sent.rejected,
                    sent_rejected=sent.rejected,
                    members=len(part),
                )
            else:
                queries.forget_members(connection, destination_id, [c for c, _ in part])
                queries.add_to_counters(
                    connection, destination_id, sent_removed=len(part), members=-len(part)
                )
            self.lease.renew(session)
        self.report.add(sent.report)


def sync_audience(
    sessions: sessionmaker[Session],
    destination: Destination,
    sender: AudienceSender,
    *,
    batch: int,
    lease: Lease,
    digest_key: bytes,
) -> Report:
    report = Report()
    assert destination.segment is not None
    with sessions() as session:
        plan = plan_export(
            session,
            profile_id=destination.profile_id,
            segment=destination.segment,
            file_format="meta",
            digest_key=digest_key,
        )
        excluded = _exclusion(session, destination)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="audience-sync") as caller:
        batches = _Batches(sessions, destination, sender, batch, lease, report, caller)
        _send_chunks(sessions, destination, sender, plan, excluded, digest_key, batches)
    return report


def _send_chunks(
    sessions: sessionmaker[Session],
    destination: Destination,
    sender: AudienceSender,
    plan: ExportPlan,
    excluded: Callable[[int], bool],
    digest_key: bytes,
    batches: _Batches,
) -> None:
    after = 0
    while True:
        with sessions() as session:
            connection = session.connection()
            audience_queries.prepare(connection, digest_key)
            until = audience_queries.chunk_end(
                connection, destination.profile_id, after, EXPORT_CHUNK
            )
            rows = audience_queries.export_chunk(
                connection, plan.scope, plan.segment, plan.cut, after, until
            )
            held = queries.held_members(connection, destination.id, after, until)
        current = _rows(rows, sender, excluded)
        removes = [(c, sent) for c, sent in held.items() if current.get(c) != sent]
        adds = [(c, sent) for c, sent in current.items() if held.get(c) != sent]
        batches.queue(adds, removes)
        if until is None:
            break
        after = until
    batches.finish()


def _rows(
    rows: list[Any], sender: AudienceSender, excluded: Callable[[int], bool]
) -> dict[int, str]:
    return {int(row[0]): sender.row(row[1:]) for row in rows if not excluded(int(row[0]))}
