"""CPU per order of the orders' two ways in, measured inside one process: stored at once,
or journaled then applied (orders/intake/journal.py).

    PYTHONPATH=src:. .venv/bin/python bench/orders_journal.py [--orders 4000] [--batch 16]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

The same workload as bench/orders.py, in batches of `--batch` (what the order pipeline
takes under load), each batch in one transaction on one connection, three ways:

- stored at once: service.accept_orders, what every order cost before the journal;
- journaled: journal.journal_orders, what the serving process does under load;
- applied: journal.apply_journal in its batches of up to 500, what the worker then does.

Each figure is CPU, not wall time, so other load on the machine counts little: this
process's CPU (time.process_time) and PostgreSQL's for the connection's backend
(/proc/<pid>/stat), per order. Beside them, the ceiling they are measured against: the
CPU of validating the same bodies into OrderIn, which the no-op endpoint of
bench/orders.py also pays.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchdb import analyze, app_with_store  # bench/benchdb.py
from orders import workload  # bench/orders.py

TICKS = os.sysconf("SC_CLK_TCK")


def backend_cpu(pid: int | None) -> float:
    """CPU seconds of a PostgreSQL backend (0 on SQLite or another host)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def measure(run: Callable[[], int], pid: int | None) -> tuple[float, float, int]:
    """(client CPU s, server CPU s, orders) of `run`."""
    client, server = time.process_time(), backend_cpu(pid)
    count = run()
    return time.process_time() - client, backend_cpu(pid) - server, count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--orders", type=int, default=4000)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()

    from partnerlink.db.raw import Statement, checkout, transaction
    from partnerlink.orders.intake.journal import apply_journal, journal_orders
    from partnerlink.orders.schemas import OrderIn
    from partnerlink.orders.service import OrderPost, accept_orders

    with app_with_store(args.database_url, "plk-journal-") as (app, settings, token):
        bodies = [json.dumps(b).encode() for b in workload(args.orders * 3)]
        thirds = [bodies[i * args.orders : (i + 1) * args.orders] for i in range(3)]

        def posts(chunk: list[bytes]) -> list[OrderPost]:
            return [OrderPost(token, OrderIn.model_validate_json(b)) for b in chunk]

        with checkout(app.state.engine) as sql:
            pid = sql.row(Statement("SELECT pg_backend_pid()"), {})[0] if sql.postgres else None

            def batches(handler: Callable[..., Any], chunk: list[bytes]) -> Callable[[], int]:
                def run() -> int:
                    items = posts(chunk)
                    for start in range(0, len(items), args.batch):
                        with transaction(sql):
                            handler(sql, items[start : start + args.batch])
                    return len(items)

                return run

            def apply_all() -> int:
                applied = 0
                while True:
                    with transaction(sql):
                        taken = apply_journal(sql, settings=settings, wait=True)
                    applied += taken
                    if not taken:
                        return applied

            validate = measure(lambda: len(posts(thirds[0])), pid)
            # Warm-up: customers known, statements prepared, as in service.
            batches(lambda s, p: accept_orders(s, p, settings=settings), thirds[0])()
            # Statistics, as in service (autovacuum): a fresh database without them looked
            # customers up by email through the wrong index (~200 us a look-up, not ~10).
            analyze(settings.database_url)
            stored = measure(
                batches(lambda s, p: accept_orders(s, p, settings=settings), thirds[1]), pid
            )
            journaled = measure(batches(journal_orders, thirds[2]), pid)
            applied = measure(apply_all, pid)

    kind = "PostgreSQL" if args.database_url else "SQLite"
    print(f"database: {kind}; batches of {args.batch}; CPU per order, microseconds")
    print(f"{'':40s} {'this process':>13s} {'database':>9s} {'total':>7s}")
    per_order_validation = validate[0] / validate[2]
    for label, (client, server, count), validated in (
        ("validating the body (ceiling's share)", validate, False),
        ("stored at once (accept_orders)", stored, True),
        ("journaled (journal_orders)", journaled, True),
        ("applied from the journal (500 a batch)", applied, False),
    ):
        c = 1e6 * (client / count - (per_order_validation if validated else 0))
        s = 1e6 * server / count
        print(f"{label:40s} {c:13.0f} {s:9.0f} {c + s:7.0f}")
    print("(stored and journaled exclude validating the body, which every request pays)")


if __name__ == "__main__":
    main()
