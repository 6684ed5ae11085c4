"""The hosted receipt page: itemised, money by its currency's minor units, 404 without a key."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import ConnectedStoreFixture, create_connected_store
from tests.orders.builders import order_body, post, receipts, with_status

SNAPSHOT = {
    "storeName": "Bistro Central",
    "storeAddress": "1 Main Street",
    "storeCity": "Springfield",
    "storeState": "IL",
    "storePostalCode": "62701",
    "storeCountryCode": "US",
    "storePhoneNumber": "+12175550100",
}


def link_of_only_receipt(session: Session) -> str:
    [receipt] = receipts(session)
    return receipt.link.removeprefix("http://testserver")


def test_page_shows_an_itemised_receipt(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body(createdAt="2024-05-01T14:30:00-05:00", store=SNAPSHOT))
    response = client.get(link_of_only_receipt(session))
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    html = response.text
    for text in (
        "Bistro Central",
        "1 Main Street",
        "Springfield, IL 62701",
        "+12175550100",
        "May 1, 2024",
        "2:30",  # the store's clock, not UTC
        "Flat white",
        "Croissant",
        "$4.50",  # item price
        "$0.72",  # item tax
        "$15.00",
        "$1.92",  # tax total
        "$24.00",  # total
        "VISA",
        "4242",
        "A-1001",
    ):
        assert text in html, text
    assert response.headers["cache-control"] == "no-store"
    assert response.headers["referrer-policy"] == "no-referrer"


def test_page_uses_only_its_stylesheet_no_inline_script_or_style(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body())
    html = client.get(link_of_only_receipt(session)).text
    assert '<link rel="stylesheet" href="/static/receipt.css">' in html
    assert "<script" not in html and "style=" not in html and "<style" not in html
    assert 'name="viewport"' in html
    css = client.get("/static/receipt.css")
    assert css.status_code == 200 and "@media print" in css.text


def test_money_uses_the_currencys_real_minor_units(client: TestClient, session: Session) -> None:
    jp = create_connected_store(session, green_invoices=True, country_code="JP", currency="JPY")
    body = order_body("jp", orderPrice="1234", orderCurrency="JPY")
    body["orderDetails"]["orderItems"] = [
        {"itemName": "Ramen", "itemPrice": "1234", "itemQuantity": 1}
    ]
    post(client, jp.auth, body)
    html = client.get(link_of_only_receipt(session)).text
    assert "¥1,234" in html and "¥12.34" not in html

    kw = create_connected_store(
        session,
        green_invoices=True,
        country_code="KW",
        currency="KWD",
        email="kw@example.com",
        pos_type="kw-pos",
    )
    post(client, kw.auth, order_body("kw", orderPrice="1234", orderCurrency="KWD"))
    kw_link = next(r.link for r in receipts(session) if "/inv/kw?" in r.link)
    html = client.get(kw_link).text
    assert "KWD\u00a01.234" in html


def test_parking_details_are_shown_under_the_item(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    details = {
        "orderStatus": "CLOSED",
        "orderType": "parking",
        "orderItems": [
            {"itemName": "Parking", "itemPrice": "650", "itemQuantity": 1, "plate": "B-XY 1234"}
        ],
    }
    post(client, shop.auth, order_body(orderPrice="650", orderDetails=details))
    html = client.get(link_of_only_receipt(session)).text
    assert "plate: B-XY 1234" in html and "parking" in html and "$6.50" in html


def test_page_escapes_what_the_partner_sent(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    body = order_body()
    body["orderDetails"]["orderItems"][0]["itemName"] = "<script>alert(1)</script>"
    post(client, shop.auth, body)
    html = client.get(link_of_only_receipt(session)).text
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html


def test_wrong_missing_or_foreign_key_answers_the_same_404_page(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body("A-1001"))
    post(client, shop.auth, order_body("B-2002"))
    links = {r.link.split("/inv/")[1].split("?")[0]: r.link for r in receipts(session)}
    key_of_b = links["B-2002"].split("?k=")[1]
    pages = [
        client.get("/receipts/inv/A-1001"),
        client.get("/receipts/inv/A-1001?k="),
        client.get("/receipts/inv/A-1001?k=wrong"),
        client.get(f"/receipts/inv/A-1001?k={key_of_b}"),
        client.get("/receipts/inv/unknown?k=" + "x" * 500),
        client.get(f"/receipts/inv/unknown?k={key_of_b}"),
    ]
    assert {p.status_code for p in pages} == {404}
    assert len({p.text for p in pages}) == 1
    assert "Receipt not found" in pages[0].text
    assert pages[0].headers["content-type"].startswith("text/html")


def test_page_applies_the_gates_when_it_is_opened(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:00:00Z"))
    link = link_of_only_receipt(session)
    assert client.get(link).status_code == 200
    post(client, shop.auth, with_status(order_body(updatedAt="2024-05-01T12:10:00Z"), "REFUNDED"))
    assert client.get(link).status_code == 404
    post(client, shop.auth, order_body(updatedAt="2024-05-01T12:20:00Z"))
    assert client.get(link).status_code == 200
    session.execute(update(Store).values(green_invoices=False))
    session.commit()
    assert client.get(link).status_code == 404


def test_page_opens_for_a_closed_order_in_lower_case(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, with_status(order_body(), "closed"))
    assert client.get(link_of_only_receipt(session)).status_code == 200


def test_page_is_also_served_under_connect(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    post(client, shop.auth, order_body())
    link = link_of_only_receipt(session).replace("/receipts/inv/", "/connect/inv/")
    assert client.get(link).status_code == 200


def test_order_id_with_slashes_and_spaces_opens(
    client: TestClient, shop: ConnectedStoreFixture, session: Session
) -> None:
    other = create_connected_store(
        session, green_invoices=True, email="x@example.com", pos_type="x-pos"
    )
    post(client, other.auth, order_body("T 1/2?#é"))
    response = client.get(link_of_only_receipt(session))
    assert response.status_code == 200 and "T 1/2?#é" in response.text
