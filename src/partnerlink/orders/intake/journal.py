"""Accept-then-process under load: orders journaled, answered, then applied in batches.

Storing an order (service.store_orders: customers matched or created, the upsert with
its conversion class, the receipt) costs PostgreSQL and this process several times the
CPU of the request itself (bench/orders.py). When orders queue up, that work is taken
off the request: a batch of at least `PARTNERLINK_ORDERS_JOURNAL_AT` orders (or any,
while the process is busy: OrderIntake) is authenticated and appended to
`order_journal` in one statement, as the facts storing needs (orders/facts.py), and
answered once that commit is durable. The journaled orders are then applied in arrival
order, in batches of up to APPLY_BATCH, by:

- the worker (orders/tasks.py, a worker task; the server's own by default), once a
  batch waits or the oldest has waited GATHER_SECONDS (`gathering_left`);
- any request that reads what an order writes (the read barrier, barrier.settle_journal:
  a dependency of those routes, orders/deps.py, and the command line's unit of work):
  it first applies every order journaled before it began, so GET /v1/orders, the
  receipt page, results, audiences and the merchant API see every acknowledged order,
  as they do when orders are stored at once.

What an acknowledged order promises holds either way: it is durable (the journal row
commits before the answer), it is applied once (the row is claimed, deleted, in the
transaction that applies it), and its e-receipt is queued once (receipts are keyed by
order). A store's orders are applied in the order they were acknowledged: while any
order waits in the journal, new batches are journaled too, even small ones, and one
applier runs at a time (an advisory lock on PostgreSQL, SQLite's write lock), oldest
first.

An order that cannot be applied even alone (a bug, not load) is kept with its error
(`failed_at`, `error`) and logged, never retried in a loop; an operator can see it in
the table.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy.orm import Session

from partnerlink.db import sets
from partnerlink.db.base import utcnow
from partnerlink.db.raw import Sql, Statement
from partnerlink.orders.conversion import stored_time
from partnerlink.orders.facts import facts_of, from_journal, journal_text
from partnerlink.orders.service import (
    OrderAnswer,
    OrderPost,
    StoredOrder,
    accept_orders,
    authenticate_callers,
    journaled_caller,
    store_orders,
)
from partnerlink.settings import Settings
from partnerlink.tokens.service import ConnectedStore

log = logging.getLogger("partnerlink.orders")

# Orders applied per transaction: large enough that per-statement costs vanish, small
# enough that a read waiting behind an applier waits a fraction of a second.
APPLY_BATCH = 500
# What an order acknowledged into the journal answers inside the pipeline (the answer
# the partner gets is the same 200 as a stored order's).
JOURNALED = StoredOrder(order_pk=None, receipt_queued=False)
# How long the worker lets orders gather in the journal before it applies fewer than a
# batch (APPLY_BATCH): their e-receipts wait as long, at most; reads never do.
GATHER_SECONDS = 0.2
# After a batch long enough to be journaled, how long this process counts as under load.
BUSY_SECONDS = 0.25
# pg_advisory_xact_lock's key for "applying the journal": one applier at a time.
_APPLY_LOCK = 0x6F72646572

# In id order, so that PostgreSQL walks the primary key, whose entries of rows already
# applied are marked dead after one pass: faster than a scan of the table's emptied pages
# until autovacuum has run (bench/README.md).
_ANY_WAITING = Statement("SELECT 1 FROM order_journal WHERE failed_at IS NULL ORDER BY id LIMIT 1")
# The oldest entries still to apply, none newer than :up_to.
_OLDEST_IDS_SQL = (
    "SELECT id FROM order_journal WHERE failed_at IS NULL AND id <= :up_to ORDER BY id LIMIT :limit"
)
_OLDEST_IDS = Statement(_OLDEST_IDS_SQL)
# Claiming deletes: an entry is applied in the transaction that removes it, so no two
# appliers can both apply it, even one that read it before another committed.
_CLAIM_OLDEST_SQLITE = Statement(
    f"DELETE FROM order_journal WHERE id IN ({_OLDEST_IDS_SQL}) RETURNING id, connection_id, body"
)
# PostgreSQL: the ids as an array computed once. Written as `IN (SELECT …)`, the planner,
# misled by a queue table's statistics (rows come and go faster than ANALYZE), ran the
# subquery once per journal row: seconds a batch once thousands of rows wait (bench/README.md).
_CLAIM_OLDEST_POSTGRES = Statement(
    f"DELETE FROM order_journal WHERE id = ANY(ARRAY({_OLDEST_IDS_SQL}))"
    " RETURNING id, connection_id, body"
)
_CLAIM_ONE = Statement(
    "DELETE FROM order_journal WHERE id = :id AND failed_at IS NULL"
    " RETURNING id, connection_id, body"
)
# The rows travel as arrays in PostgreSQL's binary form (db/sets.ARRAYS): in text form
# psycopg escaped every element through a regular expression in Python (measured with
# bench/orders_journal.py: bench/README.md), and as one JSON text PostgreSQL
# lexed every body. In id order, as they were given.
_APPEND = sets.BulkWrite.insert(
    sets.RowSet(
        {"profile_id": "text", "store_id": "text", "connection_id": "text", "body": "text"},
        form=sets.ARRAYS,
    ),
    "order_journal (profile_id, store_id, connection_id, body, received_at)",
    ":profile_id, :store_id, :connection_id, :body, :now",
    in_order=True,
)
# Whether a full batch waits, and when the oldest waiting entry was acknowledged.
_READY = Statement(
    "SELECT EXISTS (SELECT 1 FROM order_journal WHERE failed_at IS NULL ORDER BY id"
    " LIMIT 1 OFFSET :full),"
    " (SELECT received_at FROM order_journal WHERE failed_at IS NULL ORDER BY id LIMIT 1)"
)
_FAILED = Statement("UPDATE order_journal SET failed_at = :now, error = :error WHERE id = :id")
_LOCK_WAIT = Statement("SELECT pg_advisory_xact_lock(:key)")
_LOCK_TRY = Statement("SELECT pg_try_advisory_xact_lock(:key)")
_NO_LIMIT = 2**62


class OrderIntake:
    """The order pipeline's handler (one per server process): stores a short batch at once
    (service.accept_orders) when the process is quiet, journals it otherwise.

    A batch of `orders_journal_at` or more orders is journaled, and so is any batch while
    orders already wait in the journal, or within BUSY_SECONDS of a journaled batch. Under
    load the batches alternate between many orders and a lone one (it arrived while the
    last batch was on its way); a worker that keeps up empties the journal between them,
    and storing each lone order at once cost this process more than journaling all of them
    (measured with bench/orders.py: bench/README.md).
    """

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self.busy_until = 0.0

    def __call__(self, sql: Sql, posts: Sequence[OrderPost]) -> list[OrderAnswer]:
        if self.settings.orders_journal_at == 0:
            return accept_orders(sql, posts, settings=self.settings)
        if self.journals_without_asking(len(posts)) or sql.row(_ANY_WAITING, {}) is not None:
            return journal_orders(sql, posts)
        return accept_orders(sql, posts, settings=self.settings)

    def journals_without_asking(self, count: int) -> bool:
        """Whether a batch of `count` orders is journaled whatever the journal holds: it is
        long (and this process busy from now on), or this process is busy. Else only the
        journal can tell (orders already waiting there go first)."""
        threshold = self.settings.orders_journal_at
        if threshold == 0:
            return False
        now = self.clock()
        if count >= threshold:
            self.busy_until = now + BUSY_SECONDS
            return True
        return now < self.busy_until


def journal_orders(sql: Sql, posts: Sequence[OrderPost]) -> list[OrderAnswer]:
    """Authenticates each order and appends the accepted ones to the journal, in one
    statement; a refused token fails only its own order."""
    outcomes: list[OrderAnswer] = []
    accepted: list[tuple[ConnectedStore, str]] = []
    for post, caller in zip(posts, authenticate_callers(sql, posts), strict=True):
        if isinstance(caller, ConnectedStore):
            # What storing it needs, as validated here: the worker does not validate again.
            accepted.append((caller, journal_text(facts_of(post.order))))
            outcomes.append((True, JOURNALED))
        else:
            outcomes.append((False, caller))
    if not accepted:
        return outcomes
    _APPEND.run(
        sql,
        [
            {
                "profile_id": caller.profile_id,
                "store_id": caller.store_id,
                "connection_id": caller.connection_id,
                "body": body,
            }
            for caller, body in accepted
        ],
        {"now": sql.time(utcnow())},
    )
    return outcomes


def apply_journal(sql: Sql, *, settings: Settings, wait: bool, up_to: int = _NO_LIMIT) -> int:
    """Claims the oldest journaled orders (up to APPLY_BATCH, none newer than `up_to`)
    and applies them inside the caller's transaction; answers how many were taken.
    Raises when one of them cannot be applied (the caller rolls back and goes one by one).

    With `wait` False, answers 0 at once while another applier is at work (PostgreSQL).
    """
    if not _take_apply_lock(sql, wait=wait):
        return 0
    # RETURNING comes in no promised order: applied oldest first, as acknowledged.
    entries = sorted(
        sql.all_rows(
            _CLAIM_OLDEST_POSTGRES if sql.postgres else _CLAIM_OLDEST_SQLITE,
            {"up_to": up_to, "limit": APPLY_BATCH},
        ),
        key=lambda entry: int(entry[0]),
    )
    if entries:
        _apply(sql, entries, settings=settings)
    return len(entries)


def _take_apply_lock(sql: Sql, *, wait: bool) -> bool:
    """One applier at a time, so that a store's orders apply in the order acknowledged
    (PostgreSQL's advisory lock, held to the transaction's end; SQLite has one writer)."""
    if not sql.postgres:
        return True
    if wait:
        sql.row(_LOCK_WAIT, {"key": _APPLY_LOCK})
        return True
    return bool(sql.row(_LOCK_TRY, {"key": _APPLY_LOCK})[0])


def _apply(sql: Sql, entries: Sequence[Any], *, settings: Settings) -> None:
    """Stores the entries' orders as their callers' posts would have been stored. One
    whose store is gone is dropped (its journal rows went with the store)."""
    orders = [from_journal(body) for _id, _connection, body in entries]
    store_orders(
        sql,
        orders,
        lambda index: journaled_caller(sql, entries[index][1]),
        settings=settings,
    )


def apply_in_session(
    session: Session, *, settings: Settings, wait: bool, up_to: int = _NO_LIMIT
) -> int:
    """Applies journaled orders (none newer than `up_to`), a batch per transaction of
    `session`, until none is left or another applier is at work; answers how many."""
    applied = 0
    while True:
        try:
            taken = apply_journal(
                Sql.of_session(session), settings=settings, wait=wait, up_to=up_to
            )
            session.commit()
        except Exception:
            session.rollback()
            taken = _apply_one_by_one(session, settings=settings, up_to=up_to)
        applied += taken
        if taken < APPLY_BATCH:
            return applied


def _apply_one_by_one(session: Session, *, settings: Settings, up_to: int) -> int:
    """A batch that failed, applied order by order: each claimed and applied in a
    transaction of its own (one another applier took meanwhile is skipped), and one that
    fails alone is marked failed (kept, with its error) so it stops no other."""
    # Listed without the lock: each entry is claimed under it below.
    listed = Sql.of_session(session).all_rows(_OLDEST_IDS, {"up_to": up_to, "limit": APPLY_BATCH})
    ids = [int(row[0]) for row in listed]
    session.commit()
    for entry_id in ids:
        try:
            sql = Sql.of_session(session)
            _take_apply_lock(sql, wait=True)
            entry = sql.row(_CLAIM_ONE, {"id": entry_id})
            if entry is not None:
                _apply(sql, [entry], settings=settings)
            session.commit()
        except Exception as error:  # a bad body (ValidationError) or a bug
            session.rollback()
            log.exception("journaled order %d could not be applied; kept as failed", entry_id)
            Sql.of_session(session).run(
                _FAILED,
                {"now": sql.time(utcnow()), "error": type(error).__name__[:500], "id": entry_id},
            )
            session.commit()
    return len(ids)


def gathering_left(sql: Sql, gather_seconds: float) -> float | None:
    """0 when a full batch waits or the oldest entry has waited `gather_seconds`; else how
    long until it has (None: the journal is empty).

    Applying costs the database and the worker per batch as well as per order: a worker
    that applied whatever had come since its last run (a few hundred orders under load)
    cost PostgreSQL more CPU an order than batches of APPLY_BATCH (bench/orders.py;
    bench/README.md).
    Readers do not wait for this: they apply what they need themselves (orders/intake/barrier.py).
    """
    full, oldest = sql.row(_READY, {"full": APPLY_BATCH - 1})
    if full:
        return 0.0
    if oldest is None:
        return None
    waited = (utcnow() - stored_time(oldest)).total_seconds()
    return max(0.0, gather_seconds - waited)
