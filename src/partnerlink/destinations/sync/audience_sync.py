"""Bringing an audience destination's list up to date (CONTRACT.md §11).

The segment's exportable members (the §8 export's query: no opted-out, erased,
control-group or test-store-only customer) are compared with the rows the platform
holds by our records, a range of customer ids at a time: a new member is added, one
who left is removed by the row last sent, and one whose row changed is removed by
the old row and added with the new.

What is compared is decided in SQL. Each held row keeps the fingerprint of the
customer columns it was made from (members.member_fingerprint), and each destination
the basis its rows were last fully compared under (row format, platform, segment,
campaign and holdout). While the basis stays, the database returns only the members
not held, the held rows whose customer is no longer a member, and the members whose
fingerprint changed; only those are hashed. Membership itself (opt-outs, erasures,
STOPs, test stores, the time-based segments) is the export's predicate, evaluated on
every sync; the one rule applied here, the campaign's control group, is fixed by the
basis. A new basis (a PATCHed segment or campaign, a changed holdout, a new row format,
another version of Google's formatter) compares every member once, and is recorded when
that sync completes.

The segment `all` needs less: its members are decided by the customer rows, their
opt-outs and erasures alone, each of which the database numbers as it is written
(migration 0030: `customers.change_seq`, `customer_deletions`). A destination keeps the
number up to which it compared (`members_seq`); its next sync reads only the customers
numbered since, and their held rows (destinations/sync/changes.py).

Removals pending are always sent before additions, so a changed member's old row goes
before its new one. Every call's rows are recorded once the platform took them, in a
transaction that also renews the lease: a sync cut short keeps what it did, and the
next one sends only the rest (and again the few rows taken but not yet recorded).
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.audiences import queries as audience_queries
from partnerlink.audiences.service import ExportPlan, plan_export
from partnerlink.db import replica
from partnerlink.destinations.identifiers import rows_basis
from partnerlink.destinations.models import Destination
from partnerlink.destinations.sync import changes, members
from partnerlink.destinations.sync.batches import Addition, Batches, Removal
from partnerlink.destinations.sync.progress import Lease, Report
from partnerlink.destinations.sync.senders import AudienceSender
from partnerlink.kit.digests import sha256_hex
from partnerlink.measurement.holdout import is_control
from partnerlink.measurement.results import campaign_of

log = logging.getLogger("partnerlink.destinations")

# Bump when the rows sent for the same customer columns change (normalization,
# hashing, a platform's row shape): every destination then compares all its members once.
ROW_FORMAT = 1

# Customers a read covers. Comparing every member, the reader holds each returned row
# (one per member) until hashed; otherwise only the differences come back.
COMPARE_ALL_CHUNK = 20_000

# A sync that wrote more than 1/VACUUM_SHARE of the held rows vacuums them (members.py).
VACUUM_SHARE = 10


def campaign_rule(session: Session, destination: Destination) -> tuple[Callable[[int], bool], str]:
    """The campaign's control group, which never sees its ads (CONTRACT §7), and the
    basis of the comparison: what the held rows depend on besides the customer."""
    terms: list[Any] = [ROW_FORMAT, destination.platform, destination.segment]
    rules = rows_basis(destination.platform)  # Google's formatter and its version
    if rules is not None:
        terms.append(rules)
    if destination.campaign_id is None:
        excluded: Callable[[int], bool] = lambda _customer_id: False  # noqa: E731
    else:
        campaign = campaign_of(
            session, profile_id=destination.profile_id, campaign_id=destination.campaign_id
        )
        salt, percent = campaign.salt, campaign.holdout_percent
        terms += [destination.campaign_id, sha256_hex(salt.hex()), percent]

        def excluded(customer_id: int) -> bool:
            return is_control(salt, customer_id, percent)

    return excluded, sha256_hex(json.dumps(terms))


def what_to_compare(
    session: Session, destination: Destination, digest_key: bytes
) -> tuple[ExportPlan, Callable[[int], bool], str]:
    """The segment's export plan, the campaign's control group left out, and the basis
    of the comparison (a sync compares under it; a preview counts as the sync would)."""
    assert destination.segment is not None
    plan = plan_export(
        session,
        profile_id=destination.profile_id,
        segment=destination.segment,
        file_format="meta",
        digest_key=digest_key,
    )
    excluded, basis = campaign_rule(session, destination)
    return plan, excluded, basis


# Changed customers a read covers: two reads at a time, on two of the database's processes.
IDS_CHUNK = 2_500


def sync_audience(
    sessions: sessionmaker[Session],
    destination: Destination,
    sender: AudienceSender,
    *,
    batch: int,
    lease: Lease,
    digest_key: bytes,
    reads: sessionmaker[Session] | None = None,
) -> Report:
    """`reads` (the read replica once caught up, see engine.py) reads the segment, the
    campaign and the held rows to compare; every record goes to `sessions`, the primary.

    The change mark is taken first, on the primary: every change up to it is then
    compared by this sync, whichever way it reads (a replica is asked again to have
    replayed up to the mark). What changes after it is compared by the next sync."""
    report = Report()
    assert destination.segment is not None
    mark = changes.change_mark_or_none(sessions, destination.profile_id)
    if reads is not None and reads is not sessions:
        reads = replica.caught_up_reads(sessions, reads, f"destination {destination.id}")
    reads = reads or sessions
    with reads() as session:
        plan, excluded, basis = what_to_compare(session, destination, digest_key)
    compare_all = destination.members_basis != basis
    ids = changes.ids_to_compare(reads, destination, plan, basis, mark)
    # The recorder outlives the caller: a request answered as the sync stops still has
    # its record written.
    with sessions() as session:
        postgres = session.get_bind().dialect.name == "postgresql"
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="audience-record") as recorder,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="audience-stage") as stager,
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="audience-call") as caller,
    ):
        batches = Batches(
            sessions,
            destination,
            sender,
            batch,
            lease,
            report,
            caller,
            recorder,
            stager if postgres else None,
        )
        _send_chunks(reads, destination, sender, plan, excluded, batches, compare_all, ids)
    with sessions.begin() as session:
        connection = session.connection()
        members.set_members_basis(connection, destination.id, basis, mark)
        changes.forget_deletions(connection, destination.profile_id)
    # The count of held rows is kept with every record, in the same transaction; a sync
    # that compared every member again under a new basis counts them anew (engine.py),
    # in case rows held from before the counts were kept so; others trust it (a count
    # of a million rows just written, not yet vacuumed, took seconds).
    report.recount = compare_all and destination.members_basis is not None
    if batches.written > destination.members // VACUUM_SHARE:
        with sessions() as session:
            engine = session.get_bind()
        assert isinstance(engine, Engine)
        members.vacuum_members(engine)
    return report


def _send_chunks(
    read_sessions: sessionmaker[Session],
    destination: Destination,
    sender: AudienceSender,
    plan: ExportPlan,
    excluded: Callable[[int], bool],
    batches: Batches,
    compare_all: bool,
    ids: list[int] | None,
) -> None:
    """Reads ranges of customers on threads of their own while this one compares the
    ranges read (a read's time is the database's). Comparing every member, one range is
    read ahead; otherwise the reads return little, and two go at once, on two of the
    database's processes. With `ids`, the ranges hold only those customers."""
    size, readers = (COMPARE_ALL_CHUNK, 1) if compare_all else (changes.CHANGES_CHUNK, 2)

    def ranges() -> Iterator[tuple[int, int | None, list[int] | None]]:
        if ids is not None:
            for start in range(0, len(ids), IDS_CHUNK):
                part = ids[start : start + IDS_CHUNK]
                yield part[0] - 1, part[-1], part
            return
        after: int | None = 0
        while after is not None:
            with read_sessions() as session:
                until = audience_queries.chunk_end(
                    session.connection(), plan.scope.profile_id, after, size
                )
            yield after, until, None
            after = until

    def read(after: int, until: int | None, part: list[int] | None) -> list[Any]:
        with read_sessions() as session:
            connection = session.connection()
            members.prepare(connection, plan.scope.digest_key)
            return members.member_changes(
                connection, plan, destination.id, after, until, compare_all=compare_all, ids=part
            )

    reads: deque[Future[list[Any]]] = deque()
    pending = ranges()
    more = True
    with ThreadPoolExecutor(max_workers=readers, thread_name_prefix="audience-read") as reader:
        while True:
            while more and len(reads) <= readers:
                following = next(pending, None)
                if following is None:
                    more = False
                    break
                reads.append(reader.submit(read, *following))
            if not reads:
                break
            rows = reads.popleft().result()
            adds, removes, refingerprints = compare_pairs(rows, sender.row, excluded)
            del rows
            batches.queue(adds, removes)
            batches.refingerprint(refingerprints)
    batches.finish()


