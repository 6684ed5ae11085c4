"""The hosted consent screen: validation of the link, sign-in, choice, approval and decline."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from partnerlink.connect.models import IntegrationToken
from partnerlink.security.secrets import digest
from partnerlink.stores.models import Store
from tests.factories import create_merchant_account, create_profile, create_store
from tests.web.conftest import (
    EMAIL,
    PARTNER_ORIGIN,
    ConsentWorld,
    build_consent_world,
    new_token,
    signed_in_consent,
)
from tests.web.pages import assert_html, form, forms, labels, text


def token_row(session: Session, token: str) -> IntegrationToken:
    """The token's row as it is now, detached, with the connection handed back to the app."""
    session.expire_all()
    row = session.scalar(
        select(IntegrationToken).where(IntegrationToken.token_hash == digest(token))
    )
    assert row is not None
    session.expunge(row)
    session.rollback()  # SQLite has one connection: the app needs it for the next request
    return row


def test_consent_screen_names_the_partner_and_asks_for_sign_in(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params=consent.link)
    assert_html(page, 200)
    assert "Connect Acme POS" in text(page.text)
    assert "Send your sales" in text(page.text)
    assert {"Email", "Password"} <= set(labels(page.text))
    signin = form(page.text, "/connect/signin")
    assert signin.method == "post" and signin.fields["form_token"]
    assert "set-cookie" not in page.headers  # works where third-party cookies are blocked


def test_consent_screen_also_answers_without_trailing_slash(
    client: TestClient, consent: ConsentWorld
) -> None:
    assert_html(client.get("/connect", params=consent.link), 200)


def test_consent_screen_may_be_framed_by_exactly_the_partner_origins(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params=consent.link)
    policy = page.headers["content-security-policy"]
    assert f"frame-ancestors {PARTNER_ORIGIN}" in policy
    assert "script-src 'self'" in policy and "form-action 'self'" in policy
    assert "x-frame-options" not in page.headers
    assert page.headers["referrer-policy"] == "no-referrer"


def test_partner_without_registered_origin_may_not_frame_the_screen(
    client: TestClient, session: Session
) -> None:
    world = build_consent_world(session, frame_origins=[])
    page = client.get("/connect/", params=world.link)
    assert_html(page, 200)
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_incomplete_link_answers_400_without_sign_in_form(client: TestClient) -> None:
    page = client.get("/connect/", params={"client_id": "x"})
    assert_html(page, 400)
    assert "incomplete" in text(page.text)
    assert not forms(page.text)


def test_unknown_client_answers_404_without_sign_in_form(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params={**consent.link, "client_id": "plk_ci_nope"})
    assert_html(page, 404)
    assert "Unknown partner" in text(page.text)
    assert not forms(page.text)


def test_unknown_token_answers_404_framable_by_the_partner(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params={**consent.link, "integration_token": "plk_it_nope"})
    assert_html(page, 404)
    assert not forms(page.text)
    assert f"frame-ancestors {PARTNER_ORIGIN}" in page.headers["content-security-policy"]


