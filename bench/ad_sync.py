"""Benchmark: syncing ad-platform destinations against the local Meta server (CONTRACT §11).

    PYTHONPATH=src:. .venv/bin/python bench/ad_sync.py [--customers 1000000] [--orders 100000]
        [--incrementals 1]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres] [--profile DIR]

Fills a fresh database with customers (generated in SQL), starts the local Meta stand-in
(tests/destinations/fake_meta.py) in a process of its own, and runs what `partnerlink
destinations sync ID` runs (tasks.sync_now) in a process of its own that stays for the
next syncs, as the worker does; each sync's peak RSS is read from the kernel (/proc
VmHWM, reset before it) and its CPU time is the process's own (all its threads):

1. the first sync of a Meta audience of every customer: members/s, CPU seconds and peak
   memory (target: constant memory, at most 300 MiB, at 1,000,000 members);
2. an incremental sync after 1% of the customers changed their phone by plain SQL (each
   sends its removal by the old row and its addition by the new), as a % of the first's
   time (target: at most 5%; `--incrementals N` runs N rounds): in each round, one in
   the worker's process (its database connections and HTTP client kept from the syncs
   before), then one, after another 1% changed, in a new process, as a one-shot
   `partnerlink destinations sync ID` runs (connecting, and the HTTP client's TLS
   context, ~50 ms, in its time).
   The segment is `all`: the sync reads only the customers whose change number (kept
   by the database, migration 0030) is past the destination's, and their held rows
   (destinations/sync/audience_sync.py): its cost is that of the 1% only;
3. a Meta conversions destination's first sync of `--orders` closed orders: events/s.

Beside 1 and 3, the ceiling: a plain httpx client in this process that only posts
precomputed request bodies of the same size (10,000 rows; 1,000 events) to the same
server, as many rows as the sync sent (target for 1: at least 50% of it). The machine's
load moves every figure: compare runs by their ceilings and CPU seconds, interleaved.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from tests.destinations import fake_meta

from audiences_export import FILL_POSTGRES, FILL_SQLITE  # bench/audiences_export.py
from benchdb import fresh_database  # bench/benchdb.py
from customers_ingest import connected_store  # bench/customers_ingest.py
from partnerlink.db.base import utcnow
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.db.migrate import upgrade
from partnerlink.destinations.runs import record_run
from partnerlink.destinations.schemas import destination_json, destination_request
from partnerlink.destinations.service import by_id, create
from partnerlink.settings import Settings

SECRET_KEY = "bench-secret-key"
RUN_ROUNDS = 300  # outcome transactions timed with and without a run (run_history_share)
ROOT = Path(__file__).resolve().parents[1]
FAKE_SERVER = (
    "import sys, time\n"
    "from tests.destinations.fake_meta import FakeMeta\n"
    "fake = FakeMeta()\n"
    "print(fake.graph_url, flush=True)\n"
    "sys.stdin.read()\n"  # until the benchmark closes our stdin
)
ORDERS = """
INSERT INTO orders (store_id, profile_id, partner_id, order_id, order_price, order_currency,
                    order_status, ordered_at, customer_id, customer_email,
                    customer_phone_number, details, conversion, received_at, updated_at)
SELECT s.id, c.profile_id,
       (SELECT partner_id FROM connections WHERE store_id = s.id ORDER BY created_at DESC LIMIT 1),
       'C-' || c.id, 500 + c.id % 5000, 'USD', 'CLOSED',
       {recent}, c.id, c.email, c.phone_number, '{{}}', 'organic', {now}, {now}
