"""Capacity in measured numbers: orders/s per app-tier core, order upserts/s per PostgreSQL core.

    .venv/bin/python bench/capacity.py --database-url postgresql://postgres@127.0.0.1:5432/postgres
        [--seconds 10] [--connections 64] [--threads 4] [--sizes 16,64] [--orders 3000]

Issue 28: the figures docs/deployment.md ("Capacity: sizing from measured figures")
sizes a deployment from. Both are CPU counts (seconds of CPU the measured
processes used, read from /proc), so they hold on a machine shared with other
work, where wall-clock rates do not; the wall-clock rates are printed beside them.

1. The app tier. `partnerlink serve` (one process per core) on a fresh
   PostgreSQL database, a store connected through the real APIs, driven with
   bench/orders.py's workload (new and repeat customers, updates, store
   snapshots, e-receipts sent by the in-server worker). Orders answered 200 per
   second of the server processes' CPU = orders/s per app-tier core. Ceiling,
   measured the same way in the same run: the same serving stack answering a
   no-op POST that parses the same bodies (bench/orders.py's ceiling).
   PostgreSQL's CPU per order on this path (the database's backends) too.
2. The database. The order path's statements without HTTP: the pipeline's
   unit of work (pipeline._run_all: one transaction, service.accept_orders) in
   batches, from `--threads` connections at once, each for a store of its own
   (as many stores are: no two batches meet on a customer). PostgreSQL's CPU
   per order (its backends, from /proc) = order upserts/s per database core.
   Beside it, the same batches storing the order rows alone (only the upsert
   statement): the statement's own cost.
3. Volume: bytes a stored order takes (tables, indexes and TOAST, with its
   customers and receipts: what pg_total_relation_size over the database grew
   by in step 1, per order row) and WAL bytes per order (pg_current_wal_insert_lsn over
   the measured window; the whole server's WAL, so other work on the same server
   adds to it: the smallest of the windows is printed).

The database must be on this machine (its processes' CPU is read from /proc).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchdb import analyze, app_with_store, fresh_database  # bench/benchdb.py
from loadgen import drive, process_cpu_seconds  # bench/loadgen.py
from orders import (  # bench/orders.py
    connect_store,
    free_port,
    http_requests,
    measure_ceiling,
    server_env,
    start_server,
    stop,
    wait_healthy,
    workload,
)


class Backends:
    """The PostgreSQL processes serving one database (those of this machine), and their CPU."""

    def __init__(self, database_url: str) -> None:
        self.conninfo = database_url.replace("postgresql+psycopg://", "postgresql://")
        self.conn = psycopg.connect(self.conninfo, autocommit=True)

    def pids(self) -> list[int]:
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        return [int(pid) for (pid,) in rows]

    def cpu(self) -> float:
        return process_cpu_seconds(self.pids())

    def wal(self) -> int:
        return int(self.scalar("SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn"))

    def scalar(self, query: str) -> Any:
        row = self.conn.execute(query).fetchone()
        assert row is not None  # an aggregate or a function: always one row
        return row[0]

    def table_bytes(self) -> list[tuple[str, int]]:
        """Every table's pg_total_relation_size (with its indexes and TOAST), largest first."""
        rows = self.conn.execute(
            "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind = 'r' ORDER BY 2 DESC"
        ).fetchall()
        return [(str(name), int(size)) for name, size in rows]

    def close(self) -> None:
        self.conn.close()


# --- 1. the app tier ------------------------------------------------------------------------


@dataclass
class AppTier:
    orders: int  # answered 200 in the measured window
    seconds: float
    server_cpu: float
    database_cpu: float
    p99_ms: float
    wal_bytes: int
    statuses: dict[int, int]
    ceiling_requests: int
    ceiling_cpu: float
    ceiling_seconds: float
    order_rows: int
    tables: list[tuple[str, int]]


def app_tier(url: str, args: argparse.Namespace, workdir: Path) -> AppTier:
    database_url, drop_database = fresh_database(url, workdir)
    try:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        env = server_env(database_url, base, workdir)
        workers = os.cpu_count() or 1
        with (workdir / "server.log").open("wb") as log:
            server = start_server(env, port, workers, log)
            try:
                wait_healthy(base, server)
                token, _profile = connect_store(base, env, workdir)
                requests = http_requests(workload(args.http_orders), port, token)
                backends = Backends(database_url)
                try:
                    empty = dict(backends.table_bytes())
                    drive(port, requests, args.connections, 0, args.warmup)  # pools filled
                    analyze(database_url)  # statistics, as autovacuum keeps them in service
                    drive(port, requests, args.connections, 0, 1.0)  # plans made again
                    wal0 = backends.wal()
                    run = drive(
                        port, requests, args.connections, 0, args.seconds, server.pid, backends.cpu
                    )
                    wal = backends.wal() - wal0
                    time.sleep(2)  # the in-server worker sends the last receipts
                    order_rows = int(backends.scalar("SELECT count(*) FROM orders"))
                    # What the orders added: less the empty tables' pages, the store's rows.
                    tables = sorted(
                        (
                            (name, size - empty.get(name, 0))
                            for name, size in backends.table_bytes()
                        ),
                        key=lambda table: -table[1],
                    )
                finally:
                    backends.close()
            finally:
                stop(server)
        top = measure_ceiling(env, workers, workload(args.http_orders), token, args)
        if set(top.statuses) != {200}:
            raise SystemExit("the ceiling did not answer 200 to every request: not comparable")
        return AppTier(
            orders=run.statuses.get(200, 0),
            seconds=run.seconds,
            server_cpu=run.server_cpu_seconds,
            database_cpu=run.other_cpu_seconds,
            p99_ms=run.percentile(0.99),
            wal_bytes=wal,
            statuses=dict(run.statuses),
            ceiling_requests=len(top.latencies),
            ceiling_cpu=top.server_cpu_seconds,
            ceiling_seconds=top.seconds,
            order_rows=order_rows,
            tables=tables,
        )
    finally:
        drop_database()


