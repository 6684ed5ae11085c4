"""Benchmark: an audience export of many customers through a real server, against COPY.

    .venv/bin/python bench/audiences_export.py [--customers 1000000] [--segment all]
        [--format meta] [--database-url postgresql://postgres@127.0.0.1:5432/postgres]
        [--list-only] [--list-runs 3]

Fills a fresh database with customers (generated in SQL), starts `partnerlink
serve`, downloads GET /merchant/api/profiles/{id}/audiences/{segment}/export as
a merchant would, and prints rows/second and the server's peak memory. Beside
it, the ceiling CONTRACT/issue 15 compares with: a plain `COPY (SELECT the same
columns) TO STDOUT` read in this process, each row normalized and hashed by the
same function the export uses (PostgreSQL only).

Before the export, the audiences list (GET /merchant/api/profiles/{id}/audiences,
every segment's sizes, issue 28) is timed `--list-runs` times (at least 2), each run
beside its ceiling, interleaved: the cheapest SQL read of the same facts, a plain count(*)
of the profile's customers and of its orders in this process, and the 1 s target. The
first call counts exactly; the next ones answer the count it stored (a large profile's,
docs/audiences.md), and are printed apart.
`--list-only` stops there.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psycopg
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository's tests/

from tests.factories import DEFAULT_PASSWORD

from benchdb import fresh_database  # bench/benchdb.py
from customers_ingest import MemoryWatch, _free_port, _wait_healthy, connected_store
from partnerlink.audiences.hashing import FORMATS
from partnerlink.db.migrate import upgrade
from partnerlink.settings import Settings

FILL_POSTGRES = """
INSERT INTO customers (profile_id, email, phone_number, first_name, last_name, city,
                       country_code, created_at, updated_at)
SELECT :profile_id,
       CASE WHEN i % 10 = 0 THEN NULL ELSE 'customer' || i || '@example.com' END,
       CASE WHEN i % 4 = 0 THEN NULL ELSE '+1415' || lpad(i::text, 7, '0') END,
       'Ann', 'Lee' || i, 'San Francisco', 'US', now(), now()
FROM generate_series(1, :count) AS i
"""
FILL_SQLITE = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO customers (profile_id, email, phone_number, first_name, last_name, city,
                       country_code, created_at, updated_at)
SELECT :profile_id,
       CASE WHEN i % 10 = 0 THEN NULL ELSE 'customer' || i || '@example.com' END,
       CASE WHEN i % 4 = 0 THEN NULL ELSE '+1415' || substr('0000000' || i, -7) END,
       'Ann', 'Lee' || i, 'San Francisco', 'US', datetime('now'), datetime('now')
FROM n
"""
# Half the customers buy: 1 to 3 orders each, spread over the last 200 days (PostgreSQL).
ORDERS_POSTGRES = """
INSERT INTO orders (store_id, profile_id, partner_id, order_id, order_price, order_currency,
                    ordered_at, customer_id, details, conversion, received_at, updated_at)
SELECT s.id, c.profile_id,
       (SELECT partner_id FROM connections WHERE store_id = s.id ORDER BY created_at DESC LIMIT 1),
       'B-' || c.id || '-' || k, 500 + (c.id * 37 + k * 11) % 5000, 'USD',
       now() - ((c.id * 7 + k * 13) % 200) * interval '1 day', c.id, '{}', 'organic', now(), now()
FROM customers c
JOIN stores s ON s.profile_id = c.profile_id
CROSS JOIN generate_series(1, 3) AS k
WHERE c.profile_id = :profile_id AND c.id % 2 = 0 AND k <= 1 + c.id % 3
"""
# The same customers as the export of `all` (for another segment, the ceiling still copies
# every customer with an identifier: an upper bound for it).
COPY = (
    "COPY (SELECT email, phone_number, first_name, last_name, city, country_code "
    "FROM customers WHERE profile_id = '{profile_id}' "
    "AND (email IS NOT NULL OR phone_number IS NOT NULL) ORDER BY id) TO STDOUT"
)


