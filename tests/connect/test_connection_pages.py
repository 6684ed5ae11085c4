"""GET /v1/connections in pages (CONTRACT.md §13 "Lists page with cursors")."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.service import open_connection
from tests.factories import ConnectedStoreFixture, create_connected_store, create_store


def credentials(shop: ConnectedStoreFixture) -> dict[str, str]:
    return {"client_id": shop.partner.client_id, "client_secret": shop.partner.client_secret}


def connect_stores(session: Session, shop: ConnectedStoreFixture, first: int, count: int) -> None:
    for number in range(first, first + count):
        store = create_store(session, shop.profile, name=f"Store {number}")
        open_connection(
            session,
            store_id=store.id,
            partner_id=shop.partner.partner.id,
            method="pairing",
            pos_type="acme-pos",
        )
    session.commit()


def get_page(client: TestClient, shop: ConnectedStoreFixture, **params: Any) -> dict[str, Any]:
    answer = client.get("/v1/connections", params=credentials(shop) | params)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_pages_never_repeat_or_skip_while_connections_are_added(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    connect_stores(session, shop, 0, 4)  # 5 connections

    first = get_page(client, shop, limit=2)
    assert len(first["connections"]) == 2 and first["nextCursor"]
    connect_stores(session, shop, 4, 3)  # 3 more between pages
    seen = [c["connectionId"] for c in first["connections"]]
    cursor = first["nextCursor"]
    while cursor:
        page = get_page(client, shop, limit=2, cursor=cursor)
        seen += [c["connectionId"] for c in page["connections"]]
        cursor = page["nextCursor"]
        if len(seen) == 4:
            connect_stores(session, shop, 7, 1)

    whole = get_page(client, shop, limit=1000)
    assert whole["nextCursor"] is None
    assert seen == [c["connectionId"] for c in whole["connections"]]
    assert len(seen) == 9 == len(set(seen))


def test_default_page_is_100_and_the_last_page_answers_null(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    connect_stores(session, shop, 0, 100)  # 101 connections

    first = get_page(client, shop)
    second = get_page(client, shop, cursor=first["nextCursor"])

    assert len(first["connections"]) == 100 and first["nextCursor"]
    assert len(second["connections"]) == 1 and second["nextCursor"] is None


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"cursor": "WzFd"}, "cursor"),  # an integer key: another list's cursor
        ({"cursor": "\u2603"}, "cursor"),
        ({"limit": 0}, "limit"),
        ({"limit": 1001}, "limit"),
        ({"limit": "many"}, "limit"),
    ],
)
def test_a_malformed_cursor_or_limit_answers_400_invalid_field(
    client: TestClient, session: Session, params: dict[str, Any], field: str
) -> None:
    shop = create_connected_store(session)
    answer = client.get("/v1/connections", params=credentials(shop) | params)
    assert answer.status_code == 400
    assert answer.json()["code"] == "invalid_field"
    assert answer.json()["errors"][0]["field"] == field
