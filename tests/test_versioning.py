"""The README's versioning policy: the legacy `?access_token=` is announced as deprecated
with RFC 9745's `Deprecation` and RFC 8594's `Sunset` headers; Bearer requests are not."""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import create_connected_store
from tests.orders.builders import order_body


def test_the_legacy_query_token_is_announced_deprecated_with_a_sunset(
    client: TestClient, session: Session
) -> None:
    shop = create_connected_store(session)
    answers = [
        client.get(f"/v1/stores?access_token={shop.access_token}"),
        client.post(f"/v1/orders?access_token={shop.access_token}", json=order_body()),
        client.get("/v1/stores?access_token=plk_at_not-a-real-token"),  # refused, still told
    ]
    assert [a.status_code for a in answers] == [200, 200, 403]
    for answer in answers:
        deprecation = answer.headers["Deprecation"]
        assert deprecation.startswith("@")  # RFC 9745: a structured-field date
        deprecated_at = datetime.fromtimestamp(int(deprecation[1:]), UTC)
        sunset = parsedate_to_datetime(answer.headers["Sunset"])  # RFC 8594: an HTTP-date
        assert deprecated_at < sunset
        assert sunset.tzinfo is not None and sunset.utcoffset().total_seconds() == 0  # type: ignore[union-attr]
        assert 'rel="deprecation"' in answer.headers["Link"]


def test_bearer_requests_carry_no_deprecation(client: TestClient, session: Session) -> None:
    shop = create_connected_store(session)
    bearer = {"Authorization": f"Bearer {shop.access_token}"}
    answers = [
        client.get("/v1/stores", headers=bearer),
        client.post("/v1/orders", json=order_body("B-1"), headers=bearer),
        # Both given: the header is the one used (SPEC), so nothing legacy happened.
        client.get(f"/v1/stores?access_token={shop.access_token}", headers=bearer),
        client.get("/healthz?access_token=x"),
    ]
    for answer in answers:
        assert "Deprecation" not in answer.headers and "Sunset" not in answer.headers