# --- 2. the database ------------------------------------------------------------------------


@dataclass
class DatabaseRun:
    size: int
    what: str  # "unit of work" or "order rows alone"
    orders: int
    seconds: float
    client_cpu: float
    database_cpu: float
    wal_bytes: int


def database(url: str, args: argparse.Namespace) -> list[DatabaseRun]:
    from tests.factories import create_connected_store

    from partnerlink.db.raw import HeldConnection, transaction
    from partnerlink.orders import queries
    from partnerlink.orders.facts import facts_of
    from partnerlink.orders.intake.pipeline import _run_all
    from partnerlink.orders.schemas import OrderIn
    from partnerlink.orders.service import OrderPost, _columns, accept_orders
    from partnerlink.tokens.service import authenticate_access_token_sql

    sizes = [int(size) for size in args.sizes.split(",")]
    runs: list[DatabaseRun] = []
    with app_with_store(url, "plk-capacity-") as (app, settings, first_token):
        tokens = [first_token]
        with app.state.sessionmaker() as session:
            for n in range(1, args.threads):
                store = create_connected_store(
                    session,
                    green_invoices=True,
                    email=f"owner{n}@example.com",
                    pos_type=f"bench-pos-{n}",
                )
                tokens.append(store.access_token)
        handler = partial(accept_orders, settings=settings)
        held = [HeldConnection(app.state.engine) for _ in tokens]
        callers = []
        for connection, token in zip(held, tokens, strict=True):
            sql = connection.sql()
            with transaction(sql):
                callers.append(authenticate_access_token_sql(sql, token))
        pids = [connection.sql().connection.info.backend_pid for connection in held]
        backends = Backends(app.state.engine.url.render_as_string(hide_password=False))

        def unit_of_work(n: int, batch: list[Any]) -> None:
            _run_all(held[n], handler, batch)

        def order_rows_only(n: int, batch: list[Any]) -> None:
            sql = held[n].sql()
            with transaction(sql):
                columns = [
                    _columns(
                        sql,
                        facts_of(post.order),
                        caller=callers[n],
                        customer=None,
                    )
                    for post in batch
                ]
                sql.first_rows(queries.UPSERT_ORDER, columns)

        def together(
            batches: list[list[list[Any]]], work: Callable[[int, list[Any]], None]
        ) -> tuple[int, float, float, float, int]:
            """Each connection's batches on a thread of its own, all at once:
            (orders, wall seconds, client CPU, database CPU, WAL bytes)."""
            failures: list[BaseException] = []

            def run(n: int) -> None:
                try:
                    for batch in batches[n]:
                        work(n, batch)
                except BaseException as error:  # raised below: a failed run has no figure
                    failures.append(error)

            threads = [threading.Thread(target=run, args=(n,)) for n in range(len(batches))]
            wall0, client0 = time.perf_counter(), time.process_time()
            database0, wal0 = process_cpu_seconds(pids), backends.wal()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            if failures:
                raise failures[0]
            return (
                sum(len(b) for per_thread in batches for b in per_thread),
                time.perf_counter() - wall0,
                time.process_time() - client0,
                process_cpu_seconds(pids) - database0,
                backends.wal() - wal0,
            )

        try:
            for size in sizes:
                # Orders of their own for each size and connection (a re-send would update).
                thirds: list[list[list[list[Any]]]] = [[], [], []]
                for n, token in enumerate(tokens):
                    bodies = workload(3 * args.orders, seed=n)
                    posts = [
                        OrderPost(
                            token,
                            OrderIn.model_validate_json(
                                json.dumps(body | {"orderId": f"{size}-{n}-{body['orderId']}"})
                            ),
                        )
                        for body in bodies
                    ]
                    batches = [posts[i : i + size] for i in range(0, len(posts), size)]
                    third = len(batches) // 3
                    for k in range(3):
                        thirds[k].append(batches[k * third : (k + 1) * third])
                together(thirds[0], unit_of_work)  # warm: caches, the customers
                analyze(settings.database_url)  # statistics, as autovacuum keeps them in service
                for what, part, work in (
                    ("unit of work", thirds[1], unit_of_work),
                    ("order rows alone", thirds[2], order_rows_only),
                ):
                    orders, wall, client, db, wal = together(part, work)
                    runs.append(DatabaseRun(size, what, orders, wall, client, db, wal))
        finally:
            backends.close()
            for connection in held:
                connection.release()
    return runs


