"""POST and DELETE /merchant/api/sessions: sign-in, sign-out, failure budgets."""

from __future__ import annotations

from datetime import datetime

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.merchant.sessions import (
    SIGN_IN_FAILURES_PER_ADDRESS,
    SIGN_IN_FAILURES_PER_EMAIL,
    start_session,
)
from tests.factories import DEFAULT_PASSWORD, create_merchant_account
from tests.merchant.helpers import OWNER, sign_in

SESSIONS = "/merchant/api/sessions"
EMAIL_BUDGET = int(SIGN_IN_FAILURES_PER_EMAIL.split("/")[0])
ADDRESS_BUDGET = int(SIGN_IN_FAILURES_PER_ADDRESS.split("/")[0])


def test_sign_in_answers_a_session_token_and_its_expiry(
    client: TestClient, session: Session
) -> None:
    create_merchant_account(session)

    response = client.post(SESSIONS, json={"email": OWNER, "password": DEFAULT_PASSWORD})

    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"sessionToken", "expiresAt"}
    assert body["sessionToken"].startswith("plk_ms_")
    assert datetime.fromisoformat(body["expiresAt"]).utcoffset() is not None
    headers = {"Authorization": f"Bearer {body['sessionToken']}"}
    assert client.get("/merchant/api/profiles", headers=headers).status_code == 200


def test_email_is_matched_without_regard_to_case_or_spaces(
    client: TestClient, session: Session
) -> None:
    create_merchant_account(session)

    response = client.post(
        SESSIONS, json={"email": "  Owner@EXAMPLE.com ", "password": DEFAULT_PASSWORD}
    )

    assert response.status_code == 200


def test_wrong_password_and_unknown_email_answer_the_same_401(
    client: TestClient, session: Session
) -> None:
    create_merchant_account(session)

    wrong_password = client.post(SESSIONS, json={"email": OWNER, "password": "not-it-at-all"})
    unknown_email = client.post(
        SESSIONS, json={"email": "nobody@example.com", "password": DEFAULT_PASSWORD}
    )

    assert wrong_password.status_code == unknown_email.status_code == 401
    assert wrong_password.json() == unknown_email.json()
    assert wrong_password.json()["code"] == "invalid_credentials"
    assert "www-authenticate" in wrong_password.headers
    assert DEFAULT_PASSWORD not in unknown_email.text


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"email": OWNER},
        {"password": DEFAULT_PASSWORD},
        {"email": 5, "password": DEFAULT_PASSWORD},
        {"email": OWNER, "password": ["x"]},
        {"email": None, "password": None},
        {"email": OWNER, "password": "x" * 5000},
    ],
)
def test_malformed_sign_in_answers_400(client: TestClient, session: Session, body: dict) -> None:
    create_merchant_account(session)

    response = client.post(SESSIONS, json=body)

    assert response.status_code == 400
    assert response.json()["code"] in ("missing_field", "invalid_field")


@pytest.mark.parametrize(
    "raw_email", ['"own\\u0000er@example.com"', '"\\ud800@example.com"', '"' + "x" * 320 + '"']
)
def test_odd_emails_answer_4xx_not_500(
    client: TestClient, session: Session, raw_email: str
) -> None:
    create_merchant_account(session)
    body = '{"email": EMAIL, "password": "whatever-it-is"}'.replace("EMAIL", raw_email)

    response = client.post(
        SESSIONS, content=body.encode(), headers={"Content-Type": "application/json"}
    )

    assert response.status_code in (400, 401), response.text


def test_sign_out_ends_the_session(client: TestClient, session: Session) -> None:
    create_merchant_account(session)
    headers = sign_in(client)

    response = client.delete(SESSIONS, headers=headers)

    assert response.status_code == 204
    assert response.content == b""
    after = client.get("/merchant/api/profiles", headers=headers)
    assert after.status_code == 401
    assert after.json()["code"] == "not_signed_in"


def test_sign_out_without_a_session_still_answers_204(client: TestClient) -> None:
    assert client.delete(SESSIONS).status_code == 204
    assert client.delete(SESSIONS, headers={"Authorization": "Bearer nope"}).status_code == 204


def test_sign_out_ends_only_that_session(client: TestClient, session: Session) -> None:
    create_merchant_account(session)
    phone, laptop = sign_in(client), sign_in(client)

    client.delete(SESSIONS, headers=phone)

    assert client.get("/merchant/api/profiles", headers=laptop).status_code == 200


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer plk_ms_unknown"}, {"Authorization": "Basic abc"}],
)
def test_calls_without_a_live_session_answer_401(
    client: TestClient, session: Session, headers: dict[str, str]
) -> None:
    response = client.get("/merchant/api/profiles", headers=headers)

    assert response.status_code == 401
    assert response.json()["code"] == "not_signed_in"


def test_expired_session_answers_401(client: TestClient, session: Session) -> None:
    merchant = create_merchant_account(session)
    expired = start_session(session, merchant=merchant, ttl_seconds=-1)
    session.commit()

    response = client.get(
        "/merchant/api/profiles", headers={"Authorization": f"Bearer {expired.token}"}
    )

    assert response.status_code == 401


def test_failed_sign_ins_per_email_are_budgeted(client: TestClient, session: Session) -> None:
    create_merchant_account(session)
    create_merchant_account(session, email="other@example.com")
    for _ in range(EMAIL_BUDGET):
        assert (
            client.post(SESSIONS, json={"email": OWNER, "password": "guess-guess"}).status_code
            == 401
        )

    locked = client.post(SESSIONS, json={"email": OWNER, "password": DEFAULT_PASSWORD})

    assert locked.status_code == 429
    assert locked.json()["code"] == "rate_limited"
    assert 0 < int(locked.headers["Retry-After"]) <= 15 * 60
    # Another account from the same address is not locked out by it.
    sign_in(client, "other@example.com")


def test_successful_sign_in_clears_the_email_budget(client: TestClient, session: Session) -> None:
    create_merchant_account(session)
    for _ in range(EMAIL_BUDGET - 1):
        client.post(SESSIONS, json={"email": OWNER, "password": "guess-guess"})
    sign_in(client)

    for _ in range(EMAIL_BUDGET - 1):
        client.post(SESSIONS, json={"email": OWNER, "password": "guess-guess"})

    sign_in(client)


@pytest.mark.slow
def test_failed_sign_ins_per_address_are_budgeted(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email="user0@example.com")
    for i in range(ADDRESS_BUDGET):
        # Spread over many accounts, so that no per-email budget runs out.
        email = f"user{i % 39 + 1}@example.com"
        assert client.post(SESSIONS, json={"email": email, "password": "guess"}).status_code == 401

    locked = client.post(
        SESSIONS, json={"email": "user0@example.com", "password": DEFAULT_PASSWORD}
    )

    assert locked.status_code == 429
    assert "Retry-After" in locked.headers
