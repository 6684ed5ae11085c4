"""The /v1 rule and the problem body (SPEC.md Endpoints/Versioning, CONTRACT.md §1, §3)."""

from __future__ import annotations

import pytest

from tests.blackbox.box import Box, assert_problem


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/auth/integration"),
        ("GET", "/auth/integration"),
        ("GET", "/auth/integration/token"),
        ("POST", "/auth/token"),
        ("POST", "/auth/integration/pair"),
        ("PUT", "/stores"),
        ("GET", "/stores"),
        ("GET", "/customers"),
        ("POST", "/orders"),
        ("GET", "/orders"),
        ("GET", "/v2/stores"),
        ("GET", "/nothing/here"),
        ("GET", "/"),
    ],
)
def test_path_without_v1_prefix_answers_403_problem(box: Box, method: str, path: str) -> None:
    response = box.http.request(method, path, headers={"Authorization": "Bearer nothing"})
    assert_problem(response, 403)


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/v1/nothing"), ("POST", "/v1/auth/nothing"), ("GET", "/v1/stores/extra/path")],
)
def test_unknown_path_under_v1_answers_404_problem(box: Box, method: str, path: str) -> None:
    assert_problem(box.http.request(method, path), 404)


def test_operational_addresses_answer(box: Box) -> None:
    assert box.http.get("/healthz").status_code == 200
    assert box.http.get("/readyz").status_code == 200
    assert box.http.get("/metrics").status_code == 200
    assert box.http.get("/docs").status_code == 200
    schema = box.http.get("/openapi.json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    for path in (
        "/v1/auth/integration",
        "/v1/auth/integration/token",
        "/v1/auth/token",
        "/v1/auth/integration/pair",
        "/v1/stores",
        "/v1/customers",
        "/v1/orders",
    ):
        assert path in paths


def test_openapi_never_promises_422(box: Box) -> None:
    schema = box.http.get("/openapi.json").json()
    for item in schema["paths"].values():
        for operation in item.values():
            assert "422" not in operation.get("responses", {})


def test_malformed_json_body_answers_400_problem(box: Box) -> None:
    response = box.http.post(
        "/v1/auth/integration/pair",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert_problem(response, 400)


def test_oversized_json_body_answers_413_problem(box: Box) -> None:
    body = b'{"code": 1' + b" " * (1048576 + 10) + b"}"
    response = box.http.post(
        "/v1/auth/integration/pair", content=body, headers={"Content-Type": "application/json"}
    )
    assert_problem(response, 413, "payload_too_large")


@pytest.mark.parametrize(
    ("method", "path"),
    [("DELETE", "/v1/stores"), ("PATCH", "/v1/orders"), ("GET", "/v1/auth/token")],
)
def test_wrong_method_on_a_known_path_answers_a_problem(box: Box, method: str, path: str) -> None:
    response = box.http.request(method, path)
    assert_problem(response, response.status_code)
    assert response.status_code in (403, 404, 405)
