"""No input to a page produces a 500 or a JSON body: every refusal is a page."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from tests.factories import create_merchant_account, create_profile, create_store
from tests.web.conftest import EMAIL, ConsentWorld, sign_in_console, signed_in_consent
from tests.web.pages import form

ODD_VALUES = [
    "",
    " ",
    "\x00",
    "a\x00b",
    "x" * 10_000,
    "é漢字🙂",
    "\u202e",
    "' OR 1=1 --",
    "<script>alert(1)</script>",
    "profile:",
    "store:\x00",
    "profile:" + "9" * 100,
    "[]",
    "{}",
    "null",
    "-1",
    "1e309",
]


def _is_page(response) -> bool:  # type: ignore[no-untyped-def]
    return response.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize("value", ODD_VALUES)
def test_odd_consent_link_parameters(client: TestClient, consent: ConsentWorld, value: str) -> None:
    for params in (
        {"client_id": value, "integration_token": consent.token},
        {"client_id": consent.partner.client_id, "integration_token": value},
    ):
        answer = client.get("/connect/", params=params)
        assert answer.status_code in (200, 400, 404), answer.status_code
        assert _is_page(answer)
        assert "<script>" not in answer.text


def test_odd_consent_form_posts(client: TestClient, consent: ConsentWorld) -> None:
    choose = signed_in_consent(client, consent)
    fields = form(choose, "/connect/approve").fields
    for value in ODD_VALUES:
        for name in ("target", "green_invoices", "form_token", "client_id", "integration_token"):
            for action in ("/connect/approve", "/connect/profiles", "/connect/signin"):
                answer = client.post(action, data={**fields, name: value, "profile_name": value})
                assert answer.status_code < 500, (action, name, value, answer.status_code)
                assert _is_page(answer), (action, name, answer.text[:200])


def test_non_form_bodies_get_a_page(client: TestClient, consent: ConsentWorld) -> None:
    for action in ("/connect/signin", "/connect/approve", "/connect/decline"):
        for kwargs in (
            {"json": {"client_id": [1, 2], "integration_token": None}},
            {"content": b"\xff\xfe\x00garbage", "headers": {"content-type": "text/plain"}},
            {"files": {"client_id": ("a.txt", b"data")}},
            {"data": {"client_id": ["a", "b"], "integration_token": consent.token}},
        ):
            answer = client.post(action, **kwargs)
            assert answer.status_code in (400, 403, 404), (action, answer.status_code)
            assert _is_page(answer)


def test_odd_console_input(client: TestClient, session: Session) -> None:
    profile = create_profile(session, create_merchant_account(session, email=EMAIL))
    store = create_store(session, profile)
    sign_in_console(client)
    csrf = form(client.get("/merchant").text, "/merchant/signout").fields
    for value in ODD_VALUES:
        for path in (f"/merchant/stores/{value}", f"/merchant/profiles/{value}"):
            if "\x00" in value or "/" in value or len(value) > 2000 or not value.strip():
                continue  # not one path segment: no page route matches it
            answer = client.get(path.replace("#", "%23").replace("?", "%3F"))
            assert answer.status_code in (200, 404) and _is_page(answer), (path, answer.status_code)
        posts = {
            "/merchant/profiles": {"name": value},
            f"/merchant/profiles/{profile.id}/stores": {
                "name": value,
                "address": value,
                "country_code": value,
                "currency": value,
            },
            f"/merchant/stores/{store.id}/green-invoices": {"enabled": value},
            f"/merchant/stores/{store.id}/pairing-codes": {"pos_type": value},
            f"/merchant/connections/{store.id}/revoke": {"store_id": value},
            "/merchant/signin": {"email": value, "password": value},
        }
        for action, data in posts.items():
            answer = client.post(action, data={**csrf, **data}, follow_redirects=False)
            assert answer.status_code in (200, 303, 400, 401, 404, 429), (action, value)
            assert answer.status_code == 303 or _is_page(answer), (action, answer.text[:200])


def test_invalid_utf8_in_forms_and_links(client: TestClient, consent: ConsentWorld) -> None:
    bad = "%ED%A0%80%FF%C0"  # a lone surrogate's bytes and bytes that are never UTF-8
    answer = client.get(f"/connect/?client_id={bad}&integration_token={bad}")
    assert answer.status_code == 404 and _is_page(answer)
    answer = client.get(f"/connect/?client_id={consent.partner.client_id}&integration_token={bad}")
    assert answer.status_code == 404 and _is_page(answer)
    body = f"client_id={bad}&integration_token={bad}&form_token={bad}&email={bad}&password={bad}"
    for action in ("/connect/signin", "/connect/approve", "/merchant/signin"):
        answer = client.post(
            action,
            content=body.encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert answer.status_code in (400, 401, 403, 404), (action, answer.status_code)
        assert _is_page(answer)
