"""SIGKILL in the middle of a large ingestion: the upload resumes by itself, nothing doubles."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.customers.models import Customer, Upload
from tests.conftest import LiveServer
from tests.customers.files import distinct_in, numbered_records
from tests.factories import ConnectedStoreFixture

RECORDS = 150_000
FAST_LEASE = {"PARTNERLINK_UPLOAD_LEASE_SECONDS": "2", "PARTNERLINK_WORKER_POLL_SECONDS": "0.1"}


def _status(base: str, connected: ConnectedStoreFixture, upload_id: str) -> Any:
    response = httpx.get(
        f"{base}/v1/customers/uploads/{upload_id}", headers=connected.auth, timeout=30
    )
    assert response.status_code == 200, response.text
    return response.json()


def _upload(base: str, connected: ConnectedStoreFixture) -> str:
    url = httpx.get(f"{base}/v1/customers", headers=connected.auth).json()["uploadUrl"]
    response = httpx.put(url, content=b"".join(numbered_records(RECORDS)), timeout=120)
    assert response.status_code == 200, response.text
    upload_id: str = response.json()["uploadId"]
    return upload_id


def _wait_until_part_done(base: str, connected: ConnectedStoreFixture, upload_id: str) -> int:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        status = _status(base, connected, upload_id)
        assert status["status"] != "done", "ingestion finished before it could be interrupted"
        if status["status"] == "processing" and status["records"] >= 10_000:
            return int(status["records"])
        time.sleep(0.05)
    raise AssertionError("ingestion did not start")


def _wait_until_finished(base: str, connected: ConnectedStoreFixture, upload_id: str) -> Any:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status = _status(base, connected, upload_id)
        if status["status"] in ("done", "failed"):
            return status
        time.sleep(0.2)
    raise AssertionError("ingestion did not finish after the restart")


def _assert_whole_and_unduplicated(
    session: Session, connected: ConnectedStoreFixture, status: Any, upload_id: str
) -> None:
    assert status["status"] == "done", status
    assert status["records"] == RECORDS
    assert status["created"] == distinct_in(RECORDS)
    assert (
        status["created"] + status["updated"] + status["unchanged"] + status["rejected"] == RECORDS
    )
    emails = session.scalars(
        select(Customer.email).where(Customer.profile_id == connected.profile.id)
    ).all()
    assert len(emails) == len(set(emails)) == distinct_in(RECORDS)
    phones = session.scalar(
        select(func.count(func.distinct(Customer.phone_number))).where(
            Customer.profile_id == connected.profile.id
        )
    )
    assert phones == distinct_in(RECORDS)
    upload = session.get(Upload, upload_id)
    assert upload is not None and upload.attempts == 2  # resumed once, not restarted in a loop


def _no_reader_left(data_dir: str) -> None:
    """The killed worker's reader child exits too (its pipe broke)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = subprocess.run(
            ["pgrep", "-f", "partnerlink.customers.ingestion.reader_process"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.split()
        mine = [pid for pid in found if _environ_has(pid, data_dir)]
        if not mine:
            return
        time.sleep(0.2)
    raise AssertionError("the reader process outlived its worker")


def _environ_has(pid: str, data_dir: str) -> bool:
    try:
        return data_dir.encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False


@pytest.mark.slow
def test_killed_server_resumes_the_upload_after_restart(
    live_env: dict[str, str], connected: ConnectedStoreFixture, session: Session
) -> None:
    env = {**live_env, **FAST_LEASE}
    first = LiveServer(env)
    first.start()
    try:
        upload_id = _upload(first.url, connected)
        _wait_until_part_done(first.url, connected, upload_id)
        assert first.process is not None
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
    finally:
        first.stop()
    _no_reader_left(live_env["PARTNERLINK_DATA_DIR"])
    second = LiveServer(env)
    second.start()
    try:
        status = _wait_until_finished(second.url, connected, upload_id)
    finally:
        second.stop()
    _assert_whole_and_unduplicated(session, connected, status, upload_id)


@pytest.mark.slow
def test_killed_worker_process_resumes_the_upload_after_restart(
    live_env: dict[str, str], connected: ConnectedStoreFixture, session: Session
) -> None:
    server = LiveServer({**live_env, **FAST_LEASE, "PARTNERLINK_RUN_WORKER": "false"})
    server.start()
    worker_env = {**os.environ, **live_env, **FAST_LEASE}

    def start_worker() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            [sys.executable, "-m", "partnerlink", "worker", "--json"],
            env=worker_env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    try:
        upload_id = _upload(server.url, connected)
        worker = start_worker()
        try:
            _wait_until_part_done(server.url, connected, upload_id)
            worker.send_signal(signal.SIGKILL)
            worker.wait()
            _no_reader_left(live_env["PARTNERLINK_DATA_DIR"])
            worker = start_worker()
            status = _wait_until_finished(server.url, connected, upload_id)
        finally:
            worker.terminate()
            worker.wait(timeout=30)
    finally:
        server.stop()
    _assert_whole_and_unduplicated(session, connected, status, upload_id)