# Columns of members.member_changes: the member's id, its 7 export columns, its
# fingerprint, then the held row's customer id, row and fingerprint.
_ID, _FINGERPRINT, _HELD_ID, _HELD_ROW, _HELD_FINGERPRINT = 0, 8, 9, 10, 11


def compare_pairs(
    rows: list[Any], make_row: Callable[[Any], str], excluded: Callable[[int], bool]
) -> tuple[list[Addition], list[Removal], list[tuple[int, int]]]:
    """What the pairs of member and held row call for: rows to add, rows to remove, and
    fingerprints to record for members whose row stayed the same (`make_row`: the
    sender's row of a customer). The sync sends them; a preview (preview.py) counts them."""
    adds: list[Addition] = []
    removes: list[Removal] = []
    refingerprints: list[tuple[int, int]] = []
    for pair in rows:
        customer_id = pair[_ID]
        held_row = pair[_HELD_ROW]
        if customer_id is None or excluded(customer_id):
            if held_row is not None:
                removes.append((pair[_HELD_ID], held_row, False))
            continue
        row = make_row(pair[1:_FINGERPRINT])
        fingerprint = pair[_FINGERPRINT]
        if row == held_row:
            if pair[_HELD_FINGERPRINT] != fingerprint:
                refingerprints.append((customer_id, fingerprint))
            continue
        replaces = held_row is not None
        if replaces:
            removes.append((customer_id, held_row, True))
        adds.append((customer_id, row, fingerprint, replaces))
    return adds, removes, refingerprints