FROM customers c JOIN stores s ON s.profile_id = c.profile_id
WHERE c.profile_id = :profile_id AND (c.email IS NOT NULL OR c.phone_number IS NOT NULL)
ORDER BY c.id LIMIT :count
"""


def _sql(engine: Any, statement: str, **params: Any) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement), params)


def fill(database_url: str, profile_id: str, customers: int) -> None:
    engine = create_engine(Settings(database_url=database_url).database_url)
    postgres = engine.dialect.name == "postgresql"
    _sql(engine, FILL_POSTGRES if postgres else FILL_SQLITE, profile_id=profile_id, count=customers)
    if postgres:
        _sql(engine, "ANALYZE customers")
    engine.dispose()


def add_orders(database_url: str, profile_id: str, count: int) -> None:
    engine = create_engine(Settings(database_url=database_url).database_url)
    postgres = engine.dialect.name == "postgresql"
    recent = "now() - (c.id % 50) * interval '1 day'" if postgres else "datetime('now', '-1 day')"
    now = "now()" if postgres else "datetime('now')"
    _sql(engine, ORDERS.format(recent=recent, now=now), profile_id=profile_id, count=count)
    if postgres:
        _sql(engine, "ANALYZE orders")
    engine.dispose()


def change_one_percent(database_url: str, profile_id: str, run: int = 0) -> int:
    """A new phone for the customers whose id ends (modulo 100) in 1 + run."""
    engine = create_engine(Settings(database_url=database_url).database_url)
    with engine.begin() as conn:
        changed = conn.execute(
            text(
                "UPDATE customers SET phone_number = '+1628' || :run || substr('000000' || id, -6) "
                "WHERE profile_id = :p AND id % 100 = :k"
            ),
            {"p": profile_id, "k": (1 + run) % 100, "run": run % 10},
        ).rowcount
    engine.dispose()
    return int(changed)


def destination(database_url: str, profile_id: str, body: dict[str, Any]) -> str:
    settings = Settings(database_url=database_url, secret_key=SECRET_KEY)
    engine = make_engine(settings.database_url)
    with make_sessionmaker(engine)() as session:
        made = create(
            session,
            profile_id=profile_id,
            request=destination_request(body),
            signing_key=settings.signing_key,
        )
        session.commit()
        destination_id = made.id
    engine.dispose()
    return destination_id


SYNC = """
import json, sys, time
from pathlib import Path
from partnerlink.db.engine import make_engine, make_sessionmaker
from partnerlink.destinations.tasks import sync_now
from partnerlink.settings import Settings

def high_water():
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024

settings = Settings()
sessions = make_sessionmaker(make_engine(settings.database_url))
idle = high_water()
for line in sys.stdin:  # one sync a line: its destination id, a tab, a cProfile file or ""
    destination_id, profile = line.rstrip("\\n").split("\\t")
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM from here: this sync's peak
    if profile:
        import cProfile
        profiler = cProfile.Profile()
        profiler.enable()
    started, cpu = time.perf_counter(), time.process_time()
    outcome = sync_now(sessions, settings, destination_id)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    if profile:
        profiler.disable()
        profiler.dump_stats(profile)
    print(json.dumps({
        "seconds": seconds, "cpu": cpu, "idle": idle, "peak": high_water(),
        "result": outcome.result,
    }), flush=True)
