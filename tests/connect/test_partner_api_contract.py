"""Endpoints 1–4 as documented (OpenAPI) and under odd input (never a 500)."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from tests.connect.conftest import World, new_integration_token

ENDPOINTS = [
    ("post", "/v1/auth/integration", {400: "missing_field", 403: "invalid_credentials"}),
    (
        "get",
        "/v1/auth/integration",
        {400: "missing_field", 403: "invalid_credentials", 404: "unknown_integration_token"},
    ),
    (
        "get",
        "/v1/auth/integration/token",
        {
            400: "not_finished",
            403: "invalid_credentials",
            404: "unknown_integration_token",
            410: "already_exchanged",
        },
    ),
    ("post", "/v1/auth/token", {400: "invalid_grant_type", 403: "invalid_token"}),
]
ODD_VALUES = [
    "\x00",
    "a\x00b",
    "\u2603" * 50,
    "\ud7ff",
    "x" * 20_000,
    "' OR 1=1 --",
    "%",
    " ",
    "null",
    "[]",
    "-1e999",
]


@pytest.mark.parametrize(("method", "path", "errors"), ENDPOINTS)
def test_endpoint_is_documented_with_every_error(
    client: TestClient, method: str, path: str, errors: dict[int, str]
) -> None:
    operation = client.get("/openapi.json").json()["paths"][path][method]
    assert operation["summary"] and operation["description"]
    for parameter in operation["parameters"]:
        assert parameter["in"] == "query" and parameter["required"] is True
        assert parameter["description"], parameter["name"]
    assert "422" not in operation["responses"]
    example = operation["responses"]["200"]["content"]["application/json"]["example"]
    assert example["success"] is True
    for status, code in errors.items():
        assert f"`{code}`" in operation["responses"][str(status)]["description"]


@pytest.mark.parametrize(("method", "path", "_errors"), ENDPOINTS)
def test_odd_query_values_never_cause_a_500(
    client: TestClient, world: World, method: str, path: str, _errors: dict[int, str]
) -> None:
    token = new_integration_token(client, world.partner)
    base = {
        **world.creds,
        "integration_token": token,
        "code": "plk_rt_x",
        "grant_type": "refresh_token",
    }
    used = {
        p["name"] for p in client.get("/openapi.json").json()["paths"][path][method]["parameters"]
    }
    for name in used:
        for odd in ODD_VALUES:
            response = client.request(method, path, params={**base, name: odd})
            assert 400 <= response.status_code < 500, (name, odd, response.text)
            assert response.json()["success"] is False


@pytest.mark.parametrize(("method", "path", "_errors"), ENDPOINTS)
def test_repeated_and_unexpected_parameters_are_harmless(
    client: TestClient, world: World, method: str, path: str, _errors: dict[int, str]
) -> None:
    query = (
        f"client_id=x&client_id={world.partner.client_id}"
        f"&client_secret={world.partner.client_secret}&extra=1&integration_token="
    )
    response = client.request(method, f"{path}?{query}", content=b'{"a": [1, 2')
    # The last of a repeated parameter counts; a body is ignored: no 422, no 500.
    assert response.status_code in (200, 400), response.text
