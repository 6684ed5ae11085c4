"""Carries orders from the event loop to the database, several per thread hop and commit.

A hop to a worker thread costs about as much CPU as a third of an order's
database work, and a commit about as much as the order's statements (SQLite
writes every touched page to its log; PostgreSQL pays two round trips and a
flush): measured with bench/orders_profile.py. Orders therefore wait here, in
the event loop, in arrival order; at most MAX_DRAINS drains run (never more
than the pool's connections), and each takes whatever has queued up (up to
BATCH), once the event loop has taken in the requests already arrived (`_gather`),
into one hop and one transaction (group commit), where a handler does
the batch's work (orders: service.accept_orders, phase by phase). No order is
answered before that commit. Where the pool has connections to spare
(PostgreSQL), a drain keeps its connection from one batch to the next while
orders keep coming (a checkout costs the pool's pre-ping, a round trip), and
gives it back when the queue is empty.

Every order still gets its own answer, and a failing order fails alone: when
one raises, the batch's transaction is rolled back (nothing of it is kept)
and each of its orders runs again in a transaction of its own. A batch that
meets a row another transaction holds (PostgreSQL: after LOCK_WAIT_MS, long
before a deadlock between two batches could be found) runs once more as a
batch, then, if it meets one again, order by order; alone, an order may wait
its turn. A busy database otherwise (SQLite's lock held by another process
past its timeout, no connection) refuses the whole batch with a retryable
500 `unavailable` (with Retry-After): retrying one by one would only wait again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.concurrency import run_in_threadpool

from partnerlink.db.raw import HeldConnection, Sql, transaction
from partnerlink.problems import Unavailable

log = logging.getLogger("partnerlink.orders")

# A batch's database work is short enough that a group commit keeps the p99 of the
# orders waiting for it low (bench/README.md).
BATCH = 64
# Batches in flight per server process. One: a second only adds GIL hand-offs between
# threads, row-lock conflicts between batch transactions and round trips (each batch half
# the size, every round trip paid twice). Figures: bench/README.md ("Settings and their figures").
MAX_DRAINS = 1
# Before cutting a batch, the event loop turns until the queue has not grown for this many
# turns (Pipeline._gather), at most MAX_TURNS. Measured with bench/orders.py: fewer turns
# gave smaller journal appends, more turns no larger ones (bench/README.md).
QUIET_TURNS = 4
MAX_TURNS = 50

Item = TypeVar("Item")
Answer = tuple[bool, Any]  # (True, the result) or (False, the error for that item)
# Does a batch's work inside its transaction: an answer per item, in order. Raising
# rolls the batch back; each item then runs again alone.
Handler = Callable[[Sql, list[Item]], list[Answer]]
# Takes a batch on the event loop itself, without a thread (orders: journal_append.py), or
# answers None to leave it to the handler.
QuickHandler = Callable[[list[Item]], Awaitable[list[Answer] | None]]


class Pipeline(Generic[Item]):
    """Items of one kind (orders: `OrderPost`) carried to `handler` in batches."""

    def __init__(
        self,
        engine: Engine,
        slots: int,
        handler: Handler[Item],
        quick: QuickHandler[Item] | None = None,
    ) -> None:
        self.engine = engine
        self.slots = max(1, slots)
        self.handler = handler
        self.quick = quick
        # What `close` runs at shutdown: whatever the quick handler holds (a connection).
        self.on_close: Callable[[], Awaitable[None]] | None = None
        # A drain keeps its connection between batches only when the pool has more than the
        # drains take: SQLite's single connection goes back after every batch, so that
        # requests and the worker, which share it, are never starved by a stream of orders.
        self.keep_connection = _pool_size(engine) > self.slots
        self.queue: deque[tuple[Item, asyncio.Future[Any]]] = deque()
        self.drains: set[asyncio.Task[None]] = set()  # referenced, so never collected mid-run

    async def run(self, item: Item) -> Any:
        """Hands `item` to a batch on a worker thread; answers its result (or raises its error)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.queue.append((item, future))
        self._start_drain()
        return await future

    async def close(self) -> None:
        """At shutdown, once no more items come (the app's lifespan)."""
        if self.on_close is not None:
            await self.on_close()

    def _start_drain(self) -> None:
        if self.queue and len(self.drains) < self.slots:
            drain = asyncio.get_running_loop().create_task(self._drain())
            self.drains.add(drain)
            drain.add_done_callback(self._drain_done)

    def _drain_done(self, drain: asyncio.Task[None]) -> None:
        self.drains.discard(drain)
        self._start_drain()  # whatever queued while the last batch was finishing

    async def _drain(self) -> None:
        # One connection for the batches that follow each other while orders keep coming.
        held = HeldConnection(self.engine)
        try:
            while self.queue:
                await self._gather()
                batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
                items = [item for item, _ in batch]
                try:
                    outcomes = await self.quick(items) if self.quick is not None else None
                    if outcomes is None:
                        outcomes = await run_in_threadpool(_run_all, held, self.handler, items)
                except BaseException as error:  # cancelled at shutdown: no request waits forever
                    for _item, future in batch:
                        if future.done():
                            continue
                        if isinstance(error, asyncio.CancelledError):
                            future.cancel()
                        else:
                            future.set_exception(error)
                    raise
                for (_item, future), (ok, value) in zip(batch, outcomes, strict=True):
                    if future.done():  # the client went away; the order was still stored
                        continue
                    if ok:
                        future.set_result(value)
                    else:
                        future.set_exception(value)
                if not self.keep_connection:
                    held.release()  # SQLite: back for requests and the worker at once
        finally:
            # No transaction is open here: giving the connection back makes no round trip.
            held.release()

    async def _gather(self) -> None:
        """Lets the event loop take in the requests that have already arrived before a batch
        is cut: it turns until the queue has stopped growing for QUIET_TURNS turns (or holds
        a full batch).

        A request's bytes reach the queue a few turns of the loop after its socket became
        readable (read, then the request's task parses and validates it), so a drain that
        cut its batch at once left behind orders that were all but queued, and under load
        sent twice as many statements of half the size (bench/orders.py, PostgreSQL:
        after these turns journal appends held twice the orders, and the serving process
        spent less CPU an order: bench/README.md). Alone, an order waits
        QUIET_TURNS turns of an idle loop: microseconds.
        """
        quiet = turns = 0
        while quiet < QUIET_TURNS and turns < MAX_TURNS and len(self.queue) < BATCH:
            queued = len(self.queue)
            await asyncio.sleep(0)  # one turn of the event loop
            turns += 1
            quiet = quiet + 1 if len(self.queue) == queued else 0