def fill(database_url: str, profile_id: str, count: int) -> float:
    engine = create_engine(Settings(database_url=database_url).database_url)
    started = time.perf_counter()
    statement = FILL_POSTGRES if engine.dialect.name == "postgresql" else FILL_SQLITE
    with engine.begin() as conn:
        conn.execute(text(statement), {"profile_id": profile_id, "count": count})
        if engine.dialect.name == "postgresql":
            conn.execute(text(ORDERS_POSTGRES), {"profile_id": profile_id})
    if engine.dialect.name == "postgresql":
        # As autovacuum leaves tables in service: statistics, and the visibility map that
        # lets the audiences' index-only scan skip the table (VACUUM needs autocommit).
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
            conn.execute(text("VACUUM ANALYZE customers"))
            conn.execute(text("VACUUM ANALYZE orders"))
    engine.dispose()
    return time.perf_counter() - started


LIST_TARGET_SECONDS = 1.0
# The list's ceiling: the same customers and orders read by the cheapest statement there is.
COUNT_CEILING = (
    "SELECT (SELECT count(*) FROM customers WHERE profile_id = :profile_id), "
    "(SELECT count(*) FROM orders WHERE profile_id = :profile_id)"
)


def _sign_in(client: httpx.Client, base: str) -> dict[str, str]:
    signed_in = client.post(
        f"{base}/merchant/api/sessions",
        json={"email": "owner@example.com", "password": DEFAULT_PASSWORD},
    )
    return {"Authorization": f"Bearer {signed_in.json()['sessionToken']}"}


def time_list(base: str, database_url: str, profile_id: str, runs: int) -> None:
    """GET .../audiences `runs` times, each beside a count(*) ceiling run (interleaved).

    The first call counts exactly; a profile whose count took over half a second keeps it,
    so the calls after it answer the stored count (its `computedAt` the first call's)
    while it is younger than PARTNERLINK_AUDIENCE_SIZES_MAX_AGE_SECONDS."""
    engine = create_engine(Settings(database_url=database_url).database_url)
    listed, ceiling, answers = [], [], []
    with httpx.Client(timeout=600) as client, engine.connect() as conn:
        auth = _sign_in(client, base)
        for run in range(max(2, runs)):
            started = time.perf_counter()
            sizes = client.get(f"{base}/merchant/api/profiles/{profile_id}/audiences", headers=auth)
            sizes.raise_for_status()
            listed.append(time.perf_counter() - started)
            answers.append(sizes.json())
            started = time.perf_counter()
            counted = conn.execute(text(COUNT_CEILING), {"profile_id": profile_id}).one()
            ceiling.append(time.perf_counter() - started)
            if run == 0:
                print(f"audiences list: {sizes.json()['audiences']}")
                print(f"ceiling counts {counted[0]:,} customers, {counted[1]:,} orders")
    engine.dispose()
    stored = [a["computedAt"] == answers[0]["computedAt"] for a in answers[1:]]
    same = all(a["audiences"] == answers[0]["audiences"] for a in answers[1:])
    verdict = {True: "met", False: "not met"}
    print(
        f"audiences list, first call (counted exactly): {listed[0]:.2f} s beside a ceiling "
        f"(count(*) of the profile's customers and orders) of {ceiling[0]:.2f} s; "
        f"target {LIST_TARGET_SECONDS:.0f} s: {verdict[listed[0] < LIST_TARGET_SECONDS]}"
    )
    print(
        f"audiences list, next calls ({'stored count' if all(stored) else 'NOT all stored'}"
        f", {'same sizes' if same else 'DIFFERENT sizes'}, computedAt "
        f"{answers[0]['computedAt']}): {' '.join(f'{s:.3f}' for s in listed[1:])} s, best "
        f"{min(listed[1:]):.3f} s; ceiling {' '.join(f'{s:.2f}' for s in ceiling[1:])} s, "
        f"best {min(ceiling[1:]):.2f} s; target {LIST_TARGET_SECONDS:.0f} s: "
        f"{verdict[max(listed[1:]) < LIST_TARGET_SECONDS]}"
    )