"""


class Syncer:
    """What `partnerlink destinations sync ID` does, in a process of its own that stays
    for the next syncs, as the worker does (its database connections and its HTTP client
    kept from one sync to the next); each sync is timed from after the process's imports
    (tens of seconds on a loaded machine), and its peak RSS read from the kernel (VmHWM,
    reset before each sync)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-c", SYNC],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def sync(
        self, database_url: str, destination_id: str, profile: str = ""
    ) -> tuple[float, float, dict[str, Any]]:
        """(seconds, peak RSS MiB, the destination as the merchant API shows it). With
        `profile`, cProfile's statistics of the sync are written to that file (and slow
        it down)."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{destination_id}\t{profile}\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(f"sync failed (exit status {self.process.wait()})")
        answer = json.loads(line)
        if answer["result"] != "synced":
            raise SystemExit(f"sync ended {answer['result']}")
        engine = make_engine(Settings(database_url=database_url).database_url)
        with make_sessionmaker(engine)() as session:
            shown = destination_json(by_id(session, destination_id))
        engine.dispose()
        return float(answer["seconds"]), float(answer["peak"]), {"destination": shown, **answer}

    def close(self) -> None:
        if self.process.stdin:
            self.process.stdin.close()
        self.process.wait(timeout=60)


def sync(
    env: dict[str, str], database_url: str, destination_id: str, profile: str = ""
) -> tuple[float, float, dict[str, Any]]:
    """One sync in a new process, as a one-shot `partnerlink destinations sync ID` runs."""
    syncer = Syncer(env)
    try:
        return syncer.sync(database_url, destination_id, profile)
    finally:
        syncer.close()


def ceiling(url: str, path: str, bodies: list[bytes], requests: int, method: str) -> float:
    """Seconds for `requests` posts of the precomputed bodies (round robin)."""
    headers = {
        "Authorization": f"Bearer {fake_meta.ACCESS_TOKEN}",
        "Content-Type": "application/json",
    }
    with httpx.Client(timeout=120) as client:
        started = time.perf_counter()
        for n in range(requests):
            answer = client.request(
                method, url + path, content=bodies[n % len(bodies)], headers=headers
            )
            assert answer.status_code == 200, answer.text[:300]
        return time.perf_counter() - started


def _hash() -> str:
    return secrets.token_hex(32)


def audience_bodies(count: int, rows: int) -> list[bytes]:
    schema = ["EMAIL", "PHONE", "FN", "LN", "CT", "COUNTRY"]
    return [
        json.dumps(
            {
                "payload": {
                    "schema": schema,
                    "data": [[_hash() for _ in range(6)] for _ in range(rows)],
                },
                "session": {
                    "session_id": n + 1,
                    "batch_seq": 1,
                    "last_batch_flag": True,
                    "estimated_num_total": rows,
                },
            }
        ).encode()
        for n in range(count)
    ]


def event_bodies(count: int, events: int) -> list[bytes]:
    def event(n: int) -> dict[str, Any]:
        return {
            "event_name": "Purchase",
            "event_time": 1_760_000_000 + n,
            "action_source": "physical_store",
            "event_id": secrets.token_hex(16),
            "user_data": {"em": [_hash()], "ph": [_hash()], "fn": [_hash()], "country": [_hash()]},
            "custom_data": {"value": 12.5, "currency": "USD", "order_id": f"C-{n}"},
        }

    return [json.dumps({"data": [event(n) for n in range(events)]}).encode() for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--customers", type=int, default=1_000_000)
    parser.add_argument("--orders", type=int, default=100_000)
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument(
        "--profile",
        metavar="DIR",
        help="write cProfile statistics of each sync to DIR (first.prof, again.prof, "
        "conversions.prof; read them with `python -m pstats`); slows the syncs down. cProfile "
        "sees the main thread only (reading and hashing); the requests and their recording "
        "run on another: `py-spy record -f raw` of the sync process shows both",
    )
    parser.add_argument(
        "--incrementals",
        type=int,
        default=1,
        help="incremental syncs to run, each after another 1%% changed (default 1)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="plk-bench-") as tmp:
        database_url, drop_database = fresh_database(args.database_url, Path(tmp))
        fake = subprocess.Popen(
            [sys.executable, "-c", FAKE_SERVER],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT / 'src'}"},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        try:
            assert fake.stdout is not None
            graph_url = fake.stdout.readline().decode().strip()
            run(args, database_url, graph_url, Path(tmp))
        finally:
            if fake.stdin:
                fake.stdin.close()
            fake.terminate()
            fake.wait(timeout=30)
            drop_database()


def _profile(args: argparse.Namespace, name: str) -> str:
    if not args.profile:
        return ""
    Path(args.profile).mkdir(parents=True, exist_ok=True)
    return str(Path(args.profile).resolve() / f"{name}.prof")


def run(args: argparse.Namespace, database_url: str, graph_url: str, workdir: Path) -> None:
    upgrade(Settings(database_url=database_url).database_url)
    _token, profile_id = connected_store(database_url)
    started = time.perf_counter()
    fill(database_url, profile_id, args.customers)
    kind = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    print(
        f"{kind}: {args.customers:,} customers generated in {time.perf_counter() - started:.0f} s"
    )
    env = {
        **os.environ,
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_DATA_DIR": str(workdir),
        "PARTNERLINK_SECRET_KEY": SECRET_KEY,
        "PARTNERLINK_META_GRAPH_URL": graph_url,
        "PARTNERLINK_META_API_VERSION": fake_meta.VERSION,
    }
    audience = destination(
        database_url,
        profile_id,
        {
            "platform": "meta",
            "kind": "audience",
            "segment": "all",
            "credentials": {"accessToken": fake_meta.ACCESS_TOKEN},
            "target": {"audienceId": fake_meta.AUDIENCE_ID},
        },
    )
    worker = Syncer(env)
    try:
        seconds, peak, answer = worker.sync(database_url, audience, _profile(args, "first"))
        first = seconds, peak, answer
        _audience_figures(args, env, database_url, graph_url, profile_id, audience, worker, first)
    finally:
        worker.close()
    if args.orders > 0:
        _conversions(args, env, database_url, graph_url, profile_id)


def _audience_figures(
    args: argparse.Namespace,
    env: dict[str, str],
    database_url: str,
    graph_url: str,
    profile_id: str,
    audience: str,
    worker: Syncer,
    first: tuple[float, float, dict[str, Any]],
) -> None:
    seconds, peak, answer = first
    members = answer["destination"]["members"]
    rate = members / seconds
    print(
        f"first audience sync: {members:,} members in {seconds:.1f} s = {rate:,.0f} members/s "
        f"({answer['cpu']:.1f} s of CPU); peak RSS of the syncing process (imports included) "
        f"{peak:,.0f} MiB (target: at most 300)"
    )
    requests = -(-members // 10_000)
    path = f"/{fake_meta.VERSION}/{fake_meta.AUDIENCE_ID}/users"
    took = ceiling(graph_url, path, audience_bodies(4, 10_000), requests, "POST")
    top = requests * 10_000 / took
    print(
        f"ceiling: {requests} precomputed 10,000-row bodies posted in {took:.1f} s = "
        f"{top:,.0f} rows/s; the sync runs at {100 * rate / top:.0f}% of it (target: at least 50%)"
    )

    # Each incremental after another 1% changed: first in the worker's process (as the
    # worker syncs: its connections and HTTP client kept), then in a new process (as a
    # one-shot `partnerlink destinations sync ID`: connecting, and making the HTTP
    # client's TLS context, are in its time).
    for run_number in range(args.incrementals):
        for where in ("the worker's process", "a new process"):
            change = 2 * run_number + (where == "a new process")
            changed = change_one_percent(database_url, profile_id, change)
            removed_before = answer["destination"]["sent"]["removed"]
            added_before = answer["destination"]["sent"]["added"]
            name = "again" if change == 0 else f"again-{change + 1}"
            if where == "a new process":
                again, peak_again, answer = sync(env, database_url, audience, _profile(args, name))
            else:
                again, peak_again, answer = worker.sync(
                    database_url, audience, _profile(args, name)
                )
            sent = answer["destination"]["sent"]
            print(
                f"incremental sync after {changed:,} phones changed (1%), in {where}: "
                f"{again:.2f} s ({answer['cpu']:.2f} s of CPU) = {100 * again / seconds:.1f}% "
                f"of the first (target: at most 5%; removed {sent['removed'] - removed_before:,},"
                f" added {sent['added'] - added_before:,}); peak RSS {peak_again:,.0f} MiB"
            )
            if where == "the worker's process":
                incremental = again
    idle, _peak, _answer = worker.sync(database_url, audience)
    print(f"a sync with nothing to send, in the worker's process: {1000 * idle:.1f} ms")
    run_history_share(database_url, audience, {"first": seconds, "nothing to send": idle})
    if args.incrementals:
        run_history_share(database_url, audience, {"incremental": incremental})


def run_history_share(database_url: str, destination_id: str, syncs: dict[str, float]) -> None:
    """What recording a run (CONTRACT §15) adds to a sync: the sync's outcome transaction
    timed ROUNDS times with and without `runs.record_run` (an UPDATE of the destination
    standing in for the outcome, as engine._record writes it), the difference a sync's
    share beside each sync's time (target: at most 2%)."""
    engine = make_engine(Settings(database_url=database_url).database_url)
    sessions = make_sessionmaker(engine)
    with sessions() as session:
        row = by_id(session, destination_id)
        session.expunge(row)

    def outcome(with_run: bool) -> float:
        started = time.perf_counter()
        for _ in range(RUN_ROUNDS):
            with sessions.begin() as session:
                session.execute(
                    text("UPDATE destinations SET updated_at = :now WHERE id = :id"),
                    {"now": utcnow(), "id": destination_id},
                )
                if with_run:
                    record_run(
                        session,
                        row,
                        started_at=utcnow(),
                        trigger="schedule",
                        outcome=None,
                        error=None,
                    )
        return (time.perf_counter() - started) / RUN_ROUNDS

    bare, recorded = min(outcome(False) for _ in range(3)), min(outcome(True) for _ in range(3))
    added = max(0.0, recorded - bare)
    shares = ", ".join(
        f"{100 * added / took:.2f}% of the {name} sync ({took:.2f} s)"
        for name, took in syncs.items()
    )
    print(
        f"run history: the outcome's transaction {1000 * bare:.2f} ms bare, "
        f"{1000 * recorded:.2f} ms with its run: +{1000 * added:.2f} ms a sync = {shares} "
        "(target: at most 2%)"
    )
    engine.dispose()


