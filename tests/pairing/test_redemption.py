"""Redeeming pairing codes (endpoint 5): answers, expiry, single use, tokens."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from partnerlink.pairing.models import PairingCode
from partnerlink.problems import InvalidToken
from partnerlink.stores.models import Store
from partnerlink.tokens.models import Connection, Token
from partnerlink.tokens.service import authenticate_access_token
from tests.pairing.builders import Shop, pair, reserve


def test_redeeming_answers_token_store_and_pos_type(
    client: TestClient, session: Session, shop: Shop
) -> None:
    response = pair(client, reserve(client, shop))
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"access_token", "storeId", "posType", "success"}
    assert body["access_token"].startswith("plk_at_")
    assert body["storeId"] == shop.store.id
    assert body["posType"] == "acme-pos"
    assert body["success"] is True
    connection = session.scalars(select(Connection)).one()
    assert connection.method == "pairing"
    assert connection.partner_id == shop.partner.partner.id
    token = session.scalars(select(Token)).one()
    assert token.kind == "access" and token.expires_at is None  # durable
    assert token.token_hash != body["access_token"]  # only the digest is stored


def test_pairing_token_works_on_a_data_endpoint(client: TestClient, shop: Shop) -> None:
    token = pair(client, reserve(client, shop)).json()["access_token"]
    response = client.get("/v1/stores", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.json()["greenInvoices"] is False


def test_a_store_whose_type_was_never_set_gets_the_partners_type(
    client: TestClient, session: Session, shop: Shop
) -> None:
    """The code row binds a partner, so redemption always registers its posType.

    Even when the store's own type was cleared after reservation, the terminal
    learns (and the store takes) the type of the partner it was paired with.
    """
    code = reserve(client, shop)
    session.execute(update(Store).values(pos_type=None))
    session.commit()
    body = pair(client, code).json()
    assert body["posType"] == "acme-pos"
    session.expire_all()
    assert session.get(Store, shop.store.id).pos_type == "acme-pos"  # type: ignore[union-attr]


def test_consumed_code_answers_404(client: TestClient, session: Session, shop: Shop) -> None:
    code = reserve(client, shop)
    assert pair(client, code).status_code == 200
    again = pair(client, code)
    assert again.status_code == 404
    assert again.headers["content-type"] == "application/problem+json"
    body = again.json()
    assert body["code"] == "unknown_code" and body["success"] is False
    assert str(code) not in again.text
    assert session.scalar(select(func.count()).select_from(Token)) == 1


@pytest.mark.parametrize(
    "code", [123_456, 999_999, 100_000, 99_999, 1_000_000, 0, -123_456, 10**40]
)
def test_unknown_code_answers_404(client: TestClient, shop: Shop, code: int) -> None:
    response = pair(client, code)
    assert response.status_code == 404
    assert response.json()["code"] == "unknown_code"


def test_expired_code_answers_410_and_stays_410(
    client_with: Callable[..., TestClient], session: Session, shop: Shop
) -> None:
    client = client_with(pairing_code_ttl_seconds=1)
    code = reserve(client, shop)
    time.sleep(1.1)
    for _ in range(2):
        response = pair(client, code)
        assert response.status_code == 410
        assert response.json()["code"] == "code_expired"
    assert session.scalar(select(func.count()).select_from(Connection)) == 0
    assert session.scalar(select(func.count()).select_from(PairingCode)) == 1


def test_a_whole_number_written_as_float_is_accepted(client: TestClient, shop: Shop) -> None:
    code = reserve(client, shop)
    response = client.post(
        "/v1/auth/integration/pair",
        content=f'{{"code": {code}.0}}',
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 200


def test_a_new_pairing_revokes_the_previous_pairing_token(
    client: TestClient, session: Session, shop: Shop
) -> None:
    old = pair(client, reserve(client, shop)).json()["access_token"]
    new = pair(client, reserve(client, shop)).json()["access_token"]
    assert old != new
    assert client.get("/v1/stores", headers={"Authorization": f"Bearer {old}"}).status_code == 403
    assert client.get("/v1/stores", headers={"Authorization": f"Bearer {new}"}).status_code == 200
    with pytest.raises(InvalidToken):
        authenticate_access_token(session, old)
    assert authenticate_access_token(session, new).store_id == shop.store.id


def test_pairing_another_partner_keeps_the_first_partners_token(
    client: TestClient, session: Session, shop: Shop
) -> None:
    from tests.factories import create_partner

    create_partner(session, name="Other POS", pos_type="other-pos")
    first = pair(client, reserve(client, shop)).json()["access_token"]
    pair(client, reserve(client, shop, pos_type="other-pos"))
    assert authenticate_access_token(session, first).store_id == shop.store.id


MALFORMED_BODIES: list[tuple[str, str]] = [
    ("", "missing_field"),
    ("{}", "missing_field"),
    ('{"code": "123456"}', "invalid_field"),
    ('{"code": "abc"}', "invalid_field"),
    ('{"code": true}', "invalid_field"),
    ('{"code": false}', "invalid_field"),
    ('{"code": null}', "invalid_field"),
    ('{"code": 123456.5}', "invalid_field"),
    ('{"code": 1e400}', "invalid_field"),
    ('{"code": NaN}', "invalid_field"),
    ('{"code": [123456]}', "invalid_field"),
    ('{"code": {"value": 123456}}', "invalid_field"),
    ("[123456]", "invalid_field"),
    ("123456", "invalid_field"),
    ('"123456"', "invalid_field"),
    ("null", "invalid_field"),
    ('{"code": 1234', "invalid_field"),
    ("not json", "invalid_field"),
    ('{"code": "\\u0000"}', "invalid_field"),
]


@pytest.mark.parametrize(("raw", "code"), MALFORMED_BODIES)
def test_malformed_body_answers_400_and_consumes_nothing(
    client: TestClient, session: Session, shop: Shop, raw: str, code: str
) -> None:
    valid = reserve(client, shop)
    response = client.post(
        "/v1/auth/integration/pair", content=raw, headers={"content-type": "application/json"}
    )
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert body["status"] == 400 and body["success"] is False
    assert body["code"] == code
    assert body["errors"]
    assert pair(client, valid).status_code == 200


def test_non_json_content_type_answers_400(client: TestClient) -> None:
    response = client.post(
        "/v1/auth/integration/pair", content="code=123456", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 400


def test_endpoint_is_documented_with_examples_and_problems(client: TestClient) -> None:
    operation = client.get("/openapi.json").json()["paths"]["/v1/auth/integration/pair"]["post"]
    assert operation["summary"] and "72-hour" in operation["description"]
    request = operation["requestBody"]["content"]["application/json"]
    assert next(iter(request["examples"].values()))["value"] == {"code": 483920}
    answers = operation["responses"]
    assert set(answers["200"]["content"]["application/json"]["example"]) == {
        "access_token",
        "storeId",
        "posType",
        "success",
    }
    for status, code in (
        ("400", "invalid_field"),
        ("404", "unknown_code"),
        ("410", "code_expired"),
        ("429", "rate_limited"),
    ):
        examples = answers[status]["content"]["application/problem+json"]["examples"]
        assert examples[code]["value"]["code"] == code
