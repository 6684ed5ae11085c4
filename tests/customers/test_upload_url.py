"""GET /v1/customers and the pre-signed upload PUT: signing, expiry, tampering, reuse, size."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.app import create_app
from partnerlink.customers.models import Customer, Upload
from partnerlink.customers.uploads import InvalidUploadUrl, record_upload, verify_upload_token
from partnerlink.settings import Settings
from partnerlink.tokens.models import Connection
from partnerlink.tokens.service import revoke_connection
from tests.customers.conftest import drain_worker, put_file, upload_url
from tests.factories import ConnectedStoreFixture

PROBLEM = "application/problem+json"
BODY = json.dumps([{"email": "ann@example.com"}]).encode()


def _uploads(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Upload)) or 0
    session.rollback()  # SQLite: a reading transaction would still hold the write lock
    return count


def _stored_files(settings: Settings) -> list[Path]:
    root = settings.effective_upload_dir
    return [p for p in root.rglob("*") if p.is_file()] if root.exists() else []


def test_upload_url_points_at_this_service(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    response = client.get("/v1/customers", headers=connected.auth)
    assert response.status_code == 200
    assert response.json().keys() == {"uploadUrl"}
    assert response.json()["uploadUrl"].startswith("http://testserver/v1/uploads/")


def test_each_request_gets_a_different_url(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    assert upload_url(client, connected) != upload_url(client, connected)


def test_legacy_query_token_is_accepted(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    response = client.get(f"/v1/customers?access_token={connected.access_token}")
    assert response.status_code == 200


@pytest.mark.parametrize(
    "auth", [{}, {"Authorization": "Bearer plk_at_nope"}, {"Authorization": "Basic x"}]
)
def test_upload_url_needs_a_valid_access_token(
    client: TestClient, connected: ConnectedStoreFixture, auth: dict[str, str]
) -> None:
    response = client.get("/v1/customers", headers=auth)
    assert response.status_code == 403
    assert response.json()["code"] == "invalid_token"


def test_put_needs_no_credential_and_answers_upload_id_and_status(
    client: TestClient, connected: ConnectedStoreFixture, session: Session, settings: Settings
) -> None:
    response = put_file(client, upload_url(client, connected), BODY)
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "received" and body["uploadId"]
    upload = session.get(Upload, body["uploadId"])
    assert upload is not None and upload.store_id == connected.store.id
    assert upload.size_bytes == len(BODY)
    assert [p.read_bytes() for p in _stored_files(settings)] == [BODY]


def test_second_put_to_the_same_url_answers_403_upload_url_used(
    client: TestClient, connected: ConnectedStoreFixture, session: Session
) -> None:
    url = upload_url(client, connected)
    assert put_file(client, url, BODY).status_code == 200
    again = put_file(client, url, BODY)
    assert again.status_code == 403
    assert again.headers["content-type"] == PROBLEM
    assert again.json()["code"] == "upload_url_used"
    assert _uploads(session) == 1


def test_put_to_a_revoked_connections_url_answers_403_and_stores_nothing(
    client: TestClient, connected: ConnectedStoreFixture, session: Session, settings: Settings
) -> None:
    url = upload_url(client, connected)
    credentials = {
        "client_id": connected.partner.client_id,
        "client_secret": connected.partner.client_secret,
        "token": connected.access_token,
    }
    assert client.post("/v1/auth/revoke", params=credentials).status_code == 200

    refused = put_file(client, url, BODY)

    assert refused.status_code == 403
    assert refused.headers["content-type"] == PROBLEM
    assert refused.json()["code"] == "invalid_upload_url"
    assert _uploads(session) == 0
    assert _stored_files(settings) == []


def test_a_file_whose_connection_was_revoked_while_it_arrived_is_not_recorded(
    client: TestClient, connected: ConnectedStoreFixture, session: Session, settings: Settings
) -> None:
    grant = verify_upload_token(
        settings=settings, token=upload_url(client, connected).split("/")[-1]
    )
    connection = session.get(Connection, grant.connection_id)
    assert connection is not None
    revoke_connection(session, connection, reason="merchant")
    session.commit()

    with pytest.raises(InvalidUploadUrl):
        record_upload(session, grant=grant, upload_id="u-1", storage_key="k", size_bytes=1)
    session.rollback()

    assert _uploads(session) == 0


def test_a_file_received_before_its_connection_was_revoked_is_not_ingested(
    client: TestClient,
    app: FastAPI,
    connected: ConnectedStoreFixture,
    session: Session,
    settings: Settings,
) -> None:
    upload_id = put_file(client, upload_url(client, connected), BODY).json()["uploadId"]
    credentials = {
        "client_id": connected.partner.client_id,
        "client_secret": connected.partner.client_secret,
        "token": connected.access_token,
    }
    assert client.post("/v1/auth/revoke", params=credentials).status_code == 200

    drain_worker(app, settings)

    upload = session.get(Upload, upload_id)
    assert upload is not None
    assert (upload.status, upload.failure_reason) == (
        "failed",
        "the connection of this upload was revoked",
    )
    assert session.scalar(select(func.count()).select_from(Customer)) == 0


@pytest.mark.parametrize(
    "mangle",
    [
        lambda token: token[:-1] + ("A" if token[-1] != "A" else "B"),  # signature
        lambda token: token.replace(".", ".x", 1),  # nonce
        lambda token: "0" + token,  # store id
        lambda token: token.rsplit(".", 2)[0] + ".9999999999." + token.rsplit(".", 1)[1],  # expiry
        lambda token: "nonsense",
        lambda token: token + "." + token,
    ],
)
def test_tampered_url_answers_403_invalid_upload_url(
    client: TestClient, connected: ConnectedStoreFixture, session: Session, mangle: object
) -> None:
    url = upload_url(client, connected)
    base, token = url.rsplit("/", 1)
    response = put_file(client, f"{base}/{mangle(token)}", BODY)  # type: ignore[operator]
    assert response.status_code == 403
    assert response.json()["code"] == "invalid_upload_url"
    assert response.headers["content-type"] == PROBLEM
    assert _uploads(session) == 0


def test_url_signed_with_another_key_is_refused(
    client: TestClient, connected: ConnectedStoreFixture, settings: Settings
) -> None:
    other = create_app(settings.model_copy(update={"secret_key": "another-key"}))
    with TestClient(other) as other_client:
        url = upload_url(other_client, connected)
    assert put_file(client, url, BODY).json()["code"] == "invalid_upload_url"


@pytest.fixture
def short_lived(settings: Settings) -> Iterator[tuple[FastAPI, TestClient]]:
    app = create_app(settings.model_copy(update={"upload_url_ttl_seconds": 1}))
    with TestClient(app) as client:
        yield app, client


def test_expired_url_answers_403_upload_url_expired(
    short_lived: tuple[FastAPI, TestClient], connected: ConnectedStoreFixture, session: Session
) -> None:
    _, client = short_lived
    url = upload_url(client, connected)
    time.sleep(1.1)
    response = put_file(client, url, BODY)
    assert response.status_code == 403
    assert response.json()["code"] == "upload_url_expired"
    assert _uploads(session) == 0


@pytest.fixture
def small_limit(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings.model_copy(update={"max_upload_bytes": 1000}))
    with TestClient(app) as client:
        yield client


def test_declared_size_over_the_limit_answers_413(
    small_limit: TestClient, connected: ConnectedStoreFixture, settings: Settings, session: Session
) -> None:
    response = put_file(small_limit, upload_url(small_limit, connected), b"[" + b" " * 2000 + b"]")
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert _stored_files(settings) == []
    assert _uploads(session) == 0


def test_streamed_body_over_the_limit_answers_413_and_keeps_nothing(
    small_limit: TestClient, connected: ConnectedStoreFixture, settings: Settings, session: Session
) -> None:
    def chunks() -> Iterator[bytes]:  # no Content-Length: sent chunked
        for _ in range(10):
            yield b" " * 300

    url = upload_url(small_limit, connected)
    response = small_limit.put(url, content=chunks())
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"
    assert _stored_files(settings) == []
    assert _uploads(session) == 0
    # The URL was not used up by the refused body.
    assert put_file(small_limit, url, BODY).status_code == 200


def test_body_at_the_limit_is_accepted(
    small_limit: TestClient, connected: ConnectedStoreFixture
) -> None:
    body = b"[" + b" " * 998 + b"]"
    assert put_file(small_limit, upload_url(small_limit, connected), body).status_code == 200


def test_upload_path_is_exempt_from_the_json_body_limit(
    client: TestClient, connected: ConnectedStoreFixture, settings: Settings
) -> None:
    records = [{"email": f"user{i}@example.com", "firstName": "x" * 50} for i in range(20000)]
    body = json.dumps(records).encode()
    assert len(body) > settings.max_body_bytes
    response = put_file(client, upload_url(client, connected), body)
    assert response.status_code == 200


def test_other_methods_on_the_upload_url_are_refused(
    client: TestClient, connected: ConnectedStoreFixture
) -> None:
    url = upload_url(client, connected)
    assert client.get(url).status_code == 405
    assert client.post(url, content=BODY).status_code == 405
