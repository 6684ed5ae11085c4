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
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences import queries as audience_queries
from partnerlink.audiences.service import EXPORT_CHUNK, plan_export
from partnerlink.destinations import queries
from partnerlink.destinations.identifiers import Identity
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
    """Rows waiting to be sent, a platform request's worth at a time."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        destination: Destination,
        sender: AudienceSender,
        batch: int,
        lease: Lease,
        report: Report,
    ) -> None:
        self.sessions = sessions
        self.destination = destination
        self.sender = sender
        self.batch = batch
        self.lease = lease
        self.report = report
        self.adds: Pending = []
        self.removes: Pending = []

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

    def send_removes(self) -> None:
        while self.removes:
            part, self.removes = self.removes[: self.batch], self.removes[self.batch :]
            sent = self.sender.remove([row for _, row in part])
            with self.sessions.begin() as session:
                connection = session.connection()
                queries.forget_members(connection, self.destination.id, [c for c, _ in part])
                queries.add_to_counters(
                    connection, self.destination.id, sent_removed=len(part), members=-len(part)
                )
                self.lease.renew(session)
            self.report.add(sent.report)

    def send_adds(self) -> None:
        while self.adds:
            part, self.adds = self.adds[: self.batch], self.adds[self.batch :]
            sent = self.sender.add([row for _, row in part])
            with self.sessions.begin() as session:
                connection = session.connection()
                queries.remember_members(
                    connection, self.destination.id, self.destination.profile_id, part
                )
                queries.add_to_counters(
                    connection,
                    self.destination.id,
                    sent_added=sent.taken - sent.rejected,
                    sent_rejected=sent.rejected,
                    members=len(part),
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
    batches = _Batches(sessions, destination, sender, batch, lease, report)
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
    return report


def _rows(
    rows: list[Any], sender: AudienceSender, excluded: Callable[[int], bool]
) -> dict[int, str]:
    return {
        int(row[0]): sender.row(Identity(*row[1:])) for row in rows if not excluded(int(row[0]))
    }