def download(
    base: str, profile_id: str, segment: str, file_format: str, memory: MemoryWatch
) -> tuple[int, float]:
    """Rows of the exported file and the seconds it took, as a merchant downloads it."""
    with httpx.Client(timeout=600) as client:
        auth = _sign_in(client, base)
        url = f"{base}/merchant/api/profiles/{profile_id}/audiences/{segment}/export"
        rows = -1  # the header
        started = time.perf_counter()
        with client.stream("GET", url, params={"format": file_format}, headers=auth) as response:
            response.raise_for_status()
            sampled = 0.0
            for chunk in response.iter_bytes():
                rows += chunk.count(b"\n")
                if time.perf_counter() - sampled > 0.05:
                    sampled = time.perf_counter()
                    memory.sample()
        return rows, time.perf_counter() - started


def copy_ceiling(database_url: str, profile_id: str, file_format: str) -> tuple[int, float]:
    """Rows/s of COPY ... TO STDOUT with the same normalization and hashing in this process."""
    _header, line = FORMATS[file_format]
    dsn = Settings(database_url=database_url).database_url.replace(
        "postgresql+psycopg", "postgresql"
    )
    rows = 0
    started = time.perf_counter()
    with (
        psycopg.connect(dsn) as conn,
        conn.cursor() as cursor,
        cursor.copy(COPY.format(profile_id=profile_id)) as copy,
    ):
        for record in copy.rows():
            line(record)
            rows += 1
    return rows, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--segment", default="all")
    parser.add_argument("--format", default="meta", choices=sorted(FORMATS))
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument("--list-runs", type=int, default=3)
    parser.add_argument("--list-only", action="store_true", help="time the list, no export")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="plk-bench-") as tmp:
        workdir = Path(tmp)
        database_url, drop_database = fresh_database(args.database_url, workdir)
        try:
            upgrade(Settings(database_url=database_url).database_url)
            _token, profile_id = connected_store(database_url)
            took = fill(database_url, profile_id, args.customers)
            print(
                f"customers: {args.customers:,} (half of them with 1-3 orders) generated in {took:.0f} s"
            )
            port = _free_port()
            base = f"http://127.0.0.1:{port}"
            env = {
                **os.environ,
                "PARTNERLINK_DATABASE_URL": database_url,
                "PARTNERLINK_PUBLIC_URL": base,
                "PARTNERLINK_DATA_DIR": str(workdir),
                "PARTNERLINK_SECRET_KEY": "bench-secret-key",
                "PARTNERLINK_RUN_WORKER": "false",
            }
            log = (workdir / "server.log").open("wb")
            server = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "partnerlink",
                    "serve",
                    "--port",
                    str(port),
                    "--workers",
                    "1",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                _wait_healthy(base, server)
                memory = MemoryWatch(server.pid)
                memory.sample()
                idle = memory.peak_kib / 1024
                time_list(base, database_url, profile_id, args.list_runs)
                if args.list_only:
                    return
                rows, seconds = download(base, profile_id, args.segment, args.format, memory)
                high_water = memory.server_high_water_mib()
            finally:
                server.terminate()
                server.wait(timeout=30)
                log.close()
            kind = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
            rate = rows / seconds
            print(
                f"export ({kind}, {args.segment}, {args.format}): {rows:,} rows in {seconds:.1f} s "
                f"= {rate:,.0f} rows/s; server RSS idle {idle:,.0f} MiB, peak sampled "
                f"{memory.peak_kib / 1024:,.0f} MiB, high-water mark {high_water:,.0f} MiB"
            )
            if kind == "PostgreSQL":
                before = _rss_mib()
                copied, copy_seconds = copy_ceiling(database_url, profile_id, args.format)
                ceiling = copied / copy_seconds
                print(
                    f"ceiling: COPY TO STDOUT + the same hashing in process: {copied:,} rows in "
                    f"{copy_seconds:.1f} s = {ceiling:,.0f} rows/s (this process's RSS "
                    f"{before:,.0f} -> {_rss_mib():,.0f} MiB)"
                )
                print(f"export rate = {100 * rate / ceiling:.0f}% of the ceiling")
        finally:
            drop_database()


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


if __name__ == "__main__":
    main()
