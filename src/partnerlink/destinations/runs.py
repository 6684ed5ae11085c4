"""Run history (CONTRACT §15): one record per sync of a destination, kept 90 days.

The sync engine writes a run in the transaction that records the sync's outcome
(engine._record), so a sync whose lease was lost leaves neither. Its counts are the
run's own: the destination's cumulative `sent_*` counters as the recording transaction
reads them, less those the sync started from; a sync cut short by a failure after some
batches went counts what it sent.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    String,
    Table,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
)
from sqlalchemy.orm import Session, sessionmaker

from partnerlink.db.base import utcnow
from partnerlink.db.pages import Page, keyset_page
from partnerlink.destinations.models import Destination, DestinationRun

runs: Table = DestinationRun.__table__  # type: ignore[assignment]
destinations: Table = Destination.__table__  # type: ignore[assignment]

KEEP_DAYS = 90
DEFAULT_LIMIT = 20
MAX_LIMIT = 100
CONSOLE_RUNS = 20  # shown under each destination on the Ad platforms page

SCHEDULE, REQUEST, RETRY = "schedule", "request", "retry"
OK, NOTHING_TO_DO, NEEDS_ATTENTION = "ok", "nothing_to_do", "needs_attention"
# lastError codes of a failure the engine retries by itself (engine.ADVICE).
RETRIED_CODES = frozenset({"platform_unavailable", "sync_failed"})
COUNTERS = ("sent_added", "sent_removed", "sent_events", "sent_rejected")


def trigger_of(destination: Destination) -> str:
    """Why this sync runs, from the row as the claim left it (the claim counts an
    attempt: a first try has 1; a success resets it to 0)."""
    if destination.sync_requested:
        return REQUEST
    last_code = (destination.last_error or {}).get("code")
    if destination.attempts > 1 or last_code in RETRIED_CODES:
        return RETRY
    return SCHEDULE


@dataclass(frozen=True)
class Counts:
    """The destination's cumulative counters as a sync found them."""

    added: int = 0
    removed: int = 0
    events: int = 0
    rejected: int = 0

    @classmethod
    def of(cls, destination: Destination) -> Counts:
        return cls(
            destination.sent_added,
            destination.sent_removed,
            destination.sent_events,
            destination.sent_rejected,
        )


def _record_statement() -> Any:
    """INSERT ... SELECT from the destination's row: the run's counts are its counters as
    the recording transaction sees them, less those the sync started from (`before_*`);
    the outcome, unless given, `ok` when any count moved. Built once (its compiled form
    is cached): one statement a sync."""
    row = destinations.c
    counts = [row[name] - bindparam(f"before_{name}", type_=BigInteger()) for name in COUNTERS]
    finished = case(
        (or_(*(count > 0 for count in counts)), literal(OK)), else_=literal(NOTHING_TO_DO)
    )
    values = select(
        row.id,
        row.profile_id,
        bindparam("started_at", type_=runs.c.started_at.type),
        bindparam("finished_at", type_=runs.c.finished_at.type),
        bindparam("trigger", type_=String()),
        func.coalesce(bindparam("outcome", type_=String()), finished),
        *counts,
        bindparam("error", type_=JSON(none_as_null=True)),
    ).where(row.id == bindparam("destination_id", type_=String()))
    return insert(runs).from_select(RUN_COLUMNS, values)


RUN_COLUMNS = (
    "destination_id",
    "profile_id",
    "started_at",
    "finished_at",
    "trigger",
    "outcome",
    "added",
    "removed",
    "events",
    "rejected",
    "error",
)
_RECORD = _record_statement()


def record_run(
    session: Session,
    destination: Destination,
    *,
    started_at: datetime,
    trigger: str,
    outcome: str | None,
    error: dict[str, Any] | None,
) -> None:
    """In the transaction recording the sync's outcome: the run, with this sync's own
    counts. `outcome` None: the sync finished, `ok` if it sent anything, else
    `nothing_to_do`."""
    before = Counts.of(destination)
    session.execute(
        _RECORD,
        {
            "destination_id": destination.id,
            "started_at": started_at,
            "finished_at": utcnow(),
            "trigger": trigger,
            "outcome": outcome,
            "error": error,
            **{
                f"before_{name}": value
                for name, value in zip(COUNTERS, astuple(before), strict=True)
            },
        },
    )


def page_of_runs(
    session: Session, destination: Destination, *, limit: int, cursor: str | None
) -> Page[DestinationRun]:
    """Newest first (by id, which only grows); `cursor` is a page's `nextCursor`."""
    return keyset_page(
        session,
        select(DestinationRun).where(
            DestinationRun.destination_id == destination.id,
            DestinationRun.profile_id == destination.profile_id,
        ),
        key=[DestinationRun.id],
        limit=limit,
        cursor=cursor,
        descending=True,
    )


def latest_runs(
    session: Session, destination_ids: list[str], limit: int = CONSOLE_RUNS
) -> dict[str, list[DestinationRun]]:
    """The newest `limit` runs of each destination (the console), one query each."""
    found: dict[str, list[DestinationRun]] = {}
    for destination_id in destination_ids:
        statement = (
            select(DestinationRun)
            .where(DestinationRun.destination_id == destination_id)
            .order_by(DestinationRun.id.desc())
            .limit(limit)
        )
        found[destination_id] = list(session.scalars(statement))
    return found


def forget_old_runs(sessions: sessionmaker[Session], now: datetime | None = None) -> int:
    """Deletes the runs that started more than 90 days ago; answers how many."""
    cutoff = (now or utcnow()) - timedelta(days=KEEP_DAYS)
    with sessions.begin() as session:
        result = session.execute(delete(runs).where(runs.c.started_at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)


# -- in words (the console) ------------------------------------------------------------

TRIGGER_WORDS = {
    SCHEDULE: "Scheduled",
    REQUEST: "Asked for",
    RETRY: "Retry",
}
OUTCOME_WORDS = {
    OK: "Sent",
    NOTHING_TO_DO: "Nothing to send",
    RETRY: "Will retry",
    NEEDS_ATTENTION: "Needs your attention",
}


def _number(count: int, one: str, many: str) -> str:
    return f"{count:,} {one if count == 1 else many}"


def counts_in_words(run: DestinationRun | dict[str, Any], kind: str) -> str:
    """What a run sent, as a store owner reads it: "added 1,240 people, removed 3"."""

    def value(name: str) -> int:
        return int(run[name] if isinstance(run, dict) else getattr(run, name))

    parts: list[str] = []
    if kind == "audience":
        if value("added"):
            parts.append("added " + _number(value("added"), "person", "people"))
        if value("removed"):
            parts.append("removed " + _number(value("removed"), "person", "people"))
    elif value("events"):
        parts.append("sent " + _number(value("events"), "sale", "sales"))
    if value("rejected"):
        parts.append(_number(value("rejected"), "row", "rows") + " refused by the platform")
    return ", ".join(parts) if parts else "nothing sent"


def run_words(run: DestinationRun, kind: str) -> dict[str, Any]:
    """A run as the console lists it."""
    return {
        "startedAt": run.started_at.strftime("%Y-%m-%d %H:%M UTC"),
        "trigger": TRIGGER_WORDS.get(run.trigger, run.trigger),
        "outcome": OUTCOME_WORDS.get(run.outcome, run.outcome),
        "outcomeCode": run.outcome,
        "counts": counts_in_words(run, kind),
        "error": (run.error or {}).get("message"),
    }