# --- report -----------------------------------------------------------------------------------


def machine() -> str:
    model = "unknown CPU"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return f"{platform.node()}: {os.cpu_count()} cores ({model}), Linux {platform.release()}"


def report(tier: AppTier, runs: list[DatabaseRun], args: argparse.Namespace, version: str) -> None:
    print(f"measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}")
    print(f"{version}; load average {os.getloadavg()[0]:.1f} at the end")
    print()
    print(
        f"1. app tier: partnerlink serve, {os.cpu_count()} processes, {args.connections} connections"
    )
    per_core = tier.orders / tier.server_cpu
    ceiling_per_core = tier.ceiling_requests / tier.ceiling_cpu
    print(
        f"   orders: {tier.orders / tier.seconds:8,.0f} orders/s (p99 {tier.p99_ms:.0f} ms), "
        f"{tier.server_cpu:.1f} s of server CPU in {tier.seconds:.0f} s, statuses {tier.statuses}"
    )
    print(
        f"   => {per_core:8,.0f} orders/s per app-tier core ({1e6 / per_core:,.0f} us of CPU an order)"
    )
    print(
        f"   ceiling (no-op POST, same stack): {tier.ceiling_requests / tier.ceiling_seconds:,.0f}"
        f" requests/s, {ceiling_per_core:,.0f} per core ({1e6 / ceiling_per_core:,.0f} us a request);"
        f" orders reach {100 * per_core / ceiling_per_core:.0f}% of it per core"
    )
    print(
        f"   PostgreSQL CPU on this path: {1e6 * tier.database_cpu / tier.orders:,.0f} us an order"
        f" (its backends for this database; => {tier.orders / tier.database_cpu:,.0f} orders/s"
        " per database core)"
    )
    print()
    print(
        f"2. database: the order path's statements without HTTP, {args.threads} connections"
        " at once, a store each"
    )
    print("   batch  statements          orders/s   PostgreSQL CPU/order  => per PG core   client")
    for run in runs:
        db_us = 1e6 * run.database_cpu / run.orders
        print(
            f"   {run.size:5d}  {run.what:18s} {run.orders / run.seconds:8,.0f}   "
            f"{db_us:14,.0f} us     {1e6 / db_us:10,.0f}/s   "
            f"{1e6 * run.client_cpu / run.orders:5,.0f} us"
        )
    print()
    order_rows = max(1, tier.order_rows)
    total = sum(size for _name, size in tier.tables)
    print(
        f"3. volume: {tier.order_rows:,} order rows stored in step 1; all tables, indexes and TOAST:"
        f" {total / 1e6:,.1f} MB more => {total / order_rows:,.0f} bytes an order row"
    )
    print(
        "   largest: "
        + ", ".join(f"{name} {size / order_rows:,.0f}" for name, size in tier.tables[:6])
        + " (bytes an order row)"
    )
    wal_per_order = min(  # of the whole order path's windows
        [tier.wal_bytes / tier.orders]
        + [run.wal_bytes / run.orders for run in runs if run.what == "unit of work"]
    )
    print(
        f"   WAL: {tier.wal_bytes / tier.orders:,.0f} bytes an order through HTTP; "
        + ", ".join(
            f"{run.wal_bytes / run.orders:,.0f} ({run.what}, batch {run.size})" for run in runs
        )
        + f"; the order path's smallest {wal_per_order:,.0f}"
        " (the server's whole WAL: other work adds to it)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--http-orders", type=int, default=60_000, help="distinct, step 1")
    parser.add_argument("--orders", type=int, default=3000, help="orders a connection, step 2")
    parser.add_argument("--threads", type=int, default=4, help="connections at once, step 2")
    parser.add_argument("--sizes", default="16,64", help="batch sizes, step 2")
    args = parser.parse_args()
    if not (args.database_url or "").startswith("postgresql"):
        raise SystemExit("--database-url postgresql://... (a server on this machine) is needed")
    with psycopg.connect(args.database_url, autocommit=True) as conn:
        row = conn.execute("SELECT version()").fetchone()
        assert row is not None
        version = str(row[0]).split(" on ")[0]
    with tempfile.TemporaryDirectory(prefix="plk-bench-capacity-") as tmp:
        tier = app_tier(args.database_url, args, Path(tmp))
    runs = database(args.database_url, args)
    report(tier, runs, args, version)


if __name__ == "__main__":
    main()
