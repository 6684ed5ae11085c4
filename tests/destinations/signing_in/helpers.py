"""Arranging sign-ins with the local Meta and Google stand-ins (CONTRACT §14)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from partnerlink.destinations.ad_connections.models import AdConnection
from partnerlink.settings import Settings
from tests.destinations import fake_google, fake_meta_login
from tests.destinations.fake_google import FakeGoogle
from tests.destinations.fake_meta import FakeMeta
from tests.destinations.sync_helpers import platform_settings


def login_settings(settings: Settings, meta: FakeMeta, google: FakeGoogle) -> Settings:
    """The worker's settings, with the operator's Meta app and Google client registered.
    No sign-in test waits for a platform that hangs, so the stand-ins get the usual time to
    answer, not the syncs' 1 s: under a loaded CI machine a code exchange once took longer
    and the callback said "Google could not be reached" where the test expected a refusal."""
    return platform_settings(settings, meta, google).model_copy(
        update={
            "ad_request_timeout_seconds": 10.0,
            "meta_app_id": fake_meta_login.APP_ID,
            "meta_app_secret": fake_meta_login.APP_SECRET,
            "meta_dialog_url": meta.url,
            "google_client_id": fake_google.CLIENT_ID,
            "google_client_secret": fake_google.CLIENT_SECRET,
            "google_auth_url": f"{google.url}/auth",
        }
    )


def connections_path(profile_id: str) -> str:
    return f"/merchant/api/profiles/{profile_id}/ad-connections"


def query_of(url: str) -> dict[str, str]:
    return {key: values[0] for key, values in parse_qs(urlsplit(url).query).items()}


def approve(authorize_url: str) -> str:
    """What the merchant's browser does at the platform: answers the callback's path and
    query the platform redirects to."""
    answer = httpx.get(authorize_url, follow_redirects=False)
    assert answer.status_code == 302, answer.text
    location = urlsplit(answer.headers["location"])
    return f"{location.path}?{location.query}"


def connect(client: TestClient, profile_id: str, owner: dict[str, str], platform: str) -> str:
    """A whole sign-in through the API; answers the new connection's id."""
    started = client.post(f"{connections_path(profile_id)}/{platform}", headers=owner)
    assert started.status_code == 201, started.text
    page = client.get(approve(started.json()["authorizeUrl"]))
    assert page.status_code == 200, page.text
    listed = client.get(connections_path(profile_id), headers=owner).json()["connections"]
    return str(listed[-1]["id"])


def count_connections(session: Session) -> int:
    """How many ad connections are stored (SQLite's one connection goes back after)."""
    session.expire_all()
    count = int(session.scalar(select(func.count()).select_from(AdConnection)) or 0)
    session.rollback()
    return count
