"""No input produces a 500; every refusal is a problem body (CONTRACT.md §3)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import httpx
import pytest

from tests.blackbox.box import Box, Connected, assert_problem
from tests.blackbox.conftest import Cast

NUL = "a\x00b"
LONG = "x" * 20000
ODD_TEXT = [NUL, LONG, "\U0001f600 ünïcødé", "\ud800", " ", "' OR 1=1 --"]
ODD_VALUES: list[Any] = [
    None,
    True,
    -1,
    10**30,
    1e308,
    [],
    {},
    [[[]]],
    {"a": {"b": {}}},
    NUL,
    LONG,
    "\ud800",
]


def _deep(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"k": value}
    return value


@pytest.fixture(scope="module")
def conn(box: Box, cast: Cast) -> Connected:
    return box.connect_by_consent(cast.plain, cast.merchant)


def q(text: str) -> str:
    """Percent-encodes anything, lone surrogates included (as the bytes a client could send)."""
    return quote(text.encode("utf-8", "surrogatepass"), safe="")


def _check(response: httpx.Response) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:300])
    if response.status_code >= 400:
        assert_problem(response, response.status_code)


def _json(box: Box, method: str, path: str, body: Any, **kwargs: Any) -> httpx.Response:
    # json.dumps keeps lone surrogates escaped (\\ud800): a valid JSON text a server must survive.
    import json

    return box.http.request(
        method,
        path,
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", **kwargs.pop("headers", {})},
        **kwargs,
    )


@pytest.mark.parametrize("text", ODD_TEXT)
def test_odd_query_parameters_of_endpoints_1_to_4(box: Box, cast: Cast, text: str) -> None:
    creds = f"client_id={q(cast.plain.client_id)}&client_secret={q(cast.plain.client_secret)}"
    t = q(text)
    _check(box.http.post(f"/v1/auth/integration?client_id={t}&client_secret={t}"))
    _check(box.http.get(f"/v1/auth/integration?{creds}&integration_token={t}"))
    _check(box.http.get(f"/v1/auth/integration/token?{creds}&integration_token={t}"))
    _check(box.http.post(f"/v1/auth/token?{creds}&code={t}&grant_type=refresh_token"))
    _check(box.http.post(f"/v1/auth/token?{creds}&code=x&grant_type={t}"))


@pytest.mark.parametrize("value", [*ODD_VALUES, 0, 99999, 1000000, -123456, 123456.0])
def test_odd_pairing_codes(box: Box, value: Any) -> None:
    _check(_json(box, "POST", "/v1/auth/integration/pair", {"code": value}))


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_store_profile_values(box: Box, conn: Connected, value: Any) -> None:
    base = {"storeName": "S", "storeAddress": "A", "storeCountryCode": "US"}
    for field in ("storeName", "storeCountryCode", "storeCurrency", "storePhoneNumber"):
        _check(_json(box, "PUT", "/v1/stores", {**base, field: value}, headers=conn.auth))


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_order_values(box: Box, conn: Connected, value: Any) -> None:
    base = {
        "orderId": "odd-1",
        "orderPrice": "100",
        "orderCurrency": "USD",
        "createdAt": "2024-01-01T00:00:00Z",
    }
    for field in (
        "orderId",
        "orderPrice",
        "orderCurrency",
        "createdAt",
        "updatedAt",
        "customerEmail",
        "customerPhoneNumber",
        "orderDetails",
        "store",
    ):
        _check(_json(box, "POST", "/v1/orders", {**base, field: value}, headers=conn.auth))
    for details in (
        {"orderItems": [{"itemQuantity": value, "itemPrice": "1"}]},
        {"orderPayments": [{"paymentSum": value}]},
        {"orderStatus": value, "extra": value},
    ):
        body = {**base, "orderDetails": details}
        _check(_json(box, "POST", "/v1/orders", body, headers=conn.auth))


@pytest.mark.parametrize(
    "created_at",
    [
        "9999-12-31T23:59:59-14:00",
        "0001-01-01T00:00:00+14:00",
        "2024-02-30T00:00:00Z",
        "2024-01-01T25:00:00Z",
        "20240101",
        "2024-01-01T00:00:00.123456789Z",
    ],
)
def test_odd_timestamps(box: Box, conn: Connected, created_at: str) -> None:
    body = {
        "orderId": "odd-ts",
        "orderPrice": "100",
        "orderCurrency": "USD",
        "createdAt": created_at,
        "updatedAt": created_at,
    }
    _check(_json(box, "POST", "/v1/orders", body, headers=conn.auth))


def test_huge_money_and_deep_details(box: Box, conn: Connected) -> None:
    base = {"orderId": "odd-big", "orderCurrency": "USD", "createdAt": "2024-01-01T00:00:00Z"}
    _check(_json(box, "POST", "/v1/orders", {**base, "orderPrice": "9" * 200}, headers=conn.auth))
    _check(
        _json(
            box,
            "POST",
            "/v1/orders",
            {**base, "orderPrice": "1", "orderDetails": _deep(500)},
            headers=conn.auth,
        )
    )


@pytest.mark.parametrize("text", ODD_TEXT)
def test_odd_ids_in_paths_and_queries(box: Box, cast: Cast, conn: Connected, text: str) -> None:
    t = q(text)
    _check(box.http.get(f"/v1/orders?orderId={t}", headers=conn.auth))
    _check(box.http.get(f"/v1/customers/uploads/{t}", headers=conn.auth))
    _check(box.http.put(f"/v1/uploads/{t}", content=b"[]"))
    auth = cast.merchant.auth
    _check(box.http.get(f"/merchant/api/stores/{t}/connections", headers=auth))
    _check(box.http.delete(f"/merchant/api/connections/{t}", headers=auth))
    _check(box.http.get(f"/merchant/api/profiles/{t}/customers", headers=auth))
    _check(box.http.get(f"/merchant/api/consents/{t}?client_id={t}", headers=auth))
    _check(box.http.patch(f"/merchant/api/stores/{t}", json={"greenInvoices": True}, headers=auth))


@pytest.mark.parametrize("limit", ["-1", "0", "abc", str(10**30), "1.5"])
def test_odd_limits(box: Box, cast: Cast, conn: Connected, limit: str) -> None:
    auth = cast.merchant.auth
    _check(
        box.http.get(
            f"/merchant/api/stores/{conn.store_id}/orders", params={"limit": limit}, headers=auth
        )
    )
    _check(
        box.http.get(
            f"/merchant/api/profiles/{conn.profile_id}/customers",
            params={"limit": limit},
            headers=auth,
        )
    )


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_merchant_bodies(box: Box, cast: Cast, conn: Connected, value: Any) -> None:
    auth = cast.merchant.auth
    _check(_json(box, "POST", "/merchant/api/sessions", {"email": value, "password": value}))
    _check(_json(box, "POST", "/merchant/api/profiles", {"name": value}, headers=auth))
    _check(
        _json(
            box,
            "POST",
            f"/merchant/api/profiles/{conn.profile_id}/stores",
            {"name": value, "address": value, "countryCode": value, "currency": value},
            headers=auth,
        )
    )
    _check(
        _json(
            box,
            "POST",
            f"/merchant/api/stores/{conn.store_id}/pairing-codes",
            {"posType": value},
            headers=auth,
        )
    )
    _check(
        _json(
            box,
            "POST",
            "/merchant/api/consents/nope/approve",
            {"clientId": value, "profileId": value, "storeId": value, "greenInvoices": value},
            headers=auth,
        )
    )


@pytest.mark.parametrize(
    "records",
    [
        [{"email": v, "phoneNumber": v, "firstName": v} for v in ODD_VALUES],
        [None, 1, "x", [], {}],
        [{"email": "deep@example.com", "city": _deep(200)}],
    ],
)
def test_odd_customer_records(box: Box, conn: Connected, records: list[Any]) -> None:
    import json

    url = box.http.get("/v1/customers", headers=conn.auth).json()["uploadUrl"]
    put = httpx.put(url, content=json.dumps(records).encode(), timeout=30)
    _check(put)
    if put.status_code == 200:
        status = box.wait_upload(conn, put.json()["uploadId"])
        assert status["status"] in ("done", "failed")


def test_odd_bearer_headers(box: Box) -> None:
    for value in (b"Bearer \xff\xfe", b"Bearer " + b"a" * 8000, b"Bearer a\tb"):
        _check(box.http.get("/v1/stores", headers={b"Authorization": value}))
        _check(box.http.get("/merchant/api/profiles", headers={b"Authorization": value}))
