"""Benchmark: POST /v1/orders on a real server, beside the ceiling of the same server stack.

    .venv/bin/python bench/orders.py [--seconds 10] [--rounds 3] [--connections 64] [--workers 0]
        [--database-url postgresql://postgres@127.0.0.1:5432/postgres] [--profile]

Starts `partnerlink serve` (default workers for this machine: 1 on SQLite, one per
core on PostgreSQL) on a fresh database (a SQLite file, or a database created on
the given PostgreSQL server and dropped afterwards), connects a store through
the real APIs (merchant account, profile, store with e-receipts on, pairing
code, redemption), imports ad touches, and drives POST /v1/orders with varied,
realistic orders from many keep-alive connections: new and repeat customers,
anonymous orders, re-sends that update (OPEN → CLOSED), store snapshots, and
receipts on (every CLOSED order with a phone queues an SMS that the in-process
worker sends through the outbox). Prints orders/second and p50/p99 latency.

Under load the server journals orders and answers (orders/intake/journal.py); the worker, here
`partnerlink worker` in a process of its own as at scale (`--worker-in-server` for a
single box's default), applies them in batches. The benchmark then also prints the
journal's backlog when the load stops, how fast it was applied, and the sustained rate
(every order of the window stored). `PARTNERLINK_ORDERS_JOURNAL_AT=0` in the environment
stores every order before answering, as before the journal.

Beside them, the ceiling: the same server stack (uvicorn with the same workers
and settings) serving a no-op FastAPI POST endpoint that parses the same bodies
into the same pydantic model, measured in the same run with the same load
generator and the same requests. The two alternate: `--rounds` (3) of an orders window
then a ceiling window, each `--seconds` long, so that a machine whose speed drifts
from minute to minute weighs on both alike; each round's share is printed, then the
whole run's. `--profile` samples the server with py-spy during a further measured run
and prints where the time goes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import httpx

from benchdb import analyze, fresh_database, journal_drained  # bench/benchdb.py
from loadgen import (  # bench/loadgen.py
    Run,
    descendants,
    drive,
    own_cpu_seconds,
    postgres_cpu_seconds,
    process_cpu_seconds,
    server_pids,
)

# At module level: FastAPI resolves the endpoint's (string) annotations in these globals.
# Imported inside ceiling_app, `OrderIn` went unresolved and the "ceiling" answered 422
# without reading the body.
from partnerlink.orders.schemas import OrderIn

REPO = Path(__file__).resolve().parent.parent
START = datetime(2024, 5, 1, tzinfo=UTC)
CUSTOMERS = 800  # the store's regulars; a third of them were reached by ads
FIRST = ["Ann", "Bob", "Carla", "Dmitri", "Eve", "Hiro", "Inès", "José", "Liu", "Maria", "Priya"]
MENU = [
    ("espresso", "Espresso", 300),
    ("flat-white", "Flat white", 450),
    ("croissant", "Croissant", 350),
    ("bagel", "Bagel with cream cheese", 575),
    ("salad", "Garden salad", 1190),
    ("soup", "Soup of the day", 790),
    ("cake", "Carrot cake", 495),
    ("juice", "Orange juice", 425),
]


# --- the workload ------------------------------------------------------------------------


def customer(i: int) -> dict[str, str]:
    return {
        "customerFirstName": FIRST[i % len(FIRST)],
        "customerLastName": f"Guest{i}",
        "customerEmail": f"guest{i}@example.com",
        "customerPhoneNumber": f"+1415{2000000 + i:07d}",
    }


def order_body(
    order_id: str, rng: random.Random, who: dict[str, str], status: str
) -> dict[str, Any]:
    items: list[dict[str, Any]] = []
    for _ in range(rng.randint(1, 5)):
        sku, name, price = rng.choice(MENU)
        quantity = rng.randint(1, 3)
        items.append(
            {
                "itemId": sku,
                "itemName": name,
                "itemPrice": str(price),
                "itemQuantity": quantity,
                "itemTax": str(price * quantity * 8 // 100),
            }
        )
    total = sum(int(i["itemPrice"]) * i["itemQuantity"] + int(i["itemTax"]) for i in items)
    body: dict[str, Any] = {
        "orderId": order_id,
        "orderPrice": str(total),
        "orderCurrency": "USD",
        "createdAt": "2024-05-01T12:00:00.000Z",
        "updatedAt": "2024-05-01T12:00:00.000Z",
        **who,
        "orderDetails": {
            "orderStatus": status,
            "orderType": rng.choice(["dine-in", "takeaway", "delivery"]),
            "orderItems": items,
            "orderPayments": [
                {
                    "paymentType": "card",
                    "paymentId": f"pay-{order_id}",
                    "paymentSum": str(total),
                    "paymentCardType": rng.choice(["VISA", "MASTERCARD", "AMEX"]),
                    "paymentLast4": f"{rng.randint(0, 9999):04d}",
                }
            ],
            "tableNumber": rng.randint(1, 40),
        },
    }
    if rng.random() < 0.05:
        body["store"] = {
            "storeName": "Bench Bistro",
            "storeAddress": "1 Main Street",
            "storeCountryCode": "US",
            "storeCity": "Springfield",
        }
    return body


def workload(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """New orders of regulars (55%), of new customers (15%), anonymous (5%), updates (25%)."""
    rng = random.Random(seed)
    bodies: list[dict[str, Any]] = []
    opened: list[dict[str, Any]] = []
    newcomers = CUSTOMERS
    minute = 0
    for n in range(count):
        minute += 1
        # One order a minute from May 2024 on (a real calendar: 60,000 minutes pass June).
        stamp = (START + timedelta(minutes=minute)).strftime("%Y-%m-%dT%H:%M:%SZ")
        kind = rng.random()
        if kind < 0.25 and opened:
            body = json.loads(json.dumps(opened.pop(rng.randrange(len(opened)))))
            body["orderDetails"]["orderStatus"] = "CLOSED"
            body["updatedAt"] = stamp
            bodies.append(body)
            continue
        if kind < 0.80:
            who = customer(rng.randrange(CUSTOMERS))
        elif kind < 0.95:
            newcomers += 1
            who = customer(newcomers)
        else:
            who = {}
        status = "OPEN" if rng.random() < 0.3 else "CLOSED"
        body = order_body(f"B-{n}", rng, who, status)
        body["createdAt"] = body["updatedAt"] = stamp
        bodies.append(body)
        if status == "OPEN":
            opened.append(body)
    return bodies


def touches(profile_id: str) -> list[dict[str, Any]]:
    return [
        {
            "profileId": profile_id,
            "campaignId": f"spring-{i % 3}",
            "email": f"guest{i}@example.com",
            "touchedAt": "2024-04-28T10:00:00Z",
        }
        for i in range(0, CUSTOMERS, 3)
    ]


def http_requests(bodies: list[dict[str, Any]], port: int, token: str) -> list[bytes]:
    out = []
    for body in bodies:
        payload = json.dumps(body, separators=(",", ":")).encode()
        head = (
            f"POST /v1/orders HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Authorization: Bearer {token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        ).encode()
        out.append(head + payload)
    return out


# --- servers --------------------------------------------------------------------------------


def ceiling_app() -> Any:
    """The ceiling: a no-op FastAPI POST endpoint parsing the same bodies into the same model.

    It gets the server's start-up tuning too (the garbage collector's), so that the
    two differ only by what the real endpoint does.
    """
    from contextlib import asynccontextmanager

    from fastapi import FastAPI

    from partnerlink.kit.process import tune_garbage_collector

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> Any:
        tune_garbage_collector()
        yield

    app = FastAPI(lifespan=lifespan)

    @app.post("/v1/orders")
    async def noop(order: OrderIn) -> dict[str, int]:
        return {"statusCode": 200}

    return app


def server_env(database_url: str, base: str, workdir: Path) -> dict[str, str]:
    """The environment of a benchmarked `partnerlink serve` (and of its CLI calls)."""
    return {
        **os.environ,
        "PARTNERLINK_DATABASE_URL": database_url,
        "PARTNERLINK_PUBLIC_URL": base,
        "PARTNERLINK_DATA_DIR": str(workdir),
        "PARTNERLINK_SECRET_KEY": "bench-secret-key",
        # The benchmark's one partner sends several times the default quota (60,000 a
        # minute per process). Every request is still counted, so the quota's cost stays
        # in the figures, but none is refused: a 429 costs less than an order and would
        # swell the orders' rate (seen on a fast machine: 806 of 114,758 answers).
        "PARTNERLINK_PARTNER_REQUESTS_PER_MINUTE": "1000000000",
        "PYTHONPATH": str(REPO / "src"),
    }


def start_server(env: dict[str, str], port: int, workers: int, log: Any) -> subprocess.Popen[bytes]:
    """`partnerlink serve` (workers 0: its default), logging to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "partnerlink", "serve", "--port", str(port), "--json"]
        + (["--workers", str(workers)] if workers else []),
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def start_worker(env: dict[str, str], log: Any) -> subprocess.Popen[bytes]:
    """`partnerlink worker`, in a process of its own, logging to `log`."""
    return subprocess.Popen(
        [sys.executable, "-m", "partnerlink", "worker"],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def start_ceiling(env: dict[str, str], port: int, workers: int) -> subprocess.Popen[bytes]:
    """The ceiling's server (`ceiling_app`), started and answering."""
    ceiling = subprocess.Popen(
        # The same serving code as `partnerlink serve` (partnerlink/cli/serving.py).
        [
            sys.executable,
            "-c",
            "import sys; from partnerlink.cli.serving import run_server;"
            " run_server('orders:ceiling_app', factory=True, host='127.0.0.1',"
            " port=int(sys.argv[1]), workers=int(sys.argv[2]), proxy_headers=False,"
            " server_header=False)",
            str(port),
            str(workers),
        ],
        env={**env, "PYTHONPATH": f"{REPO / 'src'}{os.pathsep}{Path(__file__).parent}"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(f"http://127.0.0.1:{port}", ceiling, "/docs")
    except BaseException:
        stop(ceiling)
        raise
    return ceiling


def measure_ceiling(
    env: dict[str, str],
    workers: int,
    bodies: list[dict[str, Any]],
    token: str,
    args: argparse.Namespace,
) -> Run:
    """One ceiling run, on a server of its own (bench/capacity.py): the same requests,
    connections, warm-up and length as the orders'."""
    port = free_port()
    ceiling = start_ceiling(env, port, workers)
    try:
        requests = http_requests(bodies, port, token)
        return drive(
            port,
            requests,
            args.connections,
            args.warmup,
            args.seconds,
            ceiling.pid,
            parts={"load generator": own_cpu_seconds},
        )
    finally:
        stop(ceiling)


def measure_rounds(
    args: argparse.Namespace,
    *,
    orders: tuple[int, list[bytes], int, dict[str, Callable[[], float]]],
    ceiling: tuple[dict[str, str], int, list[dict[str, Any]], str],
    pause: Callable[[signal.Signals], None],
    idle: Callable[[], float],
    drained: Callable[[], tuple[int, float]],
) -> tuple[list[tuple[Run, Run]], tuple[int, float]]:
    """`--rounds` of an orders window then a ceiling window, each `--seconds` long: on a
    shared machine whose speed drifts by the minute (the same ceiling read 3,600 and
    6,400 requests/s within ten minutes here), a drift then weighs on both sides alike.

    The orders go on through `requests` from round to round, so no window re-sends what
    an earlier one sent; the journal is drained after each orders window, and the
    orders' server and worker are stopped (`pause`) while the ceiling runs, so that it
    runs beside no backlog and no polling. Answers (each round's windows) and the journal's backlog
    (held, seconds to apply), added up over the rounds."""
    port, requests, server, parts = orders
    env, workers, bodies, token = ceiling
    ceiling_port = free_port()
    ceiling_server = start_ceiling(env, ceiling_port, workers)
    try:
        ceiling_requests = http_requests(bodies, ceiling_port, token)
        rounds: list[tuple[Run, Run]] = []
        held, took, first, first_top = 0, 0.0, 0, 0
        for number in range(args.rounds):
            # The first window warms up as long as asked; later ones only reconnect.
            warmup = args.warmup if number == 0 else 1.0
            run = drive(
                port,
                requests,
                args.connections,
                warmup,
                args.seconds,
                server,
                parts=parts,
                first=first,
            )
            first += run.sent
            if not args.worker_after:
                waiting, seconds = drained()
                held, took = held + waiting, took + seconds
            pause(signal.SIGSTOP)
            try:
                top = drive(
                    ceiling_port,
                    ceiling_requests,
                    args.connections,
                    warmup,
                    args.seconds,
                    ceiling_server.pid,
                    also=idle,
                    parts={"load generator": own_cpu_seconds},
                    first=first_top,
                )
            finally:
                pause(signal.SIGCONT)
            first_top += top.sent
            rounds.append((run, top))
        return rounds, (held, took)
    finally:
        stop(ceiling_server)


def signal_all(pids: list[int], signum: signal.Signals) -> None:
    for pid in pids:
        os.kill(pid, signum)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], path: str = "/healthz") -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit("server exited during start-up (see its log)")
        try:
            httpx.get(url + path, timeout=1)
            return
        except httpx.HTTPError:
            time.sleep(0.1)
    raise SystemExit("server did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def cli(env: dict[str, str], *args: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-m", "partnerlink", *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def connect_store(base: str, env: dict[str, str], workdir: Path) -> tuple[str, str]:
    """Through the real APIs: merchant, profile, store with receipts on, pairing. (token, profile)"""
    cli(env, "partners", "create", "--name", "Bench POS", "--pos-type", "bench-pos", "--ereceipt")
    cli(
        env, "merchants", "create", "--email", "bench@example.com", "--password", "bench-password-1"
    )
    with httpx.Client(base_url=base, timeout=30) as client:
        session = client.post(
            "/merchant/api/sessions",
            json={"email": "bench@example.com", "password": "bench-password-1"},
        ).json()
        client.headers["Authorization"] = f"Bearer {session['sessionToken']}"
        profile = client.post("/merchant/api/profiles", json={"name": "Bench Group"}).json()
        profile_id = profile["profile"]["id"]
        store = client.post(
            f"/merchant/api/profiles/{profile_id}/stores",
            json={"name": "Bench Bistro", "address": "1 Main Street", "countryCode": "US"},
        ).json()["store"]
        client.patch(f"/merchant/api/stores/{store['id']}", json={"greenInvoices": True})
        code = client.post(
            f"/merchant/api/stores/{store['id']}/pairing-codes", json={"posType": "bench-pos"}
        ).json()["code"]
        del client.headers["Authorization"]
        token = client.post("/v1/auth/integration/pair", json={"code": code}).json()["access_token"]
    touch_file = workdir / "touches.jsonl"
    touch_file.write_text("\n".join(json.dumps(t) for t in touches(profile_id)) + "\n")
    cli(env, "touches", "import", str(touch_file))
    return token, profile_id


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=3.0)
    parser.add_argument("--connections", type=int, default=64)
    parser.add_argument("--workers", type=int, default=0, help="0 = the server's default")
    parser.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="orders then ceiling windows, alternated (each --seconds long)",
    )
    parser.add_argument("--orders", type=int, default=150_000, help="distinct requests generated")
    parser.add_argument("--database-url", default=os.environ.get("BENCH_DATABASE_URL"))
    parser.add_argument("--profile", action="store_true", help="sample the server with py-spy")
    parser.add_argument(
        "--worker-in-server",
        action="store_true",
        help="the background worker inside the server (one box's default), not as"
        " `partnerlink worker` beside it (the default here, as at scale)",
    )
    parser.add_argument(
        "--worker-after",
        action="store_true",
        help="stop `partnerlink worker` for the measured window and start it again after"
        " (the journal's backlog then timed): the serving tier alone, as when the workers"
        " run on machines of their own",
    )
    args = parser.parse_args()
    if args.worker_after and args.worker_in_server:
        parser.error("--worker-after needs the worker in a process of its own")

    bodies = workload(args.orders)
    with tempfile.TemporaryDirectory(prefix="plk-bench-orders-") as tmp:
        workdir = Path(tmp)
        database_url, drop_database = fresh_database(args.database_url, workdir)
        is_sqlite = database_url.startswith("sqlite")
        workers = args.workers or (1 if is_sqlite else (os.cpu_count() or 1))
        try:
            port = free_port()
            base = f"http://127.0.0.1:{port}"
            env = server_env(database_url, base, workdir)
            log = (workdir / "server.log").open("wb")
            if not args.worker_in_server:  # the worker in a process of its own, as at scale
                env = {**env, "PARTNERLINK_RUN_WORKER": "false"}
            server = start_server(env, port, args.workers, log)
            worker: subprocess.Popen[bytes] | None = None
            try:
                wait_healthy(base, server)
                if not args.worker_in_server:  # started once the server has migrated the database
                    worker = start_worker(env, log)
                token, _profile = connect_store(base, env, workdir)
                requests = http_requests(bodies, port, token)
                # Customers and orders stored, then statistics on them as in service.
                drive(port, requests, args.connections, 0, args.warmup)
                journal_drained(database_url)  # the warm-up's journaled orders, applied
                analyze(database_url)
                if args.worker_after and worker is not None:
                    stop(worker)  # its machine is another: none of this one's CPU
                    worker = None
                parts = {"load generator": own_cpu_seconds}
                if worker is not None:
                    parts["worker"] = partial(process_cpu_seconds, [worker.pid])
                if not is_sqlite:
                    parts["database"] = postgres_cpu_seconds
                rounds, backlog = measure_rounds(
                    args,
                    orders=(port, requests, server.pid, parts),
                    ceiling=(env, workers, bodies, token),
                    # Stopped while the ceiling runs (their polling, a few % of a core, would
                    # slow the ceiling down); PostgreSQL's own housekeeping after the orders'
                    # writes goes on, and is printed.
                    pause=partial(
                        signal_all,
                        [server.pid, *descendants(server.pid)]
                        + ([worker.pid] if worker is not None else []),
                    ),
                    idle=postgres_cpu_seconds if not is_sqlite else lambda: 0.0,
                    drained=lambda: journal_drained(database_url),
                )
                if args.worker_after:
                    worker = start_worker(env, log)
                    backlog = journal_drained(database_url)
                profile_lines: list[str] = []
                if args.profile:
                    profile_lines = run_profiled(server.pid, port, requests, args, workdir)
            finally:
                stop(server)
                if worker is not None:
                    stop(worker)
                log.close()
            for number, (run, top) in enumerate(rounds, 1):
                print(
                    f"round {number}: orders {run.rate:,.0f}/s, ceiling {top.rate:,.0f}/s:"
                    f" {100 * run.rate / top.rate:.0f}%"
                )
            run = Run.combined([run for run, _ in rounds])
            top = Run.combined([top for _, top in rounds])
            report(run, top, database_url, workers, args.connections, workdir)
            report_backlog(run, *backlog, seconds=args.seconds * len(rounds))
            for line in profile_lines:
                print(line)
        finally:
            drop_database()


