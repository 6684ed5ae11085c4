"""Customer files in an S3-compatible bucket (CONTRACT §10), against a real local S3 server.

The whole flow goes through the app (and a live `partnerlink serve`): the PUT
streams into the bucket, the worker streams it back, nothing lands on the
server's disk, and the upload URL's rules are the ones of the file store.
"""

from __future__ import annotations

import json
import pickle
import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.customers.ingestion.reader_process import SUBPROCESS_MIN_BYTES
from partnerlink.customers.models import Customer, Upload
from partnerlink.customers.storage import UploadTooLarge
from partnerlink.customers.storage.configured import upload_storage
from partnerlink.customers.storage.s3 import PART_BYTES, S3UploadStorage
from partnerlink.settings import Settings
from tests.conftest import LiveServer
from tests.customers.conftest import drain_worker, put_file, upload_status, upload_url
from tests.factories import ConnectedStoreFixture
from tests.s3 import CREDENTIALS, S3Server, s3_server

__all__ = ["s3_server"]  # the fixture, used by name

RECORDS = [
    {"email": "ann@example.com", "firstName": "Ann"},
    {"phoneNumber": "+14155550100", "firstName": "Bob"},
    {"email": "ANN@example.com", "lastName": "Again"},
]


@pytest.fixture
def bucket(s3_server: S3Server) -> str:
    return s3_server.new_bucket()


@pytest.fixture
def settings(settings: Settings, s3_server: S3Server, bucket: str) -> Settings:
    return settings.model_copy(
        update={
            "upload_storage": f"s3://{bucket}/customer-files",
            "s3_endpoint_url": s3_server.endpoint_url,
        }
    )


def _customers(session: Session, connected: ConnectedStoreFixture) -> int:
    count = session.scalar(
        select(func.count())
        .select_from(Customer)
        .where(Customer.profile_id == connected.profile.id)
    )
    session.rollback()
    return count or 0


def _no_local_files(settings: Settings) -> None:
    root = settings.effective_upload_dir
    assert not root.exists() or not any(p.is_file() for p in root.rglob("*"))


def test_settings_choose_the_s3_storage(settings: Settings, bucket: str) -> None:
    storage = upload_storage(settings)
    assert isinstance(storage, S3UploadStorage)
    assert (storage.bucket, storage.prefix) == (bucket, "customer-files")
    with pytest.raises(ValueError, match="s3://bucket/prefix"):
        Settings(upload_storage="s3:/no-bucket")


def test_upload_is_stored_in_the_bucket_and_ingested_from_it(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
    s3_server: S3Server,
    bucket: str,
) -> None:
    response = put_file(client, upload_url(client, connected), json.dumps(RECORDS).encode())
    assert response.status_code == 200, response.text
    upload_id = response.json()["uploadId"]
    key = session.scalar(select(Upload.storage_key).where(Upload.id == upload_id))
    session.rollback()
    assert s3_server.objects(bucket) == [f"customer-files/{key}"]
    _no_local_files(settings)

    drain_worker(app, settings)
    status = upload_status(client, connected, upload_id)
    assert (status["status"], status["records"], status["created"]) == ("done", 3, 2)
    assert _customers(session, connected) == 2
    assert s3_server.objects(bucket) == []  # removed once ingested
    _no_local_files(settings)


def _padded_file(size: int) -> bytes:
    """A valid customer file of about `size` bytes: records, then a long run of blanks."""
    head = json.dumps(RECORDS).encode()[:-1]
    return head + b" " * (size - len(head) - 1) + b"]"


def test_large_upload_goes_multipart_and_the_reader_process_streams_it_back(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
    s3_server: S3Server,
    bucket: str,
) -> None:
    body = _padded_file(2 * PART_BYTES + 12345)
    assert len(body) > SUBPROCESS_MIN_BYTES  # parsed in the reader process, which opens S3 itself

    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        for start in range(0, len(body), 65536):
            yield body[start : start + 65536]

    response = client.put(upload_url(client, connected), content=chunks())
    assert response.status_code == 200, response.text
    upload_id = response.json()["uploadId"]
    key = session.scalar(select(Upload.storage_key).where(Upload.id == upload_id))
    session.rollback()
    head = s3_server.client().head_object(Bucket=bucket, Key=f"customer-files/{key}")
    assert head["ContentLength"] == len(body)
    assert head["ETag"].strip('"').endswith("-3")  # three parts: 8 MiB, 8 MiB, the rest
    _no_local_files(settings)

    drain_worker(app, settings)
    status = upload_status(client, connected, upload_id)
    assert (status["status"], status["records"], status["created"]) == ("done", 3, 2)
    assert s3_server.objects(bucket) == []
    assert s3_server.multipart_uploads(bucket) == []


