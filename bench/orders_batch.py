"""Benchmark: orders/s through POST /v1/orders/batch against the same orders as single posts.

    .venv/bin/python bench/orders_batch.py [--orders 2000] [--batch 200]
        [--connections 16] [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

Starts `partnerlink serve` on a fresh database as bench/orders.py does (same
workload, same store connected through the real APIs, e-receipts on), sends
the workload once as single POST /v1/orders from `--connections` concurrent
keep-alive connections, then the same orders (new orderIds) in batches of
`--batch`, one batch at a time, and prints orders/second for each.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchdb import fresh_database  # bench/benchdb.py
from orders import (  # bench/orders.py
    connect_store,
    free_port,
    server_env,
    stop,
    wait_healthy,
    workload,
)


async def single_posts(
    base: str, token: str, bodies: list[dict[str, Any]], connections: int
) -> float:
    queue = list(reversed(bodies))
    headers = {"Authorization": f"Bearer {token}"}

    async def one_connection(client: httpx.AsyncClient) -> None:
        while queue:
            answer = await client.post("/v1/orders", json=queue.pop(), headers=headers)
            assert answer.status_code == 200, answer.text

    async with httpx.AsyncClient(base_url=base, timeout=60) as client:
        started = time.perf_counter()
        await asyncio.gather(*(one_connection(client) for _ in range(connections)))
        return len(bodies) / (time.perf_counter() - started)


def batches(base: str, token: str, bodies: list[dict[str, Any]], size: int) -> float:
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, timeout=120) as client:
        started = time.perf_counter()
        for start in range(0, len(bodies), size):
            answer = client.post(
                "/v1/orders/batch", json={"orders": bodies[start : start + size]}, headers=headers
            )
            assert answer.status_code == 200, answer.text
            assert all(r["status"] == 200 for r in answer.json()["results"])
        return len(bodies) / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=200)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    args = parser.parse_args()

    singles = workload(args.orders)
    batched = [body | {"orderId": f"b-{body['orderId']}"} for body in workload(args.orders)]
    with tempfile.TemporaryDirectory(prefix="plk-bench-batch-") as tmp:
        workdir = Path(tmp)
        database_url, drop_database = fresh_database(args.database_url, workdir)
        try:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            env = server_env(database_url, base, workdir)
            with (workdir / "server.log").open("wb") as log:
                server = subprocess.Popen(
                    [sys.executable, "-m", "partnerlink", "serve", "--port", str(port)],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                )
                try:
                    wait_healthy(base, server)
                    token, _profile = connect_store(base, env, workdir)
                    single = asyncio.run(single_posts(base, token, singles, args.connections))
                    batch = batches(base, token, batched, args.batch)
                finally:
                    stop(server)
        finally:
            drop_database()
    kind = "PostgreSQL" if database_url.startswith("postgresql") else "SQLite"
    print(f"{kind}, {args.orders} orders")
    print(f"  single posts ({args.connections} connections): {single:8.0f} orders/s")
    print(f"  batches of {args.batch}:{'':15} {batch:8.0f} orders/s ({batch / single:.1f}x)")


if __name__ == "__main__":
    main()
