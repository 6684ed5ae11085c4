"""Benchmark: a large customer file through the real upload URL of a real server.

    .venv/bin/python bench/customers_ingest.py [--records 1000000]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres] [--s3]

Generates a realistic file (varied phone formats, duplicates, some bad records;
cached between runs), starts `partnerlink serve` on a fresh database, uploads
the file through the URL of GET /v1/customers, waits for `done`, uploads it a
second time, and prints records/second and the server's peak memory. Beside
them, the ceiling: a plain batched write of the same already-normalized rows
through ingestion's own write, the fastest plain one (COPY on PostgreSQL,
executemany INSERT on SQLite; one transaction per batch of ingestion's size),
into the same table with the same indexes on the same server, empty as the
first upload found it (a second fresh database, migrated the same way), with
SQLAlchemy Core's insert() executemany for reference.

With --s3 the server keeps the file in an S3 bucket (PARTNERLINK_UPLOAD_STORAGE)
on a local S3-compatible server (moto's standalone server, started here)
instead of its upload directory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Table, create_engine, func, insert, select, text
from sqlalchemy.engine import make_url

from benchdb import checkpoint, fresh_database  # bench/benchdb.py
from partnerlink.customers.ingestion.batch_queries import insert_customers
from partnerlink.customers.ingestion.ingest import BATCH_SIZE
from partnerlink.customers.ingestion.reader import normalize_record
from partnerlink.customers.matching import MERGED_COLUMNS
from partnerlink.customers.models import Customer
from partnerlink.db.base import utcnow
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import upgrade
from partnerlink.merchant.models import Profile
from partnerlink.settings import Settings

FIRST = [
    "Ann",
    "Bob",
    "Carla",
    "Dmitri",
    "Eve",
    "Françoise",
    "Günther",
    "Hiro",
    "Inès",
    "José",
    "Kemal",
    "Liu",
    "Maria",
    "Nils",
    "Olu",
    "Priya",
    "Quinn",
    "Ravi",
    "Sofía",
    "Tomasz",
]
LAST = [
    "Smith",
    "Müller",
    "García",
    "Rossi",
    "Nguyen",
    "O'Brien",
    "Kowalski",
    "Tanaka",
    "Dubois",
    "Jensen",
    "Okafor",
    "Silva",
    "Cohen",
    "Novak",
    "Larsen",
    "Yilmaz",
]
CITIES = [
    "Springfield",
    "New York",
    "Chicago",
    "Austin",
    "Seattle",
    "Berlin",
    "London",
    "São Paulo",
]
DOMAINS = ["gmail.com", "yahoo.com", "outlook.com", "example.org", "mail.example.co.uk", "web.de"]
AREA_CODES = [201, 212, 305, 312, 415, 512, 617, 646, 702, 718, 773, 818, 917, 972]


def person(i: int) -> dict[str, Any]:
    """The i-th distinct person: identifiers derived from i so they never collide."""
    rng = random.Random(i)
    first, last = rng.choice(FIRST), rng.choice(LAST)
    kind = rng.random()
    email = None if kind < 0.05 else f"{first.lower()}.{last.lower()}{i}@{rng.choice(DOMAINS)}"
    if email is not None and not email.isascii():
        email = email.encode("ascii", "ignore").decode()
    phone: str | None = None
    if not 0.05 <= kind < 0.15:  # 5% phone only, 10% email only
        region = rng.random()
        if region < 0.8:  # unique for the first 112 million people
            area = AREA_CODES[i % len(AREA_CODES)]
            phone = f"+1{area}{200 + (i // 14) % 800}{(i // 11200) % 10000:04d}"
        elif region < 0.9:
            phone = f"+447700{i % 1000000:06d}"
        else:
            phone = f"+4915{i % 10:01d}{i % 10000000:07d}"
    return {
        "email": email,
        "phoneNumber": phone,
        "firstName": first,
        "lastName": last,
        "city": rng.choice(CITIES),
        "countryCode": "US",
    }


def formatted(phone: str | None, rng: random.Random) -> str | None:
    """The same number as people type it (the store is in the US)."""
    if phone is None or not phone.startswith("+1"):
        if phone and rng.random() < 0.5:
            return f"{phone[:3]} {phone[3:7]} {phone[7:]}"
        return phone
    area, exchange, line = phone[2:5], phone[5:8], phone[8:]
    style = rng.randrange(6)
    return [
        phone,
        f"({area}) {exchange}-{line}",
        f"{area}-{exchange}-{line}",
        f"{area}.{exchange}.{line}",
        f"+1 {area} {exchange} {line}",
        f"1 ({area}) {exchange}-{line}",
    ][style]


def records(count: int) -> Iterator[Any]:
    """~3% duplicates (re-typed, same person), ~1% bad records, the rest distinct people.

    Every element is an object: a non-object element makes the whole file invalid.
    """
    rng = random.Random(42)
    distinct = 0
    for _ in range(count):
        roll = rng.random()
        if roll < 0.01:
            yield rng.choice(
                [
                    {"firstName": "Nobody"},
                    {"email": "not-an-email", "firstName": "Bad"},
                    {"email": "bad@", "phoneNumber": "12"},
                    {"email": None, "city": "Nowhere"},
                    {"phoneNumber": "call me"},
                ]
            )
            continue
        if roll < 0.04 and distinct:
            source = person(rng.randrange(max(0, distinct - 50_000), distinct))
            if source["email"] and rng.random() < 0.5:
                source["email"] = f"  {source['email'].upper()} "
        else:
            source = person(distinct)
            distinct += 1
        source["phoneNumber"] = formatted(source["phoneNumber"], rng)
        if roll > 0.995 and source["email"]:
            source["email"] = "broken@@" + source["email"]  # invalid email, phone still counts
        yield {k: v for k, v in source.items() if v is not None}


def ensure_file(count: int, directory: Path) -> Path:
    path = directory / f"customers-{count}-objects.json"
    if path.exists():
        return path
    partial = path.with_suffix(".part")
    with partial.open("w", encoding="utf-8") as out:
        out.write("[\n")
        for n, record in enumerate(records(count)):
            if n:
                out.write(",\n")
            out.write(json.dumps(record, ensure_ascii=False))
        out.write("\n]\n")
    partial.rename(path)
    return path


def connected_store(database_url: str) -> tuple[str, str]:
    """A partner, merchant, profile and store with a live connection: (access token, profile id)."""
    from tests.factories import create_connected_store

    engine = make_engine(Settings(database_url=database_url).database_url)
    with make_sessionmaker(engine)() as session:
        fixture = create_connected_store(session)
        token, profile_id = fixture.access_token, fixture.profile.id
    engine.dispose()
    return token, profile_id


def _status_kib(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _children(pid: int) -> list[int]:
    """Children of every thread (the upload reader is started by the worker thread)."""
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found.extend(int(c) for c in children.read_text().split())
        except OSError:
            continue
    return found


def _cpu_seconds(pid: int, *, children: bool = False) -> float:
    """CPU time of a process (and, with `children`, of its children it has waited for)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12])  # utime, stime
    if children:
        ticks += int(fields[13]) + int(fields[14])  # cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def _cpu_parts(server: int, database: DatabaseCpu) -> list[float]:
    """CPU seconds so far of the server process itself, of its children it has reaped
    (the upload reader, which ends with its upload), and of the database's backends."""
    return [
        _cpu_seconds(server),
        _cpu_seconds(server, children=True) - _cpu_seconds(server),
        database.seconds(),
    ]


