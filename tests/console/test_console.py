"""The merchant console: sign-in, cookies, CSRF, profiles, stores, e-receipts, codes, connections."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from partnerlink.stores.models import Store
from tests.factories import (
    DEFAULT_PASSWORD,
    create_connected_store,
    create_merchant_account,
    create_partner,
    create_profile,
    create_store,
)
from tests.web.conftest import EMAIL, sign_in_console
from tests.web.pages import assert_html, form, forms, labels, text


@pytest.fixture
def own_store(client: TestClient, session: Session) -> Store:
    """A signed-in console whose merchant has one profile with one store."""
    profile = create_profile(session, create_merchant_account(session, email=EMAIL))
    store = create_store(session, profile)
    sign_in_console(client)
    return store


def store_flag(session: Session, store_id: str) -> bool:
    session.expire_all()
    store = session.get(Store, store_id)
    assert store is not None
    flag = store.green_invoices
    session.rollback()  # SQLite has one connection: the app needs it for the next request
    return flag


def test_console_sends_a_signed_out_visitor_to_sign_in(client: TestClient) -> None:
    answer = client.get("/merchant", follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/merchant/signin"
    page = client.get("/merchant/signin")
    assert_html(page, 200)
    assert {"Email", "Password"} <= set(labels(page.text))


def test_sign_in_sets_an_httponly_lax_session_cookie(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    answer = client.post(
        "/merchant/signin",
        data={"email": EMAIL, "password": DEFAULT_PASSWORD},
        follow_redirects=False,
    )
    assert answer.status_code == 303 and answer.headers["location"] == "/merchant"
    cookie = answer.headers["set-cookie"]
    # Plain http (the test server): browsers refuse Secure and hence __Host- cookies there.
    assert cookie.startswith("partnerlink_session=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/" in cookie
    assert "Secure" not in cookie
    assert_html(client.get("/merchant"), 200)


def test_over_https_the_cookie_is_host_prefixed_and_secure(settings, session: Session) -> None:  # type: ignore[no-untyped-def]
    from partnerlink.app import create_app

    settings.public_url = "https://console.example.com"
    create_merchant_account(session, email=EMAIL)
    with TestClient(create_app(settings), base_url="https://console.example.com") as client:
        answer = client.post(
            "/merchant/signin",
            data={"email": EMAIL, "password": DEFAULT_PASSWORD},
            follow_redirects=False,
        )
        cookie = answer.headers["set-cookie"]
        assert cookie.startswith("__Host-partnerlink_session=")
        assert "Secure" in cookie and "HttpOnly" in cookie and "Path=/" in cookie
        assert "Domain" not in cookie
        assert_html(client.get("/merchant"), 200)


def test_wrong_password_answers_401(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    answer = client.post("/merchant/signin", data={"email": EMAIL, "password": "wrong-pass"})
    assert_html(answer, 401)
    assert "Wrong email or password." in text(answer.text)
    assert "set-cookie" not in answer.headers


def test_sign_in_posted_from_another_site_is_refused(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    answer = client.post(
        "/merchant/signin",
        data={"email": EMAIL, "password": DEFAULT_PASSWORD},
        headers={"origin": "https://evil.example"},
        follow_redirects=False,
    )
    assert_html(answer, 403)
    assert "set-cookie" not in answer.headers


def test_console_pages_carry_security_headers(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    sign_in_console(client)
    for path in ("/merchant", "/merchant/signin"):
        answer = client.get(path)
        policy = answer.headers["content-security-policy"]
        assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
        assert "form-action 'self'" in policy
        assert answer.headers["x-frame-options"] == "DENY"
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"


def test_home_lists_profiles_and_their_stores(client: TestClient, session: Session) -> None:
    merchant = create_merchant_account(session, email=EMAIL)
    profile = create_profile(session, merchant, name="Bistro Group")
    create_store(session, profile, name="Bistro Central", green_invoices=True)
    stranger = create_merchant_account(session, email="other@example.com")
    create_store(session, create_profile(session, stranger, name="Not Yours"), name="Elsewhere")
    sign_in_console(client)
    page = text(client.get("/merchant").text)
    assert "Bistro Group" in page and "Bistro Central" in page and "E-receipts on" in page
    assert "Not Yours" not in page and "Elsewhere" not in page


def test_creating_a_profile_and_a_manual_store(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    sign_in_console(client)
    home = client.get("/merchant").text
    created = client.post(
        "/merchant/profiles",
        data={**form(home, "/merchant/profiles").fields, "name": "Sunny Cafe"},
        follow_redirects=False,
    )
    assert created.status_code == 303
    profile_path = created.headers["location"].split("?")[0]
    profile_page = client.get(created.headers["location"])
    assert_html(profile_page, 200)
    assert "Profile created" in text(profile_page.text)
    action = f"{profile_path}/stores"
    added = client.post(
        action,
        data={
            **form(profile_page.text, action).fields,
            "name": "Sunny Cafe Harbour",
            "address": "2 Quay St",
            "country_code": "de",
            "currency": "",
        },
    )
    assert_html(added, 200)
    assert "Store added." in text(added.text)
    assert "Sunny Cafe Harbour" in text(added.text) and "EUR" in text(added.text)


def test_manual_store_with_missing_fields_shows_field_errors(
    client: TestClient, session: Session
) -> None:
    profile = create_profile(session, create_merchant_account(session, email=EMAIL))
    sign_in_console(client)
    action = f"/merchant/profiles/{profile.id}/stores"
    page = client.get(f"/merchant/profiles/{profile.id}").text
    answer = client.post(action, data={**form(page, action).fields, "name": "Only a name"})
    assert_html(answer, 400)
    assert 'aria-invalid="true"' in answer.text
    assert 'value="Only a name"' in answer.text


def test_turning_ereceipts_on_and_off(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    action = f"/merchant/stores/{store.id}/green-invoices"
    page = client.get(f"/merchant/stores/{store.id}").text
    turned_on = client.post(action, data=form(page, action).fields)
    assert "E-receipts are on" in text(turned_on.text)
    assert store_flag(session, store.id) is True
    turned_off = client.post(action, data=form(turned_on.text, action).fields)
    assert "E-receipts are off" in text(turned_off.text)
    assert store_flag(session, store.id) is False


def test_a_form_without_its_csrf_token_changes_nothing(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    action = f"/merchant/stores/{store.id}/green-invoices"
    for forged in ({"enabled": "on"}, {"enabled": "on", "csrf_token": "forged"}):
        assert_html(client.post(action, data=forged), 403)
    assert store_flag(session, store.id) is False


def test_a_cross_site_post_with_a_valid_token_is_refused(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    action = f"/merchant/stores/{store.id}/green-invoices"
    fields = form(client.get(f"/merchant/stores/{store.id}").text, action).fields
    answer = client.post(action, data=fields, headers={"sec-fetch-site": "cross-site"})
    assert_html(answer, 403)
    assert store_flag(session, store.id) is False


def test_another_merchants_store_answers_404_page(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    stranger = create_merchant_account(session, email="other@example.com")
    theirs = create_store(session, create_profile(session, stranger))
    sign_in_console(client)
    for path in (f"/merchant/stores/{theirs.id}", "/merchant/stores/nope", "/merchant/profiles/x"):
        assert_html(client.get(path), 404)


def test_reserving_a_pairing_code_that_the_terminal_redeems(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    partner = create_partner(session, name="Till Co", pos_type="till-co")
    action = f"/merchant/stores/{store.id}/pairing-codes"
    page = client.get(f"/merchant/stores/{store.id}").text
    assert "Till Co" in text(page)
    shown = client.post(action, data={**form(page, action).fields, "pos_type": "till-co"})
    assert_html(shown, 200)
    code = int(shown.text.split('class="pairing-code"')[1].split(">")[1].split("<")[0])
    assert 100000 <= code <= 999999
    assert "Valid until" in text(shown.text) and "72 hours" in text(shown.text)
    paired = client.post("/v1/auth/integration/pair", json={"code": code})
    assert paired.status_code == 200, paired.text
    assert paired.json()["storeId"] == store.id
    assert paired.json()["posType"] == partner.partner.pos_type
    connections = text(client.get(f"/merchant/stores/{store.id}").text)
    assert "Till Co" in connections and "Pairing code" in connections and "Active" in connections


def test_reserving_a_code_for_an_unknown_system_is_refused(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    action = f"/merchant/stores/{store.id}/pairing-codes"
    fields = form(client.get(f"/merchant/stores/{store.id}").text, "/merchant/signout").fields
    answer = client.post(action, data={**fields, "pos_type": "nope"})
    assert_html(answer, 400)


def test_revoking_a_connection_stops_its_tokens(client: TestClient, session: Session) -> None:
    fixture = create_connected_store(session, email=EMAIL)
    assert client.get("/v1/stores", headers=fixture.auth).status_code == 200
    sign_in_console(client)
    page = client.get(f"/merchant/stores/{fixture.store.id}").text
    assert "Consent screen" in text(page) and "Acme POS" in text(page)
    revoke = next(f for f in forms(page) if f.action.endswith("/revoke"))
    answer = client.post(revoke.action, data=revoke.fields)
    assert_html(answer, 200)
    assert "Connection revoked" in text(answer.text) and "Revoked" in text(answer.text)
    assert client.get("/v1/stores", headers=fixture.auth).status_code == 403
    refreshed = client.post(
        "/v1/auth/token",
        params={
            "client_id": fixture.partner.client_id,
            "client_secret": fixture.partner.client_secret,
            "grant_type": "refresh_token",
            "code": fixture.refresh_token,
        },
    )
    assert refreshed.status_code == 403


def test_store_page_shows_empty_states_before_any_data(
    client: TestClient, session: Session, own_store: Store
) -> None:
    store = own_store
    page = text(client.get(f"/merchant/stores/{store.id}").text)
    assert "No orders yet" in page and "No partner is connected" in page
    assert "No customers yet" in text(client.get(f"/merchant/profiles/{store.profile_id}").text)


def test_store_page_lists_recent_orders_with_their_conversion(
    client: TestClient, session: Session
) -> None:
    fixture = create_connected_store(session, email=EMAIL)
    order = {
        "orderId": "A-1001",
        "orderPrice": "2400",
        "orderCurrency": "USD",
        "createdAt": "2025-05-12T14:03:00Z",
        "customerEmail": "ann@example.com",
        "orderDetails": {"orderStatus": "CLOSED"},
    }
    sent = client.post("/v1/orders", json=order, headers=fixture.auth)
    assert sent.status_code == 200, sent.text
    sign_in_console(client)
    page = text(client.get(f"/merchant/stores/{fixture.store.id}").text)
    assert "A-1001" in page and "$24.00" in page and "12 May 2025, 14:03 UTC" in page
    assert "Organic" in page
    profile_page = text(client.get(f"/merchant/profiles/{fixture.profile.id}").text)
    assert "1 customers" in profile_page or "1 customer" in profile_page


def test_sign_out_ends_the_session(client: TestClient, session: Session) -> None:
    create_merchant_account(session, email=EMAIL)
    sign_in_console(client)
    home = client.get("/merchant").text
    old_cookie = client.cookies["partnerlink_session"]
    out = client.post(
        "/merchant/signout", data=form(home, "/merchant/signout").fields, follow_redirects=False
    )
    assert out.status_code == 303 and out.headers["location"].startswith("/merchant/signin")
    assert (
        'partnerlink_session=""' in out.headers["set-cookie"]
        or "Max-Age=0" in out.headers["set-cookie"]
    )
    # Even a client that kept the old cookie is signed out: the session is gone server-side.
    client.cookies.set("partnerlink_session", old_cookie)
    assert client.get("/merchant", follow_redirects=False).status_code == 303
