"""What a batch of orders costs, by batch size: the order pipeline's unit of work alone.

    .venv/bin/python bench/orders_batches.py [--orders 6000] [--sizes 4,16,64]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

Runs the workload of bench/orders.py through the pipeline's unit of work
(pipeline._run_all: one transaction, service.accept_orders) in batches of each
size, on one kept connection, without HTTP or threads, and prints the CPU per
order of this process (the client: our code and the driver) and, on
PostgreSQL, of its server process (read from /proc). A batch's cost is about
`fixed + size * per_order`; the two are fitted from the smallest and largest
sizes and printed, since the server's batches are as large as the orders that
queue while the one before is stored (bench/orders.py: ~16 a process at 64
connections).

Beside each figure, its ceiling: the same batches storing only the order rows,
through the same upsert statement (the order's own row: no token, customers
or receipts).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchdb import analyze, app_with_store  # bench/benchdb.py
from loadgen import process_cpu_seconds  # bench/loadgen.py
from orders import workload  # bench/orders.py


def server_cpu(sql: Any) -> Callable[[], float]:
    """Seconds of CPU spent so far by the PostgreSQL process serving this connection."""
    if not sql.postgres:
        return lambda: 0.0
    pid = sql.connection.info.backend_pid
    # A server on another machine has no such process here: client figures only.
    return lambda: process_cpu_seconds([pid])


def measure(
    batches: list[list[Any]], run: Callable[[list[Any]], Any], server: Any
) -> tuple[float, float]:
    """(client, server) CPU microseconds per order over the batches."""
    client0, server0 = time.process_time(), server()
    for batch in batches:
        run(batch)
    orders = sum(len(batch) for batch in batches)
    return (
        (time.process_time() - client0) / orders * 1e6,
        (server() - server0) / orders * 1e6,
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--orders", type=int, default=6000, help="orders per batch size")
    parser.add_argument("--sizes", default="4,16,64")
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]

    from partnerlink.db.raw import HeldConnection, transaction
    from partnerlink.orders import queries
    from partnerlink.orders.facts import facts_of
    from partnerlink.orders.intake.pipeline import _run_all
    from partnerlink.orders.schemas import OrderIn
    from partnerlink.orders.service import OrderPost, _columns, accept_orders
    from partnerlink.tokens.service import authenticate_access_token_sql

    rows: list[tuple[int, tuple[float, float], tuple[float, float]]] = []
    with app_with_store(args.database_url, "plk-batches-") as (app, settings, token):
        handler = partial(accept_orders, settings=settings)
        held = HeldConnection(app.state.engine)
        sql = held.sql()
        server = server_cpu(sql)
        with transaction(sql):
            caller = authenticate_access_token_sql(sql, token)

        def unit_of_work(batch: list[OrderPost]) -> None:
            _run_all(held, handler, batch)

        def order_rows_only(batch: list[OrderPost]) -> None:
            with transaction(sql):
                columns = [
                    _columns(sql, facts_of(post.order), caller=caller, customer=None)
                    for post in batch
                ]
                sql.first_rows(queries.UPSERT_ORDER, columns)

        for size in sizes:
            # Orders of their own for each size (a re-send would update instead).
            bodies = workload(3 * args.orders)
            for body in bodies:
                body["orderId"] = f"{size}-{body['orderId']}"
            posts = [OrderPost(token, OrderIn.model_validate_json(json.dumps(b))) for b in bodies]
            batches = [posts[i : i + size] for i in range(0, len(posts), size)]
            third = len(batches) // 3
            measure(batches[:third], unit_of_work, server)  # warm: caches, customers
            analyze(settings.database_url)  # statistics on them, as in service
            full = measure(batches[third : 2 * third], unit_of_work, server)
            ceiling = measure(batches[2 * third :], order_rows_only, server)
            rows.append((size, full, ceiling))
        held.release()

    kind = "PostgreSQL" if args.database_url else "SQLite"
    server_note = (
        "its PostgreSQL process" if kind == "PostgreSQL" else "none, SQLite runs in process"
    )
    print(
        f"database: {kind}; CPU per order, microseconds (client: this process; server: {server_note})."
    )
    print("Ceiling: the same batches storing the order rows alone.")
    print(" batch   client  server   total   | ceiling: client  server   total")
    for size, (client, server_us), (c_client, c_server) in rows:
        print(
            f" {size:5d}  {client:7.0f} {server_us:7.0f} {client + server_us:7.0f}"
            f"   |          {c_client:7.0f} {c_server:7.0f} {c_client + c_server:7.0f}"
        )
    (small, small_cost, _), (large, large_cost, _) = rows[0], rows[-1]
    if large > small:
        a, b = sum(small_cost), sum(large_cost)
        # cost(size) = fixed / size + per_order
        fixed = (a - b) / (1 / small - 1 / large)
        print(
            f"fitted: {fixed:,.0f} us a batch + {b - fixed / large:,.0f} us an order "
            f"(client and server together)"
        )


if __name__ == "__main__":
    main()
