"""Carries orders from the event loop to the database threads, several per thread hop.

A hop to a worker thread costs about as much CPU as a third of an order's
database work (measured), and each hop makes the event loop and the worker
thread trade the GIL. Orders therefore wait here, in the event loop, in
arrival order; at most one drain per database connection runs, and each drain
takes whatever has queued up (up to BATCH) into one hop and one connection
checkout. Every order still has its own transaction and its own answer: a
failing order fails alone.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Engine
from starlette.concurrency import run_in_threadpool

from partnerlink.db.raw import Sql, checkout
from partnerlink.orders.service import BUSY_ERRORS, database_busy

BATCH = 16

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
    outcomes: list[tuple[bool, Any]] = []
    try:
        with checkout(engine) as sql:
            for job in jobs:
                try:
                    outcomes.append((True, job(sql)))
                except Exception as error:  # handed to the request that sent this order
                    outcomes.append((False, error))
    except BUSY_ERRORS as error:  # no connection to be had: the orders not run are refused
        busy = database_busy(error)
        outcomes.extend((False, busy) for _ in jobs[len(outcomes) :])
    return outcomes


_pipelines: WeakKeyDictionary[Engine, Pipeline] = WeakKeyDictionary()


def pipeline_for(engine: Engine) -> Pipeline:
    """One pipeline per engine, as wide as its connection pool."""
    found = _pipelines.get(engine)
    if found is None:
        pool: Any = engine.pool
        found = _pipelines[engine] = Pipeline(engine, pool.size() if hasattr(pool, "size") else 1)
    return found
