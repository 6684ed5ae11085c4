"""Large uploads stream through in bounded memory; concurrent writers never duplicate."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.customers.ingestion.reader_process import SUBPROCESS_MIN_BYTES
from partnerlink.customers.models import Customer, Upload
from partnerlink.customers.service import resolve_customer
from partnerlink.settings import Settings
from tests.conftest import LiveServer
from tests.customers.conftest import drain_worker, put_file, upload_status, upload_url
from tests.customers.files import distinct_in, numbered_records
from tests.factories import ConnectedStoreFixture, create_connected_store


@pytest.mark.slow
def test_multi_megabyte_upload_streams_to_disk_and_is_ingested(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    count = 45_000
    expected = b"".join(numbered_records(count))
    assert len(expected) > SUBPROCESS_MIN_BYTES  # parsed by the reader process
    url = upload_url(client, connected)
    response = client.put(url, content=numbered_records(count))  # chunked, no Content-Length
    assert response.status_code == 200, response.text
    stored = list(settings.effective_upload_dir.rglob("*.json"))
    assert [p.read_bytes() == expected for p in stored] == [True]
    assert not list(settings.effective_upload_dir.rglob("*.part"))
    drain_worker(app, settings)
    status = upload_status(client, connected, response.json()["uploadId"])
    assert status["status"] == "done"
    assert status["records"] == count
    assert status["created"] == distinct_in(count)
    assert status["unchanged"] == count - distinct_in(count)
    assert not list(settings.effective_upload_dir.rglob("*.json"))  # removed once ingested
    total = session.scalar(
        select(func.count())
        .select_from(Customer)
        .where(Customer.profile_id == connected.profile.id)
    )
    assert total == distinct_in(count)


def _peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])


@pytest.mark.slow
def test_a_large_upload_never_sits_whole_in_server_memory(
    live_env: dict[str, str], connected: ConnectedStoreFixture
) -> None:
    server = LiveServer({**live_env, "PARTNERLINK_RUN_WORKER": "false"})
    server.start()
    try:
        assert server.process is not None
        url = httpx.get(f"{server.url}/v1/customers", headers=connected.auth).json()["uploadUrl"]
        httpx.put(url.replace(url.rsplit("/", 1)[1], "x"), content=b"[]")  # warm up the route
        before = _peak_rss_kib(server.process.pid)
        chunks = numbered_records(400_000)  # about 65 MB, sent chunked
        response = httpx.put(url, content=chunks, timeout=120)
        assert response.status_code == 200, response.text
        growth_mib = (_peak_rss_kib(server.process.pid) - before) / 1024
        assert growth_mib < 25, f"peak memory grew by {growth_mib:.0f} MiB"
    finally:
        server.stop()


def test_concurrent_puts_to_one_url_store_one_file(
    live_server: LiveServer, connected: ConnectedStoreFixture
) -> None:
    url = httpx.get(f"{live_server.url}/v1/customers", headers=connected.auth).json()["uploadUrl"]
    body = b"".join(numbered_records(20_000))
    barrier = threading.Barrier(4)
    answers: list[httpx.Response] = []

    def put() -> None:
        barrier.wait()
        answers.append(httpx.put(url, content=body, timeout=60))

    threads = [threading.Thread(target=put) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(r.status_code for r in answers) == [200, 403, 403, 403]
    assert {r.json()["code"] for r in answers if r.status_code == 403} == {"upload_url_used"}


def test_concurrent_orders_resolve_one_customer(app: FastAPI, session: Session) -> None:
    fixture = create_connected_store(session)
    sessions = app.state.sessionmaker
    barrier = threading.Barrier(6)
    ids: list[int] = []
    failures: list[BaseException] = []

    def resolve(n: int) -> None:
        try:
            with sessions() as own:
                barrier.wait()
                if n % 2:
                    customer = resolve_customer(
                        own,
                        profile_id=fixture.profile.id,
                        default_region="US",
                        email="same@example.com",
                        phone_number="+14155552671",
                        first_name=f"T{n}",
                    )
                else:
                    customer = resolve_customer(
                        own,
                        profile_id=fixture.profile.id,
                        default_region="US",
                        email=None,
                        phone_number="(415) 555-2671",
                    )
                assert customer is not None
                own.commit()
                ids.append(customer.id)
        except BaseException as error:  # reported below, in the test's thread
            failures.append(error)

    threads = [threading.Thread(target=resolve, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    stored = session.execute(
        select(Customer.email, Customer.phone_number).where(
            Customer.profile_id == fixture.profile.id
        )
    ).all()
    # Whatever the interleaving: one customer with the email, at most one phone-only one.
    assert [row for row in stored if row[0] == "same@example.com"] == [
        ("same@example.com", "+14155552671")
    ]
    assert len([row for row in stored if row[0] is None]) <= 1


def test_upload_while_orders_create_the_same_customers(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    count = 3000
    response = put_file(client, upload_url(client, connected), b"".join(numbered_records(count)))
    sessions = app.state.sessionmaker
    stop = threading.Event()

    def orders() -> None:
        n = 0
        while not stop.is_set() and n < count:
            with sessions() as own:
                resolve_customer(
                    own,
                    profile_id=connected.profile.id,
                    default_region="US",
                    email=f"user{n}@example.com",
                    phone_number=None,
                )
                own.commit()
            n += 7

    thread = threading.Thread(target=orders)
    thread.start()
    try:
        drain_worker(app, settings)
    finally:
        stop.set()
        thread.join()
    status = upload_status(client, connected, response.json()["uploadId"])
    assert status["status"] == "done"
    emails = session.scalars(
        select(Customer.email).where(Customer.profile_id == connected.profile.id)
    ).all()
    in_file = {f"user{i}@example.com" for i in range(count) if i % 10 != 9}
    assert len(emails) == len(set(emails))
    assert in_file <= set(emails)


def test_interrupted_upload_leaves_nothing_behind(
    live_server: LiveServer,
    live_env: dict[str, str],
    connected: ConnectedStoreFixture,
    session: Session,
) -> None:
    url = httpx.get(f"{live_server.url}/v1/customers", headers=connected.auth).json()["uploadUrl"]
    path = "/" + url.split("/", 3)[3]
    with socket.create_connection(("127.0.0.1", live_server.port)) as conn:
        conn.sendall(
            f"PUT {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {10 * 1024 * 1024}\r\n\r\n".encode()
        )
        conn.sendall(b"[" + b" " * (3 * 1024 * 1024))
    uploads = Path(live_env["PARTNERLINK_DATA_DIR"]) / "uploads"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not uploads.exists():
        time.sleep(0.05)  # the server made the store's folder before writing
    while time.monotonic() < deadline and any(p.is_file() for p in uploads.rglob("*")):
        time.sleep(0.05)
    assert uploads.exists() and not any(p.is_file() for p in uploads.rglob("*"))
    assert session.scalar(select(func.count()).select_from(Upload)) == 0
    session.rollback()  # SQLite: release the write lock for the server
    # The URL was not used up: the partner can send the file again.
    assert httpx.put(url, content=b"[]").status_code == 200
