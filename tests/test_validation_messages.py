"""What a refused request says, on the partner API and the merchant API alike: the content
type, invalid JSON, and every validation message in our words (strings in characters)."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from fastapi.testclient import TestClient
from pydantic_core.core_schema import ErrorType
from sqlalchemy.orm import Session

from partnerlink.validation import message_for
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.merchant.helpers import sign_in
from tests.orders.builders import count_orders, order_body

PYDANTIC_WORDING = ("Input should", "should have", "String should", "List should", "Value error")


@pytest.fixture
def shop(session: Session) -> ConnectedStoreFixture:
    return create_connected_store(session)


def _headers(
    client: TestClient, shop: ConnectedStoreFixture, who: str, content_type: str | None
) -> dict[str, str]:
    auth = {"partner": shop.auth, "merchant": sign_in(client), "nobody": {}}[who]
    return {**auth, **({"content-type": content_type} if content_type else {})}


# (method, path, who calls, a body the route would accept as JSON)
ROUTES = [
    ("POST", "/v1/orders", "partner", order_body()),
    ("PUT", "/v1/stores", "partner", {"storeName": "B", "storeAddress": "1", "storeCountryCode": "US"}),
    ("POST", "/v1/auth/integration/pair", "nobody", {"code": 123456}),
    ("POST", "/merchant/api/sessions", "nobody", {"email": "a@example.com", "password": "x"}),
    ("POST", "/merchant/api/profiles", "merchant", {"name": "Second"}),
]  # fmt: skip


@pytest.mark.parametrize(("method", "path", "who", "body"), ROUTES)
@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", None])
def test_a_json_body_of_another_content_type_says_it_must_be_application_json(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    method: str,
    path: str,
    who: str,
    body: dict[str, Any],
    content_type: str | None,
) -> None:
    headers = _headers(client, shop, who, content_type)

    response = client.request(method, path, content=json.dumps(body), headers=headers)

    assert response.status_code == 400, response.text
    problem = response.json()
    assert problem["code"] == "invalid_content_type"
    assert "application/json" in problem["detail"]
    assert (content_type or "no Content-Type") in problem["detail"]
    assert problem["errors"] == [{"field": "Content-Type", "message": "must be application/json"}]
    assert count_orders(session) == 0


@pytest.mark.parametrize(("method", "path", "who", "body"), ROUTES)
def test_invalid_json_names_the_position(
    client: TestClient,
    shop: ConnectedStoreFixture,
    method: str,
    path: str,
    who: str,
    body: dict[str, Any],
) -> None:
    text = json.dumps(body)
    broken = text[:-1] + ',"x" 1}'  # a missing colon near the end
    with pytest.raises(json.JSONDecodeError) as decoding:
        json.loads(broken)
    headers = _headers(client, shop, who, "application/json")

    response = client.request(method, path, content=broken, headers=headers)

    assert response.status_code == 400
    problem = response.json()
    assert problem["code"] == "invalid_field"
    [error] = problem["errors"]
    assert error["field"] == "body"
    assert error["message"].startswith(f"invalid JSON at position {decoding.value.pos}")
    assert problem["detail"] == f"body: {error['message']}"


def _post_order(client: TestClient, shop: ConnectedStoreFixture, **overrides: Any) -> Any:
    return client.post(
        "/v1/orders",
        content=json.dumps(order_body(**overrides)),
        headers={**shop.auth, "content-type": "application/json"},
    )


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"customerFirstName": "x" * 10_000}, "customerFirstName", "must be at most 200 characters"),
        ({"orderId": "x" * 201}, "orderId", "must be at most 200 characters"),
        ({"orderPrice": 2400}, "orderPrice", "must be a string"),
        ({"orderDetails": {"orderItems": "soup"}}, "orderDetails.orderItems", "must be a JSON array"),
        ({"orderDetails": {"orderItems": [{}] * 10_001}}, "orderDetails.orderItems", "must be at most 10000 items"),
        ({"orderDetails": {"orderItems": [{"itemQuantity": "2"}]}}, "orderDetails.orderItems[0].itemQuantity", "must be an integer"),
        ({"orderDetails": {"orderItems": [{"itemQuantity": 10**30}]}}, "orderDetails.orderItems[0].itemQuantity", "must be less than 9223372036854775808"),
        ({"orderDetails": {"orderPayments": [{"paymentLast4": "12345"}]}}, "orderDetails.orderPayments[0].paymentLast4", "must be at most 4 characters"),
        ({"orderDetails": [1]}, "orderDetails", "must be a JSON object"),
        ({"store": {"storeName": "B", "storeAddress": "1", "storeCountryCode": "US", "storeCity": "y" * 201}}, "store.storeCity", "must be at most 200 characters"),
    ],
)  # fmt: skip
def test_order_validation_messages_are_ours(
    client: TestClient,
    shop: ConnectedStoreFixture,
    session: Session,
    overrides: dict[str, Any],
    field: str,
    message: str,
) -> None:
    response = _post_order(client, shop, **overrides)

    assert response.status_code == 400
    problem = response.json()
    assert problem["errors"] == [{"field": field, "message": message}]
    assert problem["detail"] == f"{field}: {message}"
    assert count_orders(session) == 0


@pytest.mark.parametrize("price", ["1.50", "12 EUR", "--1", "1" * 19, "-"])
def test_a_bad_price_says_what_is_accepted(
    client: TestClient, shop: ConnectedStoreFixture, price: str
) -> None:
    response = _post_order(client, shop, orderPrice=price)

    assert response.status_code == 400
    message = response.json()["errors"][0]["message"]
    assert "optional minus sign" in message and "minor units" in message
    assert "must be a string of digits" not in message


def test_a_negative_price_is_accepted_as_the_message_says(
    client: TestClient, shop: ConnectedStoreFixture
) -> None:
    assert _post_order(client, shop, orderPrice="-100").status_code == 200


@pytest.mark.parametrize(
    ("path", "body", "field", "message"),
    [
        ("/merchant/api/sessions", {"email": "a" * 400, "password": "x"}, "email", "must be at most 320 characters"),
        ("/merchant/api/sessions", {"email": 7, "password": "x"}, "email", "must be a string"),
        ("/merchant/api/sessions", {"email": "a@example.com", "password": "x" * 2000}, "password", "must be at most 1024 characters"),
        ("/v1/auth/integration/pair", {"code": "12"}, "code", "must be a JSON number"),
        ("/v1/auth/integration/pair", [], "body", "must be a JSON object"),
    ],
)  # fmt: skip
def test_messages_without_signing_in_are_ours(
    client: TestClient, path: str, body: Any, field: str, message: str
) -> None:
    response = client.post(path, json=body)

    assert response.status_code == 400
    assert response.json()["errors"] == [{"field": field, "message": message}]


def test_merchant_api_messages_are_ours(client: TestClient, shop: ConnectedStoreFixture) -> None:
    auth = sign_in(client)
    cases = [
        ("POST", "/merchant/api/profiles", {"name": ["x"]}, "name", "must be a string"),
        ("PATCH", f"/merchant/api/stores/{shop.store.id}", {"greenInvoices": "yes"},
         "greenInvoices", "must be true or false"),
        ("POST", "/merchant/api/consents/plk_it_x/approve", {"clientId": ""},
         "clientId", "must not be empty"),
        ("POST", "/merchant/api/consents/plk_it_x/approve", {"clientId": "a\u0001b"},
         "clientId", "contains characters that are not allowed"),
        ("GET", f"/merchant/api/stores/{shop.store.id}/orders?limit=many", None,
         "limit", "must be an integer"),
        ("GET", f"/merchant/api/stores/{shop.store.id}/orders?limit=0", None,
         "limit", "must be at least 1"),
    ]  # fmt: skip
    for method, path, body, field, message in cases:
        response = client.request(method, path, json=body, headers=auth)
        assert response.status_code == 400, (path, response.text)
        assert response.json()["errors"] == [{"field": field, "message": message}], path


def test_a_missing_field_is_named_in_the_detail(client: TestClient) -> None:
    response = client.post("/merchant/api/sessions", json={"email": 7})

    problem = response.json()
    assert problem["code"] == "missing_field"
    assert problem["detail"] == "password is required"
    assert {"field": "email", "message": "must be a string"} in problem["errors"]


@pytest.mark.parametrize("kind", sorted(typing.get_args(ErrorType)))
def test_no_pydantic_error_type_reaches_a_caller_in_pydantic_words(kind: str) -> None:
    error = {
        "type": kind,
        "loc": ("body", "field"),
        "msg": "Input should be pydantic's own wording",
        "input": "text",
        "ctx": {},
    }

    message = message_for(error)

    if kind in ("value_error", "assertion_error"):  # only our own validators raise these
        assert message == error["msg"]
    else:
        assert message != error["msg"]
        assert not any(words in message for words in PYDANTIC_WORDING)