def test_too_large_upload_answers_413_and_leaves_no_object(
    settings: Settings,
    connected: ConnectedStoreFixture,
    session: Session,
    s3_server: S3Server,
    bucket: str,
) -> None:
    limit = PART_BYTES + PART_BYTES // 2  # past one whole part: a multipart upload was begun
    app = create_app(settings.model_copy(update={"max_upload_bytes": limit}))

    def chunks() -> Iterator[bytes]:  # no Content-Length: only the stream shows the size
        for _ in range(0, 2 * PART_BYTES, 65536):
            yield b" " * 65536

    with TestClient(app) as client:
        url = upload_url(client, connected)
        response = client.put(url, content=chunks())
        assert response.status_code == 413
        assert response.json()["code"] == "payload_too_large"
        assert s3_server.objects(bucket) == []
        assert s3_server.multipart_uploads(bucket) == []  # aborted, no parts kept
        assert session.scalar(select(func.count()).select_from(Upload)) == 0
        session.rollback()
        # The refused body did not use the URL up.
        assert put_file(client, url, json.dumps(RECORDS).encode()).status_code == 200


def test_second_put_answers_403_upload_url_used_and_stores_one_object(
    client: TestClient, connected: ConnectedStoreFixture, s3_server: S3Server, bucket: str
) -> None:
    url = upload_url(client, connected)
    body = json.dumps(RECORDS).encode()
    assert put_file(client, url, body).status_code == 200
    again = put_file(client, url, body)
    assert again.status_code == 403
    assert again.json()["code"] == "upload_url_used"
    assert len(s3_server.objects(bucket)) == 1


def test_missing_object_fails_the_upload_not_the_worker(
    client: TestClient,
    app: FastAPI,
    settings: Settings,
    connected: ConnectedStoreFixture,
    s3_server: S3Server,
    bucket: str,
) -> None:
    response = put_file(client, upload_url(client, connected), json.dumps(RECORDS).encode())
    assert response.status_code == 200
    (name,) = s3_server.objects(bucket)
    s3_server.client().delete_object(Bucket=bucket, Key=name)
    drain_worker(app, settings)
    status = upload_status(client, connected, response.json()["uploadId"])
    assert status["status"] == "failed"
    assert "the stored file is missing" in json.dumps(status)


def test_storage_pickles_without_its_client_and_reads_seeking(
    settings: Settings, s3_server: S3Server, bucket: str
) -> None:
    storage = upload_storage(settings)

    async def one(data: bytes) -> Any:
        yield data

    async def save() -> int:
        return await storage.save("k.json", one(b"0123456789"), max_bytes=100)

    assert anyio.run(save) == 10
    copy = pickle.loads(pickle.dumps(storage))  # noqa: S301 - our own bytes
    with copy.open("k.json") as stream:
        assert stream.read(3) == b"012"
        stream.seek(1)
        assert stream.read() == b"123456789"
        stream.seek(0)
        assert stream.read(2) == b"01"
    with pytest.raises(FileNotFoundError):
        copy.open("missing.json")
    with pytest.raises(UploadTooLarge):
        anyio.run(lambda: storage.save("big.json", one(b"x" * 101), max_bytes=100))
    copy.delete("k.json")
    copy.delete("k.json")  # a missing object is not an error
    assert s3_server.objects(bucket) == []


def test_abandoned_multipart_upload_is_swept(
    settings: Settings, s3_server: S3Server, bucket: str
) -> None:
    client = s3_server.client()
    mine = client.create_multipart_upload(Bucket=bucket, Key="customer-files/s/1/u.json")
    client.upload_part(
        Bucket=bucket,
        Key="customer-files/s/1/u.json",
        UploadId=mine["UploadId"],
        PartNumber=1,
        Body=b"[",
    )
    client.create_multipart_upload(Bucket=bucket, Key="elsewhere/other.json")
    storage = upload_storage(settings)
    assert storage.sweep_partial(3600) == 0  # a part was written just now
    assert storage.sweep_partial(-1) == 1
    assert s3_server.multipart_uploads(bucket) == ["elsewhere/other.json"]  # not under our prefix


@pytest.mark.slow
def test_live_server_with_its_worker_ingests_from_the_bucket(
    live_env: dict[str, str],
    connected: ConnectedStoreFixture,
    session: Session,
    s3_server: S3Server,
    bucket: str,
    settings: Settings,
) -> None:
    env = {
        **live_env,
        **CREDENTIALS,
        "PARTNERLINK_UPLOAD_STORAGE": f"s3://{bucket}/live",
        "PARTNERLINK_S3_ENDPOINT_URL": s3_server.endpoint_url,
        "PARTNERLINK_RUN_WORKER": "true",
        "PARTNERLINK_WORKER_POLL_SECONDS": "0.1",
    }
    server = LiveServer(env)
    try:
        server.start()
        url = httpx.get(f"{server.url}/v1/customers", headers=connected.auth).json()["uploadUrl"]
        response = httpx.put(url, content=json.dumps(RECORDS).encode(), timeout=30)
        assert response.status_code == 200, response.text
        upload_id = response.json()["uploadId"]
        again = httpx.put(url, content=b"[]", timeout=30)
        assert (again.status_code, again.json()["code"]) == (403, "upload_url_used")
        deadline = time.monotonic() + 60
        status: dict[str, Any] = {}
        while time.monotonic() < deadline:
            status = httpx.get(
                f"{server.url}/v1/customers/uploads/{upload_id}", headers=connected.auth
            ).json()
            if status["status"] in ("done", "failed"):
                break
            time.sleep(0.1)
        assert (status["status"], status["created"]) == ("done", 2), status
    finally:
        server.stop()
    assert _customers(session, connected) == 2
    assert s3_server.objects(bucket) == []
    _no_local_files(settings)
