"""A Google Ads customer id is exactly 10 digits, with Google's dashes or none
(CONTRACT §12, added 2026-11-29), in the API and in the console; a refusal lists every
problem of the request at once, and the console refuses what the API refuses (a
consent of `maybe` is not dropped) and shows every problem beside its form."""

from __future__ import annotations

import html
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.destinations.models import Destination
from tests.destinations import fake_google
from tests.destinations.sync_helpers import Destinations, google_audience, google_conversions
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console
from tests.web.pages import forms


def _count(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Destination))
    session.rollback()  # the SQLite test database has one connection: give it back
    return int(count or 0)


def _with_target(**target: Any) -> dict[str, Any]:
    body = google_conversions()
    body["target"] = {"conversionActionId": fake_google.CONVERSION_ACTION_ID, **target}
    return body


@pytest.mark.parametrize(
    ("customer_id", "login"),
    [
        ("123456789", None),  # 9 digits
        ("12345678901", None),  # 11 digits
        ("123-456-789", None),
        ("1234-567-890", None),
        ("123-4567890", None),  # one dash of two
        ("123 456 7890", None),
        (123456789, None),
        ("1234567890", "987654321"),  # the manager account's id too
    ],
)
def test_a_customer_id_of_other_than_10_digits_is_refused(
    api: Destinations, session: Session, customer_id: Any, login: str | None
) -> None:
    target: dict[str, Any] = {"customerId": customer_id}
    if login:
        target["loginCustomerId"] = login
    answer = api.client.post(api.base, json=_with_target(**target), headers=api.headers)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert problem["code"] == "invalid_field"
    field = "target.loginCustomerId" if login else "target.customerId"
    assert [error["field"] for error in problem["errors"]] == [field]
    assert "10 digits" in problem["detail"]
    assert _count(session) == 0


@pytest.mark.parametrize("customer_id", ["123-456-7890", "1234567890", 1234567890])
def test_ten_digits_with_googles_dashes_or_none_are_stored_without_them(
    api: Destinations, customer_id: Any
) -> None:
    created = api.create(_with_target(customerId=customer_id, loginCustomerId="987-654-3210"))
    assert created["target"]["customerId"] == "1234567890"
    assert created["target"]["loginCustomerId"] == "9876543210"


def test_a_refusal_lists_every_problem_at_once(api: Destinations, session: Session) -> None:
    body = google_audience()
    body["target"] = {"customerId": "123-456-789"}  # and no userListId
    body["credentials"] = {**body["credentials"], "refreshToken": ""}
    body["consent"] = {"adUserData": "maybe", "adPersonalization": "granted"}
    body["segment"] = "vip"
    answer = api.client.post(api.base, json=body, headers=api.headers)
    assert answer.status_code == 400, answer.text
    problem = answer.json()
    assert [error["field"] for error in problem["errors"]] == [
        "segment",
        "credentials.refreshToken",
        "target.customerId",
        "target.userListId",
        "consent.adUserData",
    ]
    assert (
        problem["detail"].startswith("segment must be one of")
        and "(and 4 more)" in (problem["detail"])
    )
    assert _count(session) == 0


def _google_form(client: TestClient, page: str, **fields: str) -> dict[str, str]:
    google = next(f for f in forms(client.get(page).text) if f.fields.get("platform") == "google")
    return {
        **google.fields,
        "kind": "audience",
        "segment": "all",
        "customerId": "123-456-7890",
        "userListId": fake_google.USER_LIST_ID,
        "clientId": fake_google.CLIENT_ID,
        "clientSecret": fake_google.CLIENT_SECRET,
        "refreshToken": fake_google.REFRESH_TOKEN,
        **fields,
    }


@pytest.mark.parametrize(
    ("consent", "refused"),
    [
        ({"adUserData": "maybe"}, ["consent.adUserData", "consent.adPersonalization"]),
        ({"adUserData": "maybe", "adPersonalization": "granted"}, ["consent.adUserData"]),
        ({"adPersonalization": "granted"}, ["consent.adUserData"]),
    ],
)
def test_the_console_refuses_a_consent_the_api_refuses(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    consent: dict[str, str],
    refused: list[str],
) -> None:
    sign_in_console(client)
    page = f"/merchant/profiles/{shop.profile.id}/ad-platforms"
    answer = client.post(page, data=_google_form(client, page, **consent))
    assert answer.status_code == 400
    for field in refused:
        assert f"{field} must be granted or denied" in answer.text
    assert _count(session) == 0


def test_the_console_shows_every_problem_of_the_form_beside_it(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    sign_in_console(client)
    page = f"/merchant/profiles/{shop.profile.id}/ad-platforms"
    fields = _google_form(
        client, page, customerId="123-456-789", userListId="", refreshToken="", adUserData="maybe"
    )
    answer = client.post(page, data=fields)
    assert answer.status_code == 400
    text = html.unescape(answer.text)
    google_section = text[text.index('id="google-title"') :]
    assert text.index('id="meta-title"') < text.index('id="google-title"')
    for problem in (
        "credentials.refreshToken is required",
        "target.customerId must be a Google Ads customer id: 10 digits",
        "target.userListId is required",
        "consent.adUserData must be granted or denied",
        "consent.adPersonalization must be granted or denied",
    ):
        assert problem in google_section, problem
    assert fake_google.CLIENT_SECRET not in answer.text
    assert _count(session) == 0

    done = client.post(page, data=_google_form(client, page), follow_redirects=False)
    assert done.status_code == 303
    stored = session.scalar(select(Destination))
    assert stored is not None and stored.target["customerId"] == "1234567890"
    assert stored.consent is None
    session.rollback()
