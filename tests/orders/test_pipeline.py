"""The order pipeline: several orders per thread hop, each with its own answer."""

from __future__ import annotations

import asyncio
import threading

import pytest

from partnerlink.orders.pipeline import BATCH, Pipeline


def test_each_job_gets_its_own_result_or_error() -> None:
    def job(n: int) -> int:
        if n % 3 == 0:
            raise ValueError(f"order {n} refused")
        return n * 10

    async def main() -> list[object]:
        pipeline = Pipeline(slots=1)
        return await asyncio.gather(
            *(pipeline.run(lambda n=n: job(n)) for n in range(40)), return_exceptions=True
        )

    results = asyncio.run(main())
    for n, result in enumerate(results):
        if n % 3 == 0:
            assert isinstance(result, ValueError) and str(result) == f"order {n} refused"
        else:
            assert result == n * 10


def test_jobs_share_hops_but_never_exceed_the_slots() -> None:
    running = 0
    peak = 0
    lock = threading.Lock()

    def job() -> None:
        nonlocal running, peak
        with lock:
            running += 1
            peak = max(peak, running)
        threading.Event().wait(0.001)
        with lock:
            running -= 1

    async def main() -> None:
        pipeline = Pipeline(slots=2)
        await asyncio.gather(*(pipeline.run(job) for _ in range(5 * BATCH)))
        for _ in range(100):  # let the last drain finish after answering
            if not pipeline.drains:
                break
            await asyncio.sleep(0.01)
        assert pipeline.drains == set() and not pipeline.queue

    asyncio.run(main())
    assert peak <= 2


@pytest.mark.parametrize("slots", [0, 1])
def test_a_pipeline_always_has_one_slot(slots: int) -> None:
    assert Pipeline(slots=slots).slots == 1
