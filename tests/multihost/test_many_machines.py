"""Two `serve` hosts and a `worker` host, each in its own network namespace (CONTRACT §10).

They share nothing but PostgreSQL, Redis and the S3 bucket, reached over the
network. A partner pairs through one host, uploads through the other and sends
orders to both; the merchant sees every order and customer once, and the
pairing failure budget is spent by both hosts together.
"""

from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

from partnerlink.orders.models import Order
from partnerlink.settings import Settings
from tests.conftest import ON_POSTGRES
from tests.multihost.netns import SERVICES_ADDRESS, Forwarder, Host, hosts
from tests.orders.builders import order_body
from tests.pairing.builders import Shop, create_shop, pair, reserve
from tests.s3 import CREDENTIALS, S3Server, start_s3_server

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ON_POSTGRES, reason="hosts share one database: PostgreSQL only"),
]

PORT = 8000
CUSTOMERS = [
    {"email": "ann@example.com", "firstName": "Ann"},
    {"email": "bob@example.com", "firstName": "Bob"},
    {"phoneNumber": "+14155550111", "firstName": "Cy"},
]


class Process:
    """A `partnerlink` command running inside a host, its output in a file."""

    def __init__(self, host: Host, args: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self.log = log.open("wb")
        self.process = subprocess.Popen(
            host.command(sys.executable, "-m", "partnerlink", *args),
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )

    def wait_healthy(self, url: str) -> None:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exited: {self.log_path.read_text(errors='replace')}")
            try:
                if httpx.get(f"{url}/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.2)
        raise RuntimeError(f"{url} did not start: {self.log_path.read_text(errors='replace')}")

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


def _free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def machines(settings: Settings, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Hosts a and b serving, w working; the services behind SERVICES_ADDRESS."""
    started: list[Process] = []
    closers: list[Any] = []
    with hosts(3) as (a, b, w):
        try:
            database = make_url(settings.database_url)
            postgres = Forwarder(
                SERVICES_ADDRESS, (database.host or "127.0.0.1", database.port or 5432)
            )
            redis = Forwarder(SERVICES_ADDRESS, ("127.0.0.1", 6379))
            closers += [postgres.close, redis.close]
            s3_port = _free_port(SERVICES_ADDRESS)
            s3_process = start_s3_server(SERVICES_ADDRESS, s3_port)
            closers.append(s3_process.terminate)
            s3 = S3Server(f"http://{SERVICES_ADDRESS}:{s3_port}")
            bucket = s3.new_bucket()
            window = random.randint(3_600, 86_400)  # keeps this run's Redis keys its own
            common = {
                **os.environ,
                **CREDENTIALS,
                "PARTNERLINK_DATABASE_URL": database.set(
                    host=SERVICES_ADDRESS, port=postgres.port
                ).render_as_string(hide_password=False),
                "PARTNERLINK_SECRET_KEY": "multi-host-secret-key",
                "PARTNERLINK_RATE_LIMIT_STORAGE": f"redis://{SERVICES_ADDRESS}:{redis.port}",
                "PARTNERLINK_PAIRING_FAILURES_PER_IP": f"1000/{window}seconds",
                "PARTNERLINK_PAIRING_FAILURES_GLOBAL": f"4/{window}seconds",
                "PARTNERLINK_UPLOAD_STORAGE": f"s3://{bucket}/uploads",
                "PARTNERLINK_S3_ENDPOINT_URL": s3.endpoint_url,
                "PARTNERLINK_WORKER_POLL_SECONDS": "0.1",
            }
            urls = {}
            for host in (a, b):
                url = f"http://{host.address}:{PORT}"
                urls[host.name] = url
                env = {
                    **common,
                    "PARTNERLINK_PUBLIC_URL": url,
                    "PARTNERLINK_DATA_DIR": str(tmp_path / host.name),
                    "PARTNERLINK_RUN_WORKER": "false",
                }
                args = ["serve", "--host", host.address, "--port", str(PORT), "--workers", "1"]
                started.append(Process(host, args, env, tmp_path / f"{host.name}.log"))
            env = {**common, "PARTNERLINK_DATA_DIR": str(tmp_path / w.name)}
            started.append(Process(w, ["worker", "--json"], env, tmp_path / f"{w.name}.log"))
            for process, host in zip(started, (a, b), strict=False):
                process.wait_healthy(urls[host.name])
            yield {
                "a": urls[a.name],
                "b": urls[b.name],
                "s3": s3,
                "bucket": bucket,
                "dirs": tmp_path,
            }
        finally:
            for process in started:
                process.stop()
            for close in closers:
                close()


def test_hosts_share_the_database_the_bucket_and_the_failure_budget(
    machines: dict[str, Any], session: Session
) -> None:
    shop: Shop = create_shop(session)
    a, b = machines["a"], machines["b"]
    with httpx.Client(base_url=a, timeout=30) as on_a, httpx.Client(base_url=b, timeout=30) as on_b:
        # The partner connects through host a.
        code = reserve(on_a, shop)
        paired = pair(on_a, code)
        assert paired.status_code == 200, paired.text
        auth = {"Authorization": f"Bearer {paired.json()['access_token']}"}

        # ... takes an upload URL from a and uploads through b.
        upload_url = on_a.get("/v1/customers", headers=auth).json()["uploadUrl"]
        assert upload_url.startswith(a)
        put = httpx.put(b + upload_url.removeprefix(a), json=CUSTOMERS, timeout=30)
        assert put.status_code == 200, put.text
        upload_id = put.json()["uploadId"]

        # ... sends orders to both hosts, and one of them again to the other host.
        bodies = [
            order_body(
                f"MH-{n}",
                customerEmail=f"buyer{n}@example.com",
                customerPhoneNumber=f"+1415555{n:04d}",
            )
            for n in range(6)
        ]
        for n, body in enumerate(bodies):
            answer = (on_a if n % 2 else on_b).post("/v1/orders", json=body, headers=auth)
            assert answer.status_code == 200, answer.text
        assert on_a.post("/v1/orders", json=bodies[0], headers=auth).status_code == 200

        # The worker host ingests the file that host b took in.
        deadline = time.monotonic() + 60
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = on_a.get(f"/v1/customers/uploads/{upload_id}", headers=auth).json()
            if status["status"] in ("done", "failed"):
                break
            time.sleep(0.2)
        assert (status["status"], status["created"]) == ("done", 3), status

        # The merchant, through host b, sees every customer once.
        profile_id = shop.store.profile_id
        listing = on_b.get(
            f"/merchant/api/profiles/{profile_id}/customers",
            params={"limit": 100},
            headers=shop.merchant_auth,
        ).json()
        emails = sorted(c["email"] for c in listing["customers"] if c["email"])
        expected = sorted(
            ["ann@example.com", "bob@example.com"] + [f"buyer{n}@example.com" for n in range(6)]
        )
        assert emails == expected
        assert listing["total"] == len(expected) + 1  # and Cy, by phone only

        # The pairing failure budget (4 failures) is spent by both hosts together.
        for client in (on_a, on_b, on_a, on_b):
            assert pair(client, code).status_code == 404  # used up: a failed redemption
        assert pair(on_a, code).status_code == 429
        assert pair(on_b, code).status_code == 429

    orders = session.scalars(select(Order.order_id).where(Order.store_id == shop.store.id)).all()
    session.rollback()
    assert sorted(orders) == [f"MH-{n}" for n in range(6)]
    assert session.scalar(select(func.count()).select_from(Order)) == 6
    session.rollback()
    # Nothing on the servers' disks; the bucket emptied by the worker.
    assert not list(Path(machines["dirs"]).rglob("*.json"))
    assert machines["s3"].objects(machines["bucket"]) == []
