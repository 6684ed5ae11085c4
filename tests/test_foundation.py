"""The frame every capability stands on: the /v1 rule, errors, ops endpoints, tokens."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import create_connected_store


def test_path_without_v1_answers_403_problem(client: TestClient) -> None:
    for path in ("/auth/integration", "/stores", "/orders", "/customers", "/"):
        response = client.get(path)
        assert response.status_code == 403, path
        assert response.headers["content-type"] == "application/problem+json"
        body = response.json()
        assert body["status"] == 403 and body["success"] is False and body["code"]


def test_unknown_v1_path_answers_404(client: TestClient) -> None:
    response = client.get("/v1/no-such-thing")
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_health_and_readiness(client: TestClient) -> None:
    assert client.get("/healthz").json() == {"status": "ok"}
    assert client.get("/readyz").status_code == 200
    assert "partnerlink_http_requests_total" in client.get("/metrics").text


def test_security_headers_on_every_answer(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.headers["x-content-type-options"] == "nosniff"
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]


def test_oversized_json_body_answers_413(client: TestClient, session: Session) -> None:
    fixture = create_connected_store(session)
    big = b'{"storeName": "' + b"x" * 2_000_000 + b'"}'
    response = client.put(
        "/v1/stores",
        content=big,
        headers={**fixture.auth, "content-type": "application/json"},
    )
    assert response.status_code == 413
    assert response.json()["code"] == "payload_too_large"


def test_openapi_documents_problem_400_not_422(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    for path, item in schema["paths"].items():
        assert path.startswith("/v1/"), path
        for operation in item.values():
            assert "422" not in operation["responses"], path


def test_undecodable_json_answers_400_problem(client: TestClient, session: Session) -> None:
    fixture = create_connected_store(session)
    response = client.put(
        "/v1/stores",
        content=b"\xff\xfe{",
        headers={**fixture.auth, "content-type": "application/json"},
    )
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
