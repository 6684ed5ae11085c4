"""The API references: every status and `code` documented, examples that hold together, the
merchant API in its own document, and Swagger UI served without a CDN."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

PROBLEM = "application/problem+json"
TOKEN_SHAPE = re.compile(r"plk_(at|rt|it|cs|ci|ms)_[A-Za-z0-9_-]{43}")
MERCHANT_PATHS = {
    ("post", "/merchant/api/sessions"),
    ("get", "/merchant/api/profiles"),
    ("post", "/merchant/api/profiles"),
    ("post", "/merchant/api/profiles/{profileId}/stores"),
    ("patch", "/merchant/api/stores/{storeId}"),
    ("post", "/merchant/api/stores/{storeId}/pairing-codes"),
    ("get", "/merchant/api/stores/{storeId}/connections"),
    ("delete", "/merchant/api/connections/{connectionId}"),
    ("get", "/merchant/api/profiles/{profileId}/customers"),
    ("get", "/merchant/api/consents/{integrationToken}"),
    ("post", "/merchant/api/consents/{integrationToken}/approve"),
    ("post", "/merchant/api/consents/{integrationToken}/decline"),
}


def operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, operation in item.items():
            yield method, path, operation


def problem_examples(response: dict[str, Any]) -> dict[str, Any]:
    content = response["content"][PROBLEM]
    assert content["schema"] == {"$ref": "#/components/schemas/Problem"}
    examples: dict[str, Any] = content["examples"]
    return examples


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


@pytest.fixture
def partner_schema(client: TestClient) -> dict[str, Any]:
    return client.get("/openapi.json").json()


@pytest.fixture
def merchant_schema(client: TestClient) -> dict[str, Any]:
    response = client.get("/merchant/api/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_every_partner_operation_lists_its_problems(partner_schema: dict[str, Any]) -> None:
    seen = 0
    for method, path, operation in operations(partner_schema):
        seen += 1
        responses = operation["responses"]
        expected = {"400", "500"}
        if path != "/v1/auth/integration/pair":  # the one call that takes no credential
            expected.add("403")
        if "requestBody" in operation:
            expected.add("413")
        assert expected <= set(responses), (method, path)
        assert "422" not in responses
        for status, response in responses.items():
            if not status.startswith(("4", "5")):
                continue
            examples = problem_examples(response)
            assert examples, (method, path, status)
            for code, example in examples.items():
                body = example["value"]
                assert body["status"] == int(status) and body["code"] == code
                assert body["success"] is False and body["type"] == "about:blank"
                assert f"`{code}`" in response["description"]
        if "requestBody" in operation:
            assert "payload_too_large" in problem_examples(responses["413"])
        assert "internal_error" in problem_examples(responses["500"])
    assert seen >= 12
    problem = partner_schema["components"]["schemas"]["Problem"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "code", "success"}


def test_data_endpoints_document_the_token_refusal(partner_schema: dict[str, Any]) -> None:
    for _method, path, operation in operations(partner_schema):
        if operation.get("security"):
            assert "invalid_token" in problem_examples(operation["responses"]["403"]), path
    credentials = partner_schema["paths"]["/v1/auth/integration"]["post"]["responses"]
    assert set(problem_examples(credentials["400"])) == {"missing_field"}
    assert set(problem_examples(credentials["403"])) == {"invalid_credentials"}
    store = partner_schema["paths"]["/v1/stores"]["put"]["responses"]
    assert {"missing_field", "invalid_field"} <= set(problem_examples(store["400"]))


def test_description_documents_what_no_single_route_answers(
    partner_schema: dict[str, Any], client: TestClient
) -> None:
    description = partner_schema["info"]["description"]
    for code in (
        "missing_version_prefix",
        "not_found",
        "method_not_allowed",
        "payload_too_large",
        "invalid_token",
        "internal_error",
        "unavailable",
    ):
        assert f"`{code}`" in description, code
    # ... and the server answers them as described.
    assert client.get("/stores").json()["code"] == "missing_version_prefix"
    assert client.get("/v1/nowhere").json()["code"] == "not_found"
    assert client.delete("/v1/stores").json()["code"] == "method_not_allowed"


def test_examples_hold_together(partner_schema: dict[str, Any]) -> None:
    tokens = [s for s in strings(partner_schema) if s.startswith("plk_")]
    assert len(tokens) >= 5
    for token in tokens:
        assert TOKEN_SHAPE.fullmatch(token), token

    order_body = partner_schema["components"]["schemas"]["OrderIn"]["examples"][0]
    details = order_body["orderDetails"]
    items = sum(int(i["itemPrice"]) * i["itemQuantity"] for i in details["orderItems"])
    payments = sum(int(p["paymentSum"]) for p in details["orderPayments"])
    assert items == payments == int(order_body["orderPrice"])

    exchanged = partner_schema["components"]["schemas"]["ExchangedTokens"]["examples"][0]
    refreshed = partner_schema["components"]["schemas"]["RefreshedToken"]["examples"][0]
    assert refreshed["expiration"] > exchanged["expiration"]  # a refresh starts a new year
    assert refreshed["accessToken"] != exchanged["accessToken"]


def test_merchant_api_has_its_own_reference(
    partner_schema: dict[str, Any], merchant_schema: dict[str, Any], client: TestClient
) -> None:
    documented = {
        (method, re.sub(r"\{store_id\}", "{storeId}", path))
        for method, path, _ in operations(merchant_schema)
    }
    assert documented >= MERCHANT_PATHS
    assert all(path.startswith("/merchant/api/") for path in merchant_schema["paths"])
    assert all(path.startswith("/v1/") for path in partner_schema["paths"])
    for method, path, operation in operations(merchant_schema):
        assert {"400", "500"} <= set(operation["responses"]), (method, path)
        if not path.endswith("/sessions"):
            assert "not_signed_in" in problem_examples(operation["responses"]["401"])
    sign_in = merchant_schema["paths"]["/merchant/api/sessions"]["post"]["responses"]
    assert "invalid_credentials" in problem_examples(sign_in["401"])
    assert "Problem" in merchant_schema["components"]["schemas"]
    # Each document carries only its own models.
    assert "OrderIn" not in merchant_schema["components"]["schemas"]
    assert "SessionIn" not in partner_schema["components"]["schemas"]
    page = client.get("/merchant/api/docs")
    assert page.status_code == 200 and "/merchant/api/openapi.json" in page.text


@pytest.mark.parametrize("page", ["/docs", "/merchant/api/docs"])
def test_docs_pages_load_nothing_from_elsewhere(client: TestClient, page: str) -> None:
    html = client.get(page)
    assert html.status_code == 200

    urls = re.findall(r'(?:src|href)="([^"]+)"', html.text) + re.findall(
        r"url: '([^']+)'", html.text
    )
    assert urls
    assert not [u for u in urls if not u.startswith("/")], urls
    assert "cdn" not in html.text.lower()
    kinds = {}
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, url
        kinds[url.rsplit(".", 1)[-1]] = response.headers["content-type"]
        if url.endswith(".js"):
            assert "SwaggerUIBundle" in response.text
        if url.endswith(".json"):
            assert json.loads(response.text)["openapi"].startswith("3.")
    assert kinds["js"].startswith("text/javascript")
    assert kinds["css"].startswith("text/css")