def test_expired_link_answers_410_without_sign_in_form(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    expired = new_token(session, consent.partner, ttl_seconds=0)
    page = client.get("/connect/", params={**consent.link, "integration_token": expired})
    assert_html(page, 410)
    assert "expired" in text(page.text)
    assert not forms(page.text)


def test_finished_link_answers_410(client: TestClient, consent: ConsentWorld) -> None:
    choose = signed_in_consent(client, consent)
    fields = form(choose, "/connect/approve").fields
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    assert client.post("/connect/approve", data={**fields, "target": target}).status_code == 200
    page = client.get("/connect/", params=consent.link)
    assert_html(page, 410)
    assert "Already connected" in text(page.text)
    assert not forms(page.text)


def test_wrong_password_answers_401_and_keeps_the_email(
    client: TestClient, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params=consent.link)
    fields = form(page.text, "/connect/signin").fields
    answer = client.post(
        "/connect/signin", data={**fields, "email": EMAIL, "password": "wrong-pass"}
    )
    assert_html(answer, 401)
    assert "Wrong email or password." in text(answer.text)
    assert f'value="{EMAIL}"' in answer.text
    assert form(answer.text, "/connect/signin").fields["form_token"]


def test_sign_in_is_paused_after_ten_failures(client: TestClient, consent: ConsentWorld) -> None:
    page = client.get("/connect/", params=consent.link)
    fields = form(page.text, "/connect/signin").fields
    for _ in range(10):
        wrong = {**fields, "email": EMAIL, "password": "wrong-pass"}
        assert client.post("/connect/signin", data=wrong).status_code == 401
    answer = client.post("/connect/signin", data={**fields, "email": EMAIL, "password": "x"})
    assert_html(answer, 429)
    assert int(answer.headers["retry-after"]) > 0
    assert not forms(answer.text)


def test_approving_a_profile_creates_a_store_and_finishes_the_token(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    choose = signed_in_consent(client, consent)
    assert f"Signed in as {EMAIL}" in text(choose)
    assert "A new store in Bistro Group" in text(choose)
    approve = form(choose, "/connect/approve")
    answer = client.post(
        "/connect/approve",
        data={**approve.fields, "target": f"profile:{consent.profile.id}"},  # type: ignore[union-attr]
    )
    assert_html(answer, 200)
    assert "Acme POS is connected" in text(answer.text)
    row = token_row(session, consent.token)
    assert row.status == "finished" and row.merchant_id == consent.merchant.id
    store = session.get(Store, row.store_id)
    assert store is not None and store.profile_id == consent.profile.id  # type: ignore[union-attr]


def test_approving_a_manual_store_switches_it_to_the_partner(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    manual = create_store(session, consent.profile, name="Corner Shop", manual=True)  # type: ignore[arg-type]
    choose = signed_in_consent(client, consent)
    assert "Corner Shop" in text(choose)
    approve = form(choose, "/connect/approve")
    answer = client.post(
        "/connect/approve", data={**approve.fields, "target": f"store:{manual.id}"}
    )
    assert_html(answer, 200)
    assert "Corner Shop" in text(answer.text)
    assert token_row(session, consent.token).store_id == manual.id
    session.refresh(manual)
    assert manual.pos_type == consent.partner.partner.pos_type


def test_stores_a_partner_created_are_not_offered(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    create_store(session, consent.profile, name="Made By Partner", manual=False)  # type: ignore[arg-type]
    assert "Made By Partner" not in text(signed_in_consent(client, consent))


def test_ereceipt_option_is_hidden_for_a_partner_without_ereceipts(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    choose = signed_in_consent(client, consent)
    assert "green_invoices" not in choose and "receipt" not in text(choose).lower()
    approve = form(choose, "/connect/approve")
    target = f"profile:{consent.profile.id}"  # type: ignore[union-attr]
    client.post(
        "/connect/approve", data={**approve.fields, "target": target, "green_invoices": "on"}
    )
    row = token_row(session, consent.token)
    assert row.status == "finished" and row.green_invoices is False


def test_ereceipt_choice_is_recorded_for_a_partner_with_ereceipts(
    client: TestClient, session: Session
) -> None:
    world = build_consent_world(session, ereceipt=True)
    choose = signed_in_consent(client, world)
    approve = form(choose, "/connect/approve")
    assert any(i.get("name") == "green_invoices" for i in approve.inputs)
    assert "Text customers a link to their receipt" in text(choose)
    answer = client.post(
        "/connect/approve",
        data={**approve.fields, "target": f"profile:{world.profile.id}", "green_invoices": "on"},  # type: ignore[union-attr]
    )
    assert_html(answer, 200)
    row = token_row(session, world.token)
    assert row.green_invoices is True
    store = session.get(Store, row.store_id)
    assert store is not None and store.green_invoices is True


def test_decline_before_sign_in_cancels_the_token(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    page = client.get("/connect/", params=consent.link)
    answer = client.post("/connect/decline", data=form(page.text, "/connect/decline").fields)
    assert_html(answer, 200)
    assert "was not connected" in text(answer.text)
    assert token_row(session, consent.token).status == "cancelled"
    assert_html(client.get("/connect/", params=consent.link), 410)


def test_decline_after_sign_in_cancels_the_token(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    choose = signed_in_consent(client, consent)
    assert "Don’t allow" in text(choose)
    answer = client.post("/connect/decline", data=form(choose, "/connect/decline").fields)
    assert_html(answer, 200)
    assert token_row(session, consent.token).status == "cancelled"


def test_merchant_without_a_profile_creates_one_on_the_spot(
    client: TestClient, session: Session
) -> None:
    world = build_consent_world(session, with_profile=False)
    choose = signed_in_consent(client, world)
    assert "Create your business profile" in text(choose)
    assert not [f for f in forms(choose) if f.action == "/connect/approve"]
    created = client.post(
        "/connect/profiles",
        data={**form(choose, "/connect/profiles").fields, "profile_name": "Sunny Cafe"},
    )
    assert_html(created, 200)
    assert "A new store in Sunny Cafe" in text(created.text)
    approve = form(created.text, "/connect/approve")
    checked = [i for i in approve.inputs if i.get("name") == "target" and "checked" in i]
    answer = client.post("/connect/approve", data={**approve.fields, "target": checked[0]["value"]})
    assert_html(answer, 200)
    assert token_row(session, world.token).status == "finished"


def test_empty_profile_name_is_refused_with_a_field_error(
    client: TestClient, session: Session
) -> None:
    world = build_consent_world(session, with_profile=False)
    choose = signed_in_consent(client, world)
    answer = client.post(
        "/connect/profiles", data={**form(choose, "/connect/profiles").fields, "profile_name": " "}
    )
    assert_html(answer, 400)
    assert "Enter a business name." in text(answer.text)


def test_another_merchants_store_cannot_be_chosen(
    client: TestClient, session: Session, consent: ConsentWorld
) -> None:
    stranger = create_merchant_account(session, email="other@example.com")
    their_store = create_store(session, create_profile(session, stranger), manual=True)
    approve = form(signed_in_consent(client, consent), "/connect/approve")
    answer = client.post(
        "/connect/approve", data={**approve.fields, "target": f"store:{their_store.id}"}
    )
    assert_html(answer, 400)
    assert "Choose one of the stores" in text(answer.text)
    assert token_row(session, consent.token).status == "pending"