def run_profiled(
    parent: int, port: int, requests: list[bytes], args: argparse.Namespace, workdir: Path
) -> list[str]:
    from profile_summary import summarise  # bench/profile_summary.py

    pids = server_pids(parent)
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return ["profile: py-spy is not installed (.venv/bin/pip install py-spy)"]
    outputs = [Path(os.environ.get("BENCH_SPY_DIR", workdir)) / f"spy-{pid}.txt" for pid in pids]
    samplers = [
        subprocess.Popen(
            [
                str(spy),
                "record",
                "--pid",
                str(pid),
                "--duration",
                str(int(args.seconds)),
                "--format",
                "raw",
                "--rate",
                "250",
                "--gil",  # the thread holding the GIL: where the server's Python time goes
                "--output",
                str(out),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for pid, out in zip(pids, outputs, strict=True)
    ]
    drive(port, requests, args.connections, 0.5, args.seconds)
    for sampler in samplers:
        sampler.wait(timeout=120)
    return summarise([p for p in outputs if p.exists()])


def report(
    run: Run, top: Run, database_url: str, workers: int, connections: int, workdir: Path
) -> None:
    kind = "SQLite" if database_url.startswith("sqlite") else "PostgreSQL"
    print(f"database: {kind}; server workers: {workers}; connections: {connections}")
    print(
        f"orders:  {run.rate:8,.0f} orders/s   p50 {run.percentile(0.50):6.1f} ms   "
        f"p99 {run.percentile(0.99):6.1f} ms   statuses {dict(run.statuses)}"
    )
    print(
        f"ceiling: {top.rate:8,.0f} requests/s p50 {top.percentile(0.50):6.1f} ms   "
        f"p99 {top.percentile(0.99):6.1f} ms   statuses {dict(top.statuses)}\n"
        "         (no-op FastAPI endpoint parsing the same bodies into OrderIn, same uvicorn)"
    )
    if set(top.statuses) != {200}:
        raise SystemExit("the ceiling did not answer 200 to every request: not comparable")
    print(f"orders reach {100 * run.rate / top.rate:.0f}% of the ceiling")
    if run.latencies and top.latencies:
        print(
            f"server CPU per request: orders {1e6 * run.server_cpu_seconds / len(run.latencies):,.0f} us, "
            f"ceiling {1e6 * top.server_cpu_seconds / len(top.latencies):,.0f} us; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        print(f"CPU an order:   {cpu_line(run)}")
        print(f"CPU a request of the ceiling: {cpu_line(top)}")
        if kind == "PostgreSQL":
            print(
                "beside the ceiling, PostgreSQL's housekeeping after the orders' writes used"
                f" {100 * top.other_cpu_seconds / top.seconds:.1f}% of a core"
            )
    errors = sum(n for status, n in run.statuses.items() if status != 200)
    if errors:
        tail = (workdir / "server.log").read_text(errors="replace")[-2000:]
        print(f"non-200 answers: {errors}; server log tail:\n{tail}")
        raise SystemExit("the orders did not all answer 200: the share above is not comparable")


def cpu_line(run: Run) -> str:
    """Each process's CPU an answer over the measured window, and their sum: on a machine
    the processes keep busy, the two runs' sums set the ratio of their rates."""
    parts = {"server": run.server_cpu_seconds, **run.parts_cpu_seconds}
    each = {name: 1e6 * seconds / len(run.latencies) for name, seconds in parts.items()}
    shown = ", ".join(f"{name} {us:,.0f}" for name, us in each.items())
    return f"{shown}; in all {sum(each.values()):,.0f} us"


def report_backlog(run: Run, held: int, took: float, *, seconds: float) -> None:
    """What acknowledging orders into the journal left to do once the load stopped."""
    if not held:
        print("journal: empty when the load stopped (every order applied as it came)")
        return
    stored = len(run.latencies)
    print(
        f"journal: {held:,} acknowledged orders waiting when the load stopped, applied in "
        f"{took:.1f} s ({held / took:,.0f} orders/s); end to end, the window's {stored:,} "
        f"orders were stored within {seconds + took:.1f} s: {stored / (seconds + took):,.0f} "
        "orders/s sustained"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
