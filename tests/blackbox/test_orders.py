"""Endpoints 9–10 of SPEC.md, order rules and conversion classes of CONTRACT.md §6."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.blackbox.box import Box, Connected, assert_problem, unique
from tests.blackbox.conftest import Cast, write_jsonl

ORDER_LIST_FIELDS = {
    "orderId",
    "orderPrice",
    "orderCurrency",
    "orderStatus",
    "conversion",
    "createdAt",
}
BASE = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)


def iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def order(order_id: str | None = None, **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "orderId": order_id or unique("ord"),
        "orderPrice": "2400",
        "orderCurrency": "USD",
        "createdAt": iso(BASE),
    }
    body.update(fields)
    return body


def closed(order_id: str | None = None, **fields: Any) -> dict[str, Any]:
    details = {
        "orderStatus": "CLOSED",
        "orderType": "dine-in",
        "orderItems": [
            {
                "itemId": "i1",
                "itemName": "Espresso",
                "itemPrice": "300",
                "itemQuantity": 2,
                "itemTax": "24",
            }
        ],
        "orderPayments": [
            {
                "paymentType": "card",
                "paymentId": "p1",
                "paymentSum": "624",
                "paymentCardType": "visa",
                "paymentLast4": "4242",
            }
        ],
    }
    return order(
        order_id,
        customerFirstName="Rosa",
        customerLastName="Diaz",
        customerPhoneNumber="+15035550150",
        orderDetails=details,
        **fields,
    )


def post(box: Box, conn: Connected, body: Any) -> httpx.Response:
    return box.http.post("/v1/orders", json=body, headers=conn.auth)


def send(box: Box, conn: Connected, body: Any) -> None:
    r = post(box, conn, body)
    assert r.status_code == 200, r.text
    assert r.json() == {"statusCode": 200}


def listing(box: Box, conn: Connected, limit: int = 500) -> list[dict[str, Any]]:
    r = box.http.get(
        f"/merchant/api/stores/{conn.store_id}/orders",
        params={"limit": limit},
        headers=conn.merchant.auth,
    )
    assert r.status_code == 200, r.text
    return list(r.json()["orders"])


def listed(box: Box, conn: Connected, order_id: str) -> dict[str, Any]:
    found = [o for o in listing(box, conn) if o["orderId"] == order_id]
    assert len(found) == 1, found
    return found[0]


def read(box: Box, conn: Connected, order_id: str) -> httpx.Response:
    return box.http.get("/v1/orders", params={"orderId": order_id}, headers=conn.auth)


@pytest.fixture(scope="module")
def shop(box: Box, cast: Cast) -> Connected:
    return box.connect_by_consent(cast.plain, cast.merchant)


@pytest.fixture(scope="module")
def green(box: Box, cast: Cast) -> Connected:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    box.set_green_invoices(cast.merchant, conn.store_id, True)
    r = box.http.put(
        "/v1/stores",
        json={"storeName": "Green Cafe", "storeAddress": "5 Elm St", "storeCountryCode": "US"},
        headers=conn.auth,
    )
    assert r.status_code == 200
    return conn


# POST /v1/orders: shape and validation --------------------------------------------


def test_minimal_order_answers_status_code_200(box: Box, shop: Connected) -> None:
    body = order()
    send(box, shop, body)
    row = listed(box, shop, body["orderId"])
    assert set(row) >= ORDER_LIST_FIELDS
    assert (row["orderPrice"], row["orderCurrency"]) == ("2400", "USD")
    assert row["conversion"] == "anonymous"


def test_full_order_is_accepted(box: Box, shop: Connected) -> None:
    body = closed(
        updatedAt=iso(BASE + timedelta(minutes=5)),
        customerEmail="rosa@example.com",
        store={"storeName": "Shop One", "storeAddress": "1 Pine St", "storeCountryCode": "US"},
    )
    send(box, shop, body)
    assert listed(box, shop, body["orderId"])["orderStatus"] == "CLOSED"


@pytest.mark.parametrize("missing", ["orderId", "orderPrice", "orderCurrency", "createdAt"])
def test_order_without_a_required_field_answers_400(
    box: Box, shop: Connected, missing: str
) -> None:
    body = order()
    del body[missing]
    problem = assert_problem(post(box, shop, body), 400, "missing_field")
    assert missing in {e["field"] for e in problem["errors"]}


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("orderPrice", "24.00"),
        ("orderPrice", "abc"),
        ("orderPrice", "1 200"),
        ("orderPrice", "+100"),
        ("orderPrice", 2400),
        ("orderCurrency", "ABC"),
        ("orderCurrency", "dollars"),
        ("createdAt", "yesterday"),
        ("createdAt", "2024-13-45T10:00:00Z"),
        ("updatedAt", "not a time"),
        ("orderId", 42),
        ("orderId", ""),
        ("customerEmail", ["a@example.com"]),
        ("orderDetails", ["not", "an", "object"]),
        ("orderDetails", "CLOSED"),
        ("store", "Main St"),
    ],
)
def test_order_with_an_invalid_field_answers_400(
    box: Box, shop: Connected, field: str, value: Any
) -> None:
    body = order(**{field: value})
    problem = assert_problem(post(box, shop, body), 400)
    assert problem["code"] in ("invalid_field", "missing_field")
    assert any(e["field"].split(".")[0].split("[")[0] == field for e in problem["errors"]), problem


@pytest.mark.parametrize(
    "details",
    [
        {"orderItems": [{"itemId": "1", "itemPrice": "1.50"}]},
        {"orderItems": [{"itemId": "1", "itemTax": "tax"}]},
        {"orderItems": [{"itemId": "1", "itemQuantity": "two"}]},
        {"orderItems": "none"},
        {"orderPayments": [{"paymentSum": "1,00"}]},
        {"orderPayments": {"paymentSum": "100"}},
    ],
)
def test_order_with_invalid_details_answers_400(
    box: Box, shop: Connected, details: dict[str, Any]
) -> None:
    problem = assert_problem(post(box, shop, order(orderDetails=details)), 400)
    assert any(e["field"].startswith("orderDetails") for e in problem["errors"]), problem


def test_order_store_snapshot_without_required_field_answers_400(box: Box, shop: Connected) -> None:
    body = order(store={"storeAddress": "x", "storeCountryCode": "US"})
    problem = assert_problem(post(box, shop, body), 400)
    assert any("storeName" in e["field"] for e in problem["errors"]), problem


@pytest.mark.parametrize("body", [[order()], "order", 1, None])
def test_order_body_that_is_not_an_object_answers_400(box: Box, shop: Connected, body: Any) -> None:
    assert_problem(post(box, shop, body), 400)


def test_refused_order_stores_nothing(box: Box, shop: Connected) -> None:
    body = order(orderCurrency="ABC")
    assert_problem(post(box, shop, body), 400)
    assert body["orderId"] not in {o["orderId"] for o in listing(box, shop)}


def test_negative_amount_and_offsetless_timestamp_are_accepted(box: Box, shop: Connected) -> None:
    body = order(orderPrice="-500", createdAt="2024-05-01T12:00:00")
    send(box, shop, body)
    row = listed(box, shop, body["orderId"])
    assert row["orderPrice"] == "-500"
    moment = datetime.fromisoformat(row["createdAt"].replace("Z", "+00:00"))
    assert moment == BASE


# upsert ----------------------------------------------------------------------------


def test_resending_the_same_order_id_updates_the_order(box: Box, shop: Connected) -> None:
    body = order()
    send(box, shop, body)
    send(box, shop, {**body, "orderPrice": "3100"})
    assert listed(box, shop, body["orderId"])["orderPrice"] == "3100"


def test_older_updated_at_is_acknowledged_and_not_applied(box: Box, shop: Connected) -> None:
    body = order(updatedAt=iso(BASE + timedelta(hours=2)))
    send(box, shop, body)
    send(box, shop, {**body, "orderPrice": "9999", "updatedAt": iso(BASE + timedelta(hours=1))})
    assert listed(box, shop, body["orderId"])["orderPrice"] == "2400"
    send(box, shop, {**body, "orderPrice": "7777", "updatedAt": iso(BASE + timedelta(hours=3))})
    assert listed(box, shop, body["orderId"])["orderPrice"] == "7777"


def test_orders_are_keyed_by_store_and_order_id(box: Box, cast: Cast, shop: Connected) -> None:
    other = box.connect_by_consent(cast.plain, cast.merchant, profile_id=shop.profile_id)
    body = order()
    send(box, shop, body)
    send(box, other, {**body, "orderPrice": "1"})
    assert listed(box, shop, body["orderId"])["orderPrice"] == "2400"
    assert listed(box, other, body["orderId"])["orderPrice"] == "1"


def test_order_store_snapshot_updates_the_store_profile(
    box: Box, cast: Cast, shop: Connected
) -> None:
    name = unique("Snapshot Shop")
    body = order(
        store={
            "storeName": name,
            "storeAddress": "9 Oak Ave",
            "storeCountryCode": "US",
            "storeCity": "Bend",
        }
    )
    send(box, shop, body)
    view = box.store_view(cast.merchant, shop.store_id)
    assert (view["name"], view["address"], view["city"]) == (name, "9 Oak Ave", "Bend")


def test_order_resolves_its_customer_into_the_profile(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    # A store made by consent in an empty profile has no country until the partner's
    # PUT (CONTRACT §6); the phone below is national, so it is read in the store's.
    placed = box.http.put(
        "/v1/stores",
        json={"storeName": "Salem", "storeAddress": "1 Main St", "storeCountryCode": "US"},
        headers=conn.auth,
    )
    assert placed.status_code == 200, placed.text
    send(
        box,
        conn,
        order(
            customerEmail=" Sam@Example.com ",
            customerFirstName="Sam",
            customerLastName="Stone",
            customerPhoneNumber="(503) 555-0160",
        ),
    )
    listing_ = box.customers(cast.merchant, conn.profile_id)
    assert listing_["total"] == 1
    (sam,) = listing_["customers"]
    assert (sam["email"], sam["phoneNumber"], sam["firstName"], sam["lastName"]) == (
        "sam@example.com",
        "+15035550160",
        "Sam",
        "Stone",
    )
    status = box.upload_customers(conn, [{"email": "sam@example.com", "city": "Salem"}])
    assert (status["created"], status["updated"]) == (0, 1)


def test_merchant_order_listing_is_newest_first_and_limited(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    ids = [unique("ord") for _ in range(3)]
    for i, order_id in enumerate(ids):
        send(box, conn, order(order_id, createdAt=iso(BASE + timedelta(days=i))))
    assert [o["orderId"] for o in listing(box, conn)] == list(reversed(ids))
    assert [o["orderId"] for o in listing(box, conn, limit=2)] == [ids[2], ids[1]]
    for row in listing(box, conn):
        assert datetime.fromisoformat(row["createdAt"].replace("Z", "+00:00")).tzinfo
    r = box.http.get(f"/merchant/api/stores/{conn.store_id}/orders", headers=cast.other.auth)
    assert_problem(r, 404)
    assert_problem(box.http.get(f"/merchant/api/stores/{conn.store_id}/orders"), 401)


# conversion classes ------------------------------------------------------------------


@dataclass
class Conversions:
    conns: dict[str, Connected]
    import_result: dict[str, Any]


SCENARIOS = (
    "organic",
    "new",
    "returning",
    "old_touch",
    "late_touch",
    "phone_touch",
    "other_profile",
    "fixed",
)


@pytest.fixture(scope="module")
def conversions(box: Box, cast: Cast, tmp_path_factory: pytest.TempPathFactory) -> Conversions:
    """One profile per scenario; all touches imported with one command."""
    conns = {name: box.connect_by_consent(cast.plain, cast.merchant) for name in SCENARIOS}
    day = timedelta(days=1)

    def touch(scenario: str, when: datetime, **who: str) -> dict[str, Any]:
        return {
            "profileId": conns[scenario].profile_id,
            "campaignId": "spring",
            "touchedAt": iso(when),
            **who,
        }

    rows = [
        touch("new", BASE - day, email="nina@example.com"),
        touch("returning", BASE - 2 * day, email="rick@example.com"),
        touch("old_touch", BASE - 8 * day, email="otto@example.com"),
        touch("late_touch", BASE + day, email="lara@example.com"),
        touch("phone_touch", BASE - day, phoneNumber="5035550170", countryCode="US"),
        touch("organic", BASE - day, email="somebody.else@example.com"),
        touch("new", BASE - day, email="orla@example.com")
        | {"profileId": conns["organic"].profile_id},
    ]
    path = write_jsonl(tmp_path_factory.mktemp("touches") / "touches.jsonl", rows)
    with path.open("a") as handle:
        handle.write("{not json}\n")
        handle.write('{"profileId": "p", "campaignId": "c"}\n')
    result = box.cli_json("touches", "import", str(path))
    return Conversions(conns, result)


def test_touches_import_counts_imported_and_rejected(conversions: Conversions) -> None:
    # The contract's counts, plus the rejected lines' reasons (issue 18: --json keeps them).
    assert {k: conversions.import_result[k] for k in ("imported", "rejected")} == {
        "imported": 7,
        "rejected": 2,
    }
    assert [e["line"] for e in conversions.import_result["errors"]] == [8, 9]


def _conversion(box: Box, conn: Connected, body: dict[str, Any]) -> str:
    send(box, conn, body)
    return str(listed(box, conn, body["orderId"])["conversion"])


def test_order_without_email_or_phone_is_anonymous(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["organic"]
    assert _conversion(box, conn, order(customerFirstName="Anon")) == "anonymous"
    assert _conversion(box, conn, order(customerEmail="broken", customerPhoneNumber="x")) == (
        "anonymous"
    )


def test_customer_without_touch_is_organic(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["organic"]
    assert _conversion(box, conn, order(customerEmail="olga@example.com")) == "organic"


def test_touched_customer_first_order_is_new(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["new"]
    assert _conversion(box, conn, order(customerEmail="Nina@example.com")) == "new"


def test_touched_customer_with_earlier_order_is_returning(
    box: Box, conversions: Conversions
) -> None:
    conn = conversions.conns["returning"]
    first = order(customerEmail="rick@example.com", createdAt=iso(BASE - 10 * timedelta(days=1)))
    assert _conversion(box, conn, first) == "organic"
    assert _conversion(box, conn, order(customerEmail="rick@example.com")) == "returning"


def test_touch_older_than_the_window_is_organic(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["old_touch"]
    assert _conversion(box, conn, order(customerEmail="otto@example.com")) == "organic"


def test_touch_after_the_order_is_organic(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["late_touch"]
    assert _conversion(box, conn, order(customerEmail="lara@example.com")) == "organic"


def test_phone_touch_without_plus_is_read_in_its_country(
    box: Box, conversions: Conversions
) -> None:
    conn = conversions.conns["phone_touch"]
    body = order(customerPhoneNumber="+15035550170")
    assert _conversion(box, conn, body) == "new"


def test_touch_of_another_profile_does_not_count(box: Box, conversions: Conversions) -> None:
    conn = conversions.conns["other_profile"]
    assert _conversion(box, conn, order(customerEmail="nina@example.com")) == "organic"


def test_conversion_follows_the_order_as_last_stored(box: Box, conversions: Conversions) -> None:
    """The class is a function of the stored data (CONTRACT.md §6): a re-send that names
    the customer makes an anonymous order organic."""
    conn = conversions.conns["fixed"]
    body = order(customerFirstName="Nobody")
    assert _conversion(box, conn, body) == "anonymous"
    later = {**body, "customerEmail": "fix@example.com", "orderPrice": "1"}
    assert _conversion(box, conn, later) == "organic"
    assert listed(box, conn, body["orderId"])["orderPrice"] == "1"


# GET /v1/orders ------------------------------------------------------------------------


def test_get_order_answers_the_order_in_request_field_names(box: Box, green: Connected) -> None:
    body = closed(
        customerEmail="rosa@example.com",
        updatedAt=iso(BASE + timedelta(minutes=1)),
    )
    body["orderDetails"]["orderItems"].append(
        {
            "itemId": "park-1",
            "itemName": "Parking",
            "itemPrice": "600",
            "itemQuantity": 1,
            "plate": "ABC-123",
            "durationMinutes": 95,
        }
    )
    body["orderDetails"]["vendorNote"] = "kept"
    send(box, green, body)
    r = read(box, green, body["orderId"])
    assert r.status_code == 200, r.text
    got = r.json()
    for key in (
        "orderId",
        "orderPrice",
        "orderCurrency",
        "createdAt",
        "updatedAt",
        "orderStatus",
        "orderType",
        "orderItems",
        "orderPayments",
        "store",
        "customerFirstName",
        "customerLastName",
        "customerPhoneNumber",
        "customerEmail",
    ):
        assert key in got, key
    assert got["orderId"] == body["orderId"]
    assert (got["orderPrice"], got["orderCurrency"]) == ("2400", "USD")
    assert (got["orderStatus"], got["orderType"]) == ("CLOSED", "dine-in")
    assert got["customerPhoneNumber"] == "+15035550150"
    items = got["orderItems"]
    assert items[0]["itemName"] == "Espresso" and items[0]["itemPrice"] == "300"
    assert items[1]["plate"] == "ABC-123" and items[1]["durationMinutes"] == 95
    assert got["orderPayments"][0]["paymentLast4"] == "4242"
    assert got["store"]["storeName"] == "Green Cafe"


def test_get_order_is_403_when_receipts_are_off(box: Box, shop: Connected) -> None:
    body = closed()
    send(box, shop, body)
    assert_problem(read(box, shop, body["orderId"]), 403, "receipts_disabled")


def test_get_order_is_404_for_unknown_open_or_phoneless_orders(box: Box, green: Connected) -> None:
    assert_problem(read(box, green, unique("missing")), 404)
    open_order = closed()
    open_order["orderDetails"]["orderStatus"] = "OPEN"
    send(box, green, open_order)
    assert_problem(read(box, green, open_order["orderId"]), 404)
    phoneless = closed()
    del phoneless["customerPhoneNumber"]
    send(box, green, phoneless)
    assert_problem(read(box, green, phoneless["orderId"]), 404)


def test_get_order_of_another_store_is_404(box: Box, cast: Cast, green: Connected) -> None:
    body = closed()
    send(box, green, body)
    other = box.connect_by_consent(cast.plain, cast.merchant, profile_id=green.profile_id)
    box.set_green_invoices(cast.merchant, other.store_id, True)
    assert_problem(read(box, other, body["orderId"]), 404)


def test_get_order_without_order_id_answers_400(box: Box, green: Connected) -> None:
    r = box.http.get("/v1/orders", headers=green.auth)
    problem = assert_problem(r, 400)
    assert "orderId" in {e["field"] for e in problem["errors"]}


# e-receipts --------------------------------------------------------------------------


@dataclass
class Receipts:
    green: Connected
    messages: list[dict[str, Any]]
    ids: dict[str, str]

    def for_order(self, name: str) -> list[dict[str, Any]]:
        return [
            m
            for m in self.messages
            if m["orderId"] == self.ids[name] and m["storeId"] == self.green.store_id
        ]


@pytest.fixture(scope="module")
def receipts(box: Box, cast: Cast, green: Connected, shop: Connected) -> Receipts:
    """Every e-receipt scenario sent first; then one `sms list` reads the outbox."""
    ids = {
        name: unique(name)
        for name in ("sent", "resent", "open", "later_closed", "phoneless", "off", "twin")
    }
    send(box, green, closed(ids["sent"]))
    send(box, green, closed(ids["resent"]))
    send(box, green, {**closed(ids["resent"]), "orderPrice": "2500"})
    open_order = closed(ids["open"])
    open_order["orderDetails"]["orderStatus"] = "OPEN"
    send(box, green, open_order)
    later = closed(ids["later_closed"])
    later["orderDetails"]["orderStatus"] = "OPEN"
    send(box, green, later)
    later["orderDetails"]["orderStatus"] = "CLOSED"
    send(box, green, later)
    phoneless = closed(ids["phoneless"])
    del phoneless["customerPhoneNumber"]
    send(box, green, phoneless)
    send(box, shop, closed(ids["off"]))
    # The same partner order id in another store with receipts on gets its own link.
    twin = box.connect_by_consent(cast.plain, cast.merchant, profile_id=green.profile_id)
    box.set_green_invoices(cast.merchant, twin.store_id, True)
    send(box, green, closed(ids["twin"]))
    send(box, twin, closed(ids["twin"]))

    def listed_all() -> list[dict[str, Any]] | None:
        messages = box.cli_json("sms", "list", "--limit", "10000")
        mine = {m["orderId"] for m in messages}
        return messages if {ids["sent"], ids["later_closed"]} <= mine else None

    return Receipts(green, list(box.wait_for(listed_all, timeout=120, interval=1)), ids)


def test_sms_list_rows_carry_the_contract_keys_newest_first(receipts: Receipts) -> None:
    stamps = [
        datetime.fromisoformat(m["createdAt"].replace("Z", "+00:00")) for m in receipts.messages
    ]
    assert stamps == sorted(stamps, reverse=True)
    for message in receipts.messages:
        assert set(message) == {
            "to",
            "body",
            "link",
            "orderId",
            "storeId",
            "status",
            "createdAt",
        }


def test_closed_order_with_phone_sends_one_receipt(box: Box, receipts: Receipts) -> None:
    (message,) = receipts.for_order("sent")
    assert message["to"] == "+15035550150"
    prefix = f"{box.url}/receipts/inv/{receipts.ids['sent']}?k="
    assert message["link"].startswith(prefix)
    assert len(message["link"]) > len(prefix) + 16
    assert message["link"] in message["body"]
    assert "Green Cafe" in message["body"]


def test_resent_order_sends_no_second_receipt(receipts: Receipts) -> None:
    assert len(receipts.for_order("resent")) == 1


def test_order_closed_on_update_sends_one_receipt(receipts: Receipts) -> None:
    assert len(receipts.for_order("later_closed")) == 1


def test_no_receipt_for_open_phoneless_or_receipts_off(receipts: Receipts) -> None:
    assert receipts.for_order("open") == []
    assert receipts.for_order("phoneless") == []
    assert [m for m in receipts.messages if m["orderId"] == receipts.ids["off"]] == []


def test_same_order_id_in_two_stores_gets_two_different_links(receipts: Receipts) -> None:
    twins = [m for m in receipts.messages if m["orderId"] == receipts.ids["twin"]]
    assert len(twins) == 2
    assert twins[0]["link"] != twins[1]["link"]
    assert twins[0]["storeId"] != twins[1]["storeId"]


def test_receipt_page_shows_store_items_and_payments(box: Box, receipts: Receipts) -> None:
    (message,) = receipts.for_order("sent")
    page = httpx.get(message["link"], timeout=30)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert "Green Cafe" in page.text
    assert "Espresso" in page.text
    assert "4242" in page.text


def test_receipt_page_without_valid_key_answers_404(box: Box, receipts: Receipts) -> None:
    (message,) = receipts.for_order("sent")
    bare = message["link"].split("?")[0]
    assert httpx.get(bare, timeout=30).status_code == 404
    assert httpx.get(bare + "?k=wrong", timeout=30).status_code == 404
    key = message["link"].split("?k=")[1]
    other_order = f"{box.url}/receipts/inv/{receipts.ids['resent']}?k={key}"
    assert httpx.get(other_order, timeout=30).status_code == 404


def test_receipt_page_applies_the_gates_when_opened(box: Box, cast: Cast, tmp_path: Path) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    box.set_green_invoices(cast.merchant, conn.store_id, True)
    body = closed()
    send(box, conn, body)
    url = box.sms_link(body["orderId"])
    assert httpx.get(url, timeout=30).status_code == 200
    box.set_green_invoices(cast.merchant, conn.store_id, False)
    assert httpx.get(url, timeout=30).status_code == 404
    box.set_green_invoices(cast.merchant, conn.store_id, True)
    reopened = {**body, "orderDetails": {**body["orderDetails"], "orderStatus": "OPEN"}}
    send(box, conn, reopened)
    assert httpx.get(url, timeout=30).status_code == 404


def test_order_listing_defaults_to_fifty(box: Box, cast: Cast) -> None:
    conn = box.connect_by_consent(cast.plain, cast.merchant)
    for i in range(52):
        send(box, conn, order(createdAt=iso(BASE + timedelta(minutes=i))))
    r = box.http.get(f"/merchant/api/stores/{conn.store_id}/orders", headers=cast.merchant.auth)
    assert len(r.json()["orders"]) == 50
