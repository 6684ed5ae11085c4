"""CONTRACT §14 on the console's Ad platforms page: "Connect with Meta" only when the app
is registered, the sign-in, the pick step (account, "Create a new audience"), every
problem of the pick form at once, CSRF, "Reconnect with Meta before {date}", and the §11
forms kept under "Advanced"."""

from __future__ import annotations

import re
from datetime import timedelta

from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from partnerlink.db.base import utcnow
from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.destinations.models import Destination
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.signing_in.helpers import approve, query_of
from tests.factories import ConnectedStoreFixture
from tests.web.conftest import sign_in_console
from tests.web.pages import assert_html, form, forms

ACCOUNT = "101000000001"


def _connection(session: Session) -> AdConnection | None:
    session.expire_all()
    found = session.scalar(select(AdConnection))
    session.commit()
    return found


def test_connect_with_meta_pick_and_create_an_audience(
    client: TestClient,
    session: Session,
    shop: ConnectedStoreFixture,
    servers: tuple[FakeMeta, FakeGoogle],
) -> None:
    meta = servers[0]
    profile_id, business = shop.profile.id, shop.profile.name
    sign_in_console(client)
    page = f"/merchant/profiles/{profile_id}/ad-platforms"
    html = client.get(page, params={"segment": "buyers"}).text
    assert "Connect with Meta" in html and "Connect with Google" in html
    assert "Advanced" in html  # §11's forms stay, folded
    (start,) = re.findall(rf'href="({page}/sign-in/meta\?[^"]+)"', html)
    start = start.replace("&amp;", "&")
    assert query_of(start)["segment"] == "buyers"
    forged = client.get(f"{page}/sign-in/meta", params={"csrf_token": "forged"})
    assert_html(forged, 403)

    to_meta = client.get(start, follow_redirects=False)
    assert to_meta.status_code == 303
    back = client.get(approve(to_meta.headers["location"]), follow_redirects=False)
    assert back.status_code == 303
    connection = _connection(session)
    assert connection is not None
    pick_path = f"{page}/connections/{connection.id}"
    assert back.headers["location"] == f"{pick_path}?segment=buyers#pick"

    accounts = client.get(pick_path, params={"segment": "buyers"}).text
    assert "Bakery ads" in accounts and "Second shop" in accounts
    meta.add_dataset(ACCOUNT, "555000000000001", "Bakery pixel")
    picked = client.get(pick_path, params={"segment": "buyers", "account": ACCOUNT}).text
    assert "Create a new audience" in picked and "Bakery pixel" in picked
    pick = form(picked, f"{pick_path}/pick")

    wrong = client.post(
        f"{pick_path}/pick",
        data={**pick.fields, "kind": "audience", "segment": "x", "audience": ""},
    )
    assert_html(wrong, 400)
    assert "Segment: pick one." in wrong.text and "Audience: pick one" in wrong.text

    gone = client.post(  # an audience deleted on Meta since the page was drawn
        f"{pick_path}/pick",
        data={**pick.fields, "kind": "audience", "segment": "buyers", "audience": "2385000999"},
    )
    assert_html(gone, 400)
    assert "Audience: is no longer a audience" not in gone.text
    assert "is no longer a" in gone.text and "create a new one" in gone.text

    done = client.post(
        f"{pick_path}/pick",
        data={**pick.fields, "kind": "audience", "segment": "buyers", "audience": "new"},
        follow_redirects=False,
    )
    assert done.status_code == 303, done.text
    assert meta.created_audiences[0]["name"] == f"{business} – buyers"
    session.expire_all()
    destination = session.scalar(select(Destination))
    assert destination is not None and destination.ad_connection_id == connection.id
    session.execute(update(AdConnection).values(expires_at=utcnow() + timedelta(days=3)))
    session.commit()
    html = client.get(page).text
    assert html.count("Reconnect with Meta before") == 2  # the connection and its destination


def test_without_the_operators_apps_there_are_no_sign_in_buttons(
    app: FastAPI, client: TestClient, shop: ConnectedStoreFixture
) -> None:
    app.state.settings.meta_app_id = None
    app.state.settings.google_client_id = None
    sign_in_console(client)
    html = client.get(f"/merchant/profiles/{shop.profile.id}/ad-platforms").text
    assert "Connect with Meta" not in html and "Connect with Google" not in html
    assert any(f.fields.get("platform") == "meta" for f in forms(html))  # Advanced stays
