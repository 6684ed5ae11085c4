"""GET /merchant/api/profiles/{id}/campaigns in pages (CONTRACT.md §13)."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.factories import ConnectedStoreFixture
from tests.measurement.test_api import base


def create(client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], n: int) -> None:
    body = {"campaignId": f"c{n}", "name": f"C{n}", "startsAt": f"2024-0{1 + n % 9}-01T00:00:00Z"}
    answer = client.post(f"{base(shop)}/campaigns", json=body, headers=owner)
    assert answer.status_code == 200, answer.text


def page(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str], **params: Any
) -> dict[str, Any]:
    answer = client.get(f"{base(shop)}/campaigns", params=params, headers=owner)
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_campaign_pages_never_repeat_or_skip_while_campaigns_are_added(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    for n in range(5):
        create(client, shop, owner, n)
    seen: list[str] = []
    body = page(client, shop, owner, limit=2)
    added = 5
    while True:
        seen += [c["campaignId"] for c in body["campaigns"]]
        if body["nextCursor"] is None:
            break
        create(client, shop, owner, added)  # one more between every two pages
        added += 1
        body = page(client, shop, owner, limit=2, cursor=body["nextCursor"])

    assert seen == [f"c{n}" for n in range(added)]
    whole = page(client, shop, owner)
    assert [c["campaignId"] for c in whole["campaigns"]] == seen
    assert whole["nextCursor"] is None


def test_a_malformed_campaign_cursor_answers_400(
    client: TestClient, shop: ConnectedStoreFixture, owner: dict[str, str]
) -> None:
    for cursor in ("%%%", "WyJ4Il0", "x" * 600):  # WyJ4Il0 = ["x"]: not an integer key
        answer = client.get(f"{base(shop)}/campaigns", params={"cursor": cursor}, headers=owner)
        assert answer.status_code == 400
        assert answer.json()["code"] == "invalid_field"
        assert answer.json()["errors"] == [
            {"field": "cursor", "message": "not a cursor of this list"}
        ]