class DatabaseCpu:
    """CPU time of the PostgreSQL backends serving one database (none on SQLite): on a
    shared machine, CPU seconds compare runs that wall time cannot."""

    def __init__(self, database_url: str) -> None:
        self.name = make_url(database_url).database if database_url.startswith("postgres") else None
        self.admin = Settings(database_url=database_url).database_url

    def seconds(self) -> float:
        if self.name is None:
            return 0.0
        engine = create_engine(self.admin)
        with engine.connect() as conn:
            pids = conn.scalars(
                text(
                    "SELECT pid FROM pg_stat_activity WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": self.name},
            ).all()
        engine.dispose()
        return sum(_cpu_seconds(pid) for pid in pids)


class MemoryWatch:
    """Peak resident memory of the server and its children (the upload reader), sampled."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_kib = 0

    def sample(self) -> None:
        pids = [self.pid]
        for pid in pids:
            pids.extend(_children(pid))
        self.peak_kib = max(self.peak_kib, sum(_status_kib(pid, "VmRSS") for pid in pids))

    def server_high_water_mib(self) -> float:
        return _status_kib(self.pid, "VmHWM") / 1024


def upload(
    base: str, token: str, path: Path, memory: MemoryWatch
) -> tuple[dict[str, Any], float, float]:
    """Uploads through a fresh URL and waits for the end: (status, upload s, total s)."""
    auth = {"Authorization": f"Bearer {token}"}
    with httpx.Client(timeout=600) as client:
        url = client.get(f"{base}/v1/customers", headers=auth).json()["uploadUrl"]
        started = time.perf_counter()
        with path.open("rb") as body:
            response = client.put(url, content=body, headers={"Content-Type": "application/json"})
        response.raise_for_status()
        uploaded = time.perf_counter() - started
        upload_id = response.json()["uploadId"]
        polled = 0.0
        while True:
            memory.sample()
            if time.perf_counter() - polled > 0.2:  # the status call costs the server little
                polled = time.perf_counter()
                status = client.get(f"{base}/v1/customers/uploads/{upload_id}", headers=auth).json()
                if status["status"] in ("done", "failed"):
                    return status, uploaded, time.perf_counter() - started
            time.sleep(0.05)


def ceiling(
    database_url: str, path: Path, *, reference: bool = True
) -> tuple[float, float | None, int, float]:
    """Rows/s of plain batched writes of the file's normalized, de-duplicated rows.

    First through the very write ingestion uses (batch_queries.insert_customers: COPY on
    PostgreSQL, driver executemany on SQLite; one transaction per batch); then, for
    reference, through SQLAlchemy Core's `insert()` executemany.
    """
    import ijson

    seen: set[str] = set()
    rows: list[tuple[Any, ...]] = []
    with path.open("rb") as stream:
        for item in ijson.items(stream, "item"):
            record = normalize_record(item, "US")
            if isinstance(record, str):
                continue
            key = record[0] or record[1] or ""
            if key not in seen:
                seen.add(key)
                rows.append(record)
    del seen
    engine = make_engine(Settings(database_url=database_url).database_url)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        merchant_id = session.scalar(select(Profile.merchant_id))
        profiles = [Profile(merchant_id=merchant_id, name=f"ceiling {n}") for n in range(2)]
        session.add_all(profiles)
        session.commit()
        profile_ids = [p.id for p in profiles]
    now = utcnow()
    checkpoint(database_url)
    database_cpu = DatabaseCpu(database_url)
    cpu = time.process_time() + database_cpu.seconds()
    started = time.perf_counter()
    for start in range(0, len(rows), BATCH_SIZE):
        with sessions() as session, session.begin():
            insert_customers(
                session, profile_id=profile_ids[0], values=rows[start : start + BATCH_SIZE], now=now
            )
    same_insert = len(rows) / (time.perf_counter() - started)
    cpu_per_row = (time.process_time() + database_cpu.seconds() - cpu) / len(rows)
    if not reference:
        engine.dispose()
        return same_insert, None, len(rows), cpu_per_row
    table: Table = Customer.__table__  # type: ignore[assignment]  # a mapped class's Table
    columns = MERGED_COLUMNS
    started = time.perf_counter()
    for start in range(0, len(rows), BATCH_SIZE):
        batch = [
            {
                "profile_id": profile_ids[1],
                **dict(zip(columns, row, strict=True)),
                "created_at": now,
                "updated_at": now,
            }
            for row in rows[start : start + BATCH_SIZE]
        ]
        with engine.begin() as conn:
            conn.execute(insert(table), batch)
    core = len(rows) / (time.perf_counter() - started)
    engine.dispose()
    return same_insert, core, len(rows), cpu_per_row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument(
        "--s3", action="store_true", help="store uploads in a local S3 server (moto)"
    )
    parser.add_argument(
        "--first-upload-only",
        action="store_true",
        help="no re-upload, no SQLAlchemy Core reference (shorter runs on a busy machine)",
    )
    parser.add_argument("--cache-dir", type=Path, default=Path(tempfile.gettempdir()) / "plk-bench")
    args = parser.parse_args()
    args.cache_dir.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    path = ensure_file(args.records, args.cache_dir)
    size_mb = path.stat().st_size / 1e6
    print(
        f"file: {args.records:,} records, {size_mb:,.0f} MB ({time.perf_counter() - started:.0f} s to prepare)"
    )

    with tempfile.TemporaryDirectory(prefix="plk-bench-") as tmp:
        workdir = Path(tmp)
        before, _, _, cpu_before = fresh_ceiling(
            args.database_url, workdir / "ceiling-before", path, reference=False
        )
        database_url, drop_database = fresh_database(args.database_url, workdir)
        try:
            upgrade(Settings(database_url=database_url).database_url)
            token, profile_id = connected_store(database_url)
            port = _free_port()
            base = f"http://127.0.0.1:{port}"
            env = {
                **os.environ,
                "PARTNERLINK_DATABASE_URL": database_url,
                "PARTNERLINK_PUBLIC_URL": base,
                "PARTNERLINK_DATA_DIR": str(workdir),
                "PARTNERLINK_SECRET_KEY": "bench-secret-key",
                "PARTNERLINK_WORKER_POLL_SECONDS": "0.05",
            }
            s3 = start_s3(env) if args.s3 else None
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
                    "--json",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            try:
                _wait_healthy(base, server)
                kind = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
                print(f"database: {kind}; uploads stored in {'S3 (moto)' if s3 else 'files'}")
                results = []
                memory = MemoryWatch(server.pid)
                database_cpu = DatabaseCpu(database_url)
                labels = (
                    ("first upload",) if args.first_upload_only else ("first upload", "re-upload")
                )
                for label in labels:
                    checkpoint(database_url)
                    parts = _cpu_parts(server.pid, database_cpu)
                    status, up, total = upload(base, token, path, memory)
                    parts = [
                        b - a
                        for a, b in zip(parts, _cpu_parts(server.pid, database_cpu), strict=True)
                    ]
                    cpu = sum(parts)
                    results.append((label, status, up, total, cpu / args.records))
                    print(
                        f"{label:>12}: {status['status']} in {total:6.1f} s (upload {up:4.1f} s) = "
                        f"{args.records / total:8,.0f} records/s whole file, "
                        f"{args.records / (total - up):8,.0f} records/s ingestion; "
                        f"created {status['created']:,} updated {status['updated']:,} "
                        f"unchanged {status['unchanged']:,} rejected {status['rejected']:,}; "
                        f"CPU {1e6 * results[-1][4]:,.1f} µs/record: server "
                        + ", reader ".join(
                            f"{1e6 * part / args.records:,.1f}" for part in parts[:2]
                        )
                        + f", database {1e6 * parts[2] / args.records:,.1f}"
                    )
                high_water = memory.server_high_water_mib()
            finally:
                server.terminate()
                server.wait(timeout=30)
                log.close()
                if s3 is not None:
                    s3.terminate()
                    s3.wait(timeout=30)
            print(
                f"peak RSS: {memory.peak_kib / 1024:,.0f} MiB server and upload reader together "
                f"(sampled every 50 ms); server's own high-water mark {high_water:,.0f} MiB"
            )
            engine = create_engine(Settings(database_url=database_url).database_url)
            with engine.connect() as conn:
                stored = conn.scalar(
                    select(func.count())
                    .select_from(Customer)
                    .where(Customer.profile_id == profile_id)
                )
            engine.dispose()
            after, core, rows, cpu_after = fresh_ceiling(
                args.database_url,
                workdir / "ceiling-after",
                path,
                reference=not args.first_upload_only,
            )
            # Bracketed: on a shared machine the speed drifts over minutes; the ceiling is
            # the mean of the runs before and after the uploads, by time.
            same_insert = 2 / (1 / before + 1 / after)
            ceiling_cpu = (cpu_before + cpu_after) / 2
            first_total = results[0][3]
            rate = args.records / first_total
            print(f"customers stored: {stored:,}")
            print(
                f"ceiling: plain batched write of the {rows:,} normalized rows: "
                f"{same_insert:,.0f} rows/s ({before:,.0f} before the uploads, "
                f"{after:,.0f} after; ingestion's own write: "
                f"{'COPY' if kind == 'PostgreSQL' else 'executemany INSERT'})"
                + (
                    ""
                    if core is None
                    else f"; SQLAlchemy Core insert() executemany {core:,.0f} rows/s"
                )
            )
            print(
                f"whole file: {rate:,.0f} records/s = {100 * rate / same_insert:.0f}% of the ceiling"
            )
            print(
                f"CPU: ceiling {1e6 * ceiling_cpu:,.1f} µs/row (bench and database); whole file "
                f"{1e6 * results[0][4]:,.1f} µs/record = {100 * ceiling_cpu / results[0][4]:.0f}% "
                "of the ceiling's rate at equal CPU"
            )
            for label, _, _, total, cpu in results[1:]:
                again = args.records / total
                print(
                    f"{label}: {again:,.0f} records/s = {100 * again / same_insert:.0f}% of the "
                    f"ceiling; {1e6 * cpu:,.1f} µs/record = {100 * ceiling_cpu / cpu:.0f}% at equal CPU"
                )
        finally:
            drop_database()


def fresh_ceiling(
    server_url: str | None, directory: Path, path: Path, *, reference: bool
) -> tuple[float, float | None, int, float]:
    """ceiling() into an empty customers table, as the first upload finds it: a fresh
    database on the same server, migrated the same way (same indexes, same durability),
    rather than beside the million customers an upload stored."""
    directory.mkdir()
    ceiling_url, drop_ceiling = fresh_database(server_url, directory)
    try:
        upgrade(Settings(database_url=ceiling_url).database_url)
        connected_store(ceiling_url)
        return ceiling(ceiling_url, path, reference=reference)
    finally:
        drop_ceiling()


def start_s3(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A local S3 server with a fresh bucket; points the server's settings at it."""
    from tests.s3 import CREDENTIALS, S3Server, start_s3_server

    port = _free_port()
    process = start_s3_server(port=port)
    endpoint = f"http://127.0.0.1:{port}"
    env.update(CREDENTIALS)
    env["PARTNERLINK_UPLOAD_STORAGE"] = "s3://bench-uploads/customer-files"
    env["PARTNERLINK_S3_ENDPOINT_URL"] = endpoint
    S3Server(endpoint).client().create_bucket(Bucket="bench-uploads")
    return process


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_healthy(base: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit("server exited during start-up")
        try:
            if httpx.get(f"{base}/healthz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("server did not start")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
