"""The console's Ad platforms page: connect, state in words, sync now, disconnect; CSRF;
the secrets typed in never shown again; another merchant's profile answers 404."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.destinations.models import Destination
from tests.destinations import fake_google, fake_meta
from tests.factories import ConnectedStoreFixture, create_merchant_account, create_profile
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, form, forms


def _count(session: Session) -> int:
    count = session.scalar(select(func.count()).select_from(Destination))
    session.commit()
    return int(count or 0)


def test_connect_sync_and_disconnect_from_the_page(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    sign_in_console(client)
    page = f"/merchant/profiles/{shop.profile.id}/ad-platforms"
    profile_page = client.get(f"/merchant/profiles/{shop.profile.id}").text
    assert page in profile_page
    html = client.get(page).text
    assert "No ad platform connected yet." in html
    assert "Events Manager" in html and "without the dashes" in html
    meta_form = next(f for f in forms(html) if f.fields.get("platform") == "meta")
    fields = {
        **meta_form.fields,
        "kind": "audience",
        "segment": "buyers",
        "audienceId": fake_meta.AUDIENCE_ID,
        "accessToken": fake_meta.ACCESS_TOKEN,
    }
    assert_html(client.post(page, data={**fields, "csrf_token": "forged"}), 403)
    assert _count(session) == 0

    refused = client.post(page, data={**fields, "audienceId": "audience 12"})
    assert_html(refused, 400)
    assert "target.audienceId" in refused.text
    assert fake_meta.ACCESS_TOKEN not in refused.text  # a refused form keeps no secret
    assert _count(session) == 0

    done = client.post(page, data=fields, follow_redirects=False)
    assert done.status_code == 303 and done.headers["location"] == f"{page}?done=connected"
    listed = client.get(done.headers["location"]).text
    assert "Connected. The first sync starts within a minute." in listed
    assert "Meta audience" in listed and "waiting for its first sync" in listed
    assert fake_meta.ACCESS_TOKEN not in listed

    google_form = next(f for f in forms(listed) if f.fields.get("platform") == "google")
    google = {
        **google_form.fields,
        "kind": "conversions",
        "customerId": "123-456-7890",  # as Google Ads shows it: the dashes are dropped
        "conversionActionId": fake_google.CONVERSION_ACTION_ID,
        "clientId": fake_google.CLIENT_ID,
        "clientSecret": fake_google.CLIENT_SECRET,
        "refreshToken": fake_google.REFRESH_TOKEN,
        "adUserData": "granted",
        "adPersonalization": "denied",
    }
    assert client.post(page, data=google, follow_redirects=False).status_code == 303
    assert _count(session) == 2
    destination = session.scalar(select(Destination).where(Destination.platform == "google"))
    assert destination is not None
    assert destination.target["customerId"] == "1234567890"
    assert destination.consent == {"adUserData": "granted", "adPersonalization": "denied"}
    session.commit()

    listed = client.get(page).text
    sync = form(listed, f"{page}/{destination.id}/sync")
    synced = client.post(sync.action, data=sync.fields, follow_redirects=False)
    assert synced.status_code == 303
    session.expire_all()
    assert session.get(Destination, destination.id).sync_requested  # type: ignore[union-attr]
    session.commit()
    gone = form(client.get(page).text, f"{page}/{destination.id}/disconnect")
    assert client.post(gone.action, data=gone.fields, follow_redirects=False).status_code == 303
    assert _count(session) == 1


def test_another_merchants_page_answers_404(
    client: TestClient, session: Session, shop: ConnectedStoreFixture
) -> None:
    other = create_merchant_account(session, email="other@example.com")
    theirs = create_profile(session, other, name="Not yours")
    session.commit()
    sign_in_console(client)
    assert_html(client.get(f"/merchant/profiles/{theirs.id}/ad-platforms"), 404)
