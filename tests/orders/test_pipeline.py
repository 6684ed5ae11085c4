"""The order pipeline: several orders per thread hop, each with its own answer."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import QueuePool

from partnerlink.db.engine import make_engine
from partnerlink.db.raw import Sql, Statement
from partnerlink.orders.intake.pipeline import BATCH, Pipeline
from partnerlink.problems import Unavailable
from tests.conftest import ON_POSTGRES


def each_alone(sql: Sql, jobs: list[Callable[[Sql], object]]) -> list[tuple[bool, object]]:
    """A handler whose items are jobs, `job(sql)`, run one after another."""
    return [(True, job(sql)) for job in jobs]


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return make_engine(f"sqlite:///{tmp_path / 'pipeline.db'}")


@pytest.fixture
def roomy_engine(tmp_path: Path) -> Engine:
    """A pool with connections to spare (as PostgreSQL's): drains may keep theirs."""
    return create_engine(
        f"sqlite:///{tmp_path / 'roomy.db'}",
        poolclass=QueuePool,
        pool_size=4,
        connect_args={"check_same_thread": False},
    )


async def drained(pipeline: Pipeline) -> None:
    """Lets the drains finish after answering: at once when idle, seconds when busy."""
    deadline = time.monotonic() + 60
    while pipeline.drains and time.monotonic() < deadline:
        await asyncio.sleep(0.01)


def run_three_batches(engine: Engine) -> tuple[set[int], int]:
    """Three batches' worth of jobs at once, one drain: the connections they ran on, and
    how many times the pool handed one out."""
    connections: set[int] = set()
    checkouts: list[object] = []
    event.listen(engine, "checkout", lambda *_: checkouts.append(None))

    def job(sql: Sql) -> None:
        connections.add(id(sql.connection))

    async def main() -> None:
        pipeline = Pipeline(engine, slots=1, handler=each_alone)
        await asyncio.gather(*(pipeline.run(job) for _ in range(3 * BATCH)))
        await drained(pipeline)

    asyncio.run(main())
    pool: QueuePool = engine.pool  # type: ignore[assignment]
    assert pool.checkedout() == 0  # given back once the queue was empty
    return connections, len(checkouts)


def run_numbered_jobs(
    engine: Engine, job: Callable[[Sql, int], object], count: int
) -> list[object]:
    """Submits job(sql, 0..count-1) at once (so they share batches); results or errors."""

    def numbered(n: int) -> Callable[[Sql], object]:
        return lambda sql: job(sql, n)

    async def main() -> list[object]:
        pipeline = Pipeline(engine, slots=1, handler=each_alone)
        return await asyncio.gather(
            *(pipeline.run(numbered(n)) for n in range(count)), return_exceptions=True
        )

    return asyncio.run(main())


def test_each_job_gets_its_own_result_or_error(engine: Engine) -> None:
    ten = Statement("SELECT :n * 10")

    def job(sql: Sql, n: int) -> int:
        if n % 3 == 0:
            raise ValueError(f"order {n} refused")
        result: int = sql.row(ten, {"n": n})[0]  # a live connection from the pool
        return result

    results = run_numbered_jobs(engine, job, 40)
    for n, result in enumerate(results):
        if n % 3 == 0:
            assert isinstance(result, ValueError) and str(result) == f"order {n} refused"
        else:
            assert result == n * 10


def test_jobs_share_hops_but_never_exceed_the_slots(engine: Engine) -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def job(_sql: Sql) -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        threading.Event().wait(0.001)
        with lock:
            running -= 1

    async def main() -> None:
        pipeline = Pipeline(engine, slots=2, handler=each_alone)
        await asyncio.gather(*(pipeline.run(job) for _ in range(5 * BATCH)))
        await drained(pipeline)
        assert pipeline.drains == set() and not pipeline.queue

    asyncio.run(main())
    assert peak <= 2


def test_orders_a_few_turns_of_the_loop_behind_join_the_batch(engine: Engine) -> None:
    """Requests whose bytes have arrived reach the queue a few turns of the event loop
    later (read, parsed, validated): the first batch waits for them rather than going
    alone, and an order alone still goes within a few turns."""
    batches: list[int] = []

    def handler(sql: Sql, items: list[int]) -> list[tuple[bool, object]]:
        batches.append(len(items))
        return [(True, item) for item in items]

    async def arriving(pipeline: Pipeline, n: int, turns: int) -> object:
        for _ in range(turns):  # as a request's task does before it queues its order
            await asyncio.sleep(0)
        return await pipeline.run(n)

    async def main() -> None:
        pipeline = Pipeline(engine, slots=1, handler=handler)
        answers = await asyncio.gather(*(arriving(pipeline, n, n % 3) for n in range(12)))
        assert answers == list(range(12))
        await drained(pipeline)
        alone_started = time.monotonic()
        assert await pipeline.run(99) == 99
        assert time.monotonic() - alone_started < 1

    asyncio.run(main())
    assert batches == [12, 1]


@pytest.mark.parametrize("slots", [0, 1])
def test_a_pipeline_always_has_one_slot(engine: Engine, slots: int) -> None:
    assert Pipeline(engine, slots=slots, handler=each_alone).slots == 1


def test_no_free_connection_refuses_the_batch_as_unavailable(tmp_path: Path) -> None:
    """An exhausted pool answers every waiting order 500 `unavailable`, retryable, none stored."""
    engine = create_engine(
        f"sqlite:///{tmp_path / 'busy.db'}",
        poolclass=QueuePool,
        pool_size=1,
        max_overflow=0,
        pool_timeout=0.05,
    )
    held = engine.raw_connection()  # someone else holds the only connection
    try:

        async def main() -> list[object]:
            pipeline = Pipeline(engine, slots=1, handler=each_alone)
            return await asyncio.gather(
                *(pipeline.run(lambda _sql: "stored") for _ in range(3)), return_exceptions=True
            )

        results = asyncio.run(main())
    finally:
        held.close()
    assert all(
        isinstance(result, Unavailable) and result.headers == {"Retry-After": "1"}
        for result in results
    )


def test_a_failing_order_fails_alone_and_keeps_nothing(engine: Engine) -> None:
    """The batch shares one transaction; when an order fails, the others are stored anyway."""
    create = Statement("CREATE TABLE IF NOT EXISTS stored (n INTEGER PRIMARY KEY)")
    insert = Statement("INSERT INTO stored (n) VALUES (:n)")
    pooled = engine.raw_connection()
    try:
        pooled.driver_connection.execute(create.sqlite)  # type: ignore[union-attr]
    finally:
        pooled.close()

    def job(sql: Sql, n: int) -> int:
        sql.run(insert, {"n": n})
        if n == 5:
            raise ValueError("refused after writing")  # its row must not survive
        return n

    results = run_numbered_jobs(engine, job, 10)
    assert isinstance(results[5], ValueError)
    assert [r for r in results if not isinstance(r, Exception)] == [0, 1, 2, 3, 4, 6, 7, 8, 9]
    pooled = engine.raw_connection()
    try:
        rows = pooled.driver_connection.execute("SELECT n FROM stored ORDER BY n").fetchall()  # type: ignore[union-attr]
    finally:
        pooled.close()
    assert [n for (n,) in rows] == [0, 1, 2, 3, 4, 6, 7, 8, 9]


def test_batches_that_follow_each_other_keep_one_connection(roomy_engine: Engine) -> None:
    connections, checkouts = run_three_batches(roomy_engine)
    assert len(connections) == 1 and checkouts == 1  # one pre-ping, not one a batch


def test_a_single_connection_pool_gets_its_connection_back_after_every_batch(
    engine: Engine,
) -> None:
    # SQLite's one connection is shared with requests and the worker: never held.
    _connections, checkouts = run_three_batches(engine)
    assert checkouts == 3


def test_a_connection_that_broke_is_dropped_and_the_next_batch_takes_another(
    roomy_engine: Engine,
) -> None:
    ten = Statement("SELECT :n * 10")
    in_flight = threading.Event()

    def breaks(sql: Sql) -> None:
        in_flight.set()
        threading.Event().wait(0.05)  # long enough for the next order to queue behind it
        sql.connection.close()  # as a server that went away leaves it
        sql.row(ten, {"n": 1})

    def works(sql: Sql) -> int:
        result: int = sql.row(ten, {"n": 2})[0]
        return result

    async def main() -> tuple[list[object], object]:
        pipeline = Pipeline(roomy_engine, slots=1, handler=each_alone)
        broken = asyncio.ensure_future(pipeline.run(breaks))
        while not in_flight.is_set():
            await asyncio.sleep(0.001)
        later = await pipeline.run(works)  # the same drain's next batch
        return await asyncio.gather(broken, return_exceptions=True), later

    (broken,), later = asyncio.run(main())
    assert isinstance(broken, Exception)
    assert later == 20


@pytest.mark.skipif(not ON_POSTGRES, reason="row locks held by another transaction: PostgreSQL")
def test_a_batch_that_met_a_held_row_runs_once_more_as_a_batch(database_url: str) -> None:
    """Not order by order at once: the other transaction has usually gone on meanwhile."""
    engine = make_engine(database_url)
    setup = engine.raw_connection()
    driver = setup.driver_connection
    assert driver is not None
    driver.execute(
        "CREATE TABLE IF NOT EXISTS pipeline_probe (n INTEGER PRIMARY KEY);"
        " INSERT INTO pipeline_probe VALUES (1) ON CONFLICT DO NOTHING"
    )
    setup.commit()
    driver.execute("SELECT n FROM pipeline_probe FOR UPDATE")
    touch = Statement("UPDATE pipeline_probe SET n = n")
    transaction_id = Statement("SELECT txid_current()")
    calls: list[int] = []

    def handler(sql: Sql, items: list[object]) -> list[tuple[bool, object]]:
        calls.append(len(items))
        try:
            sql.run(touch, {})  # waits for the row, then gives up the first time
        finally:
            if len(calls) == 1:
                setup.rollback()  # the other transaction ends
        return [(True, sql.row(transaction_id, {})[0]) for _ in items]

    async def main() -> list[object]:
        pipeline = Pipeline(engine, slots=1, handler=handler)
        return await asyncio.gather(*(pipeline.run(n) for n in range(5)))

    try:
        results = asyncio.run(main())
    finally:
        driver.execute("DROP TABLE pipeline_probe")
        setup.commit()
        setup.close()
        engine.dispose()
    assert calls == [5, 5]
    assert len(set(results)) == 1  # one transaction
