"""Carries orders from the event loop to the database, several per thread hop and commit.

A hop to a worker thread costs about as much CPU as a third of an order's
database work, and a commit about as much as the order's statements (SQLite
writes every touched page to its log; PostgreSQL pays two round trips and a
flush): measured with bench/orders_profile.py. Orders therefore wait here, in
the event loop, in arrival order; at most MAX_DRAINS drains run (never more
than the pool's connections), and each takes whatever has queued up (up to
BATCH) into one hop,
one connection checkout and one transaction (group commit). No order is
answered before that commit.

Every order still gets its own answer, and a failing order fails alone: when
one raises, the batch's transaction is rolled back (nothing of it is kept)
and each of its orders runs again in a transaction of its own. So it is too
when the batch meets a row another transaction holds (PostgreSQL: after
LOCK_WAIT_MS, long before a deadlock between two batches could be found);
alone, an order may wait its turn. A busy database otherwise (SQLite's lock
held by another process past its timeout, no connection) refuses the whole
batch with a retryable 503: retrying one by one would only wait again.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeout
from starlette.concurrency import run_in_threadpool

from partnerlink.db.raw import Sql, checkout, transaction
from partnerlink.orders.service import ServiceBusy

log = logging.getLogger("partnerlink.orders")

# A batch of 64 takes ~20 ms of database work: group commit with p99 well under 100 ms.
BATCH = 64
# Batches in flight per server process. More only add GIL hand-offs between threads and
# row-lock conflicts between batch transactions, and make each batch smaller: measured on
# PostgreSQL with bench/orders.py, 20 drains ~450 orders/s, 2 drains ~620, 1 drain ~550
# (one drain also stalls the process whenever its batch waits on a lock).
MAX_DRAINS = 2

Job = Callable[[Sql], Any]


class Pipeline:
    def __init__(self, engine: Engine, slots: int) -> None:
        self.engine = engine
        self.slots = max(1, slots)
        self.queue: deque[tuple[Job, asyncio.Future[Any]]] = deque()
        self.drains: set[asyncio.Task[None]] = set()  # referenced, so never collected mid-run

    async def run(self, job: Job) -> Any:
        """Runs `job(sql)` on a worker thread and answers its result (or raises its error)."""
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.queue.append((job, future))
        self._start_drain()
        return await future

    def _start_drain(self) -> None:
        if self.queue and len(self.drains) < self.slots:
            drain = asyncio.get_running_loop().create_task(self._drain())
            self.drains.add(drain)
            drain.add_done_callback(self._drain_done)

    def _drain_done(self, drain: asyncio.Task[None]) -> None:
        self.drains.discard(drain)
        self._start_drain()  # whatever queued while the last batch was finishing

    async def _drain(self) -> None:
        while self.queue:
            batch = [self.queue.popleft() for _ in range(min(BATCH, len(self.queue)))]
            try:
                outcomes = await run_in_threadpool(_run_all, self.engine, [job for job, _ in batch])
            except BaseException as error:  # cancelled at shutdown: no request waits forever
                for _job, future in batch:
                    if future.done():
                        continue
                    if isinstance(error, asyncio.CancelledError):
                        future.cancel()
                    else:
                        future.set_exception(error)
                raise
            for (_job, future), (ok, value) in zip(batch, outcomes, strict=True):
                if future.done():  # the client went away; the order was still stored
                    continue
                if ok:
                    future.set_result(value)
                else:
                    future.set_exception(value)


def _run_all(engine: Engine, jobs: list[Job]) -> list[tuple[bool, Any]]:
    try:
        with checkout(engine) as sql:
            try:
                with transaction(sql):
                    sql.wait_briefly_for_locks()
                    results = [job(sql) for job in jobs]
            except sql.errors.OperationalError as error:
                if not sql.is_lock_conflict(error):
                    return _refused(jobs, error)
                return [_alone(sql, job) for job in jobs]  # they may wait their turn
            except Exception:
                return [_alone(sql, job) for job in jobs]
            return [(True, result) for result in results]
    except (OperationalError, PoolTimeout) as error:  # no connection to be had
        return _refused(jobs, error)


def _alone(sql: Sql, job: Job) -> tuple[bool, Any]:
    """One order in its own transaction: its answer, or its error for its request."""
    try:
        with transaction(sql):
            return True, job(sql)
    except sql.errors.OperationalError as error:
        return _refused([job], error)[0]
    except Exception as error:
        return False, error


def _refused(jobs: list[Job], error: Exception) -> list[tuple[bool, Any]]:
    """Lock timeouts, an exhausted pool, a lost connection: nothing stored; retryable 503s."""
    log.warning("%d order(s) not stored, database busy: %s", len(jobs), type(error).__name__)
    refusals: list[tuple[bool, Any]] = []
    for _job in jobs:
        busy = ServiceBusy(headers={"Retry-After": "1"})
        busy.__cause__ = error
        refusals.append((False, busy))
    return refusals


_pipelines: WeakKeyDictionary[Engine, Pipeline] = WeakKeyDictionary()


def pipeline_for(engine: Engine) -> Pipeline:
    """One pipeline per engine: at most MAX_DRAINS batches at once, never more than the pool."""
    found = _pipelines.get(engine)
    if found is None:
        pool: Any = engine.pool
        size = pool.size() if hasattr(pool, "size") else 1
        found = _pipelines[engine] = Pipeline(engine, min(size, MAX_DRAINS))
    return found