def _run_all(held: HeldConnection, handler: Handler[Item], items: list[Item]) -> list[Answer]:
    try:
        sql = held.sql()
    except (OperationalError, PoolTimeout) as error:  # no connection to be had
        return refusals(len(items), error)
    try:
        try:
            return _together(sql, handler, items)
        except sql.errors.OperationalError as error:
            if not sql.is_lock_conflict(error):
                raise
            # Mostly two batches that met on the same orders in opposite orders: the other
            # one went on when this one gave up. Once more together (measured: several
            # times faster than one by one, which held up every order behind them;
            # bench/README.md).
            return _together(sql, handler, items)
    except sql.errors.OperationalError as error:
        if not sql.is_lock_conflict(error):
            return refusals(len(items), error)
        return [_alone(sql, handler, item) for item in items]  # they may wait their turn
    except Exception:
        return [_alone(sql, handler, item) for item in items]
    finally:
        held.release_if_broken()  # the server went away: the next batch takes another


def _together(sql: Sql, handler: Handler[Item], items: list[Item]) -> list[Answer]:
    with transaction(sql):
        sql.wait_briefly_for_locks()
        return handler(sql, items)


def _alone(sql: Sql, handler: Handler[Item], item: Item) -> Answer:
    """One item in its own transaction: its answer, or its error for its request."""
    try:
        with transaction(sql):
            return handler(sql, [item])[0]
    except sql.errors.OperationalError as error:
        return refusals(1, error)[0]
    except Exception as error:
        return False, error


def refusals(count: int, error: Exception) -> list[Answer]:
    """Lock timeouts, an exhausted pool, a lost connection: nothing stored; retryable 500s."""
    log.warning("%d order(s) not stored, database busy: %s", count, type(error).__name__)
    refusals: list[Answer] = []
    for _ in range(count):
        busy = Unavailable(retry_after_seconds=1)
        busy.__cause__ = error
        refusals.append((False, busy))
    return refusals


def pipeline_for(
    engine: Engine, handler: Handler[Item], quick: QuickHandler[Item] | None = None
) -> Pipeline[Item]:
    """A pipeline with at most MAX_DRAINS batches at once, never more than the pool has
    connections. Make one per engine and handler, and keep it (create_app keeps the
    orders' one: orders/intake/wiring.py)."""
    return Pipeline(engine, min(_pool_size(engine), MAX_DRAINS), handler, quick)


def _pool_size(engine: Engine) -> int:
    """The connections the engine's pool keeps (a pool without a size: one at a time)."""
    pool: Any = engine.pool
    return int(pool.size()) if hasattr(pool, "size") else 1