def _conversions(
    args: argparse.Namespace,
    env: dict[str, str],
    database_url: str,
    graph_url: str,
    profile_id: str,
) -> None:
    add_orders(database_url, profile_id, args.orders)
    conversions = destination(
        database_url,
        profile_id,
        {
            "platform": "meta",
            "kind": "conversions",
            "credentials": {"accessToken": fake_meta.ACCESS_TOKEN},
            "target": {"datasetId": fake_meta.DATASET_ID},
        },
    )
    seconds, peak, answer = sync(env, database_url, conversions, _profile(args, "conversions"))
    events = answer["destination"]["sent"]["events"]
    rate = events / seconds
    print(
        f"conversions: {events:,} orders sent in {seconds:.1f} s = {rate:,.0f} events/s "
        f"({answer['cpu']:.1f} s of CPU); peak RSS {peak:,.0f} MiB"
    )
    requests = -(-events // 1_000)
    path = f"/{fake_meta.VERSION}/{fake_meta.DATASET_ID}/events"
    took = ceiling(graph_url, path, event_bodies(4, 1_000), requests, "POST")
    top = requests * 1_000 / took
    print(
        f"ceiling: {requests} precomputed 1,000-event bodies posted in {took:.1f} s = "
        f"{top:,.0f} events/s; the sync runs at {100 * rate / top:.0f}% of it"
    )


if __name__ == "__main__":
    main()
