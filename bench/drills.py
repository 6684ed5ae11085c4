"""Fault drills (issue 17): what PartnerLink does when its processes, its database
connections or its Redis go away under load. Each drill prints its figures beside the
bound it is checked against, and the script exits 1 when a bound is broken.

    .venv/bin/python bench/drills.py [--drill worker-kill|pg-kill|redis|all] [--kills 50]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres]

- worker-kill: `partnerlink serve` (no worker inside) and a separate `partnerlink
  worker`, sending e-receipts through a local server speaking Twilio's Messages API.
  Round after round: a customer file is uploaded (half of it people already sent)
  and orders with phones are posted; the worker is SIGKILLed at a random moment and
  started again. Then: every acknowledged customer is stored exactly once, every
  upload ends `done` or `failed` within 60 s of the last restart, no acknowledged
  order's SMS is lost, and duplicate SMS stay within one per kill.
- pg-kill: order load from 16 connections while every 2 s all of the drill
  database's other connections are killed with `pg_terminate_backend`. Then: every
  order acknowledged with 200 is stored, the only 5xx are SPEC's retryable 500
  `unavailable` (with Retry-After), and the time from each kill to the next 200.
- redis: two `serve` processes sharing a redis-server the drill starts on its own
  port; pairing redemptions (mostly wrong codes) from two threads; Redis is
  stopped for 5 s, then started again (empty). Then: while it was away every
  redemption answered 429 (fail closed), never 5xx; the per-address budget never
  let more failures through than configured; the time to recover.

PostgreSQL is the default (a fresh database on 127.0.0.1, dropped afterwards);
`--database-url sqlite` runs worker-kill on a SQLite file. The shared Redis on
6379 is never touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import redis
from sqlalchemy import create_engine, text

from benchdb import journal_drained  # bench/benchdb.py

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: the local Twilio

from tests.receipts.fake_twilio import ACCOUNT_SID, AUTH_TOKEN, FROM, start_fake_twilio

from benchdb import fresh_database  # bench/benchdb.py
from orders import cli, connect_store, free_port, order_body, stop, wait_healthy

REPO = Path(__file__).resolve().parent.parent
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
UPLOAD_SETTLE_SECONDS = 60  # the bound: every upload ends within 60 s
# A receipt claimed by a killed worker is retaken when its lease runs out
# (receipts/tasks.LEASE_SECONDS = 120 s), so the drill waits past that for the SMS.
SMS_SETTLE_SECONDS = 180
LINK_ORDER = re.compile(r"/inv/([^?\s]+)\?k=")


@dataclass
class Verdict:
    name: str
    lines: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)

    def check(self, what: str, value: float, bound: float, *, at_most: bool = True) -> None:
        ok = value <= bound if at_most else value >= bound
        sign = "<=" if at_most else ">="
        self.lines.append(
            f"  {what:<58} {value:>10,.1f}   bound {sign} {bound:,.1f}   {'ok' if ok else 'BROKEN'}"
        )
        if not ok:
            self.broken.append(what)

    def note(self, line: str) -> None:
        self.lines.append(f"  {line}")

    def show(self) -> None:
        print(f"\n== {self.name}")
        print("\n".join(self.lines))


def progress(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def environment(database_url: str, workdir: Path, port: int, **extra: str) -> dict[str, str]:
    return {
        **os.environ,
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "PARTNERLINK_DATA_DIR": str(workdir),
        "PARTNERLINK_SECRET_KEY": "drill-secret-key",
        "PYTHONPATH": str(REPO / "src"),
        **extra,
    }


def start(args: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "partnerlink", *args],
        env=env,
        stdout=log.open("ab"),
        stderr=subprocess.STDOUT,
    )


def serve(env: dict[str, str], port: int, log: Path, *extra: str) -> subprocess.Popen[bytes]:
    server = start(["serve", "--port", str(port), *extra], env, log)
    wait_healthy(f"http://127.0.0.1:{port}", server)
    return server


# --- worker-kill ---------------------------------------------------------------------------


def customer_file(round_number: int, size: int) -> tuple[bytes, set[str]]:
    """Half the file new people, half people of the round before (updated, not created)."""
    first = round_number * size // 2
    people = [
        {"email": f"p{n}@drill.example", "firstName": f"P{n}", "city": f"C{round_number}"}
        for n in range(first, first + size)
    ]
    return json.dumps(people).encode(), {p["email"] for p in people}


def worker_kill(database_url: str, workdir: Path, kills: int, rng: random.Random) -> Verdict:
    verdict = Verdict(f"worker-kill: SIGKILL of `partnerlink worker` x{kills}")
    twilio = start_fake_twilio()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = environment(
        database_url,
        workdir,
        port,
        PARTNERLINK_RUN_WORKER="false",
        PARTNERLINK_SMS_PROVIDER="twilio",
        PARTNERLINK_TWILIO_ACCOUNT_SID=ACCOUNT_SID,
        PARTNERLINK_TWILIO_AUTH_TOKEN=AUTH_TOKEN,
        PARTNERLINK_TWILIO_FROM=FROM,
        PARTNERLINK_TWILIO_API_URL=twilio.url,
        PARTNERLINK_WORKER_POLL_SECONDS="0.1",
    )
    log = workdir / "worker-kill.log"
    server = serve(env, port, log)
    worker = start(["worker"], env, log)
    acknowledged_people: set[str] = set()
    acknowledged_orders: set[str] = set()
    upload_ids: list[str] = []
    try:
        token, _profile = connect_store(base, env, workdir)
        auth = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, timeout=30) as client:
            for kill in range(1, kills + 1):
                body, people = customer_file(kill, 4000)
                url = client.get("/v1/customers", headers=auth).json()["uploadUrl"]
                put = client.put(url, content=body, headers={"Content-Type": "application/json"})
                if put.status_code == 200:
                    acknowledged_people |= people
                    upload_ids.append(put.json()["uploadId"])
                for n in range(20):
                    order_id = f"k{kill}-{n}"
                    who = {"customerPhoneNumber": f"+1415{kill:03d}{n:04d}"}
                    answer = client.post(
                        "/v1/orders", json=order_body(order_id, rng, who, "CLOSED"), headers=auth
                    )
                    if answer.status_code == 200:
                        acknowledged_orders.add(order_id)
                time.sleep(rng.uniform(0.05, 1.5))  # the worker is somewhere in its work
                worker.send_signal(signal.SIGKILL)
                worker.wait()
                worker = start(["worker"], env, log)
                if kill % 10 == 0:
                    progress(f"worker-kill: {kill}/{kills} kills")
        last_restart = time.monotonic()
        engine = create_engine(_sqlalchemy_url(database_url))
        settled = _wait_for(lambda: _uploads_open(engine) == 0, UPLOAD_SETTLE_SECONDS + 30)
        upload_seconds = time.monotonic() - last_restart
        _wait_for(lambda: _receipts_open(engine) == 0, SMS_SETTLE_SECONDS)
        with engine.connect() as conn:
            stored: Counter[str] = Counter(
                dict(
                    conn.execute(text("SELECT email, count(*) FROM customers GROUP BY email")).all()
                )
            )
            statuses: Counter[str] = Counter(
                dict(
                    conn.execute(text("SELECT status, count(*) FROM uploads GROUP BY status")).all()
                )
            )
            receipts: Counter[str] = Counter(
                dict(
                    conn.execute(
                        text("SELECT status, count(*) FROM receipts GROUP BY status")
                    ).all()
                )
            )
        engine.dispose()
    finally:
        stop(worker)
        stop(server)
        twilio.server.shutdown()
    texted = Counter(
        match.group(1)
        for request in twilio.requests
        if (match := LINK_ORDER.search(request.form.get("Body", "")))
    )
    missing = [p for p in acknowledged_people if stored.get(p, 0) == 0]
    doubled = [p for p in acknowledged_people if stored.get(p, 0) > 1]
    lost = [o for o in acknowledged_orders if texted.get(o, 0) == 0]
    duplicates = sum(count - 1 for count in texted.values() if count > 1)
    verdict.note(
        f"{len(acknowledged_people):,} acknowledged customers in {len(upload_ids)} uploads,"
        f" {len(acknowledged_orders):,} acknowledged orders, {len(twilio.requests):,} SMS at the provider"
    )
    verdict.note(f"uploads by status: {dict(statuses)}; receipts by status: {dict(receipts)}")
    verdict.check("acknowledged customers missing", len(missing), 0)
    verdict.check("acknowledged customers stored twice or more", len(doubled), 0)
    verdict.check(
        "seconds from the last restart until every upload ended",
        upload_seconds if settled else float("inf"),
        UPLOAD_SETTLE_SECONDS,
    )
    verdict.check(
        "uploads neither done nor failed",
        sum(statuses.values()) - statuses["done"] - statuses["failed"],
        0,
    )
    verdict.check("acknowledged orders whose SMS never reached the provider", len(lost), 0)
    verdict.check("duplicate SMS (at most one per kill)", duplicates, kills)
    verdict.check("most SMS for one order", max(texted.values(), default=0), 2)
    return verdict


def _sqlalchemy_url(url: str) -> str:
    return url.replace("postgresql://", "postgresql+psycopg://", 1)


def _uploads_open(engine: Any) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM uploads WHERE status NOT IN ('done', 'failed')")
            ).scalar_one()
        )


def _receipts_open(engine: Any) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                text("SELECT count(*) FROM receipts WHERE status = 'pending'")
            ).scalar_one()
        )


def _wait_for(check: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.5)
    return False


# --- pg-kill -------------------------------------------------------------------------------


def pg_kill(database_url: str, workdir: Path, seconds: float, rng: random.Random) -> Verdict:
    verdict = Verdict(f"pg-kill: pg_terminate_backend every 2 s under order load, {seconds:.0f} s")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = environment(database_url, workdir, port)
    server = serve(env, port, workdir / "pg-kill.log")
    database = database_url.rsplit("/", 1)[1]
    admin = create_engine(
        _sqlalchemy_url(database_url.rsplit("/", 1)[0] + "/postgres"), isolation_level="AUTOCOMMIT"
    )
    statuses: Counter[str] = Counter()
    acknowledged: list[str] = []
    unretryable: list[str] = []
    oks: list[float] = []
    kills: list[float] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds
    try:
        token, _profile = connect_store(base, env, workdir)

        def load(thread: int) -> None:
            local = random.Random(thread)
            with httpx.Client(
                base_url=base, timeout=30, headers={"Authorization": f"Bearer {token}"}
            ) as client:
                n = 0
                while time.monotonic() < stop_at:
                    n += 1
                    order_id = f"t{thread}-{n}"
                    who = {"customerEmail": f"c{local.randrange(5000)}@drill.example"}
                    try:
                        answer = client.post(
                            "/v1/orders", json=order_body(order_id, local, who, "CLOSED")
                        )
                    except httpx.HTTPError as error:
                        with lock:
                            statuses[type(error).__name__] += 1
                        continue
                    with lock:
                        statuses[str(answer.status_code)] += 1
                        if answer.status_code == 200:
                            acknowledged.append(order_id)
                            oks.append(time.monotonic())
                        elif answer.status_code >= 500 and not (
                            answer.status_code == 500
                            and answer.json().get("code") == "unavailable"
                            and "retry-after" in answer.headers
                        ):
                            unretryable.append(f"{answer.status_code} {answer.text[:120]}")

        threads = [threading.Thread(target=load, args=(t,)) for t in range(16)]
        for thread in threads:
            thread.start()
        terminated = 0
        while time.monotonic() < stop_at - 2:
            time.sleep(2)
            with admin.connect() as conn:
                terminated += len(
                    conn.execute(
                        text(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                            " WHERE datname = :db AND pid <> pg_backend_pid()"
                        ),
                        {"db": database},
                    ).all()
                )
            kills.append(time.monotonic())
        for thread in threads:
            thread.join()
        # Orders acknowledged into the journal (orders/intake/journal.py) are stored once the
        # server's worker has applied them.
        journal_drained(database_url, timeout=120)
        engine = create_engine(_sqlalchemy_url(database_url))
        with engine.connect() as conn:
            stored = {row[0] for row in conn.execute(text("SELECT order_id FROM orders"))}
        engine.dispose()
    finally:
        stop(server)
        admin.dispose()
    recoveries = []
    for kill in kills:
        after = [ok for ok in oks if ok > kill]
        if after:
            recoveries.append(min(after) - kill)
    lost = [o for o in acknowledged if o not in stored]
    verdict.note(
        f"{len(kills)} kills, {terminated} connections terminated; answers: {dict(statuses)}"
    )
    verdict.note(
        "recovery (kill -> next 200), ms: "
        + (
            f"median {sorted(recoveries)[len(recoveries) // 2] * 1000:.0f}, max {max(recoveries) * 1000:.0f}"
            if recoveries
            else "-"
        )
    )
    verdict.check("acknowledged orders lost", len(lost), 0)
    verdict.check("5xx other than 500 unavailable with Retry-After", len(unretryable), 0)
    verdict.check("orders acknowledged", len(acknowledged), 1, at_most=False)
    verdict.check("slowest recovery, seconds", max(recoveries, default=float("inf")), 5)
    for line in unretryable[:3]:
        verdict.note("  e.g. " + line)
    return verdict


# --- redis ---------------------------------------------------------------------------------


def redis_drill(database_url: str, workdir: Path) -> Verdict:
    verdict = Verdict("redis: Redis stopped for 5 s under pairing load, then started again")
    redis_port = free_port()
    redis_server = shutil.which("redis-server") or "/usr/bin/redis-server"

    def start_redis() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [redis_server, "--port", str(redis_port), "--bind", "127.0.0.1", "--save", ""],
            stdout=subprocess.DEVNULL,
        )
        client = redis.Redis(port=redis_port, socket_connect_timeout=0.5)
        _wait_for(lambda: _pings(client), 10)
        return process

    per_address = 20
    redis_process = start_redis()
    ports = [free_port(), free_port()]
    envs = [
        environment(
            database_url,
            workdir,
            port,
            PARTNERLINK_RATE_LIMIT_STORAGE=f"redis://127.0.0.1:{redis_port}",
            PARTNERLINK_PAIRING_FAILURES_PER_IP=f"{per_address}/hour",
            PARTNERLINK_PAIRING_FAILURES_GLOBAL="100000/hour",
            PARTNERLINK_TRUSTED_PROXIES="127.0.0.1",
        )
        for port in ports
    ]
    servers = [
        serve(env, port, workdir / "redis.log") for env, port in zip(envs, ports, strict=True)
    ]
    phases: dict[str, Counter[str]] = {"before": Counter(), "away": Counter(), "after": Counter()}
    phase = "before"
    failures_let_through: Counter[str] = Counter()
    lock = threading.Lock()
    stop_flag = threading.Event()
    first_404_after: list[float] = []
    try:

        def load(thread: int) -> None:
            n = 0
            with httpx.Client(timeout=10) as client:
                while not stop_flag.is_set():
                    n += 1
                    address = f"198.51.100.{(thread * 50 + n // 7) % 250}"
                    port = ports[n % 2]
                    started_in = phase  # an answer belongs to the phase its request began in
                    try:
                        answer = client.post(
                            f"http://127.0.0.1:{port}/v1/auth/integration/pair",
                            json={"code": 100_000 + (n * 7919) % 900_000},
                            headers={"X-Forwarded-For": address},
                        )
                        status = str(answer.status_code)
                    except httpx.HTTPError as error:
                        status = type(error).__name__
                    with lock:
                        phases[started_in][status] += 1
                        if status == "404":
                            failures_let_through[f"{started_in}:{address}"] += 1
                            if started_in == "after" and not first_404_after:
                                first_404_after.append(time.monotonic())
                    time.sleep(0.005)

        threads = [threading.Thread(target=load, args=(t,)) for t in range(2)]
        for thread in threads:
            thread.start()
        time.sleep(5)
        with lock:
            phase = "away"
        redis_process.kill()
        redis_process.wait()
        time.sleep(5)
        with lock:
            phase = "after"
        restarted = time.monotonic()
        redis_process = start_redis()
        time.sleep(5)
        stop_flag.set()
        for thread in threads:
            thread.join()
    finally:
        for server in servers:
            stop(server)
        redis_process.kill()
    log_text = (workdir / "redis.log").read_text(errors="replace")
    for name, counts in phases.items():
        verdict.note(f"{name:>6}: {dict(counts)}")
    away = phases["away"]
    verdict.check(
        "redemptions let through (not 429) while Redis was away",
        sum(away.values()) - away["429"],
        0,
    )
    verdict.check(
        "5xx or dropped answers, all phases",
        sum(
            c
            for counts in phases.values()
            for s, c in counts.items()
            if not s.isdigit() or s.startswith("5")
        ),
        0,
    )
    verdict.check(
        "most failures let through for one address in one phase",
        max(failures_let_through.values(), default=0),
        per_address,
    )
    verdict.check(
        "seconds from Redis back to the first counted redemption",
        (first_404_after[0] - restarted) if first_404_after else float("inf"),
        5,
    )
    verdict.check(
        "'failing closed' warning lines (one per budget and process)",
        log_text.count("failing closed"),
        8,
    )
    verdict.check("'reachable again' lines", log_text.count("reachable again"), 1, at_most=False)
    return verdict


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.RedisError:
        return False


# --- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument(
        "--drill", choices=["worker-kill", "pg-kill", "redis", "all"], default="all"
    )
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--pg-seconds", type=float, default=30.0)
    parser.add_argument(
        "--database-url", default=os.environ.get("BENCH_DATABASE_URL", DEFAULT_POSTGRES)
    )
    args = parser.parse_args()
    rng = random.Random(17)
    drills = ["worker-kill", "pg-kill", "redis"] if args.drill == "all" else [args.drill]
    verdicts = []
    for drill in drills:
        with tempfile.TemporaryDirectory(prefix=f"plk-drill-{drill}-") as tmp:
            workdir = Path(tmp)
            server_url = None if args.database_url == "sqlite" else args.database_url
            if drill == "pg-kill" and server_url is None:
                print("pg-kill needs PostgreSQL: skipped")
                continue
            url, drop = fresh_database(server_url, workdir)
            url = url.replace("postgresql+psycopg://", "postgresql://", 1)
            progress(f"{drill}: database {url.rsplit('/', 1)[1]}")
            cli(environment(url, workdir, 0), "db", "upgrade")
            try:
                if drill == "worker-kill":
                    verdicts.append(worker_kill(url, workdir, args.kills, rng))
                elif drill == "pg-kill":
                    verdicts.append(pg_kill(url, workdir, args.pg_seconds, rng))
                else:
                    verdicts.append(redis_drill(url, workdir))
            finally:
                drop()
            verdicts[-1].show()
    broken = [f"{v.name}: {b}" for v in verdicts for b in v.broken]
    print("\nall bounds held" if not broken else "\nBROKEN:\n  " + "\n  ".join(broken))
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
