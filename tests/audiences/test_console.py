"""The console's audiences forms: CSRF, the confirmation step, others' profiles."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.audiences.models import OptOut
from partnerlink.customers.models import Customer
from tests.audiences.helpers import add_customer
from tests.factories import ConnectedStoreFixture, create_merchant_account, create_profile
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, form


def _customers(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Customer))
    session.commit()
    return int(count or 0)


def test_erase_asks_for_confirmation_and_refuses_forged_forms(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    add_customer(session, shop.store, email="ann@example.com", city="Quuxville")
    profile_id = shop.profile.id
    sign_in_console(client)
    page = f"/merchant/profiles/{profile_id}/audiences"
    html = client.get(page).text
    confirm = form(html, f"{page}/erase/confirm")
    confirm.fields["email"] = "ann@example.com"
    shown = client.post(f"{page}/erase/confirm", data=confirm.fields)
    assert_html(shown, 200)
    assert "Erase this customer?" in shown.text
    assert _customers(session) == 1  # nothing changed by the first step
    final = form(shown.text, f"{page}/erase")
    for forged in ({**final.fields, "csrf_token": "forged"}, {"email": "ann@example.com"}):
        assert_html(client.post(f"{page}/erase", data=forged), 403)
    assert _customers(session) == 1
    done = client.post(f"{page}/erase", data=final.fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"{page}?done=erased"
    assert _customers(session) == 0
    assert "their orders count as anonymous" in client.get(done.headers["location"]).text


def test_opt_out_form_and_its_refusals(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    add_customer(session, shop.store, phone="+14155550120")
    profile_id = shop.profile.id
    sign_in_console(client)
    page = f"/merchant/profiles/{profile_id}/audiences"
    fields = form(client.get(page).text, f"{page}/opt-out").fields
    empty = client.post(f"{page}/opt-out", data=fields)
    assert_html(empty, 400)
    assert "Enter an email address or a phone number." in empty.text
    answer = client.post(
        f"{page}/opt-out", data={**fields, "phone": "415 555 0120"}, follow_redirects=False
    )
    assert answer.headers["location"] == f"{page}?done=opted-out"
    assert session.scalar(select(func.count()).select_from(OptOut)) == 1
    session.commit()
    other = create_profile(session, create_merchant_account(session, email="other@example.com"))
    assert_html(client.get(f"/merchant/profiles/{other.id}/audiences"), 404)
    export = client.get(f"/merchant/profiles/{other.id}/audiences/all/export?format=meta")
    assert_html(export, 404)
    mine = client.get(f"{page}/all/export?format=google")
    assert mine.status_code == 200 and mine.text.startswith("Email,Phone,")


def test_the_merchant_lifts_its_own_opt_out_in_the_console(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    add_customer(session, shop.store, phone="+14155550121")
    sign_in_console(client)
    page = f"/merchant/profiles/{shop.profile.id}/audiences"
    html = client.get(page).text
    opt_out = form(html, f"{page}/opt-out").fields
    client.post(f"{page}/opt-out", data={**opt_out, "phone": "+14155550121"})
    fields = form(html, f"{page}/opt-in").fields
    empty = client.post(f"{page}/opt-in", data=fields)
    assert_html(empty, 400)
    assert "Enter an email address or a phone number." in empty.text
    assert_html(client.post(f"{page}/opt-in", data={"phone": "+14155550121"}), 403)
    lifted = client.post(
        f"{page}/opt-in", data={**fields, "phone": "415 555 0121"}, follow_redirects=False
    )
    assert lifted.headers["location"] == f"{page}?done=opted-in"
    assert session.scalar(select(func.count()).select_from(OptOut)) == 0
    session.commit()
    assert "your opt-out is lifted" in client.get(lifted.headers["location"]).text
