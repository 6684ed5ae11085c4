"""One batch of an upload applied in the caller's transaction: its records matched
against the stored customers (at most two look-ups), merged in memory (merge.py), and
written (updates by id, then new customers at once: COPY on PostgreSQL)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session

from partnerlink.customers.ingestion import batch_queries
from partnerlink.customers.ingestion.merge import EMAIL, PHONE, StoredRow, plan_batch
from partnerlink.customers.ingestion.reader import ParsedBatch
from partnerlink.customers.service import CustomerFields, upsert_customer
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql


def apply_records(
    session: Session,
    *,
    profile_id: str,
    batch: ParsedBatch,
    careful: bool = False,
    rekeyed: set[int] | None = None,
    narrow_emails: bool = False,
    meanwhile: Callable[[], None] | None = None,
) -> tuple[int, int, int]:
    """Matches and merges the batch's valid records; returns (created, updated, unchanged).

    `careful` creates new customers one by one (after a concurrent writer
    created some of them first): each then merges into the winner's row.
    `rekeyed`, when given, receives the ids of stored customers whose email or
    phone changed. `narrow_emails`, for a first upload into an empty profile, looks up
    only the batch's `maybe_written` emails, those the upload may have written
    (upload_emails.py: a customer it missed makes the batch's write collide).
    """
    if not batch.records:
        return 0, 0, 0
    candidates = _match_candidates(session, profile_id, batch, narrow_emails)
    plan = plan_batch(batch.records, candidates, batch.singles, batch.copy_lines)
    if rekeyed is not None:
        rekeyed.update(e.id for e in plan.updates if e.rekeyed and e.id is not None)
    now = utcnow()
    # Updates first: a phone-only customer taking an email must not collide with new rows.
    batch_queries.update_customers(
        session,
        rows=[(entity.id, entity.values) for entity in plan.updates],  # type: ignore[misc]
        now=now,
    )
    if not careful:
        # A row the reader rendered goes as its COPY text (PostgreSQL only renders them).
        rows = [e.values if e.copy_line is None else e.copy_line for e in plan.inserts]
        batch_queries.insert_customers(
            session, profile_id=profile_id, values=rows, now=now, meanwhile=meanwhile
        )
        return plan.created, plan.updated, plan.unchanged
    created, updated, unchanged = 0, plan.updated, plan.unchanged
    for entity in plan.inserts:
        _, outcome = upsert_customer(
            Sql.of_session(session),
            profile_id=profile_id,
            fields=CustomerFields(*entity.values),
            rekeyed=rekeyed,
        )
        created += outcome == "created"
        updated += outcome == "updated"
        unchanged += outcome == "unchanged"
    return created, updated, unchanged


def _match_candidates(
    session: Session,
    profile_id: str,
    batch: ParsedBatch,
    narrow_emails: bool,
) -> list[StoredRow]:
    """Every stored customer the batch could match, in one or two queries.

    A record whose email is stored matches by email alone, so phones are looked
    up only for the others (without email, or with a new one): a re-sent list
    costs one query a batch.
    """
    records = batch.records
    if narrow_emails and batch.maybe_written is not None:
        emails = batch.maybe_written
    else:
        emails = {email for record in records if (email := record[EMAIL]) is not None}
    stored = {
        row[0]: row
        for row in batch_queries.load_customers(
            session, profile_id=profile_id, column="email", keys=emails
        )
    }
    known = {row[1] for row in stored.values()}
    phones = {
        phone
        for record in records
        if (phone := record[PHONE]) is not None and record[EMAIL] not in known
    }
    by_phone = batch_queries.load_customers(
        session, profile_id=profile_id, column="phone_number", keys=phones
    )
    for row in by_phone:
        stored.setdefault(row[0], row)
    return list(stored.values())
