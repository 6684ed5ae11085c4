"""Where a POST /v1/orders spends its CPU, measured inside one process (no load generator).

    .venv/bin/python bench/orders_profile.py [--orders 3000]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

Drives the real ASGI application (middleware, routing, validation, the unit of
work) with the same workload as bench/orders.py, calling it directly instead of
through uvicorn, and reports CPU time per order (process time, so other load on
the machine does not count): the framework with the pipeline's checkout and
transaction (the order's statements stubbed out), the thread hop, and the
order's statements split into their parts. Orders go one at a time here, so
every order pays a whole checkout, transaction and hop; under load the
pipeline shares those among up to 64 orders (bench/orders.py measures that).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchdb import app_with_store  # bench/benchdb.py
from orders import workload  # bench/orders.py

# Functions the unit of work calls by name from partnerlink.orders.service.
PARTS = [
    ("authenticate_access_token_sql", "token look-up"),
    ("_store_facts", "store snapshot (when sent)"),
    ("resolve_customers", "customer matching"),
    ("queue_receipts", "receipt row"),
]


def asgi_call(app: Any, token: str, body: bytes) -> Any:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/orders",
        "raw_path": b"/v1/orders",
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"bench"),
            (b"authorization", f"Bearer {token}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }

    async def call() -> None:
        delivered = False
        status: list[int] = []

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if delivered:
                await asyncio.sleep(3600)
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])

        await app(scope, receive, send)
        assert status == [200], status

    return call


def cpu_per_order(calls: list[Callable[[], Any]]) -> float:
    async def run() -> None:
        for call in calls:
            await call()

    started = time.process_time()
    asyncio.run(run())
    return (time.process_time() - started) / len(calls) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--orders", type=int, default=3000)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    import partnerlink.orders.intake.pipeline as orders_pipeline
    import partnerlink.orders.service as orders_service

    with app_with_store(args.database_url, "plk-profile-") as (app, settings, token):
        bodies = [json.dumps(b).encode() for b in workload(args.orders * 4)]
        batches = [bodies[i::4] for i in range(4)]
        calls = [[asgi_call(app, token, b) for b in batch] for batch in batches]
        cpu_per_order(calls[0])  # warm up: caches, customers, statements

        real_hop = orders_pipeline.run_in_threadpool
        real_unit = partial(orders_service.accept_orders, settings=settings)

        async def inline(function: Callable[..., Any], *a: Any, **k: Any) -> Any:
            return function(*a, **k)

        def use(handler: Any) -> None:  # the app's order pipeline, with this batch handler
            app.state.orders_pipeline = orders_pipeline.pipeline_for(app.state.engine, handler)

        use(lambda _sql, posts: [(True, None) for _ in posts])
        orders_pipeline.run_in_threadpool = inline  # type: ignore[assignment]  # no thread hop
        framework = cpu_per_order(calls[1][: args.orders // 2])
        orders_pipeline.run_in_threadpool = real_hop
        with_hop = cpu_per_order(calls[1][args.orders // 2 :])
        use(real_unit)
        full = cpu_per_order(calls[2])

        spent: defaultdict[str, float] = defaultdict(float)  # µs of CPU by part
        for function_name, label in PARTS:
            original = getattr(orders_service, function_name)
            setattr(orders_service, function_name, _timed(original, label, spent))
        use(_timed(real_unit, "unit of work (total)", spent))
        orders_pipeline.run_in_threadpool = inline  # type: ignore[assignment]
        cpu_per_order(calls[3])
        n = len(calls[3])

    kind = "PostgreSQL" if args.database_url else "SQLite"
    print(f"database: {kind}; CPU per order, microseconds (process time)")
    print(f"  whole request, in process (no uvicorn): {full:7.0f}")
    print(f"  framework, checkout, BEGIN + COMMIT:    {framework:7.0f}")
    print(f"  thread hop (one order per hop here):    {with_hop - framework:7.0f}")
    total = spent["unit of work (total)"] / n
    print(f"  the order's statements (accept_orders): {total:7.0f}")
    named = 0.0
    for _function, label in PARTS:
        part = spent[label] / n
        named += part
        print(f"    {label:36s} {part:7.0f}")
    print(f"    {'order upsert (and the rest)':36s} {total - named:7.0f}")


def _timed(
    function: Callable[..., Any], label: str, spent: defaultdict[str, float]
) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent[label] += (time.process_time() - started) * 1e6

    return timed


if __name__ == "__main__":
    main()
